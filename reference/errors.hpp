// errors.hpp — the two kinds of failure the library reports.
//
// InputError: the caller's data or arguments are wrong (malformed .npy, K not a multiple of 16,
// mismatched shapes, NaN where it is refused). main() maps it to exit code 2.
// Anything else (std::runtime_error, CUDA errors) is a failure of the code under test.
#pragma once
#include <stdexcept>
#include <string>

namespace nvfp4 {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace nvfp4
