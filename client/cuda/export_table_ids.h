// The ids of the private tables a CUDA runtime asks the driver for (cuGetExportTable), as the
// bytes of a CUuuid (the GUID's digits in order). Named by what the tables do; the public ZLUDA
// and Lupine projects call them CUDART_INTERFACE, TOOLS_RUNTIME_CALLBACK_HOOKS, TOOLS_TLS,
// CONTEXT_LOCAL_STORAGE_INTERFACE_V0301, INTEGRITY_CHECK and CONTEXT_CHECKS.
#pragma once

#include <array>
#include <cstdint>

namespace agileos::client::cuda_shim {

using ExportTableId = std::array<std::uint8_t, 16>;

inline constexpr ExportTableId kRuntimeInterfaceId = {0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a,
                                                      0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9};
inline constexpr ExportTableId kToolsCallbackHooksId = {0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74,
                                                        0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66};
inline constexpr ExportTableId kToolsTlsId = {0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47,
                                              0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc};
inline constexpr ExportTableId kContextStorageId = {0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11,
                                                    0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93};
inline constexpr ExportTableId kRuntimeIntegrityId = {0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b,
                                                      0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2};
inline constexpr ExportTableId kContextChecksId = {0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43,
                                                   0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e};
// Asked for first by the CUDA 13 runtime; not served (the runtime goes on without it). Meaning
// unknown; the real driver's has 3 entries.
inline constexpr ExportTableId kUnservedF8cff951Id = {0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e,
                                                      0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d, 0xd9};

// Asked for by cuBLASLt before its first GEMM (NVIDIA's name, from its tools headers:
// CU_ETID_ToolsContext); not served yet. cuBLASLt calls its entry 4 repeatedly, and on the fake
// GPU a GEMM then fails with CUBLAS_STATUS_NOT_SUPPORTED. Its size in the real driver 580 is
// what client/cuda/tools/probe_export_tables.cpp prints.
inline constexpr ExportTableId kToolsContextId = {0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48,
                                                  0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8, 0xf2};

}  // namespace agileos::client::cuda_shim
