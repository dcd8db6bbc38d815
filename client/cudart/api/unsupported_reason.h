// Why an unsupported CUDA runtime entry point fails closed, as declared in
// client/cudart/api/cudart_api.tsv. The definition is generated with the fail-closed stubs
// (cudart_unsupported.gen.cpp), so the reason a call logs is the one docs/api-coverage.md shows.
#pragma once

namespace agileos::client {

// The table's reason for `symbol` (an exact exported name such as "cudaGraphCreate"), or nullptr
// when `symbol` is null, implemented, or not a libcudart.so.13 function. The returned string is a
// static constant. Thread-safe: a binary search over a constant array.
const char* unsupportedReason(const char* symbol);

}  // namespace agileos::client
