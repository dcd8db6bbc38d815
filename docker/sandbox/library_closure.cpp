#include "docker/sandbox/library_closure.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>

namespace agileos::sandbox {
namespace {

// The system's dynamic loaders; the first that exists lists the libraries.
constexpr const char* kLoaders[] = {"/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"};
constexpr auto kListingTimeout = std::chrono::seconds(10);
constexpr int kMaxInterpreterDepth = 4;  // #! chains ("env python3" counts as one)

bool isRegularFile(const std::string& path) {
  struct stat status {};
  return ::stat(path.c_str(), &status) == 0 && S_ISREG(status.st_mode);
}

// Runs `argv` as uid/gid with `environment`, returns its stdout; false on a start failure or a
// timeout (killed). *exitStatus is the wait status.
bool runListing(const std::vector<std::string>& argv, const std::vector<std::string>& environment, uid_t uid,
                gid_t gid, std::string* output, int* exitStatus, std::string* error) {
  int pipeFds[2];
  if (::pipe2(pipeFds, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> env;
  for (const std::string& e : environment) env.push_back(const_cast<char*>(e.c_str()));
  env.push_back(nullptr);
  const pid_t child = ::fork();
  if (child < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    return false;
  }
  if (child == 0) {
    // Only async-signal-safe calls from here on.
    ::dup2(pipeFds[1], STDOUT_FILENO);
    const int devNull = ::open("/dev/null", O_RDWR);
    if (devNull >= 0) ::dup2(devNull, STDERR_FILENO);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::setgroups(0, nullptr) != 0 || ::setresgid(gid, gid, gid) != 0 || ::setresuid(uid, uid, uid) != 0) {
      ::_exit(126);
    }
    ::execve(args[0], args.data(), env.data());
    ::_exit(127);
  }
  ::close(pipeFds[1]);
  const auto deadline = std::chrono::steady_clock::now() + kListingTimeout;
  char buffer[4096];
  bool timedOut = false;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timedOut = true;
      break;
    }
    pollfd readable{pipeFds[0], POLLIN, 0};
    const int ready = ::poll(&readable, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t n = ::read(pipeFds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (output->size() < (1u << 20)) output->append(buffer, static_cast<std::size_t>(n));
  }
  ::close(pipeFds[0]);
  if (timedOut) ::kill(child, SIGKILL);
  while (::waitpid(child, exitStatus, 0) < 0 && errno == EINTR) {
  }
  if (timedOut) {
    *error = "listing the libraries of " + argv.back() + " took longer than 10 s";
    return false;
  }
  if (WIFEXITED(*exitStatus) && WEXITSTATUS(*exitStatus) == 126) {
    *error = "cannot take the sandbox's uid to list libraries";
    return false;
  }
  return true;
}

const char* systemLoader() {
  for (const char* loader : kLoaders) {
    if (isRegularFile(loader)) return loader;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> parseLoaderListing(const std::string& listing) {
  std::vector<std::string> paths;
  std::istringstream lines(listing);
  std::string line;
  while (std::getline(lines, line)) {
    std::string candidate = line;
    if (const auto arrow = line.find("=> "); arrow != std::string::npos) candidate = line.substr(arrow + 3);
    const auto start = candidate.find_first_not_of(" \t");
    if (start == std::string::npos || candidate[start] != '/') continue;
    candidate = candidate.substr(start);
    if (const auto address = candidate.rfind(" (0x"); address != std::string::npos) candidate.resize(address);
    paths.push_back(candidate);
  }
  return paths;
}

bool isDriverLibrary(const std::string& path) {
  // File-name prefixes of the driver's libraries and of the real runtimes the shims replace.
  // (Plain prefixes, not std::regex: GCC 12's <regex> trips -Wmaybe-uninitialized under ASan.)
  static constexpr std::string_view kPrefixes[] = {"libcuda.so", "libcuda-",   "libcudadebugger",
                                                   "libnvidia",  "libnvcuvid", "libnvoptix",
                                                   "libcudart",  "libnvrtc",   "libcufft"};
  const auto slash = path.rfind('/');
  const std::string_view name =
      slash == std::string::npos ? std::string_view(path) : std::string_view(path).substr(slash + 1);
  for (const std::string_view prefix : kPrefixes) {
    if (name.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

std::string scriptInterpreter(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string first;
  if (!in || !std::getline(in, first) || first.rfind("#!", 0) != 0) return {};
  std::istringstream words(first.substr(2));
  std::string interpreter;
  words >> interpreter;
  return interpreter;
}

bool resolveLibraryClosure(const std::string& program, const std::vector<std::string>& environment, uid_t uid,
                           gid_t gid, LibraryClosure* closure, std::string* error) {
  const char* loader = systemLoader();
  if (loader == nullptr) {
    *error = "no dynamic loader found on this host";
    return false;
  }
  std::set<std::string> files;
  std::string current = program;
  for (int depth = 0;; ++depth) {
    if (!isRegularFile(current)) {
      *error = current + " is not a regular file";
      return false;
    }
    files.insert(current);
    const std::string interpreter = scriptInterpreter(current);
    if (interpreter.empty()) break;
    if (depth == kMaxInterpreterDepth || interpreter[0] != '/') {
      *error = current + ": its #! interpreter must be an absolute path (at most 4 levels)";
      return false;
    }
    current = interpreter;
  }
  files.insert(loader);
  std::string listing;
  int status = 0;
  if (!runListing({loader, "--list", current}, environment, uid, gid, &listing, &status, error)) return false;
  const bool staticBinary = listing.find("not a dynamic executable") != std::string::npos ||
                            (WIFEXITED(status) && WEXITSTATUS(status) != 0 && listing.empty());
  if (!staticBinary && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    *error = "the dynamic loader could not list the libraries of " + current;
    return false;
  }
  for (const std::string& path : parseLoaderListing(listing)) files.insert(path);
  for (const std::string& path : files) {
    if (isDriverLibrary(path) && path != program) {
      closure->omitted.push_back(path);
    } else {
      closure->files.push_back(path);
    }
  }
  return true;
}

}  // namespace agileos::sandbox
