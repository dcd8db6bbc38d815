// Checks shared by validateModulePool (a pool built in code) and parseModulePool (a pool read from
// the config), so both enforce the same invariants (module_manifest.h). Internal to the catalog.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "modules/catalog/module_manifest.h"

namespace agileos::modules::detail {

// "" if `path` is a usable artifact path: absolute, no NUL, at most kMaxArtifactPathBytes.
// Callers skip empty paths (an absent artifact).
std::string checkArtifactPath(std::string_view path);

// "" if `service` is empty or a valid name.
std::string checkServiceName(std::string_view service);

// The checks that relate entries: duplicate names, dependencies that are unknown, repeated or
// unsatisfied, and cycles. Entries or dependencies with an empty name (already reported as
// missing) are skipped. `version_known[i]` false means entry i's version did not parse (reported
// elsewhere), so no requirement is checked against it: that would only repeat the error.
void checkPoolGraph(const ModulePool& pool, const std::string& path, const std::vector<bool>& version_known,
                    std::vector<std::string>* errors);

}  // namespace agileos::modules::detail
