// tenant_fault: the faulting tenant of row 2G-06 of two_tenant_matrix.sh (fault injection), run
// under AgileOS only (natively the malformed registrations could crash the runtime). First a round
// trip through its own buffer must be exact; then, by --mode:
//   malformed  six malformed inputs, each of which must fail with a CUDA error while the worker
//              keeps serving (a round trip after each must be exact): a fatbin container claiming
//              1 TiB, a fatbin of garbage bytes (both registered through __cudaRegisterFatBinary
//              and launched), cudaLaunchKernel of a forged function pointer, a copy to a user-range
//              address nothing was allocated at, a copy whose size overflows, a forged stream;
//   illegal    a kernel stores to a user-range address nothing was allocated at: the synchronize
//              must fail with cudaErrorIllegalAddress, and so must a later call (the context is
//              lost for good, as natively);
//   trap       a kernel executes a trap instruction: the synchronize must fail (natively
//              cudaErrorLaunchFailure) and so must a later call.
// Each case prints "fault: <case>: <error name>"; the closing line is "fault: <mode>: failed
// closed ...". Exit status 0 only if every case failed with an error as it should.
//
// Usage: tenant_fault --mode malformed|illegal|trap
#include <cstdint>
#include <string>
#include <vector>

#include "tests/gpu/tenants/tenant_util.cuh"

extern "C" void** __cudaRegisterFatBinary(void* fatCubin);
extern "C" void __cudaRegisterFatBinaryEnd(void** fatCubinHandle);
extern "C" void __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun, char* deviceFun,
                                       const char* deviceName, int thread_limit, uint3* tid, uint3* bid,
                                       dim3* bDim, dim3* gDim, int* wSize);

