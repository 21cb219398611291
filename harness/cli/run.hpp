// run.hpp — the modes that run paths (verify, bisect, bench, list) or check against the reference
// (check): what they share (outside paths registered, the run's backends, memory, load probes) and
// each mode's body.
#pragma once
#include <boost/program_options.hpp>
#include <string>

#include "modes.hpp"

namespace nvfp4::cli {

// Runs `mode` (verify, bisect, bench, check or list); returns the exit code.
int run_mode(const boost::program_options::variables_map& vm, const Mode& mode, const std::string& program,
             const std::string& command);

}  // namespace nvfp4::cli
