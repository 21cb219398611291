// case_dir.cpp — case directories of .npy files <-> Problem (see case_dir.hpp, docs/design.md §1).
//
// Files and shapes (batch-first; 2-D means L = 1; with batch_last the 3-D files are (rows, cols, L)):
//   a.npy (L, M, K/2)  b1.npy, b2.npy (L, N, K/2)  sfa.npy (L, M, K/16)  sfb1.npy, sfb2.npy (L, N, K/16)
// all uint8 (int8 is read as the same bytes). K is derived from a.npy (2 * bytes per row); every
// other file is checked against it, and every error names the file that disagrees and what it was
// compared with, and, where the shapes (or an operand's bytes) tell, what the file most likely
// holds: a dtype wrong for its role, scales in the 128x4 blocked layout or GPU MODE's 6-D permuted
// view, unpacked FP4 (one code per byte), MX-style scales (one per 32 elements), the other batch order. Dtype and dimension count are judged here from the header dict
// (npy.hpp read_npy_dict), before the reader's generic checks, because only this layer knows the role. All six headers
// are read and checked before any data is read (read_case_shape stops there), so a case whose
// files disagree or promise more data than they hold costs no more than six small reads; the one
// exception is an operand whose shape is unpacked FP4's or packed bytes' with MX-style scales (one
// per 32 elements): its first bytes (at most 16 MiB) tell which, before the refusal.
#include "case_dir.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <stdexcept>

#include "errors.hpp"
#include "layout.hpp"
#include "npy.hpp"
#include "user_file.hpp"

namespace nvfp4 {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw InputError(path + ": " + what); }

