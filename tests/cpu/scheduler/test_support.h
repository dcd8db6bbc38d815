// Helpers shared by the scheduler tests: temporary directories, condition waits (tests wait
// for conditions with generous timeouts and never assert durations), the mock worker's event
// log, and pool options that run mock_worker.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "scheduler/worker_pool.h"
#include "tests/cpu/support/temp_dir.h"

namespace agileos::scheduler::testing {

// Absolute paths of the helper binaries, set by CMake.
inline const char* const kMockWorker = AGILEOS_MOCK_WORKER;
inline const char* const kAgileosd = AGILEOSD_BINARY;
inline const char* const kTestService = AGILEOS_TEST_SERVICE;
inline const char* const kWorkerFake = AGILEOS_WORKER_FAKE;  // the real worker on the fake GPU

inline constexpr std::chrono::milliseconds kGenerousTimeout{20000};

using TempDir = agileos::test_support::TempDir;

// Polls `condition` every few milliseconds; true once it holds, false after `timeout`.
bool waitUntil(const std::function<bool()>& condition, std::chrono::milliseconds timeout = kGenerousTimeout);

void writeFile(const std::string& path, const std::string& text);
std::vector<std::string> readLines(const std::string& path);

// The mock workers' shared event log.
class MockEvents {
 public:
  explicit MockEvents(std::string path) : path_(std::move(path)) {}
  const std::string& path() const { return path_; }
  std::vector<std::string> lines() const { return readLines(path_); }
  // Lines containing every one of `parts`.
  std::vector<std::string> matching(const std::vector<std::string>& parts) const;
  std::size_t count(const std::vector<std::string>& parts) const { return matching(parts).size(); }
  bool waitFor(const std::vector<std::string>& parts, std::size_t times = 1) const;
  // The pid mock worker `worker_id` logged at start, or 0.
  pid_t pidOf(std::uint64_t worker_id) const;

 private:
  std::string path_;
};

// True once `pid` no longer runs (gone, or a zombie that someone else must reap).
bool processGone(pid_t pid);

// Pool options that start mock_worker with `mock_args` (plus --event-log=<dir>/events.log)
// and sockets in `dir`. Timeouts are long (tests never race them) except the backoff.
PoolOptions mockPoolOptions(const TempDir& dir, std::vector<std::string> mock_args = {});

std::string hex(const std::string& bytes);

// Runs argv to completion; stdout and stderr are captured together.
struct ProcessResult {
  int exit_code = -1;  // -1 if it did not exit normally
  std::string output;
};
ProcessResult runProcess(const std::vector<std::string>& argv);

// Starts argv in the background with stdout and stderr appended to `log_path`.
pid_t startProcess(const std::vector<std::string>& argv, const std::string& log_path);

// Waits (up to the generous timeout) for `pid` to exit; its exit code, or -1 (signal, timeout).
int waitForExit(pid_t pid);

}  // namespace agileos::scheduler::testing
