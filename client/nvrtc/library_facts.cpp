#include "client/nvrtc/library_facts.h"

#include <cstdint>

#include "client/library_shim/library_call_client.h"
#include "client/nvrtc/worker_calls.h"

namespace agileos::client::nvrtc_shim {
namespace {

using library_shim::LibraryReply;

// The integers of an answer: one INTEGERS result, or every result an INTEGER.
bool integersOf(const LibraryReply& reply, std::vector<std::int64_t>* out) {
  if (reply.integers(0, out)) return true;
  out->clear();
  for (std::size_t i = 0; i < reply.resultCount(); ++i) {
    std::int64_t value = 0;
    if (!reply.integer(i, &value)) return false;
    out->push_back(value);
  }
  return true;
}

}  // namespace

nvrtcResult LibraryFacts::version(int* major, int* minor) {
  std::lock_guard lock(mutex_);
  if (!version_) {
    // -> major, minor
    const LibraryReply reply = LibraryReply::call(names::kLibrary, "nvrtcVersion", names::kVersion, {});
    const int status = reply.status(kCodes);
    if (status != NVRTC_SUCCESS) return asResult(status);
    std::vector<std::int64_t> values;
    if (!integersOf(reply, &values) || values.size() != 2) return asResult(reply.malformed(kCodes));
    version_.emplace(static_cast<int>(values[0]), static_cast<int>(values[1]));
  }
  *major = version_->first;
  *minor = version_->second;
  return NVRTC_SUCCESS;
}

nvrtcResult LibraryFacts::supportedArchs(std::vector<int>* archs) {
  std::lock_guard lock(mutex_);
  if (!archs_) {
    // -> integers
    const LibraryReply reply =
        LibraryReply::call(names::kLibrary, "nvrtcGetSupportedArchs", names::kSupportedArchs, {});
    const int status = reply.status(kCodes);
    if (status != NVRTC_SUCCESS) return asResult(status);
    std::vector<std::int64_t> values;
    if (!integersOf(reply, &values)) return asResult(reply.malformed(kCodes));
    archs_.emplace(values.begin(), values.end());
  }
  *archs = *archs_;
  return NVRTC_SUCCESS;
}

LibraryFacts& facts() {
  static auto* facts = new LibraryFacts();
  return *facts;
}

}  // namespace agileos::client::nvrtc_shim