std::string join(const std::string& dir, const std::string& file) {
  if (dir.empty()) return file;
  return dir.back() == '/' ? dir + file : dir + "/" + file;
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

// What a case file holds: packed E2M1 codes (a, b1, b2) or E4M3 scale bytes (sfa, sfb1, sfb2).
enum class Role { Packed, Scales };

// One uint8 input file: its header's shape read as batch-first (L, rows, cols).
struct Operand {
  std::string path;
  std::vector<int64_t> stored;  // the shape as the file has it
  int64_t L = 1, rows = 0, cols = 0;
};

const char* const kCaseFilesText =
    "a case directory holds a.npy b1.npy b2.npy sfa.npy sfb1.npy sfb2.npy (and optionally c.npy)";

const char* const kScaleBytesHow =
    "ml_dtypes: x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8); torch: t.to(torch.float8_e4m3fn).view(torch.uint8)";

// Why a file of this role cannot have dtype `descr` (a refusal that says what to save instead).
std::string dtype_problem(const std::string& descr, Role role) {
  NpyType t;
  const bool known = npy_descr_type(descr, &t);
  std::string what = known ? std::string("dtype ") + npy_type_name(t) : "unsupported dtype '" + npy_printable(descr) + "'";
  const char kind = descr.size() >= 2 && (descr[0] == '|' || descr[0] == '<' || descr[0] == '>' || descr[0] == '=')
                        ? descr[1] : descr.empty() ? '?' : descr[0];
  const bool is_void = kind == 'V', is_float = kind == 'f' || kind == 'e' || kind == 'd';
  if (descr.size() == 3 && descr[0] == '>' && descr[1] == 'f') what += " (big-endian)";
  if (role == Role::Packed) {
    what += ", expected uint8: packed E2M1 codes, two per byte (element 2j in the low nibble; from torch: "
            "t.view(torch.uint8).cpu().numpy())";
    if (is_float)
      what += "; this file holds decoded values: quantize them first (nvfp4_dual.quantize returns the packed bytes "
              "and the scales)";
    else if (is_void)
      what += "; a void dtype is what numpy writes for ml_dtypes' float8 and float4 arrays: a float4_e2m1fn array "
              "holds one code per byte: pack two per byte, then save .view(np.uint8)";
    else if (kind == 'u' || kind == 'i')
      what += "; save the array's bytes: arr.view(np.uint8) (each wider element holds several packed bytes; "
              "astype(np.uint8) would keep only the low byte of each)";
  } else {
    what += std::string(", expected uint8: the E4M3FN bytes of the scales (") + kScaleBytesHow + ")";
    if (is_float)
      what += "; this file holds the scales' values: convert them to float8_e4m3fn and save its bytes as above "
              "(the bytes of a float array are not E4M3 codes)";
    else if (is_void)
      what += "; a void dtype is what numpy writes for ml_dtypes' float8 and float4 arrays: save a float8_e4m3fn "
              "array as x.view(np.uint8)";
  }
  return what;
}

// The blocked-layout bytes of a (rows x K/16) scale matrix per batch (docs/design.md §1.4).
int64_t blocked_bytes(int64_t rows, int64_t K) { return ((rows + 127) / 128) * ((K / 16 + 3) / 4) * 512; }

// A scale file of 1 or 6 dimensions, named for what it most likely is: the flat 128x4 blocked
// buffer (to_blocked's output) or GPU MODE's CuTe-permuted view (32, 4, Rt, 4, Ct, L). `rows` and
// `K` are the problem's as far as a.npy and b1.npy tell them (0 when unknown).
std::string scale_layout_hint(const std::vector<int64_t>& s, int64_t L, int64_t rows, int64_t K) {
  const std::string dims = "(rows, K/16) = (" + std::to_string(rows) + ", " + std::to_string(K / 16) + ")";
  if (s.size() == 6 && s[0] == 32 && s[1] == 4 && s[3] == 4)
    return "; a 6-D (32, 4, Rt, 4, Ct, L) array is GPU MODE's CuTe-permuted view of the 128x4 blocked layout "
           "(docs/design.md §1.4): save the plain (L, rows, K/16) layout instead (nvfp4_dual.from_cute_permuted(x, " +
           std::to_string(rows) + ", " + std::to_string(K / 16) + ") converts)";
  // from_blocked takes one matrix's buffer (1-D) or (L, bytes per matrix): a flat buffer of L > 1
  // matrices is reshaped first.
  if (s.size() == 1 && rows > 0 && K > 0 && K % 16 == 0 && s[0] % blocked_bytes(rows, K) == 0 &&
      s[0] / blocked_bytes(rows, K) == L)
    return "; its " + std::to_string(s[0]) + " bytes are the 128x4 blocked layout's for " + dims +
           (L > 1 ? " times L = " + std::to_string(L) : std::string()) +
           " (docs/design.md §1.4), flattened: save the plain (L, rows, K/16) layout instead "
           "(nvfp4_dual.from_blocked(" + (L > 1 ? "x.reshape(" + std::to_string(L) + ", -1)" : std::string("x")) +
           ", " + std::to_string(rows) + ", " + std::to_string(K / 16) + ") converts)";
  return std::string();
}

// Reads and checks one header: the dtype its role needs, 2 or 3 dimensions. `L`, `rows` and `K`
// (0 when not known yet) name a scale file's blocked or permuted layout in the refusal.
Operand read_operand(const std::string& dir, const char* file, const char* logical, bool batch_last, Role role,
                     int64_t L = 0, int64_t rows = 0, int64_t K = 0) {
  Operand op;
  op.path = join(dir, file);
  struct stat st;
  if (::lstat(op.path.c_str(), &st) != 0 && errno == ENOENT)
    fail(op.path, std::string("cannot open: no such file; ") + kCaseFilesText);
  // The role decides what a refused dtype or dimension count should have been: the dict first.
  const NpyDict d = read_npy_dict(op.path);
  NpyType t;
  if (!npy_descr_type(d.descr, &t) || (t != NpyType::U8 && t != NpyType::I8)) fail(op.path, dtype_problem(d.descr, role));
  if (d.shape.size() != 2 && d.shape.size() != 3)
    fail(op.path, "shape " + shape_str(d.shape) + " has " + std::to_string(d.shape.size()) +
                      (d.shape.size() == 1 ? " dimension(s)" : " dimensions") + "; expected " +
                      logical + (batch_last ? " batch-last" : "") +
                      (role == Role::Scales ? scale_layout_hint(d.shape, std::max<int64_t>(L, 1), rows, K) : ""));
  const NpyHeader h = read_npy_header(op.path);  // every other check: sizes against the file
  const auto& s = h.shape;
  op.stored = s;
  if (s.size() == 2) {
    op.rows = s[0];
    op.cols = s[1];
  } else if (batch_last) {
    op.rows = s[0];
    op.cols = s[1];
    op.L = s[2];
  } else {
    op.L = s[0];
    op.rows = s[1];
    op.cols = s[2];
  }
  if (op.rows < 1 || op.cols < 1 || op.L < 1) fail(op.path, "shape " + shape_str(s) + " has an empty dimension");
  return op;
}

// Whether a packed operand's bytes all have their high nibble clear, as unpacked FP4 codes (one
// per byte) have: read only when its shape already points that way, and at most the first 16 MiB
// (packed codes show a byte >= 16 within the first few rows).
bool codes_below_16(const Operand& op) {
  const NpyHeader h = read_npy_header(op.path);
  UserFile f = UserFile::open_read(op.path);
  std::vector<uint8_t> buf(std::max(h.data_offset, size_t(1) << 16));
  f.read_exact(buf.data(), h.data_offset);  // the header, checked already
  for (size_t left = std::min(h.data_bytes, size_t(16) << 20); left > 0;) {
    const size_t n = std::min(left, buf.size());
    f.read_exact(buf.data(), n);
    for (size_t i = 0; i < n; ++i)
      if (buf[i] >= 16) return false;
    left -= n;
  }
  return true;
}

// The data of a file whose header read_operand checked, in batch-first order. The header is read
// again with the data; a file that changed in between is refused before its data is read.
std::vector<uint8_t> read_operand_data(const Operand& op, bool batch_last) {
  NpyArray arr = read_npy(op.path, [&](const NpyHeader& h) {
    if ((h.type != NpyType::U8 && h.type != NpyType::I8) || h.shape != op.stored)
      fail(op.path, "changed while the case was read (shape " + shape_str(h.shape) + ", was " + shape_str(op.stored) + ")");
  });
  if (op.stored.size() == 3 && batch_last) return batch_last_to_first(arr.data.data(), op.rows, op.cols, op.L, 1);
  return std::move(arr.data);
}

struct CaseHeaders {
  Operand a, b1, b2, sfa, sfb1, sfb2;
  Shape shape;
};

// Whether the six files' shapes describe one problem when their 3-D arrays are read batch-last
// (rows, cols, L) or batch-first (L, rows, cols): a refusal in one order names the other when it fits.
bool shapes_agree(const CaseHeaders& c, bool batch_last) {
  int64_t L[6], R[6], C[6];
  const Operand* ops[6] = {&c.a, &c.b1, &c.b2, &c.sfa, &c.sfb1, &c.sfb2};
  for (int i = 0; i < 6; ++i) {
    const auto& s = ops[i]->stored;
    if (s.size() == 2) L[i] = 1, R[i] = s[0], C[i] = s[1];
    else if (batch_last) R[i] = s[0], C[i] = s[1], L[i] = s[2];
    else L[i] = s[0], R[i] = s[1], C[i] = s[2];
  }
  const int64_t K = 2 * C[0];
  for (int i = 1; i < 6; ++i)
    if (L[i] != L[0]) return false;
  return K % 16 == 0 && C[1] == C[0] && C[2] == C[0] && R[2] == R[1] && R[3] == R[0] && R[4] == R[1] &&
         R[5] == R[1] && C[3] == K / 16 && C[4] == K / 16 && C[5] == K / 16;
}

// Reads the six headers (no data) and checks that they describe one problem.
CaseHeaders read_headers(const std::string& dir, bool batch_last) {
  const std::string why = directory_problem(dir, false, false);
  if (!why.empty())
    throw InputError(dir + ": " + why + " (a case directory holds a.npy b1.npy b2.npy sfa.npy sfb1.npy sfb2.npy)");
  CaseHeaders c;
  c.a = read_operand(dir, "a.npy", "(L, M, K/2) or (M, K/2)", batch_last, Role::Packed);
  c.b1 = read_operand(dir, "b1.npy", "(L, N, K/2) or (N, K/2)", batch_last, Role::Packed);
  c.b2 = read_operand(dir, "b2.npy", "(L, N, K/2) or (N, K/2)", batch_last, Role::Packed);
  const Operand &a = c.a, &b1 = c.b1, &b2 = c.b2;
  const int64_t L = a.L, M = a.rows, N = b1.rows, K = 2 * a.cols;
  c.sfa = read_operand(dir, "sfa.npy", "(L, M, K/16) or (M, K/16)", batch_last, Role::Scales, L, M, K);
  c.sfb1 = read_operand(dir, "sfb1.npy", "(L, N, K/16) or (N, K/16)", batch_last, Role::Scales, L, N, K);
  c.sfb2 = read_operand(dir, "sfb2.npy", "(L, N, K/16) or (N, K/16)", batch_last, Role::Scales, L, N, K);

  // Files that disagree in this order but agree in the other: every refusal below says so.
  bool any_3d = false;
  for (const Operand* op : {&c.a, &c.b1, &c.b2, &c.sfa, &c.sfb1, &c.sfb2}) any_3d |= op->stored.size() == 3;
  const std::string order_hint =
      !any_3d || shapes_agree(c, batch_last) || !shapes_agree(c, !batch_last) ? std::string()
      : batch_last ? "; the six files agree read batch-first, (L, rows, cols): drop --batch-last"
                   : "; the six files agree read as (rows, cols, L), GPU MODE's order: pass --batch-last";
  auto refuse = [&](const std::string& path, const std::string& what) { fail(path, what + order_hint); };

  const std::string ks = "K = " + std::to_string(K) + " (from a.npy, " + std::to_string(a.cols) + " bytes per row)";
  if (K % 16 != 0)
    fail(a.path, ks + " is not a multiple of 16 (one E4M3 scale per 16 elements)" +
                     (!batch_last && a.stored.size() == 3
                          ? std::string("; read batch-first as (L, M, K/2): if the file is (M, K/2, L) (GPU MODE's "
                                        "order), pass --batch-last")
                          : order_hint));
  // A scale file holding exactly as many bytes as the 128 x 4 blocked layout of its matrix (§1.4) was
  // most likely saved in that layout: say so wherever its shape is refused.
  auto blocked_hint = [&](const Operand& sf, int64_t rows) {
    const int64_t blocked = L * blocked_bytes(rows, K);
    if (K % 16 != 0 || sf.L * sf.rows * sf.cols != blocked || (sf.rows == rows && sf.cols == K / 16)) return std::string();
    return "; its " + std::to_string(blocked) + " bytes are the 128x4 blocked layout's (docs/design.md §1.4): save the "
           "plain (L, rows, K/16) layout (nvfp4_dual.from_blocked converts)";
  };
  auto scale_rows = [&](const Operand* op) { return op == &c.sfa ? M : N; };
  for (const Operand* op : {&c.b1, &c.b2, &c.sfa, &c.sfb1, &c.sfb2})
    if (op->L != L) {
      const std::string blocked = op == &c.b1 || op == &c.b2 ? std::string() : blocked_hint(*op, scale_rows(op));
      refuse(op->path, "L = " + std::to_string(op->L) + " but a.npy has L = " + std::to_string(L) +
                           (batch_last                                ? " (batch-last order)"
                            : order_hint.empty() && blocked.empty() ? " (batch-first order; pass --batch-last for (rows, cols, L) files)"
                                                                      : " (batch-first order)") +
                           blocked);
    }
  // Unpacked FP4 (one code per byte, as ml_dtypes' float4_e2m1fn viewed as uint8): twice the bytes
  // per row that the scales imply, and every byte below 16. Named before the scales are blamed for
  // K. The same shapes are packed bytes with one scale per 32 elements (MX-style), which the data
  // tells apart: a byte with its high nibble set is packed, and then the scales are refused below.
  // The three scale files must agree on K, or the scales are what is wrong.
  const bool scales_agree = c.sfa.cols == c.sfb1.cols && c.sfa.cols == c.sfb2.cols;
  for (const auto& [op, sf] : {std::pair{&a, &c.sfa}, std::pair{&b1, &c.sfb1}, std::pair{&b2, &c.sfb2}})
    if (scales_agree && op->rows == sf->rows && op->cols == 16 * sf->cols && codes_below_16(*op))
      refuse(op->path, "holds " + std::to_string(op->cols) + " bytes per row, twice the " + std::to_string(8 * sf->cols) +
                           " that its " + std::to_string(sf->cols) + " scales per row imply (K = " +
                           std::to_string(16 * sf->cols) + "): one FP4 code per byte? pack two codes per byte "
                           "(element 2j in the low nibble)");
  for (const Operand* op : {&b1, &b2})
    if (op->cols != a.cols)
      refuse(op->path, std::to_string(op->cols) + " bytes per row (K = " + std::to_string(2 * op->cols) + "), but " + ks);
  if (b2.rows != N)
    refuse(b2.path, "N = " + std::to_string(b2.rows) + " rows, but b1.npy has N = " + std::to_string(N));
  auto check_sf = [&](const Operand& sf, int64_t rows, const char* rows_from) {
    if (sf.rows != rows)
      refuse(sf.path, std::to_string(sf.rows) + " rows, but " + rows_from + " has " + std::to_string(rows) +
                          blocked_hint(sf, rows));
    if (sf.cols != K / 16) {
      const std::string bytes_of = sf.cols == 4 * (K / 16) ? "4 bytes per scale: the bytes of a float32 array? "
                                   : sf.cols == 2 * (K / 16) ? "2 bytes per scale: the bytes of a float16 or bfloat16 array? "
                                                             : "";
      const std::string per_32 = 2 * sf.cols == K / 16 ? "; one scale per 32 elements? NVFP4 has one E4M3 scale per "
                                                         "16 (MX-style scales, one per 32, are not NVFP4)"
                                                       : "";
      refuse(sf.path, std::to_string(sf.cols) + " scales per row, but " + ks + " needs K/16 = " + std::to_string(K / 16) +
                          blocked_hint(sf, rows) + per_32 +
                          (bytes_of.empty() ? std::string()
                                            : "; " + bytes_of + "save the scales' E4M3FN bytes (" + kScaleBytesHow + ")"));
    }
  };
  check_sf(c.sfa, M, "a.npy");
  check_sf(c.sfb1, N, "b1.npy");
  check_sf(c.sfb2, N, "b1.npy");

  c.shape.M = M;
  c.shape.N = N;
  c.shape.K = K;
  c.shape.L = L;
  try {
    c.shape.validate();
  } catch (const InputError& e) {
    throw InputError(dir + ": " + e.what());
  }
  return c;
}

}  // namespace

