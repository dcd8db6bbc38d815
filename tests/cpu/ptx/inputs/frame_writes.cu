// Device functions that write local memory (issue 13, return edges): their own arrays
// through computed indices, their caller's array through a pointer, recursion, and a
// kernel's own local array. nvcc keeps each __noinline__ function a .func with a local
// depot; the guard bounds every write a .func makes to the local window
// (ptx/frame_confinement.h), and leaves the kernels' own writes alone.
#include <cstdint>

__device__ __noinline__ unsigned leaf(unsigned v) { return v * 3u + 1u; }

// Its own array, indices from the caller: st.local through a computed address.
__device__ __noinline__ unsigned fillOwn(unsigned from, unsigned count, unsigned seed) {
  unsigned a[8];
  for (unsigned i = 0; i < 8; ++i) a[i] = seed ^ i;
  for (unsigned i = from; i < from + count && i < 8; ++i) a[i] = leaf(i);
  return a[seed & 7u] + a[(seed >> 3) & 7u];
}

// Writes through a pointer it was given: generic stores (the caller's local array or global memory).
__device__ __noinline__ void fillThrough(unsigned* p, unsigned n, unsigned value) {
  for (unsigned i = 0; i < n; ++i) p[i] = value + i;
}

// Recursion: every frame holds a saved return address.
__device__ __noinline__ unsigned recurse(unsigned depth, unsigned index) {
  unsigned a[4];
  for (unsigned i = 0; i < 4; ++i) a[i] = depth * 4u + i;
  a[index & 3u] = leaf(depth);
  if (depth == 0) return a[index & 3u];
  return recurse(depth - 1, index + 1) + a[(index + 1) & 3u];
}

// Atomics on a generic pointer in a device function.
__device__ __noinline__ void bump(unsigned* counter, unsigned by) { atomicAdd(counter, by); }

__global__ void frameKernel(unsigned* out, unsigned from, unsigned count, unsigned n) {
  unsigned local[16];
  for (unsigned i = 0; i < 16; ++i) local[i] = i;
  local[from & 15u] = fillOwn(from, count, threadIdx.x);
  fillThrough(out, n, 7u);  // global memory through a generic pointer
  out[threadIdx.x] = local[(from + 1) & 15u] + recurse(3, from);
  bump(out + 32, 1u);
}

// A kernel that hands its own local array to a device function: under the guard this traps
// (the write lands in the caller's frame, not the function's own variables).
__global__ void callerArrayKernel(unsigned* out, unsigned n) {
  unsigned local[8] = {};
  fillThrough(local, n < 8 ? n : 8, 3u);
  out[threadIdx.x] = local[threadIdx.x & 7u];
}
