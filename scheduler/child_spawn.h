// spawnChild: how the daemon starts a child process (a worker or a service).
//
// Launch contract: argv as given (argv[0] is the executable; no PATH search), stdin on
// /dev/null, stdout/stderr shared with the daemon, optionally one descriptor of the daemon's
// placed at a fixed number in the child, every other descriptor closed at exec, every signal
// disposition and the signal mask reset, its own process group (so the daemon can signal the
// child and anything it started as one unit) and PR_SET_PDEATHSIG=SIGKILL (so it never outlives
// the daemon). Spawn from a long-lived thread: the death signal fires when the *thread* that
// forked exits. An exec failure (a missing binary, say) is detected before spawnChild returns.
//
// The caller reaps the child (waitpid on its pid only, never on "any child").
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace agileos::scheduler {

// A descriptor the child gets: `fd` of the daemon's, as descriptor `as` in the child (> 2).
struct PassedDescriptor {
  int fd = -1;  // -1: none
  int as = -1;
};

// Forks and execs `argv`. Returns the child's pid, or -1 with *error set (the child, if one was
// forked, is reaped then). The caller keeps ownership of `passed.fd`.
pid_t spawnChild(const std::vector<std::string>& argv, PassedDescriptor passed, std::string* error);

}  // namespace agileos::scheduler
