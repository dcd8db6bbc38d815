// The runtime shim's cudaGetDriverEntryPoint opens only the AgileOS driver shim beside it. Here the
// runtime shim sits in a directory whose libcuda.so.1 is another library (the toolkit's libcuda
// stub, standing in for a real driver installed beside the shim): no entry point may come from
// it, and the call fails closed.
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>

int main() {
  void* entry = reinterpret_cast<void*>(0x99);
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSuccess;
  const cudaError_t error =
      cudaGetDriverEntryPointByVersion("cuMemAlloc", &entry, CUDART_VERSION, cudaEnableDefault, &status);
  const bool refused =
      error == cudaErrorNotSupported && entry == nullptr && status == cudaDriverEntryPointSymbolNotFound;
  std::printf("%s cudaGetDriverEntryPointByVersion beside a foreign libcuda.so.1: %s\n",
              refused ? "PASS" : "FAIL", cudaGetErrorName(error));
  void* foreign = ::dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_NOW);
  std::printf("%s the foreign libcuda.so.1 was never loaded\n", foreign == nullptr ? "PASS" : "FAIL");
  return refused && foreign == nullptr ? 0 : 1;
}
