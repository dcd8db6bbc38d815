/* Broken plugins the module host must refuse at load, one per BROKEN_KIND:
 *   1 built for ABI version 2;
 *   2 no host_module_control export;
 *   3 a command table with a repeated id. */
#include "agileos/module_abi.h"

#if BROKEN_KIND == 3
static const agileos_module_command g_commands[] = {{1, "first", 0, 16, 16}, {1, "again", 0, 16, 16}};
#else
static const agileos_module_command g_commands[] = {{1, "noop", 0, 0, 0}};
#endif

uint32_t host_module_abi_version(void) {
#if BROKEN_KIND == 1
  return 2;
#else
  return AGILEOS_MODULE_ABI_VERSION;
#endif
}

const agileos_module_command* host_module_commands(uint32_t* count) {
  *count = (uint32_t)(sizeof g_commands / sizeof g_commands[0]);
  return g_commands;
}

int host_init_module(const agileos_module_init_context* context, void** instance) {
  (void)context;
  *instance = 0;
  return AGILEOS_MODULE_OK;
}

#if BROKEN_KIND != 2
int host_module_control(void* instance, uint32_t command, const void* request, uint64_t request_bytes,
                        void* response, uint64_t response_capacity, uint64_t* response_bytes) {
  (void)instance, (void)command, (void)request, (void)request_bytes, (void)response, (void)response_capacity;
  *response_bytes = 0;
  return AGILEOS_MODULE_OK;
}
#endif

void host_cleanup_module(void* instance) { (void)instance; }
