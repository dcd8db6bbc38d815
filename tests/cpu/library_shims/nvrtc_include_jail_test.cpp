// Include paths and LTO IR through the NVRTC shim's API (client/nvrtc) with a worker made of the
// real pieces: the adapter's source policy (worker/adapters/nvrtc/nvrtc_source_policy.h) and the
// jailed agileos-nvrtc-compiler on the real NVRTC (nvrtc_compiler_process.h), behind the fake
// agileos_library_call. The jail can open no file, so a compilation that succeeds here read its
// headers from what the shim sent, and nothing else.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nvJitLink.h>
#include <nvrtc.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/cpu/library_shims/fake_worker.h"
#include "worker/adapters/nvrtc/nvrtc_compiler_process.h"
#include "worker/adapters/nvrtc/nvrtc_source_policy.h"

#ifndef AGILEOS_NVRTC_COMPILER
#error "AGILEOS_NVRTC_COMPILER must name agileos-nvrtc-compiler"
#endif

namespace {

namespace fs = std::filesystem;
namespace adapter = agileos::adapters::nvrtc;
using agileos::test::Answer;
using agileos::test::Call;
using agileos::test::FakeWorker;
using agileos::test::Value;
using Strings = std::vector<std::string>;

// Answers "compile" as the adapter does (policy first, then the jailed compiler).
Answer jailedWorker(const Call& call) {
  if (call.operation != "compile") return Answer::Refused(801, "unexpected operation");
  adapter::CompileRequest request{call.args[0].bytes, call.args[1].bytes, call.args[2].texts,
                                  call.args[3].texts, call.args[4].texts, call.args[5].texts};
  auto refused = [](nvrtcResult status, const std::string& why) {
    return Answer::Status(status, {Value::Text("AgileOS: " + why + "\n"), Value::Blob(""), Value::Blob(""),
                                   Value::Texts({}), Value::Blob("")});
  };
  for (const std::string& option : request.options) {
    if (auto why = adapter::refuseOption(option)) return refused(NVRTC_ERROR_INVALID_OPTION, *why);
  }
  if (auto why = adapter::refuseSource(request.source, request.includeNames))
    return refused(NVRTC_ERROR_COMPILATION, *why);
  for (const std::string& header : request.headers) {
    if (auto why = adapter::refuseSource(header, request.includeNames))
      return refused(NVRTC_ERROR_COMPILATION, *why);
  }
  adapter::CompilerSettings settings;
  settings.executable = AGILEOS_NVRTC_COMPILER;
  settings.cpuSeconds = 60;
  const adapter::CompilerOutcome outcome = adapter::runCompiler(settings, request);
  if (!outcome.result) return refused(outcome.failureStatus, outcome.failure + ": " + outcome.diagnostics);
  const adapter::CompileResult& r = *outcome.result;
  return Answer::Status(r.status, {Value::Text(r.log), Value::Blob(r.ptx), Value::Blob(r.cubin),
                                   Value::Texts(r.loweredNames), Value::Blob(r.ltoir)});
}

class NvrtcIncludeJailTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeWorker::instance().reset();
    FakeWorker::instance().respond(jailedWorker);
    char pattern[] = "/tmp/agileos-nvrtc-includes-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    fs::remove_all(dir_);
    EXPECT_EQ(FakeWorker::instance().outstandingReplies(), 0);
  }
  void write(const std::string& relative, const std::string& text) {
    fs::create_directories(fs::path(dir_ + "/" + relative).parent_path());
    std::ofstream(dir_ + "/" + relative) << text;
  }
  // Compiles `source` named `name` with `options`; returns the status, *log the log.
  static nvrtcResult compile(const std::string& source, const std::string& name, const Strings& options,
                             std::string* log, nvrtcProgram* keep = nullptr) {
    nvrtcProgram prog = nullptr;
    EXPECT_EQ(nvrtcCreateProgram(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr), NVRTC_SUCCESS);
    std::vector<const char*> pointers;
    for (const std::string& option : options) pointers.push_back(option.c_str());
    const nvrtcResult result = nvrtcCompileProgram(prog, static_cast<int>(pointers.size()), pointers.data());
    std::size_t size = 0;
    EXPECT_EQ(nvrtcGetProgramLogSize(prog, &size), NVRTC_SUCCESS);
    log->assign(size, '\0');
    EXPECT_EQ(nvrtcGetProgramLog(prog, log->data()), NVRTC_SUCCESS);
    log->resize(size - 1);
    if (keep != nullptr) {
      *keep = prog;
    } else {
      EXPECT_EQ(nvrtcDestroyProgram(&prog), NVRTC_SUCCESS);
    }
    return result;
  }
  static std::vector<Call> calls() { return FakeWorker::instance().calls(); }
  std::string dir_;
};

