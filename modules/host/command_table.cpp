#include "modules/host/command_table.h"

#include <cstring>
#include <unordered_set>

namespace agileos::modules {
namespace {

std::string describe(std::uint32_t index, const agileos_module_command& command) {
  return "command #" + std::to_string(index) + " (id " + std::to_string(command.id) + ")";
}

}  // namespace

std::optional<std::vector<CommandSpec>> copyCommandTable(const agileos_module_command* table,
                                                         std::uint32_t count, std::string* problem) {
  if (table == nullptr) {
    *problem = "host_module_commands returned a null command table";
    return std::nullopt;
  }
  if (count > AGILEOS_MODULE_MAX_COMMANDS) {
    *problem = "the command table has " + std::to_string(count) + " commands, more than the limit of " +
               std::to_string(AGILEOS_MODULE_MAX_COMMANDS);
    return std::nullopt;
  }
  std::vector<CommandSpec> commands;
  commands.reserve(count);
  std::unordered_set<std::uint32_t> ids;
  for (std::uint32_t i = 0; i < count; ++i) {
    const agileos_module_command& command = table[i];
    if (command.name == nullptr) {
      *problem = describe(i, command) + " has no name";
      return std::nullopt;
    }
    // strnlen bounds the read: a name without a NUL within 64 bytes is too long anyway.
    const std::size_t name_length = strnlen(command.name, AGILEOS_MODULE_MAX_COMMAND_NAME + 1);
    if (name_length == 0) {
      *problem = describe(i, command) + " has an empty name";
      return std::nullopt;
    }
    if (name_length > AGILEOS_MODULE_MAX_COMMAND_NAME) {
      *problem = describe(i, command) + " has a name longer than " +
                 std::to_string(AGILEOS_MODULE_MAX_COMMAND_NAME) + " bytes";
      return std::nullopt;
    }
    const std::string name(command.name, name_length);
    if (!ids.insert(command.id).second) {
      *problem = describe(i, command) + " '" + name + "' repeats an id already in the table";
      return std::nullopt;
    }
    if (command.min_request_bytes > command.max_request_bytes) {
      *problem = describe(i, command) + " '" + name + "' has min_request_bytes " +
                 std::to_string(command.min_request_bytes) + " above max_request_bytes " +
                 std::to_string(command.max_request_bytes);
      return std::nullopt;
    }
    if (command.max_request_bytes > AGILEOS_MODULE_MAX_PAYLOAD_BYTES) {
      *problem = describe(i, command) + " '" + name + "' has max_request_bytes " +
                 std::to_string(command.max_request_bytes) + " above the limit of " +
                 std::to_string(AGILEOS_MODULE_MAX_PAYLOAD_BYTES);
      return std::nullopt;
    }
    if (command.max_response_bytes > AGILEOS_MODULE_MAX_PAYLOAD_BYTES) {
      *problem = describe(i, command) + " '" + name + "' has max_response_bytes " +
                 std::to_string(command.max_response_bytes) + " above the limit of " +
                 std::to_string(AGILEOS_MODULE_MAX_PAYLOAD_BYTES);
      return std::nullopt;
    }
    commands.push_back(CommandSpec{command.id, name, command.min_request_bytes, command.max_request_bytes,
                                   command.max_response_bytes});
  }
  return commands;
}

const CommandSpec* findCommand(std::span<const CommandSpec> commands, std::uint32_t id) {
  for (const CommandSpec& command : commands) {
    if (command.id == id) return &command;
  }
  return nullptr;
}

}  // namespace agileos::modules
