// Run on a GPU machine against the real driver: prints, for each private export table the driver
// shim serves (client/cuda/api_export_tables.cpp), whether the driver has it and the first entry
// of the table (for most tables its size in bytes), so that the shim's table sizes can be checked
// against the driver's. Also asks for the table the CUDA 13 runtime requests first
// (f8cff951-...), which the shim does not serve.
//
//   agileos_probe_export_tables        (linked to the toolkit's libcuda stub; run with the real
//                                       libcuda.so.1 on the library path)
#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "client/cuda/export_table_ids.h"

namespace {

using namespace agileos::client::cuda_shim;

struct Probe {
  const char* name;
  const ExportTableId& id;
  bool firstIsSize;
};

const Probe kProbes[] = {
    {"runtime interface", kRuntimeInterfaceId, true},
    {"tools callback hooks", kToolsCallbackHooksId, true},
    {"tools TLS", kToolsTlsId, true},
    {"context-local storage", kContextStorageId, false},
    {"runtime integrity", kRuntimeIntegrityId, true},
    {"context type checks", kContextChecksId, true},
    {"(not served) f8cff951", kUnservedF8cff951Id, true},
    {"tools context", kToolsContextId, true},
};

}  // namespace

int main() {
  if (cuInit(0) != CUDA_SUCCESS) {
    std::printf("cuInit failed\n");
    return 1;
  }
  int version = 0;
  cuDriverGetVersion(&version);
  std::printf("driver version %d\n", version);
  for (const Probe& probe : kProbes) {
    CUuuid id;
    std::memcpy(id.bytes, probe.id.data(), sizeof id.bytes);
    const void* table = nullptr;
    const CUresult result = cuGetExportTable(&table, &id);
    if (result != CUDA_SUCCESS || table == nullptr) {
      std::printf("%-24s absent (CUresult %d)\n", probe.name, static_cast<int>(result));
      continue;
    }
    const auto* entries = static_cast<const std::uintptr_t*>(table);
    if (probe.firstIsSize) {
      std::printf("%-24s first entry %zu (%zu entries if a size)\n", probe.name,
                  static_cast<std::size_t>(entries[0]), static_cast<std::size_t>(entries[0] / sizeof(void*)));
    } else {
      std::size_t count = 0;
      while (count < 64 && entries[count] != 0) ++count;
      std::printf("%-24s %zu non-null entries before a null\n", probe.name, count);
    }
  }
  return 0;
}
