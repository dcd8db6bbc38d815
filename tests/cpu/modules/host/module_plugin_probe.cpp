// module_plugin_probe <plugin.so>: loads a plugin through the trusted module host, creates an
// instance with a fake protected memory and calls its command 1 "reverse" with "abc" (the SDK
// consumer's plugin, sdk_consumer/plugin.c). Exit 0 if the response is "cba".
#include <iostream>
#include <string>

#include "modules/host/module_instance.h"
#include "tests/cpu/modules/host/fake_protected_memory.h"

int main(int argc, char** argv) {
  using namespace agileos::modules;
  if (argc != 2) {
    std::cerr << "usage: module_plugin_probe <plugin.so>\n";
    return 2;
  }
  std::string error;
  auto library = PluginLibrary::open(argv[1], &error);
  if (library == nullptr) {
    std::cerr << error << "\n";
    return 1;
  }
  testing::FakeProtectedMemory memory;
  ModuleInstanceConfig config;
  config.module_name = "sdk-consumer";
  auto instance = ModuleInstance::create(library, std::move(config), memory, &error);
  if (instance == nullptr) {
    std::cerr << error << "\n";
    return 1;
  }
  std::string response;
  if (instance->control(1, "abc", &response, &error) != AGILEOS_MODULE_OK || response != "cba") {
    std::cerr << "command 1 failed: " << error << " (response '" << response << "')\n";
    return 1;
  }
  std::cout << "loaded " << argv[1] << ": reverse(\"abc\") = \"" << response << "\"\n";
  return 0;
}
