// agileos-nvrtc-compiler: runs one NVRTC compilation for the worker's NVRTC adapter, jailed
// (jail.h). Started by the adapter (worker/adapters/nvrtc/nvrtc_compiler_process.h) for every
// compilation; never by a client.
//
// Usage: agileos-nvrtc-compiler [--cpu-seconds=N] [--memory-mb=N] [--uid=N] [--gid=N]
//        agileos-nvrtc-compiler [limits] --probe=PATH   (tests: what the jail lets it reach)
// stdin: one request (nvrtc_wire.h), read to its end; stdout: the result (a pipe or a device:
// RLIMIT_FSIZE is 0, so writing to a regular file ends the process with SIGXFSZ).
// Exit status: 0 result written; 2 bad arguments or request; 3 the jail could not be set up
// (the reason on stderr; nothing was compiled); anything else, a signal included, is a failure
// the adapter reports (SIGXCPU / SIGKILL: the CPU time limit).
//
// Order (the invariant of the whole program): NVRTC and everything it loads lazily are loaded
// first, then the jail is set up, and only then is a byte of the request read.
#include <dirent.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "worker/adapters/nvrtc/compiler/jail.h"
#include "worker/adapters/nvrtc/compiler/nvrtc_compile.h"
#include "worker/adapters/nvrtc/nvrtc_wire.h"

namespace {

using namespace agileos::adapters::nvrtc;

// Source and headers are bounded by the adapter (64 MiB); the lists' framing adds little.
constexpr std::size_t kMaxRequestBytes = 80u << 20;

constexpr int kExitBadInput = 2;
constexpr int kExitNoJail = 3;

// Exits without running atexit handlers or static destructors (and so without LeakSanitizer's
// exit-time scan, which would need ptrace and /proc, both gone in the jail).
[[noreturn]] void quit(int status, std::string_view message = {}) {
  if (!message.empty()) {
    std::string line = "agileos-nvrtc-compiler: " + std::string(message) + "\n";
    [[maybe_unused]] const ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  }
  ::_exit(status);
}

bool parseNumber(std::string_view text, unsigned long long* value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return error == std::errc() && end == text.data() + text.size() && !text.empty();
}

bool writeAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t written = ::write(fd, bytes.data(), bytes.size());
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(written));
  }
  return true;
}

bool readAll(int fd, std::string* out) {
  char buffer[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return false;
    if (got == 0) return true;
    if (out->size() + static_cast<std::size_t>(got) > kMaxRequestBytes) return false;
    out->append(buffer, static_cast<std::size_t>(got));
  }
}

const char* errnoName(int error) {
  switch (error) {
    case 0:
      return "REACHED";
    case ENOENT:
      return "ENOENT";
    case EACCES:
      return "EACCES";
    case EPERM:
      return "EPERM";
    default:
      return "refused";
  }
}

// --probe: what a jailed compilation could reach, one line each ("<what>: REACHED" or the
// errno's name). For the CPU tests; runs after the same lockdown as a compilation.
void probe(const std::string& path) {
  std::string report;
  errno = 0;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  report += std::string("open ") + path + ": " + (fd >= 0 ? "REACHED" : errnoName(errno)) + "\n";
  if (fd >= 0) ::close(fd);
  struct stat status {};
  errno = 0;
  report += std::string("stat ") + path + ": " +
            (::stat(path.c_str(), &status) == 0 ? "REACHED" : errnoName(errno)) + "\n";
  errno = 0;
  fd = ::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  report += std::string("open /: ") + (fd >= 0 ? "REACHED" : errnoName(errno)) + "\n";
  if (fd >= 0) ::close(fd);
  errno = 0;
  fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  report += std::string("socket: ") + (fd >= 0 ? "REACHED" : errnoName(errno)) + "\n";
  if (fd >= 0) ::close(fd);
  report += "uid " + std::to_string(::getuid()) + " gid " + std::to_string(::getgid()) + "\n";
  writeAll(STDOUT_FILENO, report);
}

}  // namespace

int main(int argc, char** argv) {
  // Never outlive the worker thread that started this process. (Had it died before this line, stdin
  // is at its end: the request does not parse and the process exits.)
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);

  jail::Limits limits;
  std::string probePath;
  for (int i = 1; i < argc; ++i) {
    const std::string_view argument = argv[i];
    unsigned long long value = 0;
    auto numberAfter = [&](std::string_view prefix) {
      return argument.starts_with(prefix) && parseNumber(argument.substr(prefix.size()), &value);
    };
    if (numberAfter("--cpu-seconds=") && value > 0 && value <= 86400) {
      limits.cpuSeconds = static_cast<unsigned>(value);
    } else if (numberAfter("--memory-mb=") && value >= 256 && value <= (1ull << 24)) {
      limits.addressSpaceBytes = value << 20;
    } else if (numberAfter("--uid=") && value > 0 && value < 0xffffffffull) {
      limits.uid = static_cast<uid_t>(value);
    } else if (numberAfter("--gid=") && value > 0 && value < 0xffffffffull) {
      limits.gid = static_cast<gid_t>(value);
    } else if (argument.starts_with("--probe=")) {
      probePath = argument.substr(8);
    } else {
      quit(kExitBadInput, "unknown argument " + std::string(argument.substr(0, 64)));
    }
  }

  if (std::string error = jail::preloadNvrtc(); !error.empty())
    quit(kExitNoJail, "cannot load NVRTC: " + error);
  if (!jail::addressSpaceLimited()) {
    static constexpr std::string_view kNote =
        "agileos-nvrtc-compiler: sanitizer build: no address-space limit (test builds only)\n";
    [[maybe_unused]] const ssize_t ignored = ::write(STDERR_FILENO, kNote.data(), kNote.size());
  }
  if (std::string error = jail::lockDown(limits); !error.empty()) {
    quit(kExitNoJail, "refusing to compile: the jail could not be set up: " + error);
  }

  if (!probePath.empty()) {
    probe(probePath);
    quit(0);
  }
  std::string bytes;
  if (!readAll(STDIN_FILENO, &bytes)) quit(kExitBadInput, "the request cannot be read or is too large");
  const auto request = decodeRequest(bytes);
  if (!request) quit(kExitBadInput, "malformed request");
  bytes.clear();
  bytes.shrink_to_fit();
  const CompileResult result = compileRequest(*request);
  if (!writeAll(STDOUT_FILENO, encodeResult(result))) quit(1, "cannot write the result");
  quit(0);
}
