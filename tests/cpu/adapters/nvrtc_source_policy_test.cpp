// The NVRTC adapter's policy on untrusted programs (worker/adapters/nvrtc/nvrtc_source_policy.h):
// what NVRTC would read from the worker's file system is refused before it compiles.
#include "worker/adapters/nvrtc/nvrtc_source_policy.h"

#include <gtest/gtest.h>

namespace agileos::adapters::nvrtc {
namespace {

const std::vector<std::string> kHeaders{"scale.h", "config.h"};

TEST(NvrtcOptions, AllowsTheUsualCompilationOptions) {
  for (const char* option : {"--gpu-architecture=compute_90", "-arch=sm_90", "--std=c++17", "-default-device",
                             "-DN=4", "-UDEBUG", "--define-macro=X", "-lineinfo", "--use_fast_math", "-G",
                             "--fmad=false", "-rdc=true", "--maxrregcount=64", "-w"}) {
    EXPECT_EQ(refuseOption(option), std::nullopt) << option;
  }
}

TEST(NvrtcOptions, RefusesOptionsThatReadOrWriteFiles) {
  for (const char* option : {"-I/etc", "--include-path=/etc", "--pre-include=/etc/passwd", "-include", "-pch",
                             "--create-pch=/tmp/x", "--use-pch=/tmp/x", "--pch-dir=/tmp", "-time=/tmp/t",
                             "--fdevice-time-trace=/tmp/t", "-dlto", "--unknown-thing", "", "-D", "-arch=/x",
                             "--gpu-architecture"}) {
    EXPECT_NE(refuseOption(option), std::nullopt) << option;
  }
}

TEST(NvrtcSource, AllowsIncludesOfSuppliedHeaders) {
  EXPECT_EQ(refuseSource("#include \"scale.h\"\n#include <config.h>\n__global__ void k() {}\n", kHeaders),
            std::nullopt);
  EXPECT_EQ(refuseSource("#if __has_include(<cuda_fp16.h>)\n#endif\n", kHeaders), std::nullopt);
  EXPECT_EQ(refuseSource("int x; // no directives at all\n", {}), std::nullopt);
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
