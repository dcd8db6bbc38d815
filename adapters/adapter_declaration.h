// The declaration of a trusted library adapter: the library's name and, for each operation a
// client may call, its name, the kinds of its arguments and whether it can end the life of
// something another call may be using. The worker checks every call against its declaration
// before the adapter sees it (count and kind of each argument), and the daemon checks its
// `adapters` configuration against the same declarations, so a misspelt name is refused at
// start-up. Adding a library is declaring its operations here and implementing them in a
// worker-side adapter (worker/adapters/library_adapter.h).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>

namespace agileos::adapters {

// What one argument position holds (AdapterValue in client_api.proto).
enum class ArgKind : std::uint8_t {
  kInteger,           // int64
  kIntegers,          // a list of int64
  kOptionalIntegers,  // a list of int64, or unset (a null pointer argument)
  kDevicePointer,     // a client device address (checked by the operation against its extent)
  kHandle,            // a token of a library object this client created
  kStream,            // a stream token
  kBlob,              // bytes
  kText,              // a string
  kTexts,             // a list of strings
};

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
