// Kernels with and without system-scope atomics, as systemWideAtomics writes them
// (ptx/system_atomics.h). Built as fatbins for tests/cpu/worker/system_atomics_test.cpp.
extern "C" __global__ void agileos_system_atomics(int* counters) {
  atomicAdd_system(&counters[0], 10);
  atomicCAS_system(&counters[1], 0, 1);
}

extern "C" __global__ void agileos_device_atomics(int* counters) { atomicAdd(&counters[0], 1); }
