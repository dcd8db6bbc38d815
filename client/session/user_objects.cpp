#include "client/session/user_objects.h"

#include <cstdint>
#include <limits>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "client/session/graph.h"

namespace agileos::client {

struct UserObject {
  void* pointer = nullptr;
  cudaHostFn_t destroy = nullptr;
  std::uint64_t references = 0;
};

namespace {

// Never destroyed: a program may release its objects from an exit handler.
std::mutex& objectsMutex() {
  static auto& mutex = *new std::mutex();
  return mutex;
}
std::unordered_map<UserObject*, std::unique_ptr<UserObject>>& liveObjects() {
  static auto& objects = *new std::unordered_map<UserObject*, std::unique_ptr<UserObject>>();
  return objects;
}

// The caller holds objectsMutex().
UserObject* liveLocked(UserObject* object) { return liveObjects().contains(object) ? object : nullptr; }

// Drops `count` references (the caller holds objectsMutex() and checked the count); at none, the
// object is no longer live and its destructor is handed back to run with the lock released.
std::unique_ptr<UserObject> dropLocked(UserObject* object, unsigned count) {
  object->references -= count;
  if (object->references != 0) return nullptr;
  auto it = liveObjects().find(object);
  std::unique_ptr<UserObject> gone = std::move(it->second);
  liveObjects().erase(it);
  return gone;
}

void runDestructor(std::unique_ptr<UserObject> gone) {
  if (!gone || gone->destroy == nullptr) return;
  std::thread([destroy = gone->destroy, pointer = gone->pointer] { destroy(pointer); }).detach();
}

constexpr std::uint64_t kMostReferences = std::numeric_limits<unsigned>::max();

}  // namespace

cudaError_t createUserObject(void* pointer, cudaHostFn_t destroy, unsigned initialReferences, unsigned flags,
                             UserObject** object) {
  if (object == nullptr || destroy == nullptr || initialReferences == 0 ||
      flags != cudaUserObjectNoDestructorSync)
    return cudaErrorInvalidValue;
  auto created = std::make_unique<UserObject>();
  created->pointer = pointer;
  created->destroy = destroy;
  created->references = initialReferences;
  std::lock_guard lock(objectsMutex());
  UserObject* handle = created.get();
  liveObjects().emplace(handle, std::move(created));
  *object = handle;
  return cudaSuccess;
}

cudaError_t retainUserObject(UserObject* object, unsigned count) {
  if (count == 0) return cudaErrorInvalidValue;
  std::lock_guard lock(objectsMutex());
  if (liveLocked(object) == nullptr || object->references + count > kMostReferences)
    return cudaErrorInvalidValue;
  object->references += count;
  return cudaSuccess;
}

cudaError_t releaseUserObject(UserObject* object, unsigned count) {
  if (count == 0) return cudaErrorInvalidValue;
  std::unique_ptr<UserObject> gone;
  {
    std::lock_guard lock(objectsMutex());
    if (liveLocked(object) == nullptr || count > object->references) return cudaErrorInvalidValue;
    gone = dropLocked(object, count);
  }
  runDestructor(std::move(gone));
  return cudaSuccess;
}

UserObjectReferences::UserObjectReferences(const UserObjectReferences& other) { addAll(other); }

UserObjectReferences::~UserObjectReferences() {
  for (const auto& [object, count] : held_) releaseUserObject(object, count);
}

cudaError_t UserObjectReferences::add(UserObject* object, unsigned count, bool move) {
  if (count == 0) return cudaErrorInvalidValue;
  const auto it = held_.find(object);
  const std::uint64_t already = it == held_.end() ? 0 : it->second;
  if (already + count > kMostReferences) return cudaErrorInvalidValue;
  if (move) {
    // The caller's references become the graph's: the object must hold at least that many.
    std::lock_guard lock(objectsMutex());
    if (liveLocked(object) == nullptr || count > object->references) return cudaErrorInvalidValue;
  } else if (cudaError_t error = retainUserObject(object, count); error != cudaSuccess) {
    return error;
  }
  held_[object] = static_cast<unsigned>(already + count);
  return cudaSuccess;
}

cudaError_t UserObjectReferences::remove(UserObject* object, unsigned count) {
  const auto it = held_.find(object);
  if (count == 0 || it == held_.end() || count > it->second) return cudaErrorInvalidValue;
  if (cudaError_t error = releaseUserObject(object, count); error != cudaSuccess) return error;
  it->second -= count;
  if (it->second == 0) held_.erase(it);
  return cudaSuccess;
}

void UserObjectReferences::addAll(const UserObjectReferences& other) {
  for (const auto& [object, count] : other.held_) {
    // Each object is live while `other` holds it; add refuses only a count that would pass
    // UINT_MAX references, and then this copy holds fewer than `other` (the object may go sooner;
    // it is the program's own, which no AgileOS work depends on).
    (void)add(object, count, false);
  }
}

cudaError_t retainGraphUserObject(Graph* graph, UserObject* object, unsigned count, unsigned flags) {
  if (flags != 0 && flags != cudaGraphUserObjectMove) return cudaErrorInvalidValue;
  std::lock_guard lock(graphMutex());
  if (!isLiveGraph(graph)) return cudaErrorInvalidValue;
  return graph->userObjects.add(object, count, flags == cudaGraphUserObjectMove);
}

cudaError_t releaseGraphUserObject(Graph* graph, UserObject* object, unsigned count) {
  std::lock_guard lock(graphMutex());
  if (!isLiveGraph(graph)) return cudaErrorInvalidValue;
  return graph->userObjects.remove(object, count);
}

}  // namespace agileos::client
