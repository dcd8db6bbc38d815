// The command table of a protected module plugin, copied out of the plugin and validated once
// at load. After validation every entry satisfies: unique id, a name of 1..63 bytes, min <= max
// request bytes, and max request and max response bytes at most AGILEOS_MODULE_MAX_PAYLOAD_BYTES
// (16 MiB); the table has at most AGILEOS_MODULE_MAX_COMMANDS (256) entries.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "agileos/module_abi.h"

namespace agileos::modules {

// One command, owned by the worker (a copy of the plugin's agileos_module_command).
struct CommandSpec {
  std::uint32_t id = 0;
  std::string name;
  std::uint64_t min_request_bytes = 0;
  std::uint64_t max_request_bytes = 0;
  std::uint64_t max_response_bytes = 0;
};

// Validates the table a plugin's host_module_commands returned (`table` may be null, which is
// refused) and copies it. Returns the copy, or nullopt with the first problem in *problem.
// Reads at most AGILEOS_MODULE_MAX_COMMANDS entries and at most 64 bytes of each name.
std::optional<std::vector<CommandSpec>> copyCommandTable(const agileos_module_command* table,
                                                         std::uint32_t count, std::string* problem);

// The entry of `commands` with `id`, or null.
const CommandSpec* findCommand(std::span<const CommandSpec> commands, std::uint32_t id);

}  // namespace agileos::modules
