// mock_worker: a stand-in for agileos-worker that speaks only the daemon <-> worker control
// protocol (worker_control.proto over the --control-fd channel). It serves no gRPC calls.
//
// Daemon-owned flags (all required, as the real worker requires them):
//   --control-fd=N --endpoint=E --device=D --worker-id=I --log-level=L
// Test flags (from worker.args):
//   --event-log=PATH   append one line per event: "worker=<id> pid=<pid> <event>"; an attach
//                      logs its client, token, guard setting and modules (in attach order)
//   --mode=M           normal (default) | fail-start | never-ready | crash-after-attach |
//                      ignore-shutdown (also ignores SIGTERM) | wrong-ack (acknowledges an
//                      attach with the wrong client id) | usage (after each attach, reports the
//                      client's usage twice: 1 MiB held, 7 calls, 2 then 5 guard hits, and
//                      3 mem_alloc calls) | foreign-usage (after each attach, reports usage of
//                      a client it was never given) | wrong-device (reports ready on the device
//                      after the one it was started for)
//   --device-memory=N  the device memory it reports when ready (default 0: unknown); an attach
//                      logs the client's memory quota as quota=N, its pinned host share as
//                      pinned=N|none (and its uid as uid=U)
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "agileos/v1/worker_control.pb.h"
#include "proto/framing.h"

namespace {

using agileos::v1::internal::DaemonToWorker;
using agileos::v1::internal::WorkerToDaemon;

int g_event_log = -1;
std::string g_worker_id = "?";

void logEvent(const std::string& event) {
  if (g_event_log < 0) return;
  const std::string line =
      "worker=" + g_worker_id + " pid=" + std::to_string(::getpid()) + " " + event + "\n";
  (void)!::write(g_event_log, line.data(), line.size());  // one O_APPEND write: lines never interleave
}

// The descriptors open in this process, e.g. "0,1,2,3" (the event log's own fd excluded).
std::string openDescriptors() {
  std::string out;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return "unknown";
  std::map<int, bool> fds;
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    const int fd = std::atoi(entry->d_name);
    if (fd != ::dirfd(dir) && fd != g_event_log) fds[fd] = true;
  }
  ::closedir(dir);
  for (const auto& [fd, unused] : fds) out += (out.empty() ? "" : ",") + std::to_string(fd);
  return out;
}

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char byte : bytes) {
    out += digits[byte >> 4];
    out += digits[byte & 15];
  }
  return out;
}

// The attach's modules in order, "name@version(ptx|host_library|service)" joined by ','; "" if none.
std::string describeModules(const agileos::v1::internal::AttachClient& attach) {
  std::string out;
  for (const auto& module : attach.modules()) {
    out += (out.empty() ? "" : ",") + module.name() + "@" + module.version() + "(" + module.ptx_path() + "|" +
           module.host_library_path() + "|" + module.service() + ")";
  }
  return out;
}

bool send(int fd, const WorkerToDaemon& message) {
  return agileos::wire::writeFrame(fd, message) == agileos::wire::FrameStatus::kOk;
}

}  // namespace