Shape read_case_shape(const std::string& dir, bool batch_last) { return read_headers(dir, batch_last).shape; }

Problem load_case(const std::string& dir, bool batch_last) {
  const CaseHeaders c = read_headers(dir, batch_last);
  Problem p;
  p.shape = c.shape;
  p.a = read_operand_data(c.a, batch_last);
  p.b1 = read_operand_data(c.b1, batch_last);
  p.b2 = read_operand_data(c.b2, batch_last);
  p.sfa = read_operand_data(c.sfa, batch_last);
  p.sfb1 = read_operand_data(c.sfb1, batch_last);
  p.sfb2 = read_operand_data(c.sfb2, batch_last);
  p.validate();  // sizes follow from the checks above; this is a last guard
  return p;
}

void save_case(const std::string& dir, const Problem& p) {
  p.validate();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir + ": cannot create directory: " + ec.message());
  const Shape& s = p.shape;
  auto write = [&](const char* file, const std::vector<uint8_t>& bytes, int64_t rows, int64_t cols) {
    NpyArray arr;
    arr.type = NpyType::U8;
    arr.shape = s.L == 1 ? std::vector<int64_t>{rows, cols} : std::vector<int64_t>{s.L, rows, cols};
    arr.data = bytes;
    write_npy(join(dir, file), arr);
  };
  write("a.npy", p.a, s.M, s.K / 2);
  write("b1.npy", p.b1, s.N, s.K / 2);
  write("b2.npy", p.b2, s.N, s.K / 2);
  write("sfa.npy", p.sfa, s.M, s.K / 16);
  write("sfb1.npy", p.sfb1, s.N, s.K / 16);
  write("sfb2.npy", p.sfb2, s.N, s.K / 16);
}