namespace {

using tenant::say;

// A user-range address (AgileOS's layout: [0xF8000000000, +1 TiB)) far beyond anything allocated.
constexpr std::uint64_t kUnallocated = 0xF8000000000ull + (768ull << 30);
constexpr std::uint32_t kFatbinWrapperMagic = 0x466243B1u;
constexpr std::uint32_t kFatbinContainerMagic = 0xBA55ED50u;

__global__ void storeTo(unsigned* target) { *target = 0xFA17u; }
__global__ void trapNow() { __trap(); }

unsigned* ownBuffer = nullptr;
unsigned roundTrips = 0;
int failures = 0;

bool roundTrip() {
  std::vector<unsigned> out(4096), back(4096, 0);
  ++roundTrips;
  for (unsigned i = 0; i < 4096; ++i) out[i] = i * 2654435761u + roundTrips;
  if (!tenant::ok(cudaMemcpy(ownBuffer, out.data(), out.size() * 4, cudaMemcpyHostToDevice),
                  "round trip: to") ||
      !tenant::ok(cudaMemcpy(back.data(), ownBuffer, back.size() * 4, cudaMemcpyDeviceToHost),
                  "round trip: back"))
    return false;
  if (back != out) {
    say("FAILED round trip %u came back different", roundTrips);
    return false;
  }
  return true;
}

// A case that must fail with `expected` (cudaSuccess here: any error), then a round trip.
void mustFail(const char* what, cudaError_t got, cudaError_t expected) {
  if (got == cudaSuccess) got = cudaDeviceSynchronize();  // sent without waiting: reported at the next reply
  cudaGetLastError();
  say("%s: %s", what, cudaGetErrorName(got));
  if (got == cudaSuccess || (expected != cudaSuccess && got != expected)) {
    say("FAILED %s: %s, expected %s", what, cudaGetErrorName(got),
        expected == cudaSuccess ? "an error" : cudaGetErrorName(expected));
    ++failures;
  }
  if (!roundTrip()) ++failures;
}

struct FatbinWrapper {
  int magic;
  int version;
  const void* data;
  void* filenameOrFatbins;
};
char hostStubs[4];

cudaError_t registerAndLaunch(const unsigned char* image, int stub) {
  auto* wrapper = new FatbinWrapper{static_cast<int>(kFatbinWrapperMagic), 1, image,
                                    nullptr};  // kept: the runtime may read it later
  void** handle = __cudaRegisterFatBinary(wrapper);
  char name[] = "tenant_fault_kernel";
  __cudaRegisterFunction(handle, &hostStubs[stub], name, name, -1, nullptr, nullptr, nullptr, nullptr,
                         nullptr);
  __cudaRegisterFatBinaryEnd(handle);
  void* args[] = {&ownBuffer};
  return cudaLaunchKernel(&hostStubs[stub], dim3(1), dim3(1), args, 0, nullptr);
}

int malformed() {
  // A container header claiming 1 TiB of entries behind 4 KiB of bytes.
  auto* huge = new unsigned char[4096 + 64]();
  const std::uint32_t magic = kFatbinContainerMagic;
  const std::uint16_t version = 1, headerSize = 16;
  const std::uint64_t claimed = 1ull << 40;
  std::memcpy(huge, &magic, 4);
  std::memcpy(huge + 4, &version, 2);
  std::memcpy(huge + 6, &headerSize, 2);
  std::memcpy(huge + 8, &claimed, 8);
  mustFail("fatbin container claiming 1 TiB, registered and launched", registerAndLaunch(huge, 0),
           cudaSuccess);
  // A valid container header over 4 KiB of garbage entries.
  auto* garbage = new unsigned char[4096 + 64]();
  for (unsigned i = 16; i < 4096; ++i) garbage[i] = static_cast<unsigned char>(i * 167u + 13u);
  const std::uint64_t size = 4096 - 16;
  std::memcpy(garbage, &magic, 4);
  std::memcpy(garbage + 4, &version, 2);
  std::memcpy(garbage + 6, &headerSize, 2);
  std::memcpy(garbage + 8, &size, 8);
  mustFail("fatbin of garbage entries, registered and launched", registerAndLaunch(garbage, 1), cudaSuccess);
  void* args[] = {&ownBuffer};
  mustFail("cudaLaunchKernel(forged function pointer)",
           cudaLaunchKernel(reinterpret_cast<const void*>(&hostStubs[3]), dim3(1), dim3(1), args, 0, nullptr),
           cudaSuccess);
  std::vector<unsigned char> host(4096, 0);
  mustFail(
      "cudaMemcpy to an unallocated user-range address",
      cudaMemcpy(tenant::fromValue<void*>(kUnallocated), host.data(), host.size(), cudaMemcpyHostToDevice),
      cudaErrorInvalidValue);
  mustFail("cudaMemcpy device to device with a size that overflows",
           cudaMemcpy(ownBuffer + 4, ownBuffer, ~static_cast<std::size_t>(0) - 7, cudaMemcpyDeviceToDevice),
           cudaErrorInvalidValue);
  mustFail("cudaStreamSynchronize(forged stream)",
           cudaStreamSynchronize(tenant::fromValue<cudaStream_t>(0x5eed5eed12345678ull)),
           cudaErrorInvalidResourceHandle);
  if (failures != 0) return 1;
  say("malformed: failed closed: 6 of 6 malformed inputs refused with an error, %u round trips exact around "
      "them",
      roundTrips);
  return 0;
}

// A kernel fault: the synchronize reports it, and the context is gone for good.
int kernelFault(const char* mode, cudaError_t expected) {
  const cudaError_t launched = cudaGetLastError();
  const cudaError_t synchronized = cudaDeviceSynchronize();
  void* more = nullptr;
  const cudaError_t later = cudaMalloc(&more, 4096);
  say("%s: launch %s, synchronize %s, a later cudaMalloc %s", mode, cudaGetErrorName(launched),
      cudaGetErrorName(synchronized), cudaGetErrorName(later));
  const cudaError_t fault = launched != cudaSuccess ? launched : synchronized;
  if (fault == cudaSuccess || (expected != cudaSuccess && fault != expected)) {
    say("FAILED %s: the kernel's fault came back as %s, expected %s", mode, cudaGetErrorName(fault),
        expected == cudaSuccess ? "an error" : cudaGetErrorName(expected));
    return 1;
  }
  if (later == cudaSuccess) {
    say("FAILED %s: a call after the fault succeeded; the context should be lost", mode);
    return 1;
  }
  say("%s: failed closed: %s, and %s for a later call (natively: %s)", mode, cudaGetErrorName(fault),
      cudaGetErrorName(later),
      expected == cudaSuccess ? "cudaErrorLaunchFailure" : cudaGetErrorName(expected));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tenant::gPrefix = "fault";
  const std::string mode = argc == 3 && std::strcmp(argv[1], "--mode") == 0 ? argv[2] : "";
  if (mode != "malformed" && mode != "illegal" && mode != "trap") {
    std::fprintf(stderr, "usage: tenant_fault --mode malformed|illegal|trap\n");
    return 2;
  }
  if (!tenant::ok(cudaMalloc(&ownBuffer, 1u << 20), "cudaMalloc") || !roundTrip()) return 1;
  say("a round trip before the fault is exact");
  if (mode == "malformed") return malformed();
  if (mode == "illegal") {
    storeTo<<<1, 1>>>(tenant::fromValue<unsigned*>(kUnallocated));
    return kernelFault("illegal", cudaErrorIllegalAddress);
  }
  trapNow<<<1, 1>>>();
  // Natively a trap ends the kernel with cudaErrorLaunchFailure; any error is accepted here.
  return kernelFault("trap", cudaSuccess);
}
