// faults.cpp — parsing and applying fault drills (see faults.hpp).
#include "faults.hpp"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include "errors.hpp"

namespace nvfp4 {

namespace {
struct KindName {
  FaultKind kind;
  const char* name;
};
constexpr KindName kKinds[] = {
    {FaultKind::Hang, "hang"}, {FaultKind::Crash, "crash"},     {FaultKind::Error, "error"},
    {FaultKind::Slow, "slow"}, {FaultKind::Nan, "nan"},         {FaultKind::Corrupt, "corrupt"},
    {FaultKind::Unwritten, "unwritten"},
};
}  // namespace

const char* fault_kind_name(FaultKind k) {
  for (const auto& kn : kKinds)
    if (kn.kind == k) return kn.name;
  return "?";
}

Fault Fault::parse(const std::string& text) {
  std::string kinds, stages;
  for (const auto& kn : kKinds) kinds += std::string(kinds.empty() ? "" : ", ") + kn.name;
  for (const auto& s : kStages)
    if (s.drills) stages += std::string(stages.empty() ? "" : ", ") + s.name + (s.id == Stage::Time ? " (bench mode)" : "");
  const std::string usage = "bad fault '" + text + "': expected FAULT@STAGE[:if=COMBO][:case=SHAPE] with FAULT one of " +
                            kinds + " and STAGE one of " + stages;
  Fault f;
  const size_t at = text.find('@');
  if (at == std::string::npos) throw InputError(usage);
  const std::string kind = text.substr(0, at);
  std::string rest = text.substr(at + 1), cond;
  const size_t colon = rest.find(':');
  if (colon != std::string::npos) {
    std::string conds = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
    while (!conds.empty()) {
      const size_t next = conds.find(':');
      cond = conds.substr(0, next);
      conds = next == std::string::npos ? "" : conds.substr(next + 1);
      if (cond.rfind("if=", 0) == 0 && !f.conditional) {
        f.conditional = true;
        f.only_if = Combo::parse(cond.substr(3));
      } else if (cond.rfind("case=", 0) == 0 && f.only_shape.empty()) {
        f.only_shape = Shape::parse(cond.substr(5)).str();
      } else {
        throw InputError(usage);
      }
    }
  }
  bool found = false;
  for (const auto& kn : kKinds)
    if (kind == kn.name) {
      f.kind = kn.kind;
      found = true;
    }
  if (!found) throw InputError(usage);
  found = false;
  for (const auto& s : kStages)
    if (s.drills && rest == s.name) {
      f.stage = s.id;
      found = true;
    }
  if (!found) throw InputError(usage);
  if (f.acts_on_output() && f.stage != Stage::Run && f.stage != Stage::Time)
    throw InputError("bad fault '" + text + "': " + kind +
                     " acts on an output read back in stage run (or time, in bench mode); write " + kind + "@run");
  return f;
}

std::string Fault::str() const {
  std::string s = std::string(fault_kind_name(kind)) + "@" + stage_name(stage);
  if (conditional) s += ":if=" + only_if.str();
  if (!only_shape.empty()) s += ":case=" + only_shape;
  return s;
}

bool Fault::fires(Stage s, const Combo& combo, const Shape* shape) const {
  return s == stage && (!conditional || combo.contains(only_if)) &&
         (only_shape.empty() || (shape && shape->str() == only_shape));
}

std::vector<std::string> fire_stage_faults(const std::vector<Fault>& faults, Stage stage,
                                           const Combo& combo, double slow_seconds, const Shape* shape) {
  std::vector<std::string> notes;
  for (const auto& f : faults) {
    if (!f.fires(stage, combo, shape)) continue;
    switch (f.kind) {
      case FaultKind::Hang:
        for (;;) pause();  // only the watchdog's SIGKILL ends this
      case FaultKind::Crash:
        signal(SIGSEGV, SIG_DFL);
        raise(SIGSEGV);
        _exit(139);  // not reached
      case FaultKind::Error:
        throw std::runtime_error("injected fault " + f.str());
      case FaultKind::Slow:
        std::this_thread::sleep_for(std::chrono::duration<double>(slow_seconds));
        notes.push_back("injected fault " + f.str() + ": slept " + std::to_string(slow_seconds) + " s");
        break;
      default:
        break;  // output faults act later
    }
  }
  return notes;
}

std::vector<std::string> apply_output_faults(const std::vector<Fault>& faults, Stage stage, const Combo& combo,
                                             const Shape& shape, uint16_t* c, uint16_t poison_bits) {
  std::vector<std::string> notes;
  const int64_t i = shape.c_elems() / 2;
  const int64_t l = i / (shape.M * shape.N), m = (i / shape.N) % shape.M, n = i % shape.N;
  const std::string where = " at (" + std::to_string(l) + "," + std::to_string(m) + "," +
                            std::to_string(n) + (stage == Stage::Time ? ") of a timed call" : ") of the last checked call");
  for (const auto& f : faults) {
    if (!f.acts_on_output() || !f.fires(stage, combo, &shape)) continue;
    switch (f.kind) {
      case FaultKind::Nan: c[i] = 0x7E00; break;                            // canonical quiet NaN
      case FaultKind::Corrupt: c[i] = static_cast<uint16_t>(c[i] ^ 0x4000); break;  // x 2^+-16
      case FaultKind::Unwritten: c[i] = poison_bits; break;
      default: break;
    }
    notes.push_back("injected fault " + f.str() + where);
  }
  return notes;
}

}  // namespace nvfp4
