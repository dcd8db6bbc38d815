// The worker request fuzzer's second input format, and symbolic handles.
//
// A structured input is a sequence of requests. Each starts with an operation
// byte b (operation (b >> 3) % count, in the declaration order of CallRequest's
// `op` oneof, except that b >> 3 == 31 takes one more byte n for operation
// (31 + n) % count; the first byte of an input whose low three bits are 6 or 7 is
// never a protobuf tag). The operation's fields follow in declaration order,
// nested messages depth first, each read with a selector byte that favours what
// finds bugs: pointers near the start or end of the scenario's ranges (its
// allocations, module variables, the freed pointer, the protected regions),
// sizes one below, at or one past the room left in that range or equal to the
// rest of a chunked copy, numbers at the edges, symbolic handles (see
// fuzz_scenario.h), the test fatbin whole or damaged, and known symbol names.
// Missing bytes read as zero, so every input decodes.
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "agileos/v1/client_api.pb.h"
#include "tests/cpu/worker/support/fuzz_scenario.h"

namespace agileos::worker::testing {

// Which handle a token field of a request names (by its name in client_api.proto), if any.
std::optional<HandleKind> tokenKind(const google::protobuf::FieldDescriptor* field);

// Replaces symbolic token values (fuzz_scenario.h) by the handles they name, in every nested message.
void resolveSymbols(google::protobuf::Message* message, const FuzzScenario& scenario);

// Decodes at most `maxRequests` requests; `fatbin` is what "the test fatbin" selectors use.
std::vector<v1::CallRequest> decodeStructuredRequests(std::span<const std::uint8_t> bytes,
                                                      const FuzzScenario& scenario, const std::string& fatbin,
                                                      std::size_t maxRequests);

// The number of operations a structured input can name, and the index of the one
// whose field in CallRequest is called `name` (e.g. "memcpy_htod"), or -1.
int structuredOperationCount();
int structuredOperationIndex(const std::string& name);

// The ranges pointer selectors choose from, in index order.
std::vector<ScenarioAllocation> structuredPointerTargets(const FuzzScenario& scenario);

// A structured input that decodes into one well-formed request of operation `op`:
// pointers at the start of range `rangeIndex` of the decoder's list, sizes that
// fill that range, handles naming the first symbol of their kind.
std::string structuredTemplate(int op, std::uint8_t rangeIndex);

}  // namespace agileos::worker::testing