std::vector<uint16_t> load_output(const std::string& path, const Shape& shape, bool batch_last) {
  // The dtype is judged from the header dict first, so that any refused dtype is told what an fp16
  // output needs (the reader's own message lists dtypes that are no output's).
  const NpyDict d = read_npy_dict(path);
  NpyType t;
  if (!npy_descr_type(d.descr, &t) || t != NpyType::F16) {
    const bool bf16 = d.descr.size() == 3 && d.descr[1] == 'V' && d.descr[2] == '2';
    fail(path, (npy_descr_type(d.descr, &t) ? std::string("dtype ") + npy_type_name(t)
                                             : "unsupported dtype '" + npy_printable(d.descr) + "'") +
                   ", expected float16 (the kernel's fp16 output)" +
                   (bf16 ? "; '" + npy_printable(d.descr) + "' is how numpy saves ml_dtypes' bfloat16" : std::string()) +
                   ": save c.astype(np.float16) (torch: t.half().cpu().numpy())");
  }
  // The header is checked before any data is read: a wrong or huge shape costs nothing.
  NpyArray arr = read_npy(path, [&](const NpyHeader& h) {
    const auto& s = h.shape;
    const std::vector<int64_t> want_first{shape.L, shape.M, shape.N}, want_last{shape.M, shape.N, shape.L};
    const std::vector<int64_t> want2{shape.M, shape.N};
    // With L = 1 the three orders hold the same bytes: (M, N), (1, M, N) and (M, N, 1) all fit.
    const bool ok = (shape.L == 1 && (s == want2 || s == want_first || s == want_last)) ||
                    s == (batch_last ? want_last : want_first);
    if (!ok)
      fail(path, "shape " + shape_str(s) + " does not match the problem " + shape.str() + ": expected " +
                     (shape.L == 1 ? shape_str(want_first) + ", " + shape_str(want_last) + " or " + shape_str(want2)
                                   : shape_str(batch_last ? want_last : want_first) + (batch_last ? " (batch-last)" : "")));
  });
  const auto& s = arr.shape;
  std::vector<uint8_t> bytes = std::move(arr.data);
  if (s.size() == 3 && batch_last) bytes = batch_last_to_first(bytes.data(), shape.M, shape.N, shape.L, 2);
  std::vector<uint16_t> out(bytes.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = uint16_t(bytes[2 * i] | (bytes[2 * i + 1] << 8));  // little-endian
  return out;
}

void save_output(const std::string& path, const Shape& shape, const std::vector<uint16_t>& c) {
  if (int64_t(c.size()) != shape.c_elems())
    throw std::invalid_argument(path + ": save_output: " + std::to_string(c.size()) + " values, shape " + shape.str() +
                                " needs " + std::to_string(shape.c_elems()));
  NpyArray arr;
  arr.type = NpyType::F16;
  arr.shape = shape.L == 1 ? std::vector<int64_t>{shape.M, shape.N} : std::vector<int64_t>{shape.L, shape.M, shape.N};
  arr.data.resize(c.size() * 2);
  for (size_t i = 0; i < c.size(); ++i) {
    arr.data[2 * i] = uint8_t(c[i] & 0xFF);
    arr.data[2 * i + 1] = uint8_t(c[i] >> 8);
  }
  write_npy(path, arr);
}

}  // namespace nvfp4
