// Kernels that transfer control indirectly, so the PTX corpus holds what the guard's
// control-flow checks (ptx/control_flow.h) must cover: calls through device function
// pointers (chosen by a select and loaded from a table in global memory) and virtual
// calls through vtables, whose initializers take functions' addresses; an indexed branch
// (brx.idx). Compiled to PTX only (never run here).
struct Shape {
  __device__ virtual float area(float s) const { return s * s; }
  __device__ virtual float perimeter(float s) const { return 4.0f * s; }
};
struct Circle : Shape {
  __device__ float area(float s) const override { return 3.14159f * s * s; }
  __device__ float perimeter(float s) const override { return 6.28318f * s; }
};

typedef float (*UnaryOp)(float);
__device__ __noinline__ float twice(float x) { return 2.0f * x; }
__device__ __noinline__ float square(float x) { return x * x; }
__device__ UnaryOp table[2] = {twice, square};

__global__ void callThroughPointers(float* out, int which, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const UnaryOp op = which == 0 ? twice : square;
  out[i] = op(out[i]) + table[(which + i) & 1](1.0f);
}

__global__ void callVirtual(float* out, int kind, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  Shape plain;
  Circle circle;
  const Shape* shape = kind == 0 ? &plain : static_cast<const Shape*>(&circle);
  out[i] = shape->area(out[i]) + shape->perimeter(1.0f);
}

// An indexed branch (brx.idx), which nvcc does not emit for a switch here: written out.
__device__ __noinline__ int pickBranch(unsigned index) {
  int r;
  asm volatile(
      "{\n\t"
      "ts: .branchtargets Lpick0, Lpick1, Lpick2;\n\t"
      "brx.idx %1, ts;\n"
      "Lpick0:\n\tmov.b32 %0, 10;\n\tbra.uni Lpicked;\n"
      "Lpick1:\n\tmov.b32 %0, 11;\n\tbra.uni Lpicked;\n"
      "Lpick2:\n\tmov.b32 %0, 12;\n"
      "Lpicked:\n\t}"
      : "=r"(r)
      : "r"(index));
  return r;
}

__global__ void indexedBranch(int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = pickBranch(static_cast<unsigned>(out[i]) % 3u);
}
