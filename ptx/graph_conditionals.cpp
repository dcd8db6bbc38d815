#include "ptx/graph_conditionals.h"

#include <vector>

#include "ptx/parser.h"

namespace agileos::ptx {
namespace {

// The definition, parsed once per call (a few dozen tokens). Its register names start with
// %agileos_ (the guard's fresh names never collide with a function's own registers: it renames
// per function).
constexpr std::string_view kDefinition = R"(
.func cudaGraphSetConditional(
	.param .b64 cudaGraphSetConditional_param_0,
	.param .b32 cudaGraphSetConditional_param_1
)
{
	.reg .b64 %agileos_handle;
	.reg .b32 %agileos_value;
	ld.param.u64 %agileos_handle, [cudaGraphSetConditional_param_0];
	ld.param.u32 %agileos_value, [cudaGraphSetConditional_param_1];
	st.global.u32 [%agileos_handle], %agileos_value;
	ret;
}
)";

bool isDirective(const Token& token, std::string_view text) { return token.is(TokenKind::kDirective, text); }

// Whether a prototype's header is `[.extern] .func cudaGraphSetConditional ( .param .b64 NAME ,
// .param .b32 NAME ) ;`: nvcc's declaration, and the only one replaced.
bool isNvccDeclaration(const std::vector<Token>& header) {
  std::size_t at = 0;
  if (at < header.size() && isDirective(header[at], ".extern")) ++at;
  if (at >= header.size() || !isDirective(header[at], ".func")) return false;
  ++at;
  if (at >= header.size() || header[at].kind != TokenKind::kIdentifier ||
      header[at].text != kGraphSetConditional)
    return false;
  ++at;
  const auto parameter = [&](std::string_view type) {
    if (at + 2 >= header.size()) return false;
    if (!isDirective(header[at], ".param") || !isDirective(header[at + 1], type) ||
        header[at + 2].kind != TokenKind::kIdentifier)
      return false;
    at += 3;
    return true;
  };
  if (at >= header.size() || !header[at].isPunct('(')) return false;
  ++at;
  if (!parameter(".b64")) return false;
  if (at >= header.size() || !header[at].isPunct(',')) return false;
  ++at;
  if (!parameter(".b32")) return false;
  if (at >= header.size() || !header[at].isPunct(')')) return false;
  ++at;
  if (at < header.size() && header[at].isPunct(';')) ++at;  // a prototype's header keeps its ';'
  return at == header.size();
}

}  // namespace

GraphConditionalsResult defineGraphConditionals(const Module& input) {
  GraphConditionalsResult result;
  result.module = input;
  for (TopLevel& item : result.module.items) {
    if (item.kind != TopLevel::Kind::kFunction || item.function.name != kGraphSetConditional) continue;
    if (item.function.hasBody) continue;  // the module's own function: its code, guarded like all
    if (item.function.kind != Function::Kind::kFunc || !isNvccDeclaration(item.function.header)) {
      result.error = "the module declares cudaGraphSetConditional other than as (.b64 handle, .b32 value)";
      return result;
    }
    if (result.defined) {
      result.error = "the module declares cudaGraphSetConditional twice";
      return result;
    }
    const ParseResult parsed = parse(kDefinition);
    if (!parsed.ok || parsed.module.items.size() != 1) {
      result.error = "internal error: the definition of cudaGraphSetConditional does not parse";
      return result;
    }
    item.function = parsed.module.items.front().function;
    result.defined = true;
  }
  result.ok = true;
  return result;
}

}  // namespace agileos::ptx
