#include "services/storage/connection.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "proto/services/storage_protocol.h"
#include "services/storage/lease.h"
#include "services/storage/open_files.h"
#include "services/storage/storage_validation.h"
#include "services/storage/unique_fd.h"

namespace agileos::services::storage {
namespace {

// Room for more descriptors than any request takes, so that a request with too many is seen
// whole and refused; beyond this the kernel sets MSG_CTRUNC and closes the rest itself.
constexpr std::size_t kMaxReceivedFds = 8;

struct Message {
  agileos_storage_request request{};
  std::vector<UniqueFd> fds;
  std::string problem;  // non-empty: malformed, refused with -EINVAL
};

// Receives one message; false when the connection has ended (EOF, a zero-length message, which
// SEQPACKET cannot tell from EOF, or an error).
bool receiveMessage(int fd, Message* message) {
  char buffer[sizeof(agileos_storage_request) + 1];  // one byte more: a longer message shows
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxReceivedFds)];
  iovec io{buffer, sizeof(buffer)};
  msghdr header{};
  header.msg_iov = &io;
  header.msg_iovlen = 1;
  header.msg_control = control;
  header.msg_controllen = sizeof(control);
  ssize_t received;
  do {
    received = ::recvmsg(fd, &header, MSG_CMSG_CLOEXEC);
  } while (received < 0 && errno == EINTR);
  if (received <= 0) return false;
  for (cmsghdr* c = CMSG_FIRSTHDR(&header); c != nullptr; c = CMSG_NXTHDR(&header, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int received_fd;
      std::memcpy(&received_fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      message->fds.emplace_back(received_fd);
    }
  }
  if (header.msg_flags & MSG_CTRUNC) {
    message->problem = "more than " + std::to_string(kMaxReceivedFds) + " descriptors";
  } else if (static_cast<std::size_t>(received) != sizeof(agileos_storage_request) ||
             (header.msg_flags & MSG_TRUNC)) {
    message->problem = "a message of " + std::to_string(received) +
                       (header.msg_flags & MSG_TRUNC ? "+" : "") + " bytes, not one request (" +
                       std::to_string(sizeof(agileos_storage_request)) + ")";
  } else {
    std::memcpy(&message->request, buffer, sizeof(message->request));
  }
  return true;
}

// A client's path for the log: printable ASCII, anything else as \xNN.
std::string printable(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char escaped[5];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", c);
      out += escaped;
    }
  }
  return out;
}

const char* opName(std::uint32_t op) {
  switch (op) {
    case AGILEOS_STORAGE_HELLO:
      return "HELLO";
    case AGILEOS_STORAGE_ATTACH:
      return "ATTACH";
    case AGILEOS_STORAGE_OPEN:
      return "OPEN";
    case AGILEOS_STORAGE_CLOSE:
      return "CLOSE";
    case AGILEOS_STORAGE_STATS:
      return "STATS";
    case AGILEOS_STORAGE_DETACH:
      return "DETACH";
    case AGILEOS_STORAGE_REGISTER_BUFFER:
      return "REGISTER_BUFFER";
    case AGILEOS_STORAGE_UNREGISTER_BUFFER:
      return "UNREGISTER_BUFFER";
    default:
      return "unknown op";
  }
}

class Connection {
 public:
  Connection(int fd, std::uint64_t id, const ServiceContext& context)
      : fd_(fd), context_(context), name_("connection " + std::to_string(id)) {}

  void run() {
    Message message;
    while (receiveMessage(fd_, &message)) {
      const agileos_storage_reply reply = handle(message);
      message = Message{};  // closes the descriptors received before the reply goes out
      // MSG_NOSIGNAL: a peer that went away ends the connection at the next receive, not the
      // service with SIGPIPE.
      if (::send(fd_, &reply, sizeof(reply), MSG_NOSIGNAL) < 0) {
        spdlog::debug("{}: reply not sent: {}", name_, std::strerror(errno));
      }
    }
    if (lease_ != nullptr) {
      const bool stopping =
          context_.stopping != nullptr && context_.stopping->load(std::memory_order_acquire);
      endLease(stopping ? "the service is stopping" : "its connection closed");
    }
    files_.clear();
  }

