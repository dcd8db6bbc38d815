// Teardown of a client's module instances when the client ends or its worker is retired.
#pragma once

#include <memory>
#include <vector>

#include "modules/host/module_instance.h"

namespace agileos::modules {

// Destroys `instances` in reverse order of creation: a module is created after the modules it
// depends on (they come earlier in the vector), so each is cleaned up while its dependencies
// still exist. Each destruction calls host_cleanup_module and then revokes the protected memory
// the plugin left (ModuleInstance::shutdown). Leaves `instances` empty.
void tearDownInOrder(std::vector<std::unique_ptr<ModuleInstance>>& instances);

}  // namespace agileos::modules
