// The declaration of a trusted library adapter: the library's name and, for each operation a
// client may call, its name, the kinds of its arguments and whether it can end the life of
// something another call may be using. The worker checks every call against its declaration
// before the adapter sees it (count and kind of each argument), and the daemon checks its
// `adapters` configuration against the same declarations, so a misspelt name is refused at
// start-up. Adding a library is declaring its operations in proto/adapters/<library>_operations.h
// and implementing them in a worker-side adapter (worker/adapters/library_adapter.h).
//
// SHARED contract (proto/): the client's library shims send the declared names, the worker and the
// daemon check against them. Headers only, plus the catalog (adapter_catalog.cpp); nothing here
// includes a path outside proto/.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>

namespace agileos::adapters {

// Marks an argument position that may also be unset (a null pointer argument).
inline constexpr std::uint8_t kOptionalArg = 0x80;

// What one argument position holds. The one list of value kinds is AdapterValue's `value` oneof in
// client_api.proto: each kind here is that oneof's field number (its ValueCase), and the C ABI's
// agileos_value_kind (client/include/agileos/library_call.h) uses the same numbers. Both are held
// equal to the proto by static_asserts (proto/adapters/adapter_catalog.cpp,
// client/cudart/api_library_call.cpp), so the three cannot drift.
enum class ArgKind : std::uint8_t {
  kInteger = 1,        // int64
  kIntegers = 2,       // a list of int64
  kDevicePointer = 3,  // a client device address (checked by the operation against its extent)
  kHandle = 4,         // a token of a library object this client created
  kStream = 5,         // a stream token
  kBlob = 6,           // bytes
  kText = 7,           // a string
  kTexts = 8,          // a list of strings
  // A list of int64, or unset.
  kOptionalIntegers = kIntegers | kOptionalArg,
};

// The AdapterValue field number (ValueCase) a value of `kind` is sent as.
constexpr int valueCaseOf(ArgKind kind) { return static_cast<int>(kind) & ~kOptionalArg; }
// Whether a position of `kind` may be left unset.
constexpr bool isOptional(ArgKind kind) { return (static_cast<int>(kind) & kOptionalArg) != 0; }

struct OperationDecl {
  std::string_view name;
  std::span<const ArgKind> args;
  // True if the operation can destroy or replace a library object: it then runs alone among its
  // client's calls (worker/dispatcher.h, Exclusivity::kInvalidates).
  bool invalidates = false;
};

struct LibraryDecl {
  std::string_view name;
  std::span<const OperationDecl> operations;
};

// Every library this build can host, for configuration checks.
std::span<const LibraryDecl> knownLibraries();

// The declaration of `library`, or null.
const LibraryDecl* findLibrary(std::string_view library);
// Index of `operation` in `library.operations`, or -1.
int findOperation(const LibraryDecl& library, std::string_view operation);

}  // namespace agileos::adapters