 private:
  agileos_storage_reply handle(Message& message) {
    agileos_storage_reply reply{};
    const agileos_storage_request& request = message.request;
    if (!message.problem.empty()) {
      return refuse(&reply, -EINVAL, "request", message.problem);
    }
    const std::size_t wanted_fds = request.op == AGILEOS_STORAGE_ATTACH            ? 2
                                   : request.op == AGILEOS_STORAGE_REGISTER_BUFFER ? 1
                                                                                   : 0;
    if (message.fds.size() != wanted_fds) {
      return refuse(
          &reply, -EINVAL, opName(request.op),
          std::to_string(message.fds.size()) + " descriptors, " + std::to_string(wanted_fds) + " expected");
    }
    if (request.version != AGILEOS_STORAGE_PROTOCOL_VERSION) {
      return refuse(&reply, -EPROTONOSUPPORT, opName(request.op),
                    "protocol version " + std::to_string(request.version) + ", the service speaks " +
                        std::to_string(AGILEOS_STORAGE_PROTOCOL_VERSION));
    }
    switch (request.op) {
      case AGILEOS_STORAGE_HELLO:
        break;
      case AGILEOS_STORAGE_ATTACH:
        attach(request, message.fds, &reply);
        break;
      case AGILEOS_STORAGE_OPEN:
        open(request, &reply);
        break;
      case AGILEOS_STORAGE_CLOSE:
        reply.status = files_.close(request.file);
        if (reply.status != 0)
          refuse(&reply, reply.status, "CLOSE", "file " + std::to_string(request.file) + " not open");
        break;
      case AGILEOS_STORAGE_STATS:
        stats(&reply);
        break;
      case AGILEOS_STORAGE_DETACH:
        if (lease_ == nullptr) return refuse(&reply, -ENOENT, "DETACH", "no lease attached");
        endLease("DETACH");
        break;
      case AGILEOS_STORAGE_REGISTER_BUFFER:
        registerBuffer(request, message.fds[0].get(), &reply);
        break;
      case AGILEOS_STORAGE_UNREGISTER_BUFFER:
        unregisterBuffer(request, &reply);
        break;
      default:
        return refuse(&reply, -EOPNOTSUPP, "request", "unknown op " + std::to_string(request.op));
    }
    return reply;
  }

  agileos_storage_reply refuse(agileos_storage_reply* reply, int status, const char* what,
                               const std::string& why) {
    spdlog::warn("{}: {} refused: {} ({})", name_, what, why, std::strerror(-status));
    reply->status = status;
    return *reply;
  }

  void attach(const agileos_storage_request& request, std::vector<UniqueFd>& fds,
              agileos_storage_reply* reply) {
    if (attached_once_) {
      refuse(reply, -EBUSY, "ATTACH", "this connection already had its lease");
      return;
    }
    LeaseRequest lease_request;
    lease_request.queue_fd = fds[0].get();
    lease_request.buffer_fd = fds[1].get();
    lease_request.queue_bytes = request.queue_bytes;
    lease_request.buffer_bytes = request.buffer_bytes;
    lease_request.threads = context_.threads;
    lease_request.name = name_ + " (client " + std::to_string(request.client_id) + ")";
    int error = 0;
    std::string reason;
    lease_ = Lease::attach(lease_request, *context_.backend, files_, *context_.counters, &error, &reason);
    if (lease_ == nullptr) {
      refuse(reply, error, "ATTACH", reason);
      return;
    }
    attached_once_ = true;
    name_ = lease_request.name;
    context_.counters->active_leases.fetch_add(1, std::memory_order_relaxed);
    context_.counters->leases_served.fetch_add(1, std::memory_order_relaxed);
    spdlog::info("{}: lease attached: {} slots of {} bytes, {} pollers, {} backend", name_,
                 lease_->header().slots, lease_->header().slot_bytes, lease_->pollers(),
                 context_.backend->name());
  }

