// Every library adapter this build declares (proto/adapters/adapter_declaration.h).
#include <array>

#include "agileos/v1/client_api.pb.h"
#include "proto/adapters/adapter_declaration.h"
#include "proto/adapters/cufft_operations.h"
#include "proto/adapters/nvrtc_operations.h"

namespace agileos::adapters {

namespace {
constexpr std::array kLibraries{cufft::kLibrary, nvrtc::kLibrary};

// The argument kinds are AdapterValue's field numbers (adapter_declaration.h): client_api.proto is
// the one list, and a kind added or renumbered there without its ArgKind fails here.
using Case = v1::AdapterValue::ValueCase;
static_assert(valueCaseOf(ArgKind::kInteger) == Case::kInteger);
static_assert(valueCaseOf(ArgKind::kIntegers) == Case::kIntegers);
static_assert(valueCaseOf(ArgKind::kOptionalIntegers) == Case::kIntegers &&
              isOptional(ArgKind::kOptionalIntegers));
static_assert(valueCaseOf(ArgKind::kDevicePointer) == Case::kDevicePointer);
static_assert(valueCaseOf(ArgKind::kHandle) == Case::kHandle);
static_assert(valueCaseOf(ArgKind::kStream) == Case::kStream);
static_assert(valueCaseOf(ArgKind::kBlob) == Case::kBlob);
static_assert(valueCaseOf(ArgKind::kText) == Case::kText);
static_assert(valueCaseOf(ArgKind::kTexts) == Case::kTexts);
// (A kind added to the proto without an ArgKind fails tests/cpu/adapters/adapter_catalog_test.cpp.)
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
