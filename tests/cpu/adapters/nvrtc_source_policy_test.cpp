// The NVRTC adapter's policy on untrusted programs (worker/adapters/nvrtc/nvrtc_source_policy.h):
// what NVRTC would read from the worker's file system is refused before it compiles.
#include "worker/adapters/nvrtc/nvrtc_source_policy.h"

#include <gtest/gtest.h>

namespace agileos::adapters::nvrtc {
namespace {

const std::vector<std::string> kHeaders{"scale.h", "config.h"};

TEST(NvrtcOptions, AllowsTheUsualCompilationOptions) {
  for (const char* option :
       {"--gpu-architecture=compute_90", "-arch=sm_90", "--std=c++17", "-default-device", "-DN=4", "-UDEBUG",
        "--define-macro=X", "-lineinfo", "--use_fast_math", "-G", "--fmad=false", "-rdc=true",
        "--maxrregcount=64", "-w", "-dlto", "--dlink-time-opt", "--relocatable-device-code=true"}) {
    EXPECT_EQ(refuseOption(option), std::nullopt) << option;
  }
}

TEST(NvrtcOptions, RefusesOptionsThatReadOrWriteFiles) {
  for (const char* option : {"-I/etc",
                             "--include-path=/etc",
                             "--pre-include=/etc/passwd",
                             "-include",
                             "-pch",
                             "--create-pch=/tmp/x",
                             "--use-pch=/tmp/x",
                             "--pch-dir=/tmp",
                             "-time=/tmp/t",
                             "--fdevice-time-trace=/tmp/t",
                             "-dlto=true",
                             "--unknown-thing",
                             "",
                             "-D",
                             "-arch=/x",
                             "--gpu-architecture",
                             "-optix-ir",
                             "--optix-ir",
                             "-I",
                             "-I.",
                             "--include-path",
                             "--include-path=."}) {
    EXPECT_NE(refuseOption(option), std::nullopt) << option;
  }
}

TEST(NvrtcSource, AllowsIncludesOfSuppliedHeaders) {
  EXPECT_EQ(refuseSource("#include \"scale.h\"\n#include <config.h>\n__global__ void k() {}\n", kHeaders),
            std::nullopt);
  EXPECT_EQ(refuseSource("#if __has_include(<cuda_fp16.h>)\n#endif\n", kHeaders), std::nullopt);
  EXPECT_EQ(refuseSource("int x; // no directives at all\n", {}), std::nullopt);
}

// With no include path (every option that adds one is refused), <name> searches no directory:
// a relative name reads nothing, here or in the jail, and NVRTC reports it missing. Libraries
// name such headers in branches NVRTC never takes (CCCL: <cassert>, <pthread.h>).
TEST(NvrtcSource, AllowsAngledIncludesThatSearchNoDirectory) {
  EXPECT_EQ(refuseSource("#include <cassert>\n#include <linux/futex.h>\n", kHeaders), std::nullopt);
  EXPECT_EQ(refuseSource("#ifndef __CUDACC_RTC__\n#  include <pthread.h>\n#endif\n", kHeaders), std::nullopt);
}

// CCCL's wrapper: what it probes is named at the use site (a literal there, checked like any).
TEST(NvrtcSource, AllowsAComputedHasIncludeInsideADefinition) {
  EXPECT_EQ(refuseSource("#ifdef __has_include\n#  define _CCCL_HAS_INCLUDE(_X) __has_include(_X)\n#endif\n",
                         kHeaders),
            std::nullopt);
  EXPECT_EQ(refuseSource("#define HAS __has_include\n", kHeaders), std::nullopt);
  EXPECT_EQ(refuseSource("#if defined(__has_include)\n#endif\n", kHeaders), std::nullopt);
}

TEST(NvrtcSource, RefusesEveryWayToNameAnotherFile) {
  const char* attacks[] = {
      "#include \"/etc/hostname\"\n",
      "#include \"cwdheader.h\"\n",
      "  #  include </etc/passwd>\n",
      "#include_next \"x.h\"\n",
      "#import \"x.h\"\n",
      "#embed \"/etc/passwd\"\n",
      "%:include \"/etc/passwd\"\n",
      "?\?=include \"/etc/passwd\"\n",
      "#/**/include \"/etc/passwd\"\n",
      "char* s = \"/*\";\n#/**/include \"/etc/passwd\"\n// */\n",
      "#inc\\\nlude \"/etc/passwd\"\n",
      "#define F \"/etc/passwd\"\n#include F\n",
      "#if __has_include(\"/etc/passwd\")\n#endif\n",
      "#if __has_include(</etc/passwd>)\n#endif\n",
      "#if __has_include(<../../etc/passwd>)\n#endif\n",
      "#if __has_include(F)\n#endif\n",
      "/* a */ # /* b */ include /* c */ \"secret\"\n",
      // Quoted names search the program's directory; the other directives search more.
      "#include \"missing.h\"\n",
      "#include <../../etc/passwd>\n",
      "#include <dir/../../x.h>\n",
      "#include_next <x.h>\n",
      "#import <x.h>\n",
      "#embed <x.h>\n",
      // A computed probe outside a #define, or after a "#define" that is no directive.
      "#define F(x) x\n#if __has_include(F(\"/etc/passwd\"))\n#endif\n",
      "#if 0 /* #define */ || __has_include(F)\n#endif\n",
      "int x; #define G __has_include(F)\n",
      "#define G \"/etc/passwd\"\n#if __has_include(G)\n#endif\n",
      "#define P (\"/etc/passwd\")\n#if __has_include P\n#endif\n",
  };
  for (const char* source : attacks) EXPECT_NE(refuseSource(source, kHeaders), std::nullopt) << source;
}

TEST(NvrtcArchitecture, ARealArchitectureHasAVirtualTwin) {
  auto twin = withVirtualArchitecture({"--std=c++17", "--gpu-architecture=sm_90"});
  ASSERT_TRUE(twin.has_value());
  EXPECT_EQ((*twin)[1], "--gpu-architecture=compute_90");
  EXPECT_EQ(withVirtualArchitecture({"-arch=sm_80a"})->front(), "-arch=compute_80a");
  EXPECT_EQ(withVirtualArchitecture({"--gpu-architecture=compute_90"}), std::nullopt);
}

}  // namespace
}  // namespace agileos::adapters::nvrtc
