// input_store.hpp — input sets generated once by the parent and read by trial children.
//
// The parent generates every input set of a generated case to compute its exact reference
// (ReferenceCache::prefetch); a child would otherwise generate the same bytes again for each trial
// (for the largest default cases that is most of a trial's time). The parent writes each set it
// generated to one file of the run's private directory; the child reads the file when it is there
// and generates the set itself when it is not (over the store's byte budget, a case directory, an
// unreadable file). A file names its case, set and mode and is checked against the child's own
// spec before use, so a file of another case is never taken. The bytes are the same either way:
// both sides derive them from the CaseSpec (cases.hpp); if a stored set ever differed from the one
// the reference was computed on, the trial would FAIL, not pass.
#pragma once
#include <atomic>
#include <cstddef>
#include <string>

#include "cases.hpp"

namespace nvfp4 {

class InputStore {
 public:
  // An empty `dir` disables the store.
  InputStore(std::string dir, size_t max_bytes);
  const std::string& dir() const { return dir_; }
  // Writes input set `set` of `c` (mode: see cases.hpp) unless it is there or the budget is spent.
  // Safe from several threads; a failed write leaves no file (children then generate the set).
  void put(const CaseSpec& c, int set, InputSet mode, const Problem& p);

 private:
  std::string dir_;
  size_t max_bytes_;
  std::atomic<size_t> bytes_{0};
};

// The store's file for input set `set` of `c`.
std::string stored_set_path(const std::string& dir, const CaseSpec& c, int set, InputSet mode);
// Reads input set `set` of `c` from the store in `dir` into `p`: false when there is no such file
// or it does not hold exactly that set (another case, a short or malformed file). A set k > 0 of
// mode activations takes its weights from `base`, which must be set 0 of `c` (when null: set 0 is
// read from the store too).
bool read_stored_set(const std::string& dir, const CaseSpec& c, int set, InputSet mode, Problem& p,
                     const Problem* base = nullptr);

}  // namespace nvfp4
