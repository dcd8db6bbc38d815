#include "client/session/fatbin_copy.h"

#include <cstdint>

#include "client/session/own_memory.h"

namespace agileos::client {
namespace {

constexpr std::uint64_t kMaxFatbinBytes = 1ull << 30;
constexpr std::size_t kMaxPrelinkedObjects = 4096;  // as the worker's kMaxRelocatableObjects
constexpr std::uint32_t kPrelinkedWrapperVersion = 2;

}  // namespace

bool copyFatbinContainer(const void* data, std::string* image, std::string* problem) {
  struct {
    std::uint32_t magic;
    std::uint16_t version;
    std::uint16_t headerSize;
    std::uint64_t payloadSize;
  } header{};
  static_assert(sizeof header == 16);
  if (data == nullptr || !readOwnMemory(data, &header, sizeof header) ||
      header.magic != kFatbinContainerMagic) {
    *problem = "fatbin container missing or bad magic";
    return false;
  }
  const std::uint64_t total = static_cast<std::uint64_t>(header.headerSize) + header.payloadSize;
  if (header.payloadSize > kMaxFatbinBytes || total > kMaxFatbinBytes) {
    *problem = "fatbin larger than 1 GiB";
    return false;
  }
  image->resize(total);
  if (!readOwnMemory(data, image->data(), total)) {
    *problem = "fatbin size runs past readable memory";
    image->clear();
    return false;
  }
  return true;
}

bool copyPrelinkedObjects(const FatbinWrapper& wrapper, std::vector<std::string>* objects,
                          std::string* problem) {
  objects->clear();
  if (wrapper.version != kPrelinkedWrapperVersion || wrapper.filenameOrFatbins == nullptr) return true;
  const auto* list = static_cast<const void* const*>(wrapper.filenameOrFatbins);
  std::uint64_t totalBytes = 0;
  for (std::size_t i = 0;; ++i) {
    if (i == kMaxPrelinkedObjects) {
      *problem = "more than 4096 prelinked objects";
      objects->clear();
      return false;
    }
    const void* object = nullptr;
    if (!readOwnMemory(list + i, &object, sizeof object)) {
      *problem = "unreadable list of prelinked objects";
      objects->clear();
      return false;
    }
    if (object == nullptr) return true;
    std::string copy;
    if (!copyFatbinContainer(object, &copy, problem)) {
      *problem = "prelinked object " + std::to_string(i) + ": " + *problem;
      objects->clear();
      return false;
    }
    totalBytes += copy.size();
    if (totalBytes > kMaxFatbinBytes) {
      *problem = "prelinked objects larger than 1 GiB together";
      objects->clear();
      return false;
    }
    objects->push_back(std::move(copy));
  }
}

}  // namespace agileos::client
