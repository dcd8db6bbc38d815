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

namespace {

struct Probe {
  const char* name;
  unsigned char id[16];
  bool firstIsSize;
};

const Probe kProbes[] = {
    {"runtime interface",
     {0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9},
     true},
    {"tools callback hooks",
     {0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66},
     true},
    {"tools TLS",
     {0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc},
     true},
    {"context-local storage",
     {0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93},
     false},
    {"runtime integrity",
     {0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2},
     true},
    {"context type checks",
     {0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e},
     true},
    {"(not served) f8cff951",
     {0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e, 0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d, 0xd9},
     true},
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
    std::memcpy(id.bytes, probe.id, sizeof id.bytes);
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
