// A protected module plugin's host library, loaded into the trusted worker with dlopen. Opening
// it resolves the five ABI exports, checks the ABI version and copies and validates the command
// table (command_table.h); a library that fails any of these is closed again and refused with an
// error naming its path and the problem. A PluginLibrary is immutable after open, so it may be
// shared by the instances of every client (hold it in a shared_ptr: each ModuleInstance keeps
// its library alive, so the code is never dlclosed under a live instance).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "agileos/module_abi.h"
#include "modules/host/command_table.h"

namespace agileos::modules {

class PluginLibrary {
 public:
  // Loads `path` (dlopen RTLD_NOW | RTLD_LOCAL). Returns null with *error set on any failure.
  static std::shared_ptr<const PluginLibrary> open(const std::string& path, std::string* error);

  ~PluginLibrary();  // dlclose
  PluginLibrary(const PluginLibrary&) = delete;
  PluginLibrary& operator=(const PluginLibrary&) = delete;

  const std::string& path() const { return path_; }
  std::span<const CommandSpec> commands() const { return commands_; }
  const CommandSpec* findCommand(std::uint32_t id) const;

  // The resolved exports; all non-null.
  agileos_host_init_module_fn initModule() const { return init_; }
  agileos_host_module_control_fn control() const { return control_; }
  agileos_host_cleanup_module_fn cleanupModule() const { return cleanup_; }
  // Optional export; null when the plugin has none.
  agileos_host_module_dma_revoked_fn dmaRevoked() const { return dma_revoked_; }

 private:
  PluginLibrary(std::string path, void* handle) : path_(std::move(path)), handle_(handle) {}

  std::string path_;
  void* handle_ = nullptr;  // owned: dlclose in the destructor
  agileos_host_init_module_fn init_ = nullptr;
  agileos_host_module_control_fn control_ = nullptr;
  agileos_host_cleanup_module_fn cleanup_ = nullptr;
  agileos_host_module_dma_revoked_fn dma_revoked_ = nullptr;
  std::vector<CommandSpec> commands_;
};

}  // namespace agileos::modules
