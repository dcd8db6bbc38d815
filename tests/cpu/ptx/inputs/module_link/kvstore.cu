// The kvstore module's device code (nvcc -rdc=true -ptx): a hash table at the per-client
// constant `table` with `slots` entries; every put is logged to the queue module. The
// helpers are static (one in an anonymous namespace, so C++-mangled); get checks the
// application's pointer itself, as module code must.
extern "C" __device__ unsigned long long __agileos_kvstore_const_table(void);
extern "C" __device__ unsigned long long __agileos_kvstore_const_slots(void);
extern "C" __device__ int __agileos_queue_push(unsigned long long item);

namespace {
__device__ __noinline__ unsigned long long slotOf(unsigned long long key) {
  return (key * 0x9E3779B97F4A7C15ull) % __agileos_kvstore_const_slots();
}
}  // namespace

// [p, p + bytes) misses the protected range and the guard zone below it,
// [0xEFF00000000, 0xF8000000000) (memmgr/address_layout.h).
static __device__ __noinline__ bool userPointer(const void* p, unsigned long long bytes) {
  const unsigned long long a = reinterpret_cast<unsigned long long>(p);
  return a + bytes >= a && (a + bytes <= 0xEFF00000000ull || a >= 0xF8000000000ull);
}

extern "C" __device__ int agileos_kvstore_put(unsigned long long key, unsigned long long value) {
  unsigned long long* t = reinterpret_cast<unsigned long long*>(__agileos_kvstore_const_table());
  const unsigned long long s = slotOf(key);
  t[2 * s] = key;
  t[2 * s + 1] = value;
  return __agileos_queue_push(key);
}

extern "C" __device__ int agileos_kvstore_get(unsigned long long key, unsigned long long* value) {
  if (!userPointer(value, sizeof *value)) return -14;
  const unsigned long long* t = reinterpret_cast<unsigned long long*>(__agileos_kvstore_const_table());
  const unsigned long long s = slotOf(key);
  if (t[2 * s] != key) return -2;
  *value = t[2 * s + 1];
  return 0;
}
