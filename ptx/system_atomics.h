// Which kernels of a PTX module use system-scope read-modify-write atomics: `atom` and `red` with
// the `.sys` scope (atomicAdd_system and its kin). On memory the host reaches too (managed memory
// here is a host segment the GPU reaches over PCIe), these are the instructions whose atomicity
// against the host's own atomics the link does not give (docs/architecture.md, "Managed memory");
// the client serializes such kernels with the host (client/session/system_atomics.h).
//
// Lexical (ptx/lexer.h: comments and strings cannot fake an opcode): an opcode token whose first
// component is `atom` or `red` and one of whose modifiers is `sys`, attributed to the `.entry`
// whose body holds it; one in a `.func` body marks every entry of the module (calls are not
// followed). The answer is a hint for the client's scheduling, never a security decision.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agileos::ptx {

// The names of the entries (kernels) that use system-scope atomics, in the order they are
// defined; nullopt when the text does not lex.
std::optional<std::vector<std::string>> kernelsWithSystemAtomics(std::string_view ptx);

}  // namespace agileos::ptx
