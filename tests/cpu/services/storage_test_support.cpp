#include "tests/cpu/services/storage_test_support.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "services/storage/storage_client.h"

extern char** environ;

namespace agileos::services::storage::testing {
namespace {

constexpr int kCallTimeoutMs = 10000;

agileos_storage_reply failedReply() {
  agileos_storage_reply reply{};
  reply.status = INT32_MIN;
  return reply;
}

void* mapShared(int fd, std::uint64_t bytes) {
  void* address = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (address == MAP_FAILED) throw std::runtime_error(std::string("mmap: ") + std::strerror(errno));
  return address;
}

UniqueFd makeMemfd(const char* name, std::uint64_t bytes) {
  UniqueFd fd(::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid() || ::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0)
    throw std::runtime_error(std::string("memfd: ") + std::strerror(errno));
  return fd;
}

}  // namespace

void writeFile(const std::string& path, const std::vector<std::byte>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::vector<std::byte> patternBytes(std::size_t count, std::uint32_t seed) {
  std::vector<std::byte> bytes(count);
  for (std::size_t i = 0; i < count; ++i) {
    bytes[i] = static_cast<std::byte>((i * 131 + (i >> 9) * 7 + seed * 17) & 0xff);
  }
  return bytes;
}

ServiceProcess::ServiceProcess(const std::string& socket, const std::string& root,
                               const std::vector<std::string>& extra)
    : socket_(socket) {
  std::vector<std::string> args = {AGILEOS_STORAGE_SERVICE_BINARY, "--socket", socket, "--root", root};
  if (std::find(extra.begin(), extra.end(), "--buffer-backend") == extra.end()) {
    args.insert(args.end(), {"--buffer-backend", "host"});
  }
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  if (::posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
    pid_ = -1;
    throw std::runtime_error("cannot start " + args[0]);
  }
}

ServiceProcess::~ServiceProcess() {
  if (pid_ > 0 && running()) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

bool ServiceProcess::waitUntilListening(std::chrono::milliseconds timeout) const {
  return eventually([this] { return connectTo(socket_).valid(); }, timeout);
}

bool ServiceProcess::running() {
  if (status_ != -1) return false;
  int status = 0;
  const pid_t waited = ::waitpid(pid_, &status, WNOHANG);
  if (waited == pid_) status_ = status;
  return waited == 0;
}

int ServiceProcess::stop(std::chrono::milliseconds timeout) {
  if (!running()) return status_;
  ::kill(pid_, SIGTERM);
  if (!eventually([this] { return !running(); }, timeout)) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    status_ = -2;
    return -1;
  }
  return status_;
}

UniqueFd connectTo(const std::string& socket) {
  int fd = -1;
  if (storageConnect(socket.c_str(), &fd) != 0) return UniqueFd();
  return UniqueFd(fd);
}

bool sendRaw(int fd, const void* bytes, std::size_t size, const std::vector<int>& fds) {
  iovec io{const_cast<void*>(bytes), size};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  if (!fds.empty()) {
    message.msg_control = control.data();
    message.msg_controllen = control.size();
    cmsghdr* c = CMSG_FIRSTHDR(&message);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  return ::sendmsg(fd, &message, MSG_NOSIGNAL) == static_cast<ssize_t>(size);
}

agileos_storage_reply call(int fd, const agileos_storage_request& request, const std::vector<int>& fds) {
  agileos_storage_reply reply{};
  if (storageCall(fd, request, fds.data(), fds.size(), &reply, kCallTimeoutMs) != 0) return failedReply();
  return reply;
}

agileos_storage_reply receiveReply(int fd) {
  agileos_storage_reply reply{};
  if (storageReceive(fd, &reply, kCallTimeoutMs) != 0) return failedReply();
  return reply;
}

agileos_storage_reply hello(int fd) { return call(fd, makeStorageRequest(AGILEOS_STORAGE_HELLO)); }
agileos_storage_reply stats(int fd) { return call(fd, makeStorageRequest(AGILEOS_STORAGE_STATS)); }
agileos_storage_reply detach(int fd) { return call(fd, makeStorageRequest(AGILEOS_STORAGE_DETACH)); }

agileos_storage_reply openFile(int fd, const std::string& path) {
  agileos_storage_request request = makeStorageRequest(AGILEOS_STORAGE_OPEN);
  request.path_bytes = static_cast<std::uint32_t>(path.size());
  std::memcpy(request.path, path.data(), std::min<std::size_t>(path.size(), sizeof(request.path)));
  return call(fd, request);
}

agileos_storage_reply closeFile(int fd, std::uint32_t file) {
  agileos_storage_request request = makeStorageRequest(AGILEOS_STORAGE_CLOSE);
  request.file = file;
  return call(fd, request);
}

agileos_storage_reply registerBuffer(int fd, const std::vector<int>& fds, std::uint64_t handle_bytes,
                                     std::uint64_t buffer_offset, std::uint64_t buffer_bytes) {
  agileos_storage_request request = makeStorageRequest(AGILEOS_STORAGE_REGISTER_BUFFER);
  request.handle_bytes = handle_bytes;
  request.buffer_offset = buffer_offset;
  request.buffer_bytes = buffer_bytes;
  // Through sendRaw: the client library sends at most kMaxRequestFds, and the tests send more.
  if (!sendRaw(fd, &request, sizeof(request), fds)) return failedReply();
  return receiveReply(fd);
}

agileos_storage_reply unregisterBuffer(int fd, std::uint32_t id) {
  agileos_storage_request request = makeStorageRequest(AGILEOS_STORAGE_UNREGISTER_BUFFER);
  request.buffer = id;
  return call(fd, request);
}

Pipe::Pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  read_end.reset(fds[0]);
  write_end.reset(fds[1]);
}

ClientBuffer::ClientBuffer(std::uint64_t bytes)
    : bytes_(bytes), fd_(makeMemfd("agileos-test-target", bytes)) {
  data_ = static_cast<std::byte*>(mapShared(fd_.get(), bytes_));
}

ClientBuffer::~ClientBuffer() { ::munmap(data_, bytes_); }

void ClientBuffer::fill(std::byte value) { std::memset(data_, static_cast<int>(value), bytes_); }

DeviceQueue::DeviceQueue(std::uint32_t slots, std::uint32_t slot_bytes)
    : slots_(slots),
      slot_bytes_(slot_bytes),
      queue_bytes_(AGILEOS_STORAGE_QUEUE_BYTES(slots)),
      buffer_bytes_(std::uint64_t{slots} * slot_bytes),
      queue_fd_(makeMemfd("agileos-test-queue", queue_bytes_)),
      buffer_fd_(makeMemfd("agileos-test-buffer", buffer_bytes_)) {
  queue_ = static_cast<std::byte*>(mapShared(queue_fd_.get(), queue_bytes_));
  buffer_ = static_cast<std::byte*>(mapShared(buffer_fd_.get(), buffer_bytes_));
  agileos_storage_queue_header& h = header();
  h.magic = AGILEOS_STORAGE_QUEUE_MAGIC;
  h.version = AGILEOS_STORAGE_PROTOCOL_VERSION;
  h.slots = slots;
  h.slot_bytes = slot_bytes;
}

DeviceQueue::~DeviceQueue() {
  ::munmap(queue_, queue_bytes_);
  ::munmap(buffer_, buffer_bytes_);
}

agileos_storage_queue_header& DeviceQueue::header() {
  return *reinterpret_cast<agileos_storage_queue_header*>(queue_);
}

agileos_storage_reply DeviceQueue::attach(int fd) {
  agileos_storage_request request = makeStorageRequest(AGILEOS_STORAGE_ATTACH);
  request.client_id = 7;
  request.queue_bytes = queue_bytes_;
  request.buffer_bytes = buffer_bytes_;
  return call(fd, request, {queue_fd_.get(), buffer_fd_.get()});
}

std::uint32_t DeviceQueue::submit(std::uint32_t slot, std::uint32_t file, std::uint64_t offset,
                                  std::uint32_t bytes, std::uint32_t target, std::uint64_t target_offset) {
  auto* entry = reinterpret_cast<agileos_storage_sqe*>(queue_ + AGILEOS_STORAGE_SQ_OFFSET) + slot;
  std::atomic_ref<std::uint64_t>(entry->offset).store(offset, std::memory_order_relaxed);
  std::atomic_ref<std::uint32_t>(entry->file).store(file, std::memory_order_relaxed);
  std::atomic_ref<std::uint32_t>(entry->bytes).store(bytes, std::memory_order_relaxed);
  std::atomic_ref<std::uint32_t>(entry->target).store(target, std::memory_order_relaxed);
  std::atomic_ref<std::uint64_t>(entry->target_offset).store(target_offset, std::memory_order_relaxed);
  std::atomic_ref<std::uint32_t> sequence(entry->sequence);
  const std::uint32_t next = sequence.load(std::memory_order_relaxed) + 1;
  sequence.store(next, std::memory_order_release);  // last: submits the entry
  return next;
}

std::uint32_t DeviceQueue::completedSequence(std::uint32_t slot) const {
  auto* entry = reinterpret_cast<agileos_storage_cqe*>(queue_ + AGILEOS_STORAGE_CQ_OFFSET(slots_)) + slot;
  return std::atomic_ref<std::uint32_t>(entry->sequence).load(std::memory_order_acquire);
}

bool DeviceQueue::waitCompletion(std::uint32_t slot, std::uint32_t sequence, std::int64_t* result,
                                 std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (completedSequence(slot) != sequence) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  auto* entry = reinterpret_cast<agileos_storage_cqe*>(queue_ + AGILEOS_STORAGE_CQ_OFFSET(slots_)) + slot;
  *result = std::atomic_ref<std::int64_t>(entry->result).load(std::memory_order_relaxed);
  return true;
}

std::span<const std::byte> DeviceQueue::slotData(std::uint32_t slot) const {
  return {buffer_ + std::uint64_t{slot} * slot_bytes_, slot_bytes_};
}

void DeviceQueue::fillSlot(std::uint32_t slot, std::byte value) {
  std::memset(buffer_ + std::uint64_t{slot} * slot_bytes_, static_cast<int>(value), slot_bytes_);
}

bool seesEndOfFile(int read_fd, std::chrono::milliseconds timeout) {
  pollfd entry{read_fd, POLLIN, 0};
  if (::poll(&entry, 1, static_cast<int>(timeout.count())) <= 0) return false;
  char byte;
  return ::read(read_fd, &byte, 1) == 0;
}

int mappingsMentioning(pid_t pid, const std::string& needle) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  int count = 0;
  for (std::string line; std::getline(maps, line);) count += line.find(needle) != std::string::npos;
  return count;
}

int descriptorsMentioning(pid_t pid, const std::string& needle) {
  int count = 0;
  std::error_code error;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", error)) {
    std::error_code ignored;
    const std::filesystem::path target = std::filesystem::read_symlink(entry.path(), ignored);
    count += target.string().find(needle) != std::string::npos;
  }
  return count;
}

}  // namespace agileos::services::storage::testing
