// output_guard.hpp — the host buffer the stages hand Plan::read_output (stages.cpp): the L·M·N
// elements of C with a guard zone of kOutputGuard elements before and after them in one allocation,
// each guard element holding a position-dependent pattern. After the call, a guard element that
// changed is a write outside C (a copy rounded up to a vector width or a tile on a ragged shape, an
// offset off by a row): it is reported (output_overrun_note, a note that carries a FAIL,
// external.hpp) instead of landing in the harness's heap, where it showed as a crash in a later
// stage or trial. The zones are 8 KiB each (a tile row of 4096 fp16); a larger overrun goes past
// them. Cost: the guards' 16 KiB rearmed and compared per read_output, and one copy of C into the
// vector the sink takes, both outside every timed region (stage time times calls, not read-backs).
//
//   GuardedOutput out(n);
//   out.poison(kPoisonBits);          // C to the poison, the guards rearmed
//   plan.read_output(out.data());
//   if (const auto o = out.overrun()) sink.note(output_overrun_note(o, n, "run", "call 1"));
//   out.copy_to(c);
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "external.hpp"

namespace nvfp4 {

constexpr size_t kOutputGuard = 4096;  // elements before and after C

// How far a read_output wrote outside C: elements before its start, elements past its end (the
// farthest changed guard element's distance from C).
struct OutputOverrun {
  size_t before = 0, after = 0;
  explicit operator bool() const { return before || after; }
};

class GuardedOutput {
 public:
  explicit GuardedOutput(size_t n) : n_(n), buf_(n + 2 * kOutputGuard) { arm(); }
  uint16_t* data() { return buf_.data() + kOutputGuard; }
  const uint16_t* data() const { return buf_.data() + kOutputGuard; }
  size_t size() const { return n_; }
  // C filled with `bits`, the guards rearmed (an earlier overrun is not counted again).
  void poison(uint16_t bits) {
    std::fill(data(), data() + n_, bits);
    arm();
  }
  OutputOverrun overrun() const {
    OutputOverrun o;
    for (size_t i = 0; i < kOutputGuard; ++i)  // i: distance from C's start, 1-based
      if (buf_[kOutputGuard - 1 - i] != pattern(i, 0)) o.before = i + 1;
    const uint16_t* tail = data() + n_;
    for (size_t i = 0; i < kOutputGuard; ++i)
      if (tail[i] != pattern(i, 1)) o.after = i + 1;
    return o;
  }
  void copy_to(std::vector<uint16_t>& c) const { c.assign(data(), data() + n_); }

 private:
  // Differs from its neighbours and from the poison's pattern of repeats: a block copied over it
  // (zeros, the poison, a neighbour's value) changes it.
  static uint16_t pattern(size_t i, unsigned zone) { return uint16_t((0xA5C3u + zone * 0x3C5Au) ^ (i * 40503u)); }
  void arm() {
    for (size_t i = 0; i < kOutputGuard; ++i) {
      buf_[kOutputGuard - 1 - i] = pattern(i, 0);
      data()[n_ + i] = pattern(i, 1);
    }
  }
  size_t n_;
  std::vector<uint16_t> buf_;
};

// "read_output wrote outside C (stage run, call 1): 5 elements past its end (L·M·N = 91): a copy
// rounded up to a vector width or tile?" — carries kOutputOverrunNote. `where`: which read in the
// stage ("call 1", "configuration NAME", "the last timed call"), "" for none.
inline std::string output_overrun_note(const OutputOverrun& o, size_t n, const std::string& stage,
                                       const std::string& where) {
  auto elements = [](size_t k) { return std::to_string(k) + (k == 1 ? " element" : " elements"); };
  std::string s = std::string(kOutputOverrunNote) + " (stage " + stage + (where.empty() ? "" : ", " + where) + "): ";
  if (o.before) s += elements(o.before) + " before its start";
  if (o.before && o.after) s += " and ";
  if (o.after) s += elements(o.after) + " past its end";
  s += " (L·M·N = " + std::to_string(n) + ")";
  s += o.after && !o.before ? ": a copy rounded up to a vector width or tile?" : ": an offset or index off?";
  if (std::max(o.before, o.after) >= kOutputGuard)
    s += " (at least: the guard zone of " + std::to_string(kOutputGuard) +
         " elements was written to its edge; what lies beyond it may be corrupted too)";
  return s;
}

// The stage an output-overrun note names ("" for any other note).
inline std::string output_overrun_stage(const std::string& note) {
  const std::string head = std::string(kOutputOverrunNote) + " (stage ";
  if (note.compare(0, head.size(), head) != 0) return "";
  const size_t end = note.find_first_of(",)", head.size());
  return end == std::string::npos ? "" : note.substr(head.size(), end - head.size());
}

}  // namespace nvfp4
