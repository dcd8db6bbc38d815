#include "client/session/thread_contexts.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

namespace agileos::client {
namespace {

// What a CUcontext points to. Never freed while the process lives (gAllCreated keeps every record,
// a few bytes per cuCtxCreate): a destroyed context's address stays unique, so a stale handle is
// recognised, never mistaken for a newer one, and a thread that still has it current never reads
// freed memory.
struct ContextRecord {
  std::atomic<unsigned> flags{0};
  // Cleared when the context is destroyed. Read without the lock by requireContext, for the
  // contexts on a thread's stack, which are records (they were live when they were made current).
  std::atomic<bool> live{true};
  unsigned long long number = 1;  // set once, before the record is published
};

ContextRecord gPrimary;
std::atomic<int> gPrimaryRetains{0};

// Never destroyed: a CUDA runtime in the program calls the driver from its exit handlers.
std::mutex gMutex;
auto& gCreated = *new std::set<const ContextRecord*>();                  // live created contexts
auto& gAllCreated = *new std::vector<std::unique_ptr<ContextRecord>>();  // every created context, live or not

// The calling thread's context stack, bottom first. Trivially destructible on purpose: a CUDA
// runtime in the program calls the driver from its exit handlers, which run after the main
// thread's thread-local objects are destroyed.
struct ContextStack {
  CUcontext entries[kMaxContextStackDepth];
  std::size_t depth;
};
thread_local ContextStack tStack{};

ContextRecord* recordOf(CUcontext context) { return reinterpret_cast<ContextRecord*>(context); }

}  // namespace

CUcontext primaryContext() { return reinterpret_cast<CUcontext>(&gPrimary); }

bool isLiveContext(CUcontext context) {
  if (context == primaryContext()) return true;
  std::lock_guard lock(gMutex);
  return gCreated.count(recordOf(context)) != 0;
}

CUcontext createContext(unsigned flags) {
  auto record = std::make_unique<ContextRecord>();
  record->flags = flags;
  std::lock_guard lock(gMutex);
  record->number = gAllCreated.size() + 2;
  gCreated.insert(record.get());
  gAllCreated.push_back(std::move(record));
  return reinterpret_cast<CUcontext>(gAllCreated.back().get());
}

CUresult destroyContext(CUcontext context) {
  {
    std::lock_guard lock(gMutex);
    if (gCreated.erase(recordOf(context)) == 0) return CUDA_ERROR_INVALID_CONTEXT;
    recordOf(context)->live.store(false);
  }
  CUcontext* end = std::remove(tStack.entries, tStack.entries + tStack.depth, context);
  tStack.depth = static_cast<std::size_t>(end - tStack.entries);
  return CUDA_SUCCESS;
}

unsigned long long contextNumber(CUcontext context) { return recordOf(context)->number; }

unsigned contextFlags(CUcontext context) { return recordOf(context)->flags.load(); }
void setContextFlags(CUcontext context, unsigned flags) { recordOf(context)->flags.store(flags); }

void retainPrimary() { gPrimaryRetains.fetch_add(1); }

CUresult releasePrimary() {
  int retains = gPrimaryRetains.load();
  do {
    if (retains <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  } while (!gPrimaryRetains.compare_exchange_weak(retains, retains - 1));
  return CUDA_SUCCESS;
}

bool primaryActive() { return gPrimaryRetains.load() > 0; }

CUcontext currentContext() { return tStack.depth == 0 ? nullptr : tStack.entries[tStack.depth - 1]; }

void setCurrentContext(CUcontext context) {
  if (context == nullptr) {
    if (tStack.depth > 0) --tStack.depth;
    return;
  }
  if (tStack.depth == 0) tStack.depth = 1;
  tStack.entries[tStack.depth - 1] = context;
}

void bindPrimaryContextIfNoneCurrent() {
  if (tStack.depth != 0) return;
  tStack.entries[0] = primaryContext();
  tStack.depth = 1;
  // The runtime holds the primary context from its first use (cuDevicePrimaryCtxGetState then
  // says active, as natively): one retain for the process, never released by the runtime shim.
  static std::atomic<bool> runtimeRetained{false};
  if (!runtimeRetained.exchange(true)) retainPrimary();
}

bool pushCurrentContext(CUcontext context) {
  if (tStack.depth == kMaxContextStackDepth) return false;
  tStack.entries[tStack.depth++] = context;
  return true;
}

CUcontext popCurrentContext() {
  if (tStack.depth == 0) return nullptr;
  return tStack.entries[--tStack.depth];
}

// Every driver call passes here (launches included), so it takes no lock: the current context is a
// record, whose `live` flag says whether it was destroyed since.
CUcontext workingContext() {
  const CUcontext current = currentContext();
  return current != nullptr ? current : primaryContext();
}

CUresult requireContext() {
  const CUcontext current = currentContext();
  if (current != nullptr && !recordOf(current)->live.load(std::memory_order_acquire))
    return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  return CUDA_SUCCESS;
}

}  // namespace agileos::client
