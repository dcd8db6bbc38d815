// NVRTC in a jail (issue 13): agileos-nvrtc-compiler, run on the real NVRTC with no source policy
// in front (runCompiler directly), cannot read a file it was not given, whatever the spelling.
//
// A secret header with a unique marker on every line is planted in a world-readable directory
// under /tmp (so that only the jail, not file permissions, keeps it out). Each case names it
// another way (directives behind digraphs, trigraphs, continuations and macros, #line, _Pragma,
// __has_include, #embed, raw strings, include-path and pre-include options, a program name in
// its directory) and asserts that the marker, and its bytes as numbers (what #embed would make of
// it), appear in no log, PTX, CUBIN, lowered name or error text; the compilation either fails or
// succeeds without the secret. A control compiles one case with NVRTC in this process to show the
// marker would be seen.
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <nvrtc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "worker/adapters/nvrtc/nvrtc_compiler_process.h"

namespace agileos::adapters::nvrtc {
namespace {

namespace fs = std::filesystem;

CompilerSettings settings() {
  CompilerSettings out;
  out.executable = AGILEOS_NVRTC_COMPILER;
  out.cpuSeconds = 30;
  return out;
}

// Replaces every "$P" (the secret's path), "$D" (its directory) and "$M" (the marker).
std::string expand(std::string text, const std::string& path, const std::string& dir,
                   const std::string& marker) {
  for (const auto& [key, value] :
       {std::pair<std::string, std::string>{"$P", path}, {"$D", dir}, {"$M", marker}}) {
    for (std::size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + value.size())) {
      text.replace(at, key.size(), value);
    }
  }
  return text;
}

// The numbers in `text` in order (decimal and 0x hex), to find the marker's bytes as data.
std::vector<unsigned long long> numbersIn(const std::string& text) {
  std::vector<unsigned long long> out;
  for (std::size_t i = 0; i < text.size();) {
    if (std::isdigit(static_cast<unsigned char>(text[i])) == 0 ||
        (i > 0 && (std::isalnum(static_cast<unsigned char>(text[i - 1])) != 0 || text[i - 1] == '_'))) {
      ++i;
      continue;
    }
    char* end = nullptr;
    out.push_back(std::strtoull(text.c_str() + i, &end, 0));
    i = static_cast<std::size_t>(end - text.c_str()) + (end == text.c_str() + i ? 1 : 0);
  }
  return out;
}

class NvrtcJail : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(AGILEOS_NVRTC_COMPILER, X_OK) != 0) GTEST_SKIP() << "no " << AGILEOS_NVRTC_COMPILER;
    char pattern[] = "/tmp/agileos-secret-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    // World-readable: the jail, not the permissions, must keep the helper out.
    ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
    std::random_device random;
    char suffix[17];
    std::snprintf(suffix, sizeof suffix, "%08x%08x", random(), random());
    marker_ = std::string("AGILEOSSECRET") + suffix;
    path_ = dir_ + "/secret.h";
    std::string secret;
    for (int line = 1; line <= 8; ++line) {
      secret += "__device__ int " + marker_ + "_" + std::to_string(line) + " = 1; // " + marker_ + "\n";
    }
    secret += "extern \"C\" __global__ void " + marker_ + "_kernel(int* p) { *p = " + marker_ + "_1; }\n";
    for (const char* name : {"secret.h", "secret", "main.cu"}) {
      std::ofstream(dir_ + "/" + name) << secret;
      ASSERT_EQ(chmod((dir_ + "/" + name).c_str(), 0644), 0);
    }
    fs::create_directories(dir_ + "/include");
    std::ofstream(dir_ + "/include/secret.h") << secret;
    chmod((dir_ + "/include").c_str(), 0755);
    chmod((dir_ + "/include/secret.h").c_str(), 0644);
  }
  void TearDown() override {
    if (!dir_.empty()) {
      std::error_code ignored;
      fs::remove_all(dir_, ignored);
    }
  }

  std::string x(const std::string& text) const { return expand(text, path_, dir_, marker_); }

  // Whether `text` contains the marker, or its bytes as a run of numbers.
  bool leaks(const std::string& text) const {
    if (text.find(marker_) != std::string::npos) return true;
    const auto numbers = numbersIn(text);
    const std::size_t run = 12;  // "AGILEOSSECRE": enough to rule out chance
    for (std::size_t i = 0; i + run <= numbers.size(); ++i) {
      bool all = true;
      for (std::size_t k = 0; k < run && all; ++k)
        all = numbers[i + k] == static_cast<unsigned char>(marker_[k]);
      if (all) return true;
    }
    return false;
  }

  // Compiles in the jail and checks that nothing the compilation returns holds the secret.
  CompilerOutcome expectNoLeak(const std::string& what, const CompileRequest& request,
                               const CompilerSettings& with = settings()) {
    CompilerOutcome outcome = runCompiler(with, request);
    SCOPED_TRACE(what);
    EXPECT_FALSE(leaks(outcome.failure)) << outcome.failure;
    EXPECT_FALSE(leaks(outcome.diagnostics)) << outcome.diagnostics;
    if (outcome.result) {
      const CompileResult& result = *outcome.result;
      EXPECT_FALSE(leaks(result.log)) << result.log;
      EXPECT_FALSE(leaks(result.ptx)) << result.ptx;
      EXPECT_FALSE(leaks(result.cubin));
      EXPECT_FALSE(leaks(result.substitutePtx));
      for (const std::string& lowered : result.loweredNames) EXPECT_FALSE(leaks(lowered)) << lowered;
      // A "secret found" line in the source reports that a probe of the file succeeded.
      EXPECT_EQ(result.log.find("SECRET_EXISTS"), std::string::npos) << result.log;
    } else {
      // No result: the helper failed, which must not be the jail's own failure.
      EXPECT_EQ(outcome.failure.find("sandbox could not be set up"), std::string::npos)
          << outcome.failure << "; " << outcome.diagnostics;
    }
    // Nothing was written into the directory either (-time, --fdevice-time-trace, PCH).
    for (const auto& entry : fs::directory_iterator(dir_)) {
      const std::string name = entry.path().filename();
      EXPECT_TRUE(name == "secret.h" || name == "secret" || name == "main.cu" || name == "include") << name;
    }
    return outcome;
  }

  std::string dir_, path_, marker_;
};