// binomialOptions_nvrtc: quoted headers next to the kernel, no include path at all.
TEST_F(NvrtcIncludeJailTest, QuotedHeadersNextToTheProgramAreSent) {
  write("k/common.h", "#include \"real.h\"\n#define N 4\n");
  write("k/real.h", "typedef float real;\n");
  std::string log;
  ASSERT_EQ(compile("#include \"common.h\"\n__global__ void k(real* p) { p[0] = N; }\n", dir_ + "/k/k.cu",
                    {"--gpu-architecture=compute_90"}, &log),
            NVRTC_SUCCESS)
      << log;
  ASSERT_EQ(calls().size(), 1u);
  EXPECT_EQ(calls()[0].args[3].texts, (Strings{"common.h", "real.h"}));
  EXPECT_EQ(calls()[0].args[4].texts, Strings{"--gpu-architecture=compute_90"});
}

// Every spelling of an include path; the worker never gets one.
TEST_F(NvrtcIncludeJailTest, EveryIncludePathSpellingWorksAndNoneIsSent) {
  for (const char* dir : {"a", "b", "c", "d", "e"})
    write(std::string(dir) + "/" + dir + ".h", "#define " + std::string(dir) + "_ 1\n");
  const std::string source =
      "#include <a.h>\n#include <b.h>\n#include <c.h>\n#include <d.h>\n#include \"e.h\"\n"
      "__global__ void k(int* p) { p[0] = a_ + b_ + c_ + d_ + e_; }\n";
  std::string log;
  ASSERT_EQ(compile(source, "k.cu",
                    {"-I" + dir_ + "/a", "-I", dir_ + "/b", "--include-path=" + dir_ + "/c", "--include-path",
                     dir_ + "/d", "-I=" + dir_ + "/e", "-I" + dir_ + "/a", "-arch=compute_90"},
                    &log),
            NVRTC_SUCCESS)
      << log;
  EXPECT_EQ(calls().at(0).args[4].texts, Strings{"-arch=compute_90"});
  EXPECT_EQ(calls().at(0).args[3].texts, (Strings{"a.h", "b.h", "c.h", "d.h", "e.h"}));
}

// An include path may name any directory of the client (it is the client's own file system, as
// natively); the worker gets only the headers the source names, never a path, and nothing of
// the worker's side is ever read.
TEST_F(NvrtcIncludeJailTest, HostileIncludePathsSendOnlyWhatTheSourceNames) {
  write("sub/x.h", "#define X 3\n");
  std::string log;
  ASSERT_EQ(compile("#include \"x.h\"\n__global__ void k(int* p) { p[0] = X; }\n", "k.cu",
                    {"-I/etc", "-I" + dir_ + "/sub/../sub", "-I", "/proc/self", "-arch=compute_90"}, &log),
            NVRTC_SUCCESS)
      << log;
  EXPECT_EQ(calls().at(0).args[3].texts, Strings{"x.h"});
  EXPECT_EQ(calls().at(0).args[2].texts, Strings{"#define X 3\n"});
  EXPECT_EQ(calls().at(0).args[4].texts, Strings{"-arch=compute_90"});
}

// A header found nowhere: one compilation, and the program sees NVRTC's own error.
TEST_F(NvrtcIncludeJailTest, AHeaderMissingEverywhereIsNvrtcsError) {
  std::string log;
  EXPECT_EQ(compile("#include <nowhere.h>\n__global__ void k() {}\n", "k.cu", {"-I" + dir_}, &log),
            NVRTC_ERROR_COMPILATION);
  EXPECT_NE(log.find("open source file \"nowhere.h\""), std::string::npos) << log;
  EXPECT_EQ(log.find("AgileOS"), std::string::npos) << log;
  EXPECT_EQ(calls().size(), 1u);
  // A quoted one is refused by the worker's first line, with a reason.
  EXPECT_EQ(compile("#include \"nowhere.h\"\n", "k.cu", {}, &log), NVRTC_ERROR_COMPILATION);
  EXPECT_NE(log.find("nowhere.h"), std::string::npos) << log;
}

