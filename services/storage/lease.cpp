#include "services/storage/lease.h"

#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <utility>

#include "services/storage/storage_validation.h"

namespace agileos::services::storage {
namespace {

using Clock = std::chrono::steady_clock;

void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// The poller's thread: named for ps/top, and a timer slack well below the default 50 µs, so
// that kIdleSleep is about what the thread sleeps.
void setUpPollerThread(std::uint32_t index) {
  char name[16];
  std::snprintf(name, sizeof(name), "storage-poll%u", index);
  ::pthread_setname_np(::pthread_self(), name);
  ::prctl(PR_SET_TIMERSLACK, 5000UL, 0, 0, 0);
}

}  // namespace

std::unique_ptr<Lease> Lease::attach(const LeaseRequest& request, BufferBackend& backend,
                                     const OpenFiles& files, ServiceCounters& counters, int* error,
                                     std::string* reason) {
  std::unique_ptr<Lease> lease(new Lease(request.name, backend, files, counters));
  if (int attached =
          lease->queue_.attach(request.queue_fd, request.queue_bytes, request.buffer_bytes, reason);
      attached != 0) {
    *reason = "queue: " + *reason;
    *error = attached;
    return nullptr;
  }
  const agileos_storage_queue_header& header = lease->queue_.header();
  lease->buffer_ = backend.import(request.buffer_fd, request.buffer_bytes, error, reason);
  if (lease->buffer_ == nullptr) {
    *reason = std::string("data buffer (") + backend.name() + " backend): " + *reason;
    return nullptr;  // ~Lease unmaps the queue
  }
  const std::uint32_t pollers = std::max<std::uint32_t>(1, std::min(request.threads, header.slots));
  for (std::uint32_t k = 0; k < pollers; ++k) {
    lease->writers_.push_back(lease->buffer_->makeWriter(header.slot_bytes, reason));
    if (lease->writers_.back() == nullptr) {
      *reason = std::string("data buffer (") + backend.name() + " backend): " + *reason;
      *error = -ENOMEM;
      return nullptr;
    }
  }
  try {
    for (std::uint32_t k = 0; k < pollers; ++k) {
      lease->pollers_.emplace_back(&Lease::poll, lease.get(), k, pollers, lease->writers_[k].get());
    }
  } catch (const std::system_error& failure) {  // no thread to be had: refused, not fatal
    *reason = std::string("starting the pollers: ") + failure.what();
    *error = -EAGAIN;
    return nullptr;  // ~Lease stops the pollers already started
  }
  return lease;
}

void Lease::revoke() {
  stop_.store(true, std::memory_order_relaxed);
  for (std::thread& poller : pollers_) poller.join();
  pollers_.clear();
  registered_.clear();  // no poller is left to hold one: released at once
  writers_.clear();     // before the buffer they write to
  buffer_.reset();
  queue_.detach();
}

std::int64_t Lease::registerBuffer(const BufferRegistration& registration, std::string* reason) {
  if (int bad = checkBufferRegistration(registration.handle_bytes, registration.buffer_offset,
                                        registration.buffer_bytes, reason);
      bad != 0) {
    return bad;
  }
  // Checked before importing, not only by add(): a refused registration maps nothing.
  if (registered_.full()) {
    *reason = std::to_string(kMaxRegisteredBuffers) + " buffers already registered";
    return -EMFILE;
  }
  int error = 0;
  std::unique_ptr<ImportedBuffer> import =
      backend_.import(registration.fd, registration.handle_bytes, &error, reason);
  if (import == nullptr) {
    *reason = std::string(backend_.name()) + " backend: " + *reason;
    return error;
  }
  RegisteredBuffer buffer;
  buffer.import = std::move(import);
  buffer.offset = registration.buffer_offset;
  buffer.bytes = registration.buffer_bytes;
  const std::int64_t id = registered_.add(std::move(buffer));
  if (id < 0) *reason = std::to_string(kMaxRegisteredBuffers) + " buffers already registered";
  return id;
}

void Lease::poll(std::uint32_t first_slot, std::uint32_t stride, SlotWriter* writer) {
  setUpPollerThread(first_slot);
  const std::uint32_t slots = queue_.header().slots;
  std::vector<std::uint32_t> last_served;  // last_served[j]: slot first_slot + j * stride
  for (std::uint32_t slot = first_slot; slot < slots; slot += stride) {
    last_served.push_back(queue_.completedSequence(slot));
  }
  Clock::time_point last_work = Clock::now();
  while (!stop_.load(std::memory_order_relaxed)) {
    bool worked = false;
    for (std::uint32_t j = 0, slot = first_slot; slot < slots; ++j, slot += stride) {
      if (stop_.load(std::memory_order_relaxed)) return;
      const std::uint32_t sequence = queue_.submittedSequence(slot);
      if (sequence == last_served[j]) continue;
      const Submission copy = queue_.readSubmission(slot, sequence);
      queue_.complete(slot, sequence, serve(slot, copy, writer));
      last_served[j] = sequence;
      worked = true;
    }
    if (worked) {
      last_work = Clock::now();
      continue;
    }
    const Clock::duration idle = Clock::now() - last_work;
    if (idle < kSpinBeforeSleep) {
      for (int i = 0; i < 16; ++i) cpuRelax();
    } else {
      std::this_thread::sleep_for(idle < kDeepIdleAfter ? kIdleSleep : kDeepIdleSleep);
    }
  }
}

std::int64_t Lease::serve(std::uint32_t slot, const Submission& submission, SlotWriter* writer) {
  const std::uint32_t slot_bytes = queue_.header().slot_bytes;
  if (int bad = checkSubmission(submission, slot_bytes); bad != 0) {
    noteRefusal(slot, submission, bad, "bad size or offset");
    return bad;
  }
  const std::shared_ptr<const OpenFile> file = files_.find(submission.file);
  if (file == nullptr) {
    noteRefusal(slot, submission, -EBADF, "no such file handle");
    return -EBADF;
  }
  // Held until the write below is complete: unregistering waits for it.
  RegisteredBuffers::Ref target;
  if (submission.target != 0) {
    target = registered_.find(submission.target);
    if (target == nullptr) {
      noteRefusal(slot, submission, -EBADF, "no such registered buffer");
      return -EBADF;
    }
    if (int bad = checkTargetRange(submission, target->bytes); bad != 0) {
      noteRefusal(slot, submission, bad, "outside the registered buffer");
      return bad;
    }
  }
  std::byte* staging = writer->staging();
  std::size_t done = 0;
  while (done < submission.bytes) {  // short reads continue; 0 is the end of the file
    const ssize_t got = ::pread(file->fd.get(), staging + done, submission.bytes - done,
                                static_cast<off_t>(submission.offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      spdlog::warn("{}: slot {}: pread {}: {}", name_, slot, file->path, std::strerror(error));
      return -error;
    }
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  if (done > 0) {
    std::string reason;
    // Exactly `done` bytes into a registered range; checkTargetRange covered bytes >= done.
    const int written =
        target != nullptr
            ? writer->writeTo(*target->import, target->offset + submission.target_offset, done, &reason)
            : writer->write(std::uint64_t{slot} * slot_bytes, done, &reason);
    if (written != 0) {
      spdlog::error("{}: slot {}: writing {}: {}", name_, slot,
                    target != nullptr ? "registered buffer " + std::to_string(submission.target)
                                      : std::string("the data buffer"),
                    reason);
      return written;
    }
  }
  counters_.reads_completed.fetch_add(1, std::memory_order_relaxed);
  return static_cast<std::int64_t>(done);
}

void Lease::noteRefusal(std::uint32_t slot, const Submission& submission, std::int64_t result,
                        const std::string& why) {
  // Entries come from user kernels, which can submit bad ones as fast as they like.
  const bool first = !refusal_logged_.exchange(true, std::memory_order_relaxed);
  spdlog::log(first ? spdlog::level::warn : spdlog::level::debug,
              "{}: slot {}: refused entry (file {}, offset {}, bytes {}, target {}, target_offset {}): "
              "{} ({}){}",
              name_, slot, submission.file, submission.offset, submission.bytes, submission.target,
              submission.target_offset, why, result, first ? "; further refusals are logged at debug" : "");
}

}  // namespace agileos::services::storage
