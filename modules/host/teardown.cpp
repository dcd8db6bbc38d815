#include "modules/host/teardown.h"

namespace agileos::modules {

void tearDownInOrder(std::vector<std::unique_ptr<ModuleInstance>>& instances) {
  while (!instances.empty()) {
    instances.back().reset();  // ~ModuleInstance: cleanup, then revocation
    instances.pop_back();
  }
}

}  // namespace agileos::modules
