// The queue module's device code (nvcc -rdc=true -ptx): a ring of 64 slots after a
// counter, at the per-client constant `base`. __agileos_queue_push is for modules
// loaded after it (kvstore), agileos_queue_push for applications.
extern "C" __device__ unsigned long long __agileos_queue_const_base(void);

extern "C" __device__ int __agileos_queue_push(unsigned long long item) {
  unsigned long long* q = reinterpret_cast<unsigned long long*>(__agileos_queue_const_base());
  const unsigned long long slot = atomicAdd(q, 1ull);
  q[1 + (slot & 63)] = item;
  return 0;
}

extern "C" __device__ int agileos_queue_push(unsigned long long item) { return __agileos_queue_push(item); }
