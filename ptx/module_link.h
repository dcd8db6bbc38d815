// Linking protected-module device functions into application PTX.
//
// A protected module offers device functions to untrusted kernels. Its trusted device
// code is PTX (nvcc -rdc=true -ptx) in which
//   - `.visible .func agileos_<module>_<fn>` are exports, for applications;
//   - `.visible .func __agileos_<module>_<fn>` are for modules loaded after it;
//   - plain `.func` are helpers (any name, C++-mangled or not);
//   - `.extern .func __agileos_<module>_const_<c>` (returning one .b64, no parameters)
//     reads a per-client constant, which the link defines from DeviceModule::constants;
//   - `.extern .func __agileos_<dep>_<fn>` calls a function of a module loaded earlier.
// Nothing else: no variable at module scope (it would live in user-writable memory), no
// `.entry`. `.file` and `.section` (debug information) and `.loc` in bodies are dropped.
//
// The application is compiled (whole-program) with the module's public header, which
// defines a PLACEHOLDER for each export it calls. The link replaces each placeholder's
// body with the export's body (the placeholder's parameter names become the module's, so
// the trusted body is exactly the module's code) and inserts the code the exports need
// after the application's leading .version/.target/.address_size directives: the constant
// functions first, then each used module's functions in list order, helpers renamed to
// `__agileos_<module>_l_<name>` so no application name can capture them. The names
// `__agileos_*` are reserved: an application that writes one is refused.
//
// Every violation refuses the whole link with a message naming the module or function;
// nothing is half linked. An application that replaces no placeholder comes back
// unchanged. The link is deterministic: the same inputs give the same module.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ptx/ast.h"

namespace agileos::ptx {

// One admitted module. Modules are listed in load order: a module's dependencies first.
struct DeviceModule {
  std::string name;  // [a-z][a-z0-9_]*
  Module code;       // the module's parsed PTX
  // c -> value of __agileos_<name>_const_<c> (for this client).
  std::map<std::string, std::uint64_t> constants;
};

struct LinkResult {
  bool ok = false;
  std::string error;  // why the link is refused, when !ok
  Module module;      // the linked application, when ok
  // Every function whose body is trusted module code: the inserted functions and the
  // replaced placeholders (GuardOptions::trustedFunctions).
  std::set<std::string> trustedFunctions;
  std::size_t replacedPlaceholders = 0;
};

// Why `module` cannot be loaded after `earlier` (the modules loaded before it, in load
// order), or "" when it can. Applies every rule on module code; usable at module load,
// before any application.
std::string checkDeviceModule(const DeviceModule& module, const std::vector<DeviceModule>& earlier);

LinkResult linkModuleFunctions(const Module& application, const std::vector<DeviceModule>& modules);

}  // namespace agileos::ptx