struct Spelling {
  const char* what;
  const char* source;
  std::vector<const char*> options = {};
  const char* name = "attack.cu";
  std::vector<std::pair<const char*, const char*>> headers = {};  // include name, content
};

const std::vector<Spelling>& spellings() {
  static const std::vector<Spelling> all = {
      {"#include of the absolute path", "#include \"$P\"\n"},
      {"#include <absolute path>", "#include <$P>\n"},
      {"#include with a relative path up to /", "#include \"../../../../../../../$P\"\n"},
      {"#include through /proc/self/root", "#include \"/proc/self/root$P\"\n"},
      {"#include through /proc/self/cwd", "#include \"/proc/self/cwd/../../../../$P\"\n"},
      {"#include_next of the absolute path", "#include_next \"$P\"\n"},
      {"#include_next <secret.h>", "#include_next <secret.h>\n"},
      {"#import", "#import \"$P\"\n"},
      {"#embed", "const unsigned char data[] = {\n#embed \"$P\"\n};\n"},
      {"#embed of the extensionless file", "__device__ const char data[] = {\n#embed \"$D/secret\"\n, 0};\n"},
      {"__has_include", "#if __has_include(\"$P\")\n#error SECRET_EXISTS\n#endif\n"},
      {"__has_include <>", "#if __has_include(<$P>)\n#error SECRET_EXISTS\n#endif\n"},
      {"__has_include_next", "#if __has_include_next(\"$P\")\n#error SECRET_EXISTS\n#endif\n"},
      {"__has_embed",
       "#if defined(__has_embed)\n#if __has_embed(\"$P\")\n#error SECRET_EXISTS\n#endif\n#endif\n"},
      {"#line naming the secret, then an error that quotes the line",
       "#line 3 \"$P\"\nint broken = undefined_name;\n"},
      {"#line naming the secret, then a warning", "#line 2 \"$P\"\n__device__ void f() { int unused; }\n"},
      {"_Pragma include_alias",
       "_Pragma(\"include_alias(\\\"alias.h\\\", \\\"$P\\\")\")\n#include \"alias.h\"\n"},
      {"_Pragma in a macro",
       "#define DO(x) _Pragma(#x)\nDO(include_alias(\"a2.h\", \"$P\"))\n#include \"a2.h\"\n"},
      {"digraph %:include", "%:include \"$P\"\n"},
      {"digraph straddling a continuation", "%\\\n:include \"$P\"\n"},
      {"trigraph ?\?=include", "?\?=include \"$P\"\n", {"--std=c++03"}},
      {"trigraph ?\?/ forming a continuation in the directive", "#inc?\?/\nlude \"$P\"\n", {"--std=c++03"}},
      {"continuation inside the directive name", "#inc\\\nlude \"$P\"\n"},
      {"continuation after #", "#\\\ninclude \"$P\"\n"},
      {"continuation inside the path", "#include \"$D/sec\\\nret.h\"\n"},
      {"comment between # and include", "#/**/include \"$P\"\n"},
      {"macro expanding to the path", "#define WHERE \"$P\"\n#include WHERE\n"},
      {"macro expanding to <path>", "#define WHERE <$P>\n#include WHERE\n"},
      {"stringized macro", "#define STR(x) #x\n#define XSTR(x) STR(x)\n#include XSTR($P)\n"},
      {"pasted directive", "#define CAT(a, b) a##b\n#define INC CAT(inc, lude)\n#INC \"$P\"\n"},
      {"raw string holding the directive", "__device__ const char* s = R\"(\n#include \"$P\"\n)\";\n"},
      {"raw string with a delimiter", "__device__ const char* s = R\"x(\n)\"\n#include \"$P\"\n)x\";\n"},
      {"-I the directory", "#include \"secret.h\"\n", {"-I$D"}},
      {"--include-path", "#include \"secret.h\"\n", {"--include-path=$D/include"}},
      {"--pre-include", "__device__ int x;\n", {"--pre-include=$P"}},
      {"-include=", "__device__ int x;\n", {"-include=$P"}},
      {"-include PATH", "__device__ int x;\n", {"-include", "$P"}},
      {"--use-pch", "__device__ int x;\n", {"--use-pch=$P"}},
      {"--pch-dir and -pch", "__device__ int x;\n", {"-pch", "--pch-dir=$D"}},
      {"--create-pch into the directory", "__device__ int x;\n", {"--create-pch=$D/out.pch"}},
      {"-time into the directory", "__device__ int x;\n", {"-time=$D/time.csv"}},
      {"--fdevice-time-trace into the directory",
       "__device__ int x;\n",
       {"--fdevice-time-trace=$D/trace.json"}},
      {"program name in the secret's directory", "#include \"secret.h\"\n", {}, "$D/main.cu"},
      {"program name is the secret", "#include \"secret.h\"\n", {}, "$P"},
      {"program name in the directory, #include_next", "#include_next \"secret.h\"\n", {}, "$D/main.cu"},
      {"supplied header with an absolute name, #include_next from it",
       "#include \"$D/x.h\"\n",
       {},
       "attack.cu",
       {{"$D/x.h", "#include_next \"secret.h\"\n"}}},
      {"supplied header in the directory, relative include from it",
       "#include \"$D/y.h\"\n",
       {},
       "attack.cu",
       {{"$D/y.h", "#include \"secret.h\"\n"}}},
      {"supplied header includes the secret by path",
       "#include \"z.h\"\n",
       {},
       "attack.cu",
       {{"z.h", "#include \"$P\"\n"}}},
  };
  return all;
}

