// The bytes exchanged with agileos-nvrtc-compiler (worker/adapters/nvrtc/compiler/), and the format of
// the compiled-module cache's NVRTC entries: a sequence of fields, each an 8-byte host-order
// length followed by that many bytes.
//
// Invariants:
// - Decoding never throws and never trusts a length: every field is bounded by the bytes left,
//   a count by the fields left, a number is parsed strictly; anything else is nullopt. The
//   compiler process runs NVRTC on the client's input, so its reply is treated as untrusted.
// - CompileResult's encoding is the cache entry format the adapter has always used (status as
//   decimal text, log, PTX, CUBIN, substitute PTX, count, lowered names), then the LTO IR as one
//   more field only when there is some, so entries written before the jail or before -dlto was
//   allowed still decode (as results without LTO IR, which they are).
#pragma once

#include <nvrtc.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agileos::adapters::nvrtc {

// One compilation, as nvrtcCreateProgram / nvrtcAddNameExpression / nvrtcCompileProgram take it.
struct CompileRequest {
  std::string source;
  std::string name;
  std::vector<std::string> headers;
  std::vector<std::string> includeNames;
  std::vector<std::string> options;
  std::vector<std::string> expressions;
};

// One compilation's outputs, as the client gets them.
struct CompileResult {
  nvrtcResult status = NVRTC_SUCCESS;
  std::string log;
  std::string ptx;    // as nvrtcGetPTX writes it (with its NUL), empty if none
  std::string cubin;  // empty unless a real architecture was asked for
  std::vector<std::string> loweredNames;
  std::string ltoir;          // LTO IR (nvrtcGetLTOIR), empty unless -dlto was asked for
  std::string substitutePtx;  // the PTX a CUBIN is loaded as under the guard (never sent to the client)
};

std::string encodeRequest(const CompileRequest& request);
std::optional<CompileRequest> decodeRequest(std::string_view bytes);

std::string encodeResult(const CompileResult& result);
std::optional<CompileResult> decodeResult(std::string_view bytes);

}  // namespace agileos::adapters::nvrtc
