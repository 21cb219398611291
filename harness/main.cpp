// main.cpp — the harness binary (docs/design.md §4): the mode word to its mode (cli/modes.hpp), and
// the only place that maps outcomes and errors to exit codes:
//   0    everything that ran passed
//   1    a verification failure (FAIL, ERROR, CRASH, TIMEOUT, BLOCKED; a bisect found a culprit)
//   2    bad usage or bad input (InputError, a command line the options refuse)
//   125  nothing could be tested here (every trial SKIP), so `git bisect run` and ctest's
//        SKIP_RETURN_CODE work unchanged
// Hidden entry points, handled before option parsing: `harness --child-trial SPEC` and
// `harness --child-worker [--preload BACKEND --report-fd N]` (trial children, trial.hpp, worker.hpp),
// `harness --child-bench FIELDS...` (the bench's GPU extras child, bench.hpp).
#include <boost/program_options.hpp>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "bench.hpp"
#include "cli_checks.hpp"
#include "errors.hpp"
#include "modes.hpp"
#include "outputs.hpp"
#include "rehearse.hpp"
#include "run.hpp"
#include "trial.hpp"
#include "user_file.hpp"
#include "worker.hpp"

namespace po = boost::program_options;
using namespace nvfp4;

namespace {

int run(int argc, char** argv) {
  std::string word;
  const std::vector<std::string> args = cli::spell_mode_word(argc, argv, word);
  std::vector<const char*> av;
  for (const auto& a : args) av.push_back(a.c_str());
  po::variables_map vm;
  const po::options_description options = cli::all_options();  // parsed refers to it until stored
  const po::parsed_options parsed = po::command_line_parser(int(av.size()), av.data()).options(options).run();
  po::store(parsed, vm);
  po::notify(vm);
  if (vm.count("help")) {
    if (word.empty())
      cli::print_synopsis(std::cout);
    else
      cli::print_mode_help(std::cout, cli::mode_named(word));
    return 0;
  }
  // Everything the user wrote is checked before any work (cli_checks.hpp); refusals exit 2.
  cli::check_tokens(parsed);
  const cli::Mode& mode = cli::select_mode(vm, parsed, word);
  // As GoogleTest does: tell the runner (Bazel) that this program understands the sharding variables.
  if (const char* status = std::getenv("GTEST_SHARD_STATUS_FILE"); status && *status) write_text_file(status, "");
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  const std::string m = mode.word;
  if (m == "merge") return cli::merge_mode(vm, command);
  if (m == "render") return cli::render_mode(vm);
  if (m == "rehearse") return cli::rehearse_mode(vm, command);
  return cli::run_mode(vm, mode, argv[0], command);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::string(argv[1]) == "--child-trial") return child_main(argv[2]);
  if (argc >= 2 && std::string(argv[1]) == "--child-worker") return worker_main(argc - 2, argv + 2);
  if (argc >= 2 && std::string(argv[1]) == "--child-bench") return bench_extras_child(argc - 2, argv + 2);
  try {
    return run(argc, argv);
  } catch (const po::error& e) {
    std::cerr << "harness: " << e.what() << " (see harness --help)\n";
    return 2;
  } catch (const InputError& e) {
    std::cerr << "harness: bad input: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "harness: internal error: " << e.what() << "\n";
    return 1;
  }
}
