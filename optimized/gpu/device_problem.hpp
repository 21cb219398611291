// device_problem.hpp — one Problem's operands in device memory, as every GPU plan holds them:
// A (L, M, K/2) and SFA (L, M, K/16), B1 and B2 (L, N, K/2), SFB1 and SFB2 (L, N, K/16), in the
// plain layouts of reference/problem.hpp (docs/design.md §1), and the two global scales.
//
// The buffers are allocated once for a shape and never move: upload() writes new inputs into
// the same addresses, so kernels and CUDA graphs captured on them see the new values
// (Plan::set_inputs).
#pragma once
#include <cstdint>

#include "cuda_util.hpp"
#include "errors.hpp"
#include "plan.hpp"
#include "problem.hpp"

namespace nvfp4::gpu {

struct DeviceProblem {
  Shape shape;
  DeviceBuffer<uint8_t> a, sfa, b1, b2, sfb1, sfb2;
  float alpha1 = 1.0f, alpha2 = 1.0f;

  explicit DeviceProblem(const Shape& s)
      : shape(s),
        a(size_t(s.a_bytes())),
        sfa(size_t(s.sfa_bytes())),
        b1(size_t(s.b_bytes())),
        b2(size_t(s.b_bytes())),
        sfb1(size_t(s.sfb_bytes())),
        sfb2(size_t(s.sfb_bytes())) {}

  // Writes p's activations (A, SFA), or with InputSet::All every array and both alphas, into the
  // buffers on `stream` and waits for the copies. InputError when p's shape is not this one or p
  // is inconsistent.
  void upload(const Problem& p, InputSet which, cudaStream_t stream) {
    if (p.shape != shape)
      throw InputError("set_inputs: shape " + p.shape.str() + " differs from the plan's " +
                       shape.str());
    p.validate();
    a.upload(p.a.data(), p.a.size(), stream);
    sfa.upload(p.sfa.data(), p.sfa.size(), stream);
    if (which == InputSet::All) {
      b1.upload(p.b1.data(), p.b1.size(), stream);
      b2.upload(p.b2.data(), p.b2.size(), stream);
      sfb1.upload(p.sfb1.data(), p.sfb1.size(), stream);
      sfb2.upload(p.sfb2.data(), p.sfb2.size(), stream);
      alpha1 = p.alpha1;
      alpha2 = p.alpha2;
    }
    NVFP4_CUDA_CHECK(cudaStreamSynchronize(stream));  // the host arrays may go once this returns
  }
};

}  // namespace nvfp4::gpu
