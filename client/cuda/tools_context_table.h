// The tools-context private table (id 21318c60..., NVIDIA's CU_ETID_ToolsContext), which cuBLASLt
// asks the driver for before its first GEMM (untrusted side).
#pragma once

namespace agileos::client::cuda_shim {

// The table: as many entries as the real driver's (93 in driver 580), the three cuBLASLt uses
// served, every other one failing closed.
const void* toolsContextTable();

}  // namespace agileos::client::cuda_shim
