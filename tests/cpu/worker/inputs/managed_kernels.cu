// __managed__ variables for the worker's tests (managed_variables_test.cpp): a scalar with an
// initializer, an array, and a kernel that uses both.
__managed__ int agileos_managed_counter = 5;
__managed__ float agileos_managed_table[16];

extern "C" __global__ void agileos_managed_bump(int amount) {
  atomicAdd(&agileos_managed_counter, amount);
  if (threadIdx.x < 16) agileos_managed_table[threadIdx.x] += 1.0f;
}
