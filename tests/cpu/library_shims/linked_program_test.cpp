// A program linked against NVIDIA's libcufft.so.12 and libnvrtc.so.13 runs with the AgileOS
// shims in their place, as in the sandbox: the runtime shim preloaded (LD_PRELOAD), and the
// shims' directory, which holds the libcufft.so.12 and libnvrtc.so.13 symlinks, first on
// LD_LIBRARY_PATH. The program has no RPATH that could pick the real libraries. No daemon runs.
#include <cufft.h>
#include <cufftXt.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <filesystem>

#if !defined(AGILEOS_CUFFT_SHIM) || !defined(AGILEOS_NVRTC_SHIM)
#error "AGILEOS_CUFFT_SHIM and AGILEOS_NVRTC_SHIM must name the built shims"
#endif

namespace {

std::filesystem::path definingFile(const void* function) {
  Dl_info info{};
  if (dladdr(function, &info) == 0 || info.dli_fname == nullptr) return {};
  return std::filesystem::canonical(info.dli_fname);
}

TEST(LinkedProgramTest, CufftCallsBindToTheShim) {
  EXPECT_EQ(definingFile(reinterpret_cast<const void*>(&cufftPlan1d)),
            std::filesystem::canonical(AGILEOS_CUFFT_SHIM));
  // NVIDIA's library would try the GPUs; the shim refuses multi-GPU plans.
  int gpus[] = {0, 1};
  EXPECT_EQ(cufftXtSetGPUs(1, 2, gpus), CUFFT_NOT_SUPPORTED);
  EXPECT_EQ(cufftExecC2C(4242, nullptr, nullptr, CUFFT_FORWARD), CUFFT_INVALID_PLAN);
  cufftHandle plan = 0;
  EXPECT_EQ(cufftPlan1d(&plan, 64, CUFFT_C2C, 1), CUFFT_INTERNAL_ERROR);  // no session
}

TEST(LinkedProgramTest, NvrtcCallsBindToTheShim) {
  EXPECT_EQ(definingFile(reinterpret_cast<const void*>(&nvrtcCompileProgram)),
            std::filesystem::canonical(AGILEOS_NVRTC_SHIM));
  size_t size = 0;
  // NVIDIA's library answers NVRTC_ERROR_INVALID_PROGRAM for a null program, and so does the
  // shim (which implements LTO IR); the shim refuses OptiX IR outright.
  EXPECT_EQ(nvrtcGetLTOIRSize(nullptr, &size), NVRTC_ERROR_INVALID_PROGRAM);
  EXPECT_EQ(nvrtcGetOptiXIRSize(nullptr, &size), NVRTC_ERROR_INVALID_OPTION);
  nvrtcProgram prog = nullptr;
  ASSERT_EQ(nvrtcCreateProgram(&prog, "__global__ void k() {}", nullptr, 0, nullptr, nullptr), NVRTC_SUCCESS);
  EXPECT_EQ(nvrtcCompileProgram(prog, 0, nullptr), NVRTC_ERROR_INTERNAL_ERROR);  // no session
  EXPECT_EQ(nvrtcDestroyProgram(&prog), NVRTC_SUCCESS);
}

}  // namespace
