// The smallest module device code: one function for applications (agileos_<module>_*), one per-client
// constant published by the plugin, a user pointer checked before it is written.
#include <agileos/module_device.h>

extern "C" __device__ unsigned long long __agileos_consumer_const_answer(void);

extern "C" __device__ int agileos_consumer_answer(unsigned long long* out) {
  if (!agileos_user_range_ok(reinterpret_cast<unsigned long long>(out), sizeof *out)) return AGILEOS_MODULE_EINVAL;
  *out = __agileos_consumer_const_answer();
  return 0;
}
