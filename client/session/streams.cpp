#include "client/session/streams.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "client/session/worker_calls.h"

namespace agileos::client {
namespace {

struct StreamProperties {
  unsigned flags;
  int priority;
  const void* context = nullptr;  // where it was created; null for default streams
  std::uint64_t lastPosted = 0;   // work mark of the latest work posted to the stream
  std::uint64_t idleAt = 0;       // a mark at which the stream was seen idle
};

// Marks count posted work; the legacy stream's record lives outside the map.
std::atomic<std::uint64_t> gWorkMark{0};
StreamProperties gLegacy{0, 0};
std::uint64_t gDeviceIdleAt = 0;  // guarded by gMutex

std::mutex gMutex;
std::unordered_map<std::uint64_t, StreamProperties>& properties() {
  static auto* map = new std::unordered_map<std::uint64_t, StreamProperties>();
  return *map;
}

std::unordered_map<std::uint64_t, unsigned long long>& streamIds() {
  static auto* map = new std::unordered_map<std::uint64_t, unsigned long long>();  // never destroyed
  return *map;
}

// Bumped by cudaDeviceReset so that threads recreate their default streams.
std::atomic<std::uint64_t> gResetGeneration{0};

struct ThreadDefaultStream {
  std::uint64_t token = 0;
  std::uint64_t generation = 0;
};
thread_local ThreadDefaultStream tDefaultStream;

cudaError_t threadDefaultStream(std::uint64_t* token) {
  const std::uint64_t generation = gResetGeneration.load();
  if (tDefaultStream.token == 0 || tDefaultStream.generation != generation) {
    v1::CallRequest request;
    request.mutable_stream_create();  // flags 0: blocking with respect to the legacy stream
    v1::CallReply reply;
    if (cudaError_t error = invoke(request, &reply); error != cudaSuccess) return error;
    tDefaultStream = {reply.token().token(), generation};
    rememberStream(tDefaultStream.token, 0, 0);
  }
  *token = tDefaultStream.token;
  return cudaSuccess;
}

}  // namespace

cudaError_t resolveStream(cudaStream_t stream, DefaultStream spelling, std::uint64_t* token) {
  const auto value = reinterpret_cast<std::uintptr_t>(stream);
  if (stream == cudaStreamPerThread || (value == 0 && spelling == DefaultStream::kPerThread)) {
    return threadDefaultStream(token);
  }
  *token = stream == cudaStreamLegacy ? 0 : value;
  return cudaSuccess;
}

void rememberStream(std::uint64_t token, unsigned flags, int priority, const void* context) {
  std::lock_guard lock(gMutex);
  properties()[token] = {flags, priority, context};
}

void setStreamPriority(std::uint64_t token, int priority) {
  std::lock_guard lock(gMutex);
  if (auto it = properties().find(token); it != properties().end()) it->second.priority = priority;
}

bool streamCreationContext(std::uint64_t token, const void** context) {
  std::lock_guard lock(gMutex);
  auto it = properties().find(token);
  if (token == 0 || it == properties().end() || it->second.context == nullptr) return false;
  *context = it->second.context;
  return true;
}

void forgetStream(std::uint64_t token) {
  std::lock_guard lock(gMutex);
  properties().erase(token);
  streamIds().erase(token);
}

bool knownStreamId(std::uint64_t token, unsigned long long* id) {
  std::lock_guard lock(gMutex);
  auto it = streamIds().find(token);
  if (it == streamIds().end()) return false;
  *id = it->second;
  return true;
}

void rememberStreamId(std::uint64_t token, unsigned long long id) {
  std::lock_guard lock(gMutex);
  // Only a stream still known: one destroyed while its id was on its way is not remembered.
  if (token == 0 || properties().count(token) != 0) streamIds()[token] = id;
}

bool streamProperties(std::uint64_t token, unsigned* flags, int* priority) {
  if (token == 0) {
    *flags = 0;
    *priority = 0;
    return true;
  }
  std::lock_guard lock(gMutex);
  auto it = properties().find(token);
  if (it == properties().end()) return false;
  *flags = it->second.flags;
  *priority = it->second.priority;
  return true;
}

namespace {

// Caller holds gMutex. Null for an unknown token.
StreamProperties* recordOf(std::uint64_t token) {
  if (token == 0 || token == 1) return &gLegacy;
  auto it = properties().find(token);
  return it == properties().end() ? nullptr : &it->second;
}

bool idle(const StreamProperties& stream) {
  return stream.lastPosted <= std::max(stream.idleAt, gDeviceIdleAt);
}

}  // namespace

void noteWorkPosted(std::uint64_t token) {
  std::lock_guard lock(gMutex);
  const std::uint64_t mark = gWorkMark.fetch_add(1) + 1;
  if (StreamProperties* stream = recordOf(token)) stream->lastPosted = mark;
}

std::uint64_t workMark() { return gWorkMark.load(); }

void noteStreamIdle(std::uint64_t token, std::uint64_t mark) {
  std::lock_guard lock(gMutex);
  if (StreamProperties* stream = recordOf(token)) stream->idleAt = std::max(stream->idleAt, mark);
}

void noteDeviceIdle(std::uint64_t mark) {
  std::lock_guard lock(gMutex);
  gDeviceIdleAt = std::max(gDeviceIdleAt, mark);
}

bool streamSurelyIdle(std::uint64_t token) {
  std::lock_guard lock(gMutex);
  const StreamProperties* stream = recordOf(token);
  if (stream == nullptr || !idle(gLegacy)) return false;
  if (stream != &gLegacy) return idle(*stream);
  for (const auto& [other, properties] : properties()) {
    if (!idle(properties)) return false;
  }
  return true;
}

namespace {
std::unordered_set<std::uint64_t>& liveEvents() {
  static auto* events = new std::unordered_set<std::uint64_t>();  // never destroyed: used at exit
  return *events;
}
}  // namespace

void rememberEvent(std::uint64_t token) {
  std::lock_guard lock(gMutex);
  liveEvents().insert(token);
}

void forgetEvent(std::uint64_t token) {
  std::lock_guard lock(gMutex);
  liveEvents().erase(token);
}

bool isLiveEvent(std::uint64_t token) {
  std::lock_guard lock(gMutex);
  return liveEvents().contains(token);
}

bool isKnownStream(std::uint64_t token) {
  unsigned flags = 0;
  int priority = 0;
  return streamProperties(token, &flags, &priority);
}

void forgetAllStreams() {
  std::lock_guard lock(gMutex);
  properties().clear();
  streamIds().clear();
  liveEvents().clear();
  gResetGeneration.fetch_add(1);
}

}  // namespace agileos::client
