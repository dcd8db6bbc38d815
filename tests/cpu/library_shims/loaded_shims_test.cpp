// The built shims as a program gets them: libagileos_cufft.so and libagileos_nvrtc.so loaded by
// the dynamic linker, their entry points resolved by name and version (libcufft.so.12,
// libnvrtc.so.13), with the runtime shim (soname libcudart.so.13) loaded first as LD_PRELOAD
// loads it in a sandboxed process: it satisfies the shims' DT_NEEDED libcudart.so.13 and
// provides agileos_library_call. No daemon runs: AGILEOS_SOCKET names nothing.
//
// Unsupported entry points must fail closed, unknown plans must be refused without a worker,
// and a call that needs the worker must fail the way cuFFT/NVRTC report an internal error.
#include <cufft.h>
#include <cufftXt.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#if !defined(AGILEOS_CUDART_SHIM) || !defined(AGILEOS_CUFFT_SHIM) || !defined(AGILEOS_NVRTC_SHIM)
#error "AGILEOS_CUDART_SHIM, AGILEOS_CUFFT_SHIM and AGILEOS_NVRTC_SHIM must name the built shims"
#endif

namespace {

class LoadedShimsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    setenv("AGILEOS_SOCKET", "/nonexistent/agileos-library-shims-test.sock", 1);
    runtime_ = dlopen(AGILEOS_CUDART_SHIM, RTLD_NOW | RTLD_LOCAL);
    if (runtime_ == nullptr) runtimeError_ = dlerror();
    cufft_ = dlopen(AGILEOS_CUFFT_SHIM, RTLD_NOW | RTLD_LOCAL);
    if (cufft_ == nullptr) cufftError_ = dlerror();
    nvrtc_ = dlopen(AGILEOS_NVRTC_SHIM, RTLD_NOW | RTLD_LOCAL);
    if (nvrtc_ == nullptr) nvrtcError_ = dlerror();
  }

  void SetUp() override {
    ASSERT_NE(runtime_, nullptr) << runtimeError_;
    ASSERT_NE(cufft_, nullptr) << cufftError_;
    ASSERT_NE(nvrtc_, nullptr) << nvrtcError_;
  }

  template <typename F>
  static F* cufft(const char* name) {
    return reinterpret_cast<F*>(dlvsym(cufft_, name, "libcufft.so.12"));
  }
  template <typename F>
  static F* nvrtc(const char* name) {
    return reinterpret_cast<F*>(dlvsym(nvrtc_, name, "libnvrtc.so.13"));
  }

  static inline void* runtime_ = nullptr;
  static inline void* cufft_ = nullptr;
  static inline void* nvrtc_ = nullptr;
  static inline std::string runtimeError_, cufftError_, nvrtcError_;
};

TEST_F(LoadedShimsTest, ShimsUseTheLoadedRuntimeShimForLibcudart) {
  // Both shims need libcudart.so.13; the loader must have bound it to the runtime shim, whose
  // agileos_library_call they call.
  void* call = dlvsym(runtime_, "agileos_library_call", "AGILEOS_1");
  ASSERT_NE(call, nullptr) << dlerror();
  Dl_info info{};
  ASSERT_NE(dladdr(call, &info), 0);
  EXPECT_EQ(std::filesystem::canonical(info.dli_fname), std::filesystem::canonical(AGILEOS_CUDART_SHIM));
}

TEST_F(LoadedShimsTest, EntryPointsCarryOnlyTheRealLibrariesVersions) {
  EXPECT_NE(dlvsym(cufft_, "cufftPlan1d", "libcufft.so.12"), nullptr);
  EXPECT_EQ(dlvsym(cufft_, "cufftPlan1d", "libcufft.so.11"), nullptr);
  EXPECT_NE(dlvsym(nvrtc_, "nvrtcCompileProgram", "libnvrtc.so.13"), nullptr);
  EXPECT_EQ(dlvsym(nvrtc_, "nvrtcCompileProgram", "libnvrtc.so.12"), nullptr);
  // (That nothing else is exported, library_shims.<shim>.shim_exports checks with nm.)
}

TEST_F(LoadedShimsTest, SonameSymlinksSitNextToTheRuntimeShim) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(AGILEOS_CUDART_SHIM).parent_path();
  for (const auto& [link, target] :
       {std::pair{"libcufft.so.12", AGILEOS_CUFFT_SHIM}, std::pair{"libnvrtc.so.13", AGILEOS_NVRTC_SHIM}}) {
    const fs::path path = dir / link;
    ASSERT_TRUE(fs::is_symlink(path)) << path;
    EXPECT_EQ(fs::read_symlink(path), fs::path(target).filename()) << path << " must be a relative link";
    EXPECT_EQ(fs::canonical(path), fs::canonical(target));
  }
}

TEST_F(LoadedShimsTest, UnsupportedCufftCallsFailClosed) {
  auto* xtMalloc = cufft<decltype(cufftXtMalloc)>("cufftXtMalloc");
  auto* setCallback = cufft<decltype(cufftXtSetCallback)>("cufftXtSetCallback");
  auto* debug = cufft<cufftResult(void)>("cufftDebug");
  ASSERT_TRUE(xtMalloc != nullptr && setCallback != nullptr && debug != nullptr) << dlerror();
  const auto untouched = reinterpret_cast<cudaLibXtDesc*>(0x5a5a);
  cudaLibXtDesc* descriptor = untouched;
  EXPECT_EQ(xtMalloc(1, &descriptor, CUFFT_XT_FORMAT_INPLACE), CUFFT_NOT_SUPPORTED);
  EXPECT_EQ(descriptor, untouched);
  void* routine = nullptr;
  EXPECT_EQ(setCallback(1, &routine, CUFFT_CB_LD_COMPLEX, nullptr), CUFFT_NOT_SUPPORTED);
  EXPECT_EQ(debug(), CUFFT_NOT_SUPPORTED);
}

