// How the storage service reaches a client's GPU memory. The worker exports it as a
// descriptor: the lease's data buffer at ATTACH, and any number of client allocations at
// REGISTER_BUFFER. A backend imports each (ImportedBuffer) and makes one SlotWriter per poller
// thread, through which that thread copies what it read into the data buffer's slots or into
// any buffer the same backend imported (writeTo).
//
//   cuda: the descriptor is a CUDA POSIX-fd shareable handle of device memory; the service maps
//         it in its own primary context (cuda_buffer_backend.h). What production uses.
//   host: the descriptor is a mappable file (a memfd in the CPU tests); writes are memcpy
//         (host_buffer_backend.h).
//
// Lifetime: every SlotWriter of an ImportedBuffer is destroyed before the ImportedBuffer, and
// the ImportedBuffer's destructor releases the import: after it, the service holds no access
// to the buffer (that is what revoking a lease, or ending a registration, means). A writeTo's
// target is kept alive by its caller for the duration of the call only.
//
// Thread-safety: import() may be called from several connection threads at once. A SlotWriter
// is used by one thread at a time (its poller); it may be made on another thread. An
// ImportedBuffer is immutable once imported: several writers may writeTo it at once, and it
// may be destroyed on any thread once no write to it is in progress.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace agileos::services::storage {

class ImportedBuffer;

// Whether [offset, offset + bytes) lies within [0, size), computed without overflow.
inline bool fitsWithin(std::uint64_t size, std::uint64_t offset, std::uint64_t bytes) {
  return bytes <= size && offset <= size - bytes;
}

class SlotWriter {
 public:
  virtual ~SlotWriter() = default;
  // At least the slot_bytes the writer was made for; what write() copies from.
  virtual std::byte* staging() = 0;
  // Copies staging()[0, bytes) to the buffer the writer was made for at buffer_offset (a
  // slot's start), and returns once the copy is complete (visible to the buffer's other users).
  // The caller keeps buffer_offset + bytes within the imported size. A writer may copy more,
  // zero-padded, up to the slot_bytes it was made for (the CUDA writer does, for speed) but
  // never past the slot. 0, or a negative errno with *reason set for the log.
  virtual int write(std::uint64_t buffer_offset, std::size_t bytes, std::string* reason) = 0;
  // Copies EXACTLY staging()[0, bytes) (bytes at most the writer's slot_bytes) to `target`
  // (imported by the same backend) at target_offset, and returns once the copy is complete.
  // No padding: the target is the client's own data, and nothing outside
  // [target_offset, target_offset + bytes) is written. 0, or a negative errno with *reason:
  // -ERANGE when that range is not within [0, target.size()) (fitsWithin), -EINVAL for a
  // target of another backend.
  virtual int writeTo(const ImportedBuffer& target, std::uint64_t target_offset, std::size_t bytes,
                      std::string* reason) = 0;
};

class ImportedBuffer {
 public:
  virtual ~ImportedBuffer() = default;
  // The bytes imported (and mapped): writes go to offsets within [0, size()).
  virtual std::uint64_t size() const = 0;
  // A writer with staging of at least slot_bytes; null with *reason on failure.
  virtual std::unique_ptr<SlotWriter> makeWriter(std::uint32_t slot_bytes, std::string* reason) = 0;
};

class BufferBackend {
 public:
  virtual ~BufferBackend() = default;
  virtual const char* name() const = 0;
  // Imports `bytes` of the buffer behind fd, from its start (the caller keeps fd and closes it
  // afterwards). Null with *error (a negative errno) and *reason on failure.
  virtual std::unique_ptr<ImportedBuffer> import(int fd, std::uint64_t bytes, int* error,
                                                 std::string* reason) = 0;
};

}  // namespace agileos::services::storage
