/* The smallest useful module plugin: one command, 1 "reverse", 0..64 bytes, reversed. */
#include <agileos/module_abi.h>
#include <stdlib.h>

static const agileos_module_command g_commands[] = {{1, "reverse", 0, 64, 64}};

uint32_t host_module_abi_version(void) { return AGILEOS_MODULE_ABI_VERSION; }

const agileos_module_command* host_module_commands(uint32_t* count) {
  *count = 1;
  return g_commands;
}

int host_init_module(const agileos_module_init_context* context, void** instance) {
  *instance = (void*)context->host; /* no state of its own beyond the host callbacks */
  return AGILEOS_MODULE_OK;
}

int host_module_control(void* instance, uint32_t command, const void* request, uint64_t request_bytes,
                        void* response, uint64_t response_capacity, uint64_t* response_bytes) {
  (void)instance;
  if (command != 1 || request_bytes > response_capacity) return AGILEOS_MODULE_EINVAL;
  const unsigned char* in = request;
  unsigned char* out = response;
  for (uint64_t i = 0; i < request_bytes; ++i) out[i] = in[request_bytes - 1 - i];
  *response_bytes = request_bytes;
  return AGILEOS_MODULE_OK;
}

void host_cleanup_module(void* instance) { (void)instance; }