void listenAtEndpoint(const std::string& endpoint) {
  if (endpoint.rfind("unix:", 0) != 0) return;
  const std::string path = endpoint.substr(5);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) return;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const mode_t previous = ::umask(0177);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(fd, 1) != 0) {
    logEvent("cannot listen at " + path);
  }
  ::umask(previous);
}

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::size_t eq = arg.find('=');
    if (arg.rfind("--", 0) != 0 || eq == std::string::npos) {
      std::fprintf(stderr, "mock_worker: unexpected argument '%s'\n", arg.c_str());
      return 2;
    }
    flags[arg.substr(2, eq - 2)] = arg.substr(eq + 1);
  }
  if (flags.count("event-log") != 0) {
    g_event_log = ::open(flags["event-log"].c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  }
  for (const char* required : {"control-fd", "endpoint", "device", "worker-id", "log-level"}) {
    if (flags.count(required) == 0) {
      std::fprintf(stderr, "mock_worker: missing --%s\n", required);
      logEvent(std::string("missing-flag ") + required);
      return 2;
    }
  }
  g_worker_id = flags["worker-id"];
  ::signal(SIGPIPE, SIG_IGN);  // a daemon that hung up shows as a failed write, not a signal
  const int control = std::atoi(flags["control-fd"].c_str());
  const std::string mode = flags.count("mode") != 0 ? flags["mode"] : "normal";
  logEvent("start endpoint=" + flags["endpoint"] + " device=" + flags["device"] +
           " log-level=" + flags["log-level"] + " fds=" + openDescriptors());

  if (mode == "ignore-shutdown") ::signal(SIGTERM, SIG_IGN);
  if (mode == "fail-start") {
    WorkerToDaemon failed;
    failed.mutable_failed()->set_reason("mock: configured to fail at start");
    send(control, failed);
    logEvent("failed");
    return 1;
  }
  if (mode != "never-ready") {
    // Like the real worker: a listening socket, mode 0600, at the endpoint (the daemon records it
    // and gives it to each attached client's uid). Nothing is ever accepted on it.
    listenAtEndpoint(flags["endpoint"]);
    WorkerToDaemon ready;
    ready.mutable_ready()->set_endpoint(flags["endpoint"]);
    ready.mutable_ready()->set_device(std::atoi(flags["device"].c_str()) + (mode == "wrong-device" ? 1 : 0));
    ready.mutable_ready()->set_device_name("mock device");
    if (flags.count("device-memory") != 0) {
      ready.mutable_ready()->set_device_memory_bytes(
          std::strtoull(flags["device-memory"].c_str(), nullptr, 10));
    }
    if (!send(control, ready)) {
      logEvent("control-closed");
      return 0;
    }
    logEvent("ready");
  }

  while (true) {
    DaemonToWorker message;
    const agileos::wire::FrameStatus status = agileos::wire::readFrame(control, &message);
    if (status == agileos::wire::FrameStatus::kClosed) {
      logEvent("control-closed");
      return 0;
    }
    if (status != agileos::wire::FrameStatus::kOk) {
      logEvent(std::string("control-error ") + agileos::wire::toString(status));
      return 3;
    }
    if (mode == "never-ready") continue;
    WorkerToDaemon reply;
    switch (message.msg_case()) {
      case DaemonToWorker::kAttach: {
        const auto client = message.attach().client_id();
        logEvent("attach client=" + std::to_string(client) + " token=" +
                 hex(message.attach().session_token()) + " guard=" + message.attach().guard_policy() +
                 (message.attach().allow_sass_only() ? " sass=allow" : " sass=refuse") +
                 (message.attach().guard_always() ? " always" : " when-protected") +
                 " modules=" + describeModules(message.attach()) +
                 " quota=" + std::to_string(message.attach().memory_quota_bytes()) + " pinned=" +
                 (message.attach().has_pinned_host_quota_bytes()
                      ? std::to_string(message.attach().pinned_host_quota_bytes())
                      : "none") +
                 " uid=" +
                 (message.attach().has_peer_uid() ? std::to_string(message.attach().peer_uid()) : "none"));
        reply.mutable_attached()->set_client_id(mode == "wrong-ack" ? client + 1000 : client);
        send(control, reply);
        if (mode == "usage" || mode == "foreign-usage") {
          for (std::uint64_t hits : {2, 5}) {
            WorkerToDaemon report;
            auto* usage = report.mutable_usage()->add_clients();
            usage->set_client_id(mode == "usage" ? client : client + 1000);
            usage->set_device_memory_bytes(1 << 20);
            usage->set_calls(7);
            usage->set_guard_hits(hits);
            auto* calls = report.mutable_usage()->add_operations();
            calls->set_operation("mem_alloc");
            calls->set_calls(3);
            calls->set_latency_ns_sum(3000);
            for (int i = 0; i < 15; ++i) calls->add_latency_buckets(i == 0 ? 3 : 0);
            report.mutable_usage()->set_bytes_host_to_device(4096);
            send(control, report);
          }
          logEvent("usage client=" + std::to_string(client));
        }
        if (mode == "crash-after-attach") {
          logEvent("crash");
          ::_exit(3);
        }
        break;
      }
      case DaemonToWorker::kRelease:
        logEvent("release client=" + std::to_string(message.release().client_id()));
        reply.mutable_released()->set_client_id(message.release().client_id());
        send(control, reply);
        break;
      case DaemonToWorker::kShutdown:
        if (mode == "ignore-shutdown") {
          logEvent("shutdown-ignored");
          break;
        }
        logEvent("shutdown");
        return 0;
      case DaemonToWorker::kModuleCacheKey:
        // The daemon's first message to a worker with a module cache (the test compares the key).
        logEvent("module-cache-key key=" + hex(message.module_cache_key().key()));
        break;
      case DaemonToWorker::MSG_NOT_SET:
        logEvent("empty-message");
        break;
    }
  }
}
