// Support for the storage service's CPU tests: the real agileos-storage-service binary on a
// temporary socket and root (host buffer backend), raw control messages, and a queue region
// plus memfd "data buffer" that the test writes as the device would.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <span>
#include <string>
#include <vector>

#include "proto/services/storage_protocol.h"
#include "services/storage/unique_fd.h"
#include "tests/cpu/support/temp_dir.h"

namespace agileos::services::storage::testing {

using TempDir = agileos::test_support::TempDir;

void writeFile(const std::string& path, const std::vector<std::byte>& bytes);
// Deterministic contents, different for each seed and offset.
std::vector<std::byte> patternBytes(std::size_t count, std::uint32_t seed);

// agileos-storage-service --socket SOCKET --root ROOT [--buffer-backend host] [extra args]
// (the host backend unless extra names one), its stderr inherited (ctest shows it on failure).
class ServiceProcess {
 public:
  ServiceProcess(const std::string& socket, const std::string& root,
                 const std::vector<std::string>& extra = {});
  ~ServiceProcess();  // SIGKILL if still running
  ServiceProcess(const ServiceProcess&) = delete;
  ServiceProcess& operator=(const ServiceProcess&) = delete;

  // True once a connection to the socket succeeds (within `timeout`).
  bool waitUntilListening(std::chrono::milliseconds timeout) const;
  bool running();
  // SIGTERM and wait; the wait status, or -1 after `timeout` (then SIGKILL).
  int stop(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  pid_t pid() const { return pid_; }

 private:
  std::string socket_;
  pid_t pid_ = -1;
  int status_ = -1;
};

// A connected control socket; -1 on failure.
UniqueFd connectTo(const std::string& socket);

// Sends `bytes` raw bytes of a message with `fds`, for malformed messages; false on failure.
bool sendRaw(int fd, const void* bytes, std::size_t size, const std::vector<int>& fds);

// The reply to `request`, or a reply with status INT32_MIN when the transport failed.
agileos_storage_reply call(int fd, const agileos_storage_request& request, const std::vector<int>& fds = {});
agileos_storage_reply receiveReply(int fd);
agileos_storage_reply hello(int fd);
agileos_storage_reply stats(int fd);
agileos_storage_reply openFile(int fd, const std::string& path);
agileos_storage_reply closeFile(int fd, std::uint32_t file);
agileos_storage_reply detach(int fd);
// REGISTER_BUFFER of [buffer_offset, +buffer_bytes) of a handle_bytes allocation behind `fds`
// (normally one descriptor); UNREGISTER_BUFFER of `id`.
agileos_storage_reply registerBuffer(int fd, const std::vector<int>& fds, std::uint64_t handle_bytes,
                                     std::uint64_t buffer_offset, std::uint64_t buffer_bytes);
agileos_storage_reply unregisterBuffer(int fd, std::uint32_t id);

// A pipe, close-on-exec: a descriptor to send that the tests can watch being closed
// (seesEndOfFile on read_end once the test closed its write_end).
struct Pipe {
  Pipe();
  UniqueFd read_end;
  UniqueFd write_end;
};

// A client allocation as the worker would register it: a memfd ("agileos-test-target") of
// `bytes`, mapped here, so that the test sees every byte the service writes.
class ClientBuffer {
 public:
  static constexpr const char* kMemfdName = "memfd:agileos-test-target";

  explicit ClientBuffer(std::uint64_t bytes);
  ~ClientBuffer();
  ClientBuffer(const ClientBuffer&) = delete;
  ClientBuffer& operator=(const ClientBuffer&) = delete;

  int fd() const { return fd_.get(); }
  std::uint64_t bytes() const { return bytes_; }
  std::span<std::byte> data() const { return {data_, bytes_}; }
  void fill(std::byte value);

 private:
  std::uint64_t bytes_;
  UniqueFd fd_;
  std::byte* data_ = nullptr;
};

// A queue region and data buffer as the plugin lays them out, both memfds mapped here; the
// test plays the device on them.
class DeviceQueue {
 public:
  DeviceQueue(std::uint32_t slots, std::uint32_t slot_bytes);
  ~DeviceQueue();
  DeviceQueue(const DeviceQueue&) = delete;
  DeviceQueue& operator=(const DeviceQueue&) = delete;

  std::uint32_t slots() const { return slots_; }
  std::uint32_t slotBytes() const { return slot_bytes_; }
  std::uint64_t queueBytes() const { return queue_bytes_; }
  std::uint64_t bufferBytes() const { return buffer_bytes_; }
  int queueFd() const { return queue_fd_.get(); }
  int bufferFd() const { return buffer_fd_.get(); }
  agileos_storage_queue_header& header();

  // ATTACH for this queue (client_id 7), and its descriptors.
  agileos_storage_reply attach(int fd);

  // Fills sq[slot] (target 0: into the slot) and then bumps its sequence; returns the new
  // sequence.
  std::uint32_t submit(std::uint32_t slot, std::uint32_t file, std::uint64_t offset, std::uint32_t bytes,
                       std::uint32_t target = 0, std::uint64_t target_offset = 0);
  // Waits for cq[slot].sequence == sequence; true and *result, or false after `timeout`.
  bool waitCompletion(std::uint32_t slot, std::uint32_t sequence, std::int64_t* result,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;
  std::uint32_t completedSequence(std::uint32_t slot) const;
  std::span<const std::byte> slotData(std::uint32_t slot) const;
  void fillSlot(std::uint32_t slot, std::byte value);

 private:
  std::uint32_t slots_;
  std::uint32_t slot_bytes_;
  std::uint64_t queue_bytes_;
  std::uint64_t buffer_bytes_;
  UniqueFd queue_fd_;
  UniqueFd buffer_fd_;
  std::byte* queue_ = nullptr;
  std::byte* buffer_ = nullptr;
};

// Polls `condition` every millisecond until true or `timeout`.
template <typename Condition>
bool eventually(Condition condition, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    struct timespec pause {
      0, 1000000
    };
    ::nanosleep(&pause, nullptr);
  }
  return true;
}

// Whether the read end of a pipe sees EOF (every write end closed) within `timeout`: how the
// tests see that the service closed a descriptor it was sent.
bool seesEndOfFile(int read_fd, std::chrono::milliseconds timeout = std::chrono::seconds(5));

// Lines of /proc/<pid>/maps and targets of /proc/<pid>/fd/* that mention `needle`.
int mappingsMentioning(pid_t pid, const std::string& needle);
int descriptorsMentioning(pid_t pid, const std::string& needle);

}  // namespace agileos::services::storage::testing
