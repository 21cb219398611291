// faults.hpp — fault drills: `--inject FAULT@STAGE[:if=COMBO]`.
//
// A fault is applied by the harness's trial child, on every path, so the detection machinery can
// be proven without a broken kernel:
//   hang       the child stops making progress at the start of STAGE (the watchdog must kill it)
//   crash      the child raises SIGSEGV at the start of STAGE
//   error      the child throws at the start of STAGE (reported as ERROR with the message)
//   slow       the child sleeps `slow_seconds` at the start of STAGE (visible in the stage time)
//   nan        one output element becomes a quiet NaN            } act on the output read back
//   corrupt    one output element gets a wrong value (bit 14 flipped) } after the LAST checked
//   unwritten  one output element keeps the poison pattern        } call of stage run
// The output faults take STAGE = run and hit the last checked call on purpose: a harness that
// checked only the first call would miss them; in bench mode STAGE = time hits the timed outputs
// sent for checking (trial.hpp), so a path that is right when checked and wrong when timed FAILs.
// Stage time exists only in bench mode: other faults @time fire at its start. The element is the middle one, (L*M*N)/2.
// `:if=COMBO` makes the fault fire only in trials whose combination contains all of COMBO's
// optimizations (so a bisect has a known answer); `:case=SHAPE` only in trials on cases of that
// shape (so one trial of a combination can fail while its others pass). Both may be given.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "plan.hpp"
#include "registry.hpp"

namespace nvfp4 {

enum class FaultKind { Hang, Crash, Error, Slow, Nan, Corrupt, Unwritten };

struct Fault {
  FaultKind kind = FaultKind::Error;
  Stage stage = Stage::Init;
  bool conditional = false;  // true when `:if=COMBO` was given
  Combo only_if;
  std::string only_shape;  // `:case=SHAPE` (Shape::str()), empty when not given

  // "hang@tune", "corrupt@run:if=fused", "crash@run:case=33x65x160"; throws InputError with the reason.
  static Fault parse(const std::string& text);
  std::string str() const;  // parses back to the same fault
  bool acts_on_output() const {
    return kind == FaultKind::Nan || kind == FaultKind::Corrupt || kind == FaultKind::Unwritten;
  }
  // Whether it fires in `stage` of a trial of `combo` on a case of `shape` (nullptr: unknown, so
  // a fault with `:case=` does not fire).
  bool fires(Stage s, const Combo& combo, const Shape* shape = nullptr) const;
};

const char* fault_kind_name(FaultKind k);

// Child side, at the start of a stage: hang / crash / error / slow. Returns a note per fault that
// fired and returned (slow). Never returns for hang and crash; throws for error.
std::vector<std::string> fire_stage_faults(const std::vector<Fault>& faults, Stage stage,
                                           const Combo& combo, double slow_seconds,
                                           const Shape* shape = nullptr);
// Child side, on an output read back in `stage` (run: the last checked call; time: a timed call),
// L*M*N fp16 bits. Returns a note per fault applied, naming the element.
std::vector<std::string> apply_output_faults(const std::vector<Fault>& faults, Stage stage, const Combo& combo,
                                             const Shape& shape, uint16_t* c, uint16_t poison_bits);
// The same in stage run.
inline std::vector<std::string> apply_output_faults(const std::vector<Fault>& faults, const Combo& combo,
                                                    const Shape& shape, uint16_t* c, uint16_t poison_bits) {
  return apply_output_faults(faults, Stage::Run, combo, shape, c, poison_bits);
}

}  // namespace nvfp4
