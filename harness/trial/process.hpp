// process.hpp — the processes the harness starts: forked from one thread that lasts as long as the
// harness, each in a process group of its own that dies with the harness, killed as a group, and
// reaped in the background when nobody waits for its end (worker.hpp, pool.hpp).
#pragma once
#include <string>
#include <vector>

#include "trial.hpp"

namespace nvfp4 {

// This process's environment with `extra` replacing entries of the same name.
std::vector<std::string> child_environment(const EnvOverrides& extra);
// Starts `args` (args[0]: the binary) in its own process group, with this process's environment
// plus `env`, stdin from `in_fd`, stdout and stderr to `log_fd` (-1: inherited), `keep_fd` left
// open across exec (-1: none). The child dies with the harness (PR_SET_PDEATHSIG). Returns its pid.
int spawn_child(std::vector<std::string> args, const EnvOverrides& env, int in_fd, int log_fd, int keep_fd);
// spawn_child with the environment given whole (child_environment's); `args` and `env` stay the
// caller's (the child's argv and envp point into them until it has exec'd).
int spawn_prepared(std::vector<std::string>& args, std::vector<std::string>& env, int in_fd, int log_fd, int keep_fd);
// SIGKILL to the process group `pid` leads, and to `pid` itself.
void kill_group(int pid);
// Waits for `pid` (already killed, or about to exit) on a thread of its own.
void reap_in_background(int pid);

// What /proc says about other processes (Linux): a process's command line for a report ("" when
// gone), its parent, process group and state (false when gone), every pid, and the processes other
// than this one that hold a descriptor of the pipe whose inode is `ino`.
std::string command_of(int pid);
bool proc_stat(int pid, int* ppid, int* pgid, char* state);
std::vector<int> all_pids();
std::vector<int> pipe_holders(unsigned long ino);

}  // namespace nvfp4
