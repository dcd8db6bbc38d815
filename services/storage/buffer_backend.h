// How the storage service reaches a lease's data buffer. The worker exports the buffer as a
// descriptor at ATTACH; a backend imports it (ImportedBuffer) and makes one SlotWriter per
// poller thread, through which that thread copies what it read into the buffer.
//
//   cuda: the descriptor is a CUDA POSIX-fd shareable handle of device memory; the service maps
//         it in its own primary context (cuda_buffer_backend.h). What production uses.
//   host: the descriptor is a mappable file (a memfd in the CPU tests); writes are memcpy
//         (host_buffer_backend.h).
//
// Lifetime: every SlotWriter of an ImportedBuffer is destroyed before the ImportedBuffer, and
// the ImportedBuffer's destructor releases the import: after it, the service holds no access
// to the buffer (that is what revoking a lease means).
//
// Thread-safety: import() may be called from several connection threads at once. A SlotWriter
// is used by one thread at a time (its poller); it may be made on another thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace agileos::services::storage {

class SlotWriter {
 public:
  virtual ~SlotWriter() = default;
  // At least the slot_bytes the writer was made for; what write() copies from.
  virtual std::byte* staging() = 0;
  // Copies staging()[0, bytes) to the buffer at buffer_offset, and returns once the copy is
  // complete (visible to the buffer's other users). The caller keeps buffer_offset + bytes
  // within the imported size. A writer may copy more, zero-padded, up to the slot_bytes it was
  // made for (the CUDA writer does, for speed) but never past the slot. 0, or a negative errno with *reason
  // set for the log.
  virtual int write(std::uint64_t buffer_offset, std::size_t bytes, std::string* reason) = 0;
};

class ImportedBuffer {
 public:
  virtual ~ImportedBuffer() = default;
  // A writer with staging of at least slot_bytes; null with *reason on failure.
  virtual std::unique_ptr<SlotWriter> makeWriter(std::uint32_t slot_bytes, std::string* reason) = 0;
};

class BufferBackend {
 public:
  virtual ~BufferBackend() = default;
  virtual const char* name() const = 0;
  // Imports `bytes` of the buffer behind fd (the caller keeps fd and closes it afterwards).
  // Null with *error (a negative errno) and *reason on failure.
  virtual std::unique_ptr<ImportedBuffer> import(int fd, std::uint64_t bytes, int* error,
                                                 std::string* reason) = 0;
};

}  // namespace agileos::services::storage