  void registerBuffer(const agileos_storage_request& request, int fd, agileos_storage_reply* reply) {
    if (lease_ == nullptr) {
      refuse(reply, -ENOENT, "REGISTER_BUFFER", "no lease attached");
      return;
    }
    BufferRegistration registration;
    registration.fd = fd;
    registration.handle_bytes = request.handle_bytes;
    registration.buffer_offset = request.buffer_offset;
    registration.buffer_bytes = request.buffer_bytes;
    std::string reason;
    const std::int64_t id = lease_->registerBuffer(registration, &reason);
    if (id < 0) {
      refuse(reply, static_cast<int>(id), "REGISTER_BUFFER", reason);
      return;
    }
    reply->buffer = static_cast<std::uint32_t>(id);
    spdlog::debug("{}: registered buffer {}: [{}, +{}) of a {}-byte allocation", name_, id,
                  request.buffer_offset, request.buffer_bytes, request.handle_bytes);
  }

  // Replies once no write to the buffer is in progress and its import is released.
  void unregisterBuffer(const agileos_storage_request& request, agileos_storage_reply* reply) {
    if (lease_ == nullptr) {
      refuse(reply, -ENOENT, "UNREGISTER_BUFFER", "no lease attached");
      return;
    }
    if (int removed = lease_->unregisterBuffer(request.buffer); removed != 0) {
      refuse(reply, removed, "UNREGISTER_BUFFER",
             "buffer " + std::to_string(request.buffer) + " not registered");
      return;
    }
    spdlog::debug("{}: unregistered buffer {}", name_, request.buffer);
  }

  void open(const agileos_storage_request& request, agileos_storage_reply* reply) {
    std::string path;
    if (int bad = checkOpenPath(request, &path); bad != 0) {
      refuse(reply, bad, "OPEN", "bad path (path_bytes " + std::to_string(request.path_bytes) + ")");
      return;
    }
    std::uint64_t file_bytes = 0;
    const int opened = openBeneath(context_.root_fd, path, &file_bytes);
    if (opened < 0) {
      refuse(reply, opened, "OPEN", "\"" + printable(path) + "\"");
      return;
    }
    const std::int64_t handle = files_.add(UniqueFd(opened), path);
    if (handle < 0) {
      refuse(reply, static_cast<int>(handle), "OPEN", "too many open files");
      return;
    }
    reply->file = static_cast<std::uint32_t>(handle);
    reply->file_bytes = file_bytes;
    spdlog::debug("{}: opened \"{}\" as file {} ({} bytes)", name_, printable(path), handle, file_bytes);
  }

  void stats(agileos_storage_reply* reply) const {
    const ServiceCounters& counters = *context_.counters;
    reply->active_leases = counters.active_leases.load(std::memory_order_relaxed);
    reply->leases_served = counters.leases_served.load(std::memory_order_relaxed);
    reply->reads_completed = counters.reads_completed.load(std::memory_order_relaxed);
    reply->leases_revoked = counters.leases_revoked.load(std::memory_order_relaxed);
  }

  // Revokes the lease (pollers stopped, registered buffers, buffer and queue released) and
  // closes the files.
  void endLease(const char* cause) {
    lease_->revoke();
    lease_.reset();
    files_.clear();
    context_.counters->active_leases.fetch_sub(1, std::memory_order_relaxed);
    context_.counters->leases_revoked.fetch_add(1, std::memory_order_relaxed);
    spdlog::info("{}: lease revoked ({})", name_, cause);
  }

  const int fd_;
  const ServiceContext& context_;
  std::string name_;
  OpenFiles files_;
  std::unique_ptr<Lease> lease_;  // declared after files_: a lease's pollers use them
  bool attached_once_ = false;
};

}  // namespace

void serveConnection(int fd, std::uint64_t connection_id, const ServiceContext& context) {
  Connection connection(fd, connection_id, context);
  connection.run();
}

}  // namespace agileos::services::storage
