#include "services/storage/registered_buffers.h"

#include <algorithm>
#include <cerrno>
#include <condition_variable>

namespace agileos::services::storage {

// Set by the deleter of an Entry's Ref, which runs when the last copy is dropped, on whichever
// thread drops it. Shared with the deleter, so it outlives the notification.
struct RegisteredBuffers::RefsDropped {
  std::mutex mutex;
  std::condition_variable condition;
  bool dropped = false;
};

bool RegisteredBuffers::full() const {
  std::lock_guard lock(mutex_);
  return entries_.size() >= kMaxRegisteredBuffers;
}

std::int64_t RegisteredBuffers::add(RegisteredBuffer buffer) {
  Entry entry;
  entry.owned = std::make_unique<RegisteredBuffer>(std::move(buffer));
  entry.dropped = std::make_shared<RefsDropped>();
  // The deleter does not delete: `owned` does, in release(), on the remover's thread.
  entry.ref = Ref(entry.owned.get(), [dropped = entry.dropped](const RegisteredBuffer*) {
    std::lock_guard lock(dropped->mutex);
    dropped->dropped = true;
    dropped->condition.notify_all();
  });
  std::unique_lock lock(mutex_);
  if (entries_.size() >= kMaxRegisteredBuffers) {
    lock.unlock();
    release(std::move(entry));
    return -EMFILE;
  }
  // At most kMaxRegisteredBuffers ids are live, so a free one is found within that many steps.
  auto live = [this](std::uint32_t id) {
    return std::any_of(entries_.begin(), entries_.end(), [id](const Entry& e) { return e.id == id; });
  };
  while (next_id_ == 0 || live(next_id_)) ++next_id_;
  entry.id = next_id_++;
  const std::uint32_t id = entry.id;
  entries_.push_back(std::move(entry));
  return id;
}

RegisteredBuffers::Ref RegisteredBuffers::find(std::uint32_t id) const {
  std::lock_guard lock(mutex_);
  for (const Entry& entry : entries_) {
    if (entry.id == id) return entry.ref;
  }
  return nullptr;
}

int RegisteredBuffers::remove(std::uint32_t id) {
  Entry removed;
  {
    std::lock_guard lock(mutex_);
    auto it = std::find_if(entries_.begin(), entries_.end(), [id](const Entry& e) { return e.id == id; });
    if (it == entries_.end()) return -ENOENT;
    removed = std::move(*it);
    entries_.erase(it);
  }
  release(std::move(removed));
  return 0;
}

void RegisteredBuffers::clear() {
  std::vector<Entry> removed;
  {
    std::lock_guard lock(mutex_);
    removed.swap(entries_);
  }
  for (Entry& entry : removed) release(std::move(entry));
}

void RegisteredBuffers::release(Entry entry) {
  entry.ref.reset();  // ours; a poller's copy may still be writing
  {
    std::unique_lock lock(entry.dropped->mutex);
    entry.dropped->condition.wait(lock, [&] { return entry.dropped->dropped; });
  }
  // The mutex orders every write through a Ref before this: no write is in progress.
  entry.owned.reset();
}

}  // namespace agileos::services::storage