TEST_F(NvrtcJail, NoSpellingReadsAFileItWasNotGiven) {
  int succeeded = 0;
  for (const Spelling& spelling : spellings()) {
    CompileRequest request;
    request.source = x(spelling.source) + "extern \"C\" __global__ void probe(int* p) { *p = 7; }\n";
    request.name = x(spelling.name);
    for (const char* option : spelling.options) request.options.push_back(x(option));
    for (const auto& [name, content] : spelling.headers) {
      request.includeNames.push_back(x(name));
      request.headers.push_back(x(content));
    }
    const CompilerOutcome outcome = expectNoLeak(spelling.what, request);
    if (outcome.result && outcome.result->status == NVRTC_SUCCESS) ++succeeded;
  }
  // Some spellings are harmless and compile (the raw strings); most fail for want of the file.
  EXPECT_GT(succeeded, 0);
}

TEST_F(NvrtcJail, ASuppliedHeaderCompilesAndThePtxIsRight) {
  CompileRequest request;
  request.source =
      "#include \"values.h\"\n#if !__has_include(\"values.h\")\n#error no\n#endif\n"
      "template <int N> __global__ void store(int* p) { *p = N + VALUE; }\n"
      "template __global__ void store<5>(int*);\n";
  request.name = "program.cu";
  request.headers = {"#define VALUE 1234000\n"};
  request.includeNames = {"values.h"};
  request.options = {"--gpu-architecture=sm_90", "-default-device"};
  request.expressions = {"store<5>"};
  const CompilerOutcome outcome = runCompiler(settings(), request);
  ASSERT_TRUE(outcome.result) << outcome.failure << "; " << outcome.diagnostics;
  const CompileResult& result = *outcome.result;
  ASSERT_EQ(result.status, NVRTC_SUCCESS) << result.log;
  ASSERT_EQ(result.loweredNames.size(), 1u);
  EXPECT_EQ(result.loweredNames[0], "_Z5storeILi5EEvPi");
  EXPECT_GT(result.cubin.size(), 4u);
  EXPECT_EQ(result.cubin.compare(0, 4,
                                 "\x7f"
                                 "ELF"),
            0);
  // The PTX the CUBIN is loaded as: stores 1234005 from the entry of store<5>.
  const std::string& ptx = result.substitutePtx;
  EXPECT_NE(ptx.find(".entry _Z5storeILi5EEvPi"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("1234005"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find(".target sm_90"), std::string::npos) << ptx;
}

TEST_F(NvrtcJail, TheSecretWouldBeSeenWithoutTheJail) {
  // Control: NVRTC in this process (never unloaded, for LeakSanitizer: see nvrtc_shim_test.cpp).
  void* library = dlopen(AGILEOS_REAL_NVRTC, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (library == nullptr) GTEST_SKIP() << "cannot load NVRTC: " << dlerror();
  auto create = reinterpret_cast<decltype(&nvrtcCreateProgram)>(dlsym(library, "nvrtcCreateProgram"));
  auto compile = reinterpret_cast<decltype(&nvrtcCompileProgram)>(dlsym(library, "nvrtcCompileProgram"));
  auto ptxSize = reinterpret_cast<decltype(&nvrtcGetPTXSize)>(dlsym(library, "nvrtcGetPTXSize"));
  auto getPtx = reinterpret_cast<decltype(&nvrtcGetPTX)>(dlsym(library, "nvrtcGetPTX"));
  auto destroy = reinterpret_cast<decltype(&nvrtcDestroyProgram)>(dlsym(library, "nvrtcDestroyProgram"));
  ASSERT_TRUE(create && compile && ptxSize && getPtx && destroy);
  nvrtcProgram program = nullptr;
  const std::string source = x("#include \"$P\"\n");
  ASSERT_EQ(create(&program, source.c_str(), "control.cu", 0, nullptr, nullptr), NVRTC_SUCCESS);
  ASSERT_EQ(compile(program, 0, nullptr), NVRTC_SUCCESS);
  std::size_t size = 0;
  ASSERT_EQ(ptxSize(program, &size), NVRTC_SUCCESS);
  std::string ptx(size, '\0');
  ASSERT_EQ(getPtx(program, ptx.data()), NVRTC_SUCCESS);
  destroy(&program);
  EXPECT_TRUE(leaks(ptx)) << "the control did not read the secret: the test would prove nothing";

  // The same request in the jail reads nothing.
  CompileRequest request;
  request.source = source;
  request.name = "control.cu";
  const CompilerOutcome outcome = expectNoLeak("control in the jail", request);
  ASSERT_TRUE(outcome.result) << outcome.failure;
  EXPECT_NE(outcome.result->status, NVRTC_SUCCESS);
}

TEST_F(NvrtcJail, TheHelperCannotOpenTheFile) {
  const std::string command = std::string(AGILEOS_NVRTC_COMPILER) + " --probe=" + path_ + " </dev/null 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string report;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) report += buffer;
  const int status = pclose(pipe);
  ASSERT_EQ(status, 0) << report;
  EXPECT_NE(report.find("open " + path_ + ": "), std::string::npos) << report;
  EXPECT_EQ(report.find("REACHED"), std::string::npos) << report;
  EXPECT_FALSE(leaks(report)) << report;
  if (geteuid() == 0) {
    EXPECT_NE(report.find("uid 65534 gid 65534"), std::string::npos) << report;
  }
}

TEST_F(NvrtcJail, AsAnUnprivilegedUserTheJailUsesAUserNamespace) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to start the helper as another user";
  if (access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "no setpriv (util-linux)";
  const std::string command = "/usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups " +
                              std::string(AGILEOS_NVRTC_COMPILER) + " --probe=" + path_ + " </dev/null 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string report;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) report += buffer;
  const int status = pclose(pipe);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
    // Fail closed is the right outcome where the kernel refuses unprivileged user namespaces.
    EXPECT_NE(report.find("refusing to compile"), std::string::npos) << report;
    GTEST_SKIP() << "unprivileged user namespaces are not available here: " << report;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 126) GTEST_SKIP() << "uid 65534 cannot execute the helper";
  ASSERT_EQ(status, 0) << report;
  EXPECT_EQ(report.find("REACHED"), std::string::npos) << report;
  EXPECT_FALSE(leaks(report)) << report;
}

// What the helper does once the filter is loaded, as strace sees it: every call that names a path
// fails, for a compilation that succeeds (sm_90, so NVRTC also looks for libcuda) and for one that
// names the secret.
TEST_F(NvrtcJail, StraceSeesNoFileOpenedAfterTheLockdown) {
  if (access("/usr/bin/strace", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/strace";
  if (std::system("/usr/bin/strace -f -qq -o /dev/null /bin/true >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "strace cannot trace here (ptrace refused)";
  }
  const std::pair<const char*, const char*> programs[] = {
      {"extern \"C\" __global__ void k(int* p) { *p = 1; }\n", "--gpu-architecture=sm_90"},
      {"#include \"$P\"\n", "--gpu-architecture=compute_90"}};
  for (const auto& [source, option] : programs) {
    CompileRequest request{x(source), "traced.cu", {}, {}, {option}, {}};
    const std::string requestPath = dir_ + "/../" + fs::path(dir_).filename().string() + ".request";
    const std::string tracePath = requestPath + ".trace";
    std::ofstream(requestPath, std::ios::binary) << encodeRequest(request);
    const std::string command = "/usr/bin/strace -f -qq -o " + tracePath + " " + AGILEOS_NVRTC_COMPILER +
                                " <" + requestPath + " >/dev/null 2>&1";
    const int status = std::system(command.c_str());
    std::ifstream trace(tracePath);
    std::string line, after;
    bool filtered = false;
    int calls = 0;
    while (std::getline(trace, line)) {
      if (line.find("seccomp(SECCOMP_SET_MODE_FILTER") != std::string::npos) {
        filtered = true;
        after.clear();
        calls = 0;
        continue;
      }
      if (!filtered) continue;
      ++calls;
      for (const char* call : {" open(", " openat(", " openat2(", " creat(", " stat(", " lstat(",
                               " newfstatat(", " statx(", " access(", " faccessat(", " faccessat2(",
                               " readlink(", " readlinkat(", " execve(", " socket(", " connect("}) {
        if (line.find(call) != std::string::npos && line.find(" = -1 ") == std::string::npos) {
          after += line + "\n";
        }
      }
    }
    std::remove(requestPath.c_str());
    std::remove(tracePath.c_str());
    EXPECT_EQ(status, 0) << source;
    EXPECT_TRUE(filtered) << "no seccomp filter in the trace of " << source;
    EXPECT_GT(calls, 0);
    EXPECT_EQ(after, "") << "succeeded after the lockdown, for " << source;
  }
}

// A 4-dimensional grid of template instantiations: about 8 s of CPU and 1 GiB at n = 12.
CompileRequest expensive() {
  CompileRequest request;
  request.source = R"(template <int A, int B, int C, int D> struct G;
template <int A, int B, int C, int D> __device__ constexpr unsigned long long g() {
  unsigned long long s = (A == 0 && B == 0 && C == 0 && D == 0) ? 1 : 0;
  if constexpr (A > 0) s += G<A - 1, B, C, D>::v;
  if constexpr (B > 0) s += G<A, B - 1, C, D>::v;
  if constexpr (C > 0) s += G<A, B, C - 1, D>::v;
  if constexpr (D > 0) s += G<A, B, C, D - 1>::v;
  return s;
}
template <int A, int B, int C, int D> struct G { static constexpr unsigned long long v = g<A, B, C, D>(); };
__device__ unsigned long long v = G<16, 16, 16, 16>::v;
)";
  request.name = "expensive.cu";
  request.options = {"--gpu-architecture=compute_90", "--std=c++17"};
  return request;
}

TEST_F(NvrtcJail, ACompilationOverItsCpuTimeIsStoppedAndReported) {
  CompilerSettings limited = settings();
  limited.cpuSeconds = 1;
  limited.timeoutSeconds = 60;
  const auto started = std::chrono::steady_clock::now();
  const CompilerOutcome outcome = runCompiler(limited, expensive());
  const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_FALSE(outcome.result) << "compiled within 1 s of CPU";
  EXPECT_EQ(outcome.failureStatus, NVRTC_ERROR_COMPILATION);
  EXPECT_NE(outcome.failure.find("CPU time limit"), std::string::npos)
      << outcome.failure << "; " << outcome.diagnostics;
  EXPECT_LT(seconds, 30.0);
}

TEST_F(NvrtcJail, ACompilationOverItsWallClockIsKilled) {
  CompilerSettings limited = settings();
  limited.cpuSeconds = 600;
  limited.timeoutSeconds = 1;
  const CompilerOutcome outcome = runCompiler(limited, expensive());
  ASSERT_FALSE(outcome.result);
  EXPECT_EQ(outcome.failureStatus, NVRTC_ERROR_COMPILATION);
  EXPECT_NE(outcome.failure.find("time limit (1 s)"), std::string::npos) << outcome.failure;
}

TEST_F(NvrtcJail, ACompilationOverItsMemoryFails) {
  CompilerSettings limited = settings();
  limited.memoryMb = 512;
  limited.timeoutSeconds = 120;
  // A sanitizer build's helper says on stderr that it has no address-space limit.
  const CompilerOutcome trivial = runCompiler(limited, CompileRequest{"__device__ int x;\n", "trivial.cu"});
  if (trivial.diagnostics.find("no address-space limit") != std::string::npos) {
    GTEST_SKIP() << "sanitizer build: the helper has no address-space limit";
  }
  ASSERT_TRUE(trivial.result) << trivial.failure << "; " << trivial.diagnostics;
  const CompilerOutcome outcome = runCompiler(limited, expensive());
  if (outcome.result) {
    EXPECT_NE(outcome.result->status, NVRTC_SUCCESS);
    EXPECT_NE(outcome.result->log.find("out of memory"), std::string::npos) << outcome.result->log;
  } else {
    EXPECT_EQ(outcome.failureStatus, NVRTC_ERROR_COMPILATION) << outcome.failure;
  }
}

TEST(NvrtcCompilerProcess, AMissingHelperFailsTheCompilationNotTheCaller) {
  CompilerSettings missing;
  missing.executable = "/nonexistent/agileos-nvrtc-compiler";
  const CompilerOutcome outcome = runCompiler(missing, CompileRequest{"__global__ void k() {}", "k.cu"});
  ASSERT_FALSE(outcome.result);
  EXPECT_EQ(outcome.failureStatus, NVRTC_ERROR_INTERNAL_ERROR);
  EXPECT_NE(outcome.failure.find("could not be started"), std::string::npos) << outcome.failure;
}

TEST(NvrtcCompilerProcess, TheHelperRefusesAMalformedRequest) {
  if (access(AGILEOS_NVRTC_COMPILER, X_OK) != 0) GTEST_SKIP() << "no " << AGILEOS_NVRTC_COMPILER;
  const std::string command = std::string("printf 'garbage' | ") + AGILEOS_NVRTC_COMPILER + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string report;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) report += buffer;
  const int status = pclose(pipe);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << report;
  EXPECT_NE(report.find("malformed request"), std::string::npos) << report;
}

TEST(NvrtcWire, ResultsRoundTripAndGarbageIsRefused) {
  CompileResult result;
  result.status = NVRTC_ERROR_COMPILATION;
  result.log = "log";
  result.ptx = std::string("ptx\0", 4);
  result.loweredNames = {"a", "b"};
  const auto back = decodeResult(encodeResult(result));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->status, NVRTC_ERROR_COMPILATION);
  EXPECT_EQ(back->ptx, result.ptx);
  EXPECT_EQ(back->loweredNames, result.loweredNames);
  std::string bytes = encodeResult(result);
  for (std::size_t cut = 0; cut < bytes.size(); ++cut)
    EXPECT_FALSE(decodeResult(bytes.substr(0, cut))) << cut;
  EXPECT_FALSE(decodeResult(std::string(8, '\xff')));
  CompileResult badStatus = result;
  std::string encoded = encodeResult(badStatus);
  encoded.replace(8, 1, "x");  // the status field is no longer a number
  EXPECT_FALSE(decodeResult(encoded));
  const CompileRequest request{"src", "name", {"h"}, {"h.h"}, {"-w"}, {"k"}};
  const auto parsed = decodeRequest(encodeRequest(request));
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->includeNames, request.includeNames);
  EXPECT_EQ(parsed->expressions, request.expressions);
}

}  // namespace
}  // namespace agileos::adapters::nvrtc