// matrixMul_nvrtc: <cooperative_groups.h> from an include path, with CCCL beside it; the
// scan finds the whole tree, and the worker's first line lets CCCL's host-only includes through.
TEST_F(NvrtcIncludeJailTest, CooperativeGroupsFromTheToolkitsHeaders) {
  const std::string toolkit = AGILEOS_CUDA_INCLUDE_DIR;
  std::string log;
  ASSERT_EQ(
      compile("#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"
              "extern \"C\" __global__ void k(int* p) { cg::thread_block b = cg::this_thread_block(); "
              "cg::sync(b); p[0] = 1; }\n",
              "matrixMul_kernel.cu",
              {"--gpu-architecture=sm_90", "--include-path=" + toolkit, "-I" + toolkit + "/cccl"}, &log),
      NVRTC_SUCCESS)
      << log;
  EXPECT_EQ(calls().size(), 1u) << "the scan should have found every header";
  EXPECT_GT(calls().at(0).args[3].texts.size(), 50u);
}

// jitLto: -dlto gives LTO IR, which nvJitLink (a compiler library the program runs itself) links.
TEST_F(NvrtcIncludeJailTest, DltoReturnsLtoIrThatNvJitLinkLinks) {
  std::string log;
  nvrtcProgram saxpy = nullptr, compute = nullptr;
  ASSERT_EQ(
      compile("extern __device__ float compute(float a, float x, float y);\n"
              "extern \"C\" __global__ void saxpy(float a, float* x, float* y, float* out, size_t n) {\n"
              "  size_t tid = blockIdx.x * blockDim.x + threadIdx.x;\n"
              "  if (tid < n) out[tid] = compute(a, x[tid], y[tid]);\n}\n",
              "lto_saxpy.cu", {"-dlto", "--relocatable-device-code=true"}, &log, &saxpy),
      NVRTC_SUCCESS)
      << log;
  ASSERT_EQ(compile("__device__ float compute(float a, float x, float y) { return a * x + y; }\n",
                    "lto_compute.cu", {"-dlto", "--relocatable-device-code=true"}, &log, &compute),
            NVRTC_SUCCESS)
      << log;
  std::vector<std::string> irs;
  for (nvrtcProgram prog : {saxpy, compute}) {
    std::size_t size = 0;
    ASSERT_EQ(nvrtcGetLTOIRSize(prog, &size), NVRTC_SUCCESS);
    ASSERT_GT(size, 0u);
    std::string ir(size, '\0');
    ASSERT_EQ(nvrtcGetLTOIR(prog, ir.data()), NVRTC_SUCCESS);
    irs.push_back(std::move(ir));
    ASSERT_EQ(nvrtcDestroyProgram(&prog), NVRTC_SUCCESS);
  }

  void* library = dlopen(AGILEOS_NVJITLINK, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) GTEST_SKIP() << "no " << AGILEOS_NVJITLINK;
  auto create = reinterpret_cast<decltype(&nvJitLinkCreate)>(dlsym(library, "__nvJitLinkCreate_13_0"));
  auto add = reinterpret_cast<decltype(&nvJitLinkAddData)>(dlsym(library, "__nvJitLinkAddData_13_0"));
  auto complete = reinterpret_cast<decltype(&nvJitLinkComplete)>(dlsym(library, "__nvJitLinkComplete_13_0"));
  auto cubinSize = reinterpret_cast<decltype(&nvJitLinkGetLinkedCubinSize)>(
      dlsym(library, "__nvJitLinkGetLinkedCubinSize_13_0"));
  auto destroy = reinterpret_cast<decltype(&nvJitLinkDestroy)>(dlsym(library, "__nvJitLinkDestroy_13_0"));
  if (!create || !add || !complete || !cubinSize || !destroy)
    GTEST_SKIP() << "nvJitLink's entry points differ";
  nvJitLinkHandle handle = nullptr;
  const char* options[] = {"-lto", "-arch=sm_90"};
  ASSERT_EQ(create(&handle, 2, options), NVJITLINK_SUCCESS);
  ASSERT_EQ(add(handle, NVJITLINK_INPUT_LTOIR, irs[0].data(), irs[0].size(), "lto_saxpy"), NVJITLINK_SUCCESS);
  ASSERT_EQ(add(handle, NVJITLINK_INPUT_LTOIR, irs[1].data(), irs[1].size(), "lto_compute"),
            NVJITLINK_SUCCESS);
  ASSERT_EQ(complete(handle), NVJITLINK_SUCCESS);
  std::size_t size = 0;
  EXPECT_EQ(cubinSize(handle, &size), NVJITLINK_SUCCESS);
  EXPECT_GT(size, 0u);
  destroy(&handle);
  // Not dlclosed: nvJitLink keeps an allocation for the life of the process, which LeakSanitizer
  // can then name (and nvjitlink.lsan.supp suppresses) instead of reporting an unknown module.
}

}  // namespace
