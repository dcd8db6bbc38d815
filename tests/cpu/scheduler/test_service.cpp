// test_service: a stand-in for an AgileOS service, for the ServiceSupervisor tests. It listens
// on the unix socket the daemon names with --socket and accepts (and at once closes) every
// connection, until its options say otherwise:
//
//   --socket PATH        where to listen (required; the daemon appends it)
//   --never-listen       do not create the socket (a service that never becomes ready)
//   --exit-after-ms N    exit N ms after starting, with --exit-code (default 3)
//   --exit-code C
//   --ignore-sigterm     SIGTERM does nothing (the supervisor must escalate to SIGKILL)
//   --pid-file FILE      append "<pid>\n" to FILE at start
//   anything else        ignored (stands for the service's own configured args)
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

struct Options {
  std::string socket;
  bool never_listen = false;
  long exit_after_ms = -1;  // -1: never
  int exit_code = 3;
  bool ignore_sigterm = false;
  std::string pid_file;
};

int listenOn(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) return -1;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 || ::listen(fd, 16) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--socket" && has_value) {
      options.socket = argv[++i];
    } else if (arg == "--never-listen") {
      options.never_listen = true;
    } else if (arg == "--exit-after-ms" && has_value) {
      options.exit_after_ms = std::strtol(argv[++i], nullptr, 10);
    } else if (arg == "--exit-code" && has_value) {
      options.exit_code = static_cast<int>(std::strtol(argv[++i], nullptr, 10));
    } else if (arg == "--ignore-sigterm") {
      options.ignore_sigterm = true;
    } else if (arg == "--pid-file" && has_value) {
      options.pid_file = argv[++i];
    }
  }
  if (options.socket.empty()) {
    std::fprintf(stderr, "test_service: --socket is required\n");
    return 2;
  }
  if (options.ignore_sigterm) ::signal(SIGTERM, SIG_IGN);
  if (!options.pid_file.empty()) {
    if (FILE* out = std::fopen(options.pid_file.c_str(), "a"); out != nullptr) {
      std::fprintf(out, "%d\n", static_cast<int>(::getpid()));
      std::fclose(out);
    }
  }

  int listener = -1;
  if (!options.never_listen) {
    listener = listenOn(options.socket);
    if (listener < 0) {
      std::fprintf(stderr, "test_service: cannot listen on %s: %s\n", options.socket.c_str(),
                   std::strerror(errno));
      return 4;
    }
  }
  const auto exit_at = std::chrono::steady_clock::now() + std::chrono::milliseconds(options.exit_after_ms);
  for (;;) {
    int timeout_ms = -1;
    if (options.exit_after_ms >= 0) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(exit_at - std::chrono::steady_clock::now());
      if (left.count() <= 0) return options.exit_code;
      timeout_ms = static_cast<int>(left.count());
    }
    pollfd fd{listener, POLLIN, 0};  // a negative fd is ignored: poll only sleeps
    if (::poll(&fd, 1, timeout_ms) > 0 && (fd.revents & POLLIN) != 0) {
      const int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (client >= 0) ::close(client);
    }
  }
}
