// The second object of separate_compilation (compiled -rdc=true and device-linked with it): a
// device array, a __managed__ variable and a device function the first object declares extern, and
// a template both objects instantiate (a .weak definition in each object's PTX).
template <typename T>
__device__ __noinline__ T twice(T value) {
  return 2 * value;
}

__device__ unsigned weights[4] = {1, 10, 100, 1000};
__managed__ unsigned managedTotal = 7;

__device__ __noinline__ unsigned weighted(unsigned index) { return weights[index % 4]; }

__device__ unsigned helperTwice(unsigned value) { return twice(value); }
