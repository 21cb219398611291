/* nvfp4_plugin.h — the C ABI through which an outside kernel joins the harness (docs/design.md §3, §4).
 *
 * A plugin is a shared library that exports ONE symbol,
 *
 *     const struct nvfp4_plugin_v1* nvfp4_plugin_v1_get(void);
 *
 * returning a pointer to a static table of entry points that stays valid until the library is
 * unloaded. The harness opens the library (dlopen, RTLD_NOW | RTLD_LOCAL) in a trial's child
 * process only, in stage `load`; it then checks abi_version == NVFP4_PLUGIN_ABI_VERSION,
 * struct_size >= sizeof(struct nvfp4_plugin_v1) and that every required entry point is set.
 * Later versions of this header only append fields (struct_size tells which are present); an
 * incompatible change gets a new symbol, nvfp4_plugin_v2_get.
 *
 * The problem (same layouts as reference/problem.hpp, docs/design.md §1). Per batch index l in [0, L):
 *   A      (L, M, K/2) bytes, packed FP4 E2M1, element 2j in the LOW nibble of byte j, 2j+1 in the high
 *   B1, B2 (L, N, K/2) bytes, same packing ("K-major": the GEMM is A * B^T)
 *   SFA    (L, M, K/16) FP8 E4M3FN bytes, one scale per 16 consecutive K elements ("plain" layout)
 *   SFB1/2 (L, N, K/16) FP8 E4M3FN bytes
 *   C      (L, M, N) fp16 bit patterns = fp16(silu(alpha1 * A*B1^T) * (alpha2 * A*B2^T))
 * All arrays are C-contiguous with the batch outermost. K is a multiple of 16; M, N, L >= 1 (any
 * value: a plugin that needs more says so through supports()). E2M1 magnitudes 0, 0.5, 1, 1.5, 2,
 * 3, 4, 6 (bit 3 is the sign); E4M3FN has bias 7, no inf, NaN only 0x7F/0xFF, max 448.
 *
 * Optimizations. A plugin offers named toggles (lower-case letters, digits, '-' and '_'; not
 * "plain"). The harness chooses a subset, the combination, and passes it to create() as the names
 * joined with '+' in sorted order ("" for the plain path). The plugin builds the whole combination
 * itself. Each optimization names the extra stages it adds (NVFP4_PLUGIN_STAGE_TUNE, _CAPTURE);
 * the harness calls tune() / capture() once when the chosen combination adds that stage.
 *
 * Calls, in the order the harness makes them (one thread; never two calls at once):
 *   available?  supports?  create  [tune]  warm-up: (enqueue synchronize)*  [capture]
 *   run: (set_inputs? poison_output enqueue synchronize read_output)*  [read_intermediates]  destroy
 * set_inputs() rewrites inputs in place between calls (an engine's pattern: new activations every
 * call, weights kept); after capture() the plugin's replay must read the new values.
 *
 * Status. Every entry point but last_error returns an int: NVFP4_PLUGIN_OK, or NVFP4_PLUGIN_ERROR
 * (the harness reads last_error and reports the trial ERROR with that text), or where stated
 * NVFP4_PLUGIN_UNSUPPORTED (the trial is SKIP, with the reason). Entry points never exit the
 * process and never print for the user. Text returned through `reason` buffers is truncated by
 * the plugin to reason_size - 1 bytes and always NUL-terminated.
 */
#ifndef NVFP4_PLUGIN_H
#define NVFP4_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NVFP4_PLUGIN_ABI_VERSION 1u

/* Status codes. */
#define NVFP4_PLUGIN_OK 0
#define NVFP4_PLUGIN_ERROR 1
#define NVFP4_PLUGIN_UNSUPPORTED 2

/* Extra stages an optimization adds (bit flags). */
#define NVFP4_PLUGIN_STAGE_TUNE 1u
#define NVFP4_PLUGIN_STAGE_CAPTURE 2u

/* Which inputs set_inputs() rewrites. */
#define NVFP4_PLUGIN_INPUTS_ACTIVATIONS 0 /* a, sfa */
#define NVFP4_PLUGIN_INPUTS_ALL 1         /* every array and both alphas */

struct nvfp4_plugin_shape {
  int64_t M, N, K, L;
};

/* Host arrays in the layouts above; owned by the harness, valid only during the call they are
 * passed to (a plugin copies what it keeps), and read-only. The harness compares them after the
 * calls that hand them over: every array after create() and set_inputs(ALL), a and sfa after
 * set_inputs(ACTIVATIONS); a write found there (a repack in place, scratch space) is an error
 * naming the array. */
