// Every library adapter this build declares (adapters/adapter_declaration.h).
#include <array>

#include "adapters/adapter_declaration.h"
#include "adapters/cufft/cufft_operations.h"
#include "adapters/nvrtc/nvrtc_operations.h"

namespace agileos::adapters {

namespace {
constexpr std::array kLibraries{cufft::kLibrary, nvrtc::kLibrary};
}  // namespace

std::span<const LibraryDecl> knownLibraries() { return kLibraries; }

const LibraryDecl* findLibrary(std::string_view library) {
  for (const LibraryDecl& declared : kLibraries) {
    if (declared.name == library) return &declared;
  }
  return nullptr;
}

int findOperation(const LibraryDecl& library, std::string_view operation) {
  for (std::size_t i = 0; i < library.operations.size(); ++i) {
    if (library.operations[i].name == operation) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace agileos::adapters
