// Kernels compiled into the fatbin samples that tests/cpu/fatbin parses. The
// tests look for these names in the PTX, so keep them in sync with
// fatbin_samples.h.
extern "C" __global__ void agileos_probe_scale(float* out, const float* in, float factor, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * factor;
}

extern "C" __global__ void agileos_probe_fill(int* out, int value, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = value;
}

// Host code makes the executable sample a real program whose .nv_fatbin the
// test extracts; it is never run.
int main() { return 0; }