TEST_F(LoadedShimsTest, UnknownPlansAreRefusedWithoutAWorker) {
  auto* exec = cufft<decltype(cufftExecC2C)>("cufftExecC2C");
  auto* destroy = cufft<decltype(cufftDestroy)>("cufftDestroy");
  auto* getSize = cufft<decltype(cufftGetSize)>("cufftGetSize");
  ASSERT_TRUE(exec != nullptr && destroy != nullptr && getSize != nullptr) << dlerror();
  EXPECT_EQ(exec(12345, nullptr, nullptr, CUFFT_FORWARD), CUFFT_INVALID_PLAN);
  size_t size = 7;
  EXPECT_EQ(getSize(1, &size), CUFFT_INVALID_PLAN);
  EXPECT_EQ(size, 7u);
  EXPECT_EQ(destroy(12345), CUFFT_INVALID_PLAN);
  EXPECT_EQ(destroy(CUFFT_PLAN_NULL), CUFFT_SUCCESS);
}

TEST_F(LoadedShimsTest, CallsThatNeedTheWorkerFailWithoutASession) {
  auto* create = cufft<decltype(cufftCreate)>("cufftCreate");
  auto* plan1d = cufft<decltype(cufftPlan1d)>("cufftPlan1d");
  ASSERT_TRUE(create != nullptr && plan1d != nullptr) << dlerror();
  cufftHandle handle = 99;
  EXPECT_EQ(create(&handle), CUFFT_INTERNAL_ERROR);
  EXPECT_EQ(plan1d(&handle, 64, CUFFT_C2C, 1), CUFFT_INTERNAL_ERROR);
  EXPECT_EQ(handle, 99);

  auto* version = nvrtc<decltype(nvrtcVersion)>("nvrtcVersion");
  ASSERT_NE(version, nullptr) << dlerror();
  int major = -1, minor = -1;
  EXPECT_EQ(version(&major, &minor), NVRTC_ERROR_INTERNAL_ERROR);
  EXPECT_EQ(major, -1);
}

TEST_F(LoadedShimsTest, NvrtcProgramsLiveInTheProcess) {
  auto* create = nvrtc<decltype(nvrtcCreateProgram)>("nvrtcCreateProgram");
  auto* addName = nvrtc<decltype(nvrtcAddNameExpression)>("nvrtcAddNameExpression");
  auto* lowered = nvrtc<decltype(nvrtcGetLoweredName)>("nvrtcGetLoweredName");
  auto* compile = nvrtc<decltype(nvrtcCompileProgram)>("nvrtcCompileProgram");
  auto* destroy = nvrtc<decltype(nvrtcDestroyProgram)>("nvrtcDestroyProgram");
  auto* errorString = nvrtc<decltype(nvrtcGetErrorString)>("nvrtcGetErrorString");
  ASSERT_TRUE(create && addName && lowered && compile && destroy && errorString) << dlerror();
  nvrtcProgram prog = nullptr;
  ASSERT_EQ(create(&prog, "extern \"C\" __global__ void k() {}", "k.cu", 0, nullptr, nullptr), NVRTC_SUCCESS);
  ASSERT_EQ(addName(prog, "k"), NVRTC_SUCCESS);
  const char* name = nullptr;
  EXPECT_EQ(lowered(prog, "k", &name), NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION);
  EXPECT_EQ(compile(prog, 0, nullptr), NVRTC_ERROR_INTERNAL_ERROR);  // no session
  EXPECT_STREQ(errorString(NVRTC_ERROR_INTERNAL_ERROR), "NVRTC_ERROR_INTERNAL_ERROR");
  ASSERT_EQ(destroy(&prog), NVRTC_SUCCESS);
  EXPECT_EQ(prog, nullptr);
}

TEST_F(LoadedShimsTest, UnsupportedNvrtcCallsFailClosed) {
  auto* optixSize = nvrtc<decltype(nvrtcGetOptiXIRSize)>("nvrtcGetOptiXIRSize");
  auto* flow = nvrtc<decltype(nvrtcSetFlowCallback)>("nvrtcSetFlowCallback");
  auto* pchStatus = nvrtc<decltype(nvrtcGetPCHCreateStatus)>("nvrtcGetPCHCreateStatus");
  auto* createEx = nvrtc<nvrtcResult(void)>("__nvrtcCPEx");
  ASSERT_TRUE(optixSize && flow && pchStatus && createEx) << dlerror();
  size_t size = 3;
  EXPECT_EQ(optixSize(nullptr, &size), NVRTC_ERROR_INVALID_OPTION);
  EXPECT_EQ(size, 3u);
  EXPECT_EQ(flow(nullptr, nullptr, nullptr), NVRTC_ERROR_INVALID_OPTION);
  EXPECT_EQ(pchStatus(nullptr), NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED);
  EXPECT_EQ(createEx(), NVRTC_ERROR_INTERNAL_ERROR);
}

}  // namespace
