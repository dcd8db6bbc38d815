#include "client/cuda/context_storage.h"

#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "client/session/thread_contexts.h"

namespace agileos::client::cuda_shim {
namespace {

struct Entry {
  void* value;
  ContextStorageDestructor destructor;
};

std::mutex gMutex;
// Never destroyed: a CUDA runtime in the program calls in from its exit handlers.
auto& gEntries = *new std::map<std::pair<CUcontext, void*>, Entry>();

// The context a call names; null when it is not live.
CUcontext resolve(CUcontext context) {
  if (context == nullptr || context == reinterpret_cast<CUcontext>(-1)) context = workingContext();
  return isLiveContext(context) ? context : nullptr;
}

}  // namespace

CUresult putContextValue(CUcontext context, void* key, void* value, ContextStorageDestructor destructor) {
  context = resolve(context);
  if (context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard lock(gMutex);
  gEntries[{context, key}] = Entry{value, destructor};
  return CUDA_SUCCESS;
}

CUresult removeContextValue(CUcontext context, void* key) {
  context = resolve(context);
  if (context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard lock(gMutex);
  return gEntries.erase({context, key}) != 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult getContextValue(void** value, CUcontext context, void* key) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  context = resolve(context);
  if (context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard lock(gMutex);
  auto it = gEntries.find({context, key});
  if (it == gEntries.end()) return CUDA_ERROR_INVALID_HANDLE;
  *value = it->second.value;
  return CUDA_SUCCESS;
}

void clearContextValues(CUcontext context) {
  std::vector<std::pair<void*, Entry>> dropped;
  {
    std::lock_guard lock(gMutex);
    auto it = gEntries.lower_bound({context, nullptr});
    while (it != gEntries.end() && it->first.first == context) {
      dropped.emplace_back(it->first.second, it->second);
      it = gEntries.erase(it);
    }
  }
  for (const auto& [key, entry] : dropped) {
    if (entry.destructor != nullptr) entry.destructor(context, key, entry.value);
  }
}

}  // namespace agileos::client::cuda_shim
