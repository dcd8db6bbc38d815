// Names a rewrite adds to a module without colliding with the module's own: every identifier
// of the module is collected, and a prefix none of them starts with is chosen. The guard
// (ptx/guard.h) names its registers with one; the managed-variable rewrite
// (ptx/managed_variables.h) its slots and registers.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "ptx/ast.h"

namespace agileos::ptx {

void collectIdentifiers(const std::vector<Token>& tokens, std::set<std::string>* out);
void collectIdentifiers(const std::vector<Statement>& statements, std::set<std::string>* out);
// Every identifier of the module: directives, function headers and bodies.
std::set<std::string> moduleIdentifiers(const Module& module);

// `prefix`, with '_' appended until no identifier of `identifiers` starts with it.
std::string freshPrefix(const std::set<std::string>& identifiers, std::string prefix);

}  // namespace agileos::ptx