struct nvfp4_plugin_arrays {
  const uint8_t* a;    /* (L, M, K/2)  */
  const uint8_t* b1;   /* (L, N, K/2)  */
  const uint8_t* b2;   /* (L, N, K/2)  */
  const uint8_t* sfa;  /* (L, M, K/16) */
  const uint8_t* sfb1; /* (L, N, K/16) */
  const uint8_t* sfb2; /* (L, N, K/16) */
  float alpha1, alpha2;
};

struct nvfp4_plugin_optimization {
  const char* name;    /* the CLI token, e.g. "threads" */
  const char* summary; /* one line for --list */
  uint32_t stages;     /* NVFP4_PLUGIN_STAGE_* flags: the extra stages it adds */
};

/* The plugin's state for one problem and one combination. */
typedef struct nvfp4_plugin_handle nvfp4_plugin_handle;

struct nvfp4_plugin_v1 {
  uint32_t abi_version; /* NVFP4_PLUGIN_ABI_VERSION */
  uint32_t struct_size; /* sizeof(struct nvfp4_plugin_v1) as the plugin was compiled */
  const char* name;     /* backend name: the harness calls it "plugin:NAME"; same character set */
  const char* summary;  /* one line for --list */
  uint32_t num_optimizations;
  const struct nvfp4_plugin_optimization* optimizations; /* num_optimizations entries */

  /* Optional (NULL: always available). UNSUPPORTED with the reason when it cannot run on this
   * machine at all, e.g. "no CUDA device". */
  int (*available)(char* reason, size_t reason_size);
  /* Optional (NULL: every shape). UNSUPPORTED with the reason when the combination `optimizations`
   * cannot run this shape (e.g. "K must be a multiple of 64"). */
  int (*supports)(const struct nvfp4_plugin_shape* shape, const char* optimizations, char* reason,
                  size_t reason_size);

  /* Required. Builds the path for one problem (stage init): allocations, uploads of every array.
   * On success *out is the new handle; on failure the status is ERROR and *out NULL, and
   * last_error(NULL) says why. */
  int (*create)(const struct nvfp4_plugin_shape* shape, const struct nvfp4_plugin_arrays* arrays,
                const char* optimizations, nvfp4_plugin_handle** out);
  /* Required when an offered optimization adds the stage, else optional. */
  int (*tune)(nvfp4_plugin_handle* h);
  int (*capture)(nvfp4_plugin_handle* h);
  /* Required. Rewrites inputs in place (which: NVFP4_PLUGIN_INPUTS_*); with ACTIVATIONS only
   * arrays->a and arrays->sfa are read. Synchronous: the next enqueue() sees the new values. */
  int (*set_inputs)(nvfp4_plugin_handle* h, int which, const struct nvfp4_plugin_arrays* arrays);
  /* Required. One call (asynchronous on a GPU); synchronize() waits and reports device errors. */
  int (*enqueue)(nvfp4_plugin_handle* h);
  int (*synchronize)(nvfp4_plugin_handle* h);
  /* Required. Fills all L*M*N output elements with the fp16 pattern `bits`. */
  int (*poison_output)(nvfp4_plugin_handle* h, uint16_t bits);
  /* Required. Copies the output, L*M*N fp16 bit patterns in (L, M, N) order, to host memory c.
   * Synchronizes first. */
  int (*read_output)(nvfp4_plugin_handle* h, uint16_t* c);
  /* Optional. The two GEMM results as the path holds them: fp32, (L, M, N) each, alpha NOT
   * applied. UNSUPPORTED when this combination does not keep them. */
  int (*read_intermediates)(nvfp4_plugin_handle* h, float* g, float* u);
  /* Optional. One line naming the configuration in use, for reports. */
  int (*describe)(nvfp4_plugin_handle* h, char* text, size_t text_size);
  /* Required. Frees everything the handle owns. */
  int (*destroy)(nvfp4_plugin_handle* h);
  /* Required. The reason for the last ERROR on `h` (h == NULL: of the last failed create);
   * never NULL. The text stays valid until the next call on the same handle. */
  const char* (*last_error)(nvfp4_plugin_handle* h);
};

/* The one exported symbol (declare it with default visibility in the plugin). */
typedef const struct nvfp4_plugin_v1* (*nvfp4_plugin_v1_get_fn)(void);
#define NVFP4_PLUGIN_V1_SYMBOL "nvfp4_plugin_v1_get"

#ifdef __cplusplus
}
#endif

#endif /* NVFP4_PLUGIN_H */
