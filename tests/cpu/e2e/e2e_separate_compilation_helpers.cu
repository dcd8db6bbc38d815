// The second object of e2e_separate_compilation (linked with it, -rdc=true): a device function, a
// device variable and a __managed__ variable the first object uses, so its image is linked from two
// objects, whose PTX the worker merges into one module (ptx/object_merge.h) before it rewrites the
// managed variable.
__device__ float scaleBias = 0.5f;
__managed__ int managedCounter = 7;

__device__ __noinline__ float biased(float value) { return value + scaleBias; }
