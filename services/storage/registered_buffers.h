// One lease's registered buffers (REGISTER_BUFFER): ids 1..2^32-1, at most
// kMaxRegisteredBuffers live at once, each an import of a client allocation and the range of it
// that reads may target.
//
// Ids are handed out in increasing order and not reused until the counter wraps (skipping 0 and
// live ids), so that a submission still naming an unregistered buffer finds no buffer rather
// than a newer registration.
//
// Lifetime: a poller holds a Ref (a shared_ptr) from its lookup to the end of its write.
// remove() and clear() take the registration out of the table, so no new Ref can be had, then
// wait until every Ref has been dropped, and release the import on the calling thread: once they
// return, the service holds no access to the buffer and never writes to it again. A Ref's last
// release only signals; it never releases the import itself, so the mapping always goes away
// on the thread that removes it (the connection's).
//
// Thread-safety: all members may be called concurrently (the connection thread adds and
// removes, the lease's pollers look up). remove() and clear() block for as long as a write to
// the buffer takes.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "services/storage/buffer_backend.h"

namespace agileos::services::storage {

inline constexpr std::size_t kMaxRegisteredBuffers = 64;

struct RegisteredBuffer {
  std::unique_ptr<ImportedBuffer> import;  // the whole allocation, from offset 0
  std::uint64_t offset = 0;                // where the registered range starts in it
  std::uint64_t bytes = 0;                 // the registered range's size (within the import)
};

class RegisteredBuffers {
 public:
  using Ref = std::shared_ptr<const RegisteredBuffer>;

  RegisteredBuffers() = default;
  RegisteredBuffers(const RegisteredBuffers&) = delete;
  RegisteredBuffers& operator=(const RegisteredBuffers&) = delete;
  ~RegisteredBuffers() { clear(); }

  bool full() const;
  // Takes the buffer; its id (>= 1), or -EMFILE when kMaxRegisteredBuffers are live (the buffer
  // is then released here).
  std::int64_t add(RegisteredBuffer buffer);
  // The buffer for one write, or null for an id that is not registered (the caller answers
  // -EBADF).
  Ref find(std::uint32_t id) const;
  // Removes id, waits for the writes holding it, releases it. 0, or -ENOENT.
  int remove(std::uint32_t id);
  // remove() for every live id.
  void clear();

 private:
  struct RefsDropped;
  // A registration: `owned` is released only by release(), after `ref` and every copy of it.
  struct Entry {
    std::uint32_t id = 0;  // never 0 once in entries_
    std::unique_ptr<RegisteredBuffer> owned;
    Ref ref;  // its deleter sets `dropped` and deletes nothing
    std::shared_ptr<RefsDropped> dropped;
  };
  static void release(Entry entry);

  mutable std::mutex mutex_;
  std::vector<Entry> entries_;  // at most kMaxRegisteredBuffers
  std::uint32_t next_id_ = 1;
};

}  // namespace agileos::services::storage
