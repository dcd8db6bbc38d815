// Tensor copies through a CUtensorMap (ptx/tensor_maps.h): the forms nvcc writes for a
// `const __grid_constant__ CUtensorMap` kernel parameter are admitted, rewritten so that each copy
// reads its map from the parameter's name, assemble with ptxas and pass the independent checker;
// every other source of a map, and kernels that build or change maps, are refused.
#include "ptx/tensor_maps.h"

#include <gtest/gtest.h>

#include "ptx/emitted_check.h"
#include "ptx/guard.h"
#include "ptx/parser.h"
#include "ptx/printer.h"
#include "tests/cpu/ptx/guard_test_options.h"
#include "tests/cpu/ptx/ptx_corpus.h"

namespace agileos::ptx {
namespace {

using testing::assemble;
using testing::kAllPolicies;
using testing::parsed;
using testing::readFile;

// nvcc's form (tests/gpu/programs/tensor_maps.cu, -arch=sm_90), cut down: `MAP` is what the copy
// names as its map, `PARAMS` the kernel's parameter list, `BEFORE` statements before the copy.
std::string kernel(const std::string& map = "%rd4", const std::string& before = "",
                   const std::string& params = ".param .align 128 .b8 k_param_0[128], .param .u64 k_param_1",
                   const std::string& copy = "") {
  const std::string load =
      copy.empty() ? "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
                     "[%r12], [" +
                         map + ", {%r1, %r2}], [%r9];"
                   : copy;
  return R"(.version 8.8
.target sm_90
.address_size 64

.visible .entry k()" +
         params +
         R"()
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<16>;
	.reg .b64 	%rd<12>;
	.shared .align 128 .b8 tile[4096];
	.shared .align 8 .u64 mbar;

	mov.b64 	%rd1, k_param_0;
	ld.param.u64 	%rd8, [k_param_1];
	mov.u32 	%r1, %ctaid.x;
	mov.u32 	%r2, %ctaid.y;
	setp.ne.s32 	%p1, %r1, 0;
	@%p1 bra 	$L__BB0_2;
	cvta.param.u64 	%rd4, %rd1;
	prefetch.tensormap 	[%rd4];
	mov.u32 	%r9, mbar;
	mov.u32 	%r12, tile;
)" + before +
         "\t" + load + R"(
	cp.async.bulk.tensor.2d.global.shared::cta.bulk_group 	[%rd4, {%r1, %r2}], [%r12];
$L__BB0_2:
	ret;
}
)";
}

GuardOptions options(GuardPolicy policy = GuardPolicy::kTrap) { return testing::guardOptions(policy); }

std::string refusal(const std::string& text) {
  const GuardResult guarded = guardModule(parsed(text), options());
  EXPECT_FALSE(guarded.ok) << print(guarded.module);
  return guarded.error;
}

TEST(PtxTensorMaps, NvccFormIsRewrittenToReadTheParameterAndAssembles) {
  const GuardResult guarded = guardModule(parsed(kernel()), options());
  ASSERT_TRUE(guarded.ok) << guarded.error;
  EXPECT_EQ(guarded.tensorMapCopies, 3u) << "prefetch.tensormap, the load and the store";
  ASSERT_EQ(guarded.tensorMaps.size(), 1u);
  EXPECT_EQ(guarded.tensorMaps[0], (KernelTensorMaps{"k", {0}}));
  const std::string text = print(guarded.module);
  const std::string p = guarded.registerPrefix;
  EXPECT_NE(text.find("mov.b64\t" + p + "_tp, k_param_0;\n\t\tcvta.param.u64\t" + p + "_tg, " + p + "_tp;"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("[" + p + "_tg, {%r1, %r2}]"), std::string::npos) << text;
  EXPECT_EQ(text.find("[%rd4"), std::string::npos) << "no copy names the program's register any more\n"
                                                   << text;
  EXPECT_TRUE(findUnguardedAccesses(guarded.module, options(), p).empty());
  std::string output;
  EXPECT_EQ(assemble(text, &output), 0) << output << text;
}

TEST(PtxTensorMaps, TheCorpusProgramIsAdmittedUnderEveryPolicyAndAssembles) {
  const std::string source = readFile(std::string(AGILEOS_PTX_CORPUS_DIR) + "/tensor_maps.ptx");
  ASSERT_FALSE(source.empty());
  for (GuardPolicy policy : kAllPolicies) {
    SCOPED_TRACE(toString(policy));
    const GuardResult guarded = guardModule(parsed(source), options(policy));
    ASSERT_TRUE(guarded.ok) << guarded.error;
    // tileLoad: one load; tileRoundTrip: prefetch, load, store; tileStore: one store.
    EXPECT_EQ(guarded.tensorMapCopies, 5u);
    ASSERT_EQ(guarded.tensorMaps.size(), 3u);
    std::vector<std::vector<std::uint32_t>> params;
    for (const KernelTensorMaps& k : guarded.tensorMaps) params.push_back(k.params);
    EXPECT_EQ(params, (std::vector<std::vector<std::uint32_t>>{{0}, {0, 1}, {0}}));
    const std::string text = print(guarded.module);
    EXPECT_EQ(checkEmittedText(text, guarded.module, options(policy), guarded.registerPrefix), "");
    EXPECT_EQ(tensorMapParameters(parsed(text), guarded.registerPrefix), guarded.tensorMaps);
    if (policy == GuardPolicy::kTrap) {
      std::string output;
      EXPECT_EQ(assemble(text, &output), 0) << output;
    }
  }
}

TEST(PtxTensorMaps, MapsFromMemoryOrComputedAreRefused) {
  // Loaded from global memory (a map the kernel was handed a pointer to).
  EXPECT_NE(refusal(kernel("%rd5", "\tld.global.u64 \t%rd5, [%rd8];\n")).find("not a kernel parameter"),
            std::string::npos);
  // Computed from the parameter's address.
  EXPECT_NE(refusal(kernel("%rd5", "\tadd.s64 \t%rd5, %rd4, 128;\n")).find("not a kernel parameter"),
            std::string::npos);
  // The register is also written with something else on another path.
  EXPECT_NE(refusal(kernel("%rd4", "\t@%p1 ld.global.u64 \t%rd4, [%rd8];\n")).find("not a kernel parameter"),
            std::string::npos);
  // Two parameters' addresses reach the same register.
  EXPECT_NE(refusal(kernel("%rd4", "\tmov.b64 \t%rd1, k_param_1;\n")).find("not a kernel parameter"),
            std::string::npos);
  // A map in .const or global memory, or named in param space.
  EXPECT_NE(refusal(kernel("%rd4", "\tprefetch.const.tensormap \t[%rd8];\n")).find("tensormap"),
            std::string::npos);
  EXPECT_NE(refusal(kernel("%rd4", "\tprefetch.global.tensormap \t[%rd8];\n")).find("tensormap"),
            std::string::npos);
  EXPECT_NE(refusal(kernel("%rd4", "\tprefetch.param.tensormap \t[k_param_0];\n")).find("tensormap"),
            std::string::npos);
  // An absolute or symbol address as the map.
  EXPECT_NE(refusal(kernel("k_param_0")).find("not a kernel parameter"), std::string::npos);
}

TEST(PtxTensorMaps, OnlyA128ByteAlignedParameterIsAMap) {
  EXPECT_NE(refusal(kernel("%rd4", "", ".param .align 128 .b8 k_param_0[64], .param .u64 k_param_1"))
                .find("128 bytes"),
            std::string::npos);
  EXPECT_NE(refusal(kernel("%rd4", "", ".param .align 8 .b8 k_param_0[128], .param .u64 k_param_1"))
                .find("aligned"),
            std::string::npos);
  EXPECT_NE(refusal(kernel("%rd4", "", ".param .u64 k_param_0, .param .u64 k_param_1")).find("128 bytes"),
            std::string::npos);
  const GuardResult wider = guardModule(
      parsed(kernel("%rd4", "", ".param .align 256 .b8 k_param_0[128], .param .u64 k_param_1")), options());
  EXPECT_TRUE(wider.ok) << wider.error;
}

TEST(PtxTensorMaps, KernelsThatBuildOrChangeMapsAreRefused) {
  EXPECT_NE(refusal(kernel("%rd4",
                           "\ttensormap.replace.tile.global_address.shared::cta.b1024.b64 \t[%r12], %rd8;\n"))
                .find("tensormap.replace"),
            std::string::npos);
  EXPECT_NE(refusal(kernel("%rd4",
                           "\ttensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync."
                           "aligned \t[%rd8], [%r12], 128;\n"))
                .find("tensormap.cp_fenceproxy"),
            std::string::npos);
}

TEST(PtxTensorMaps, ATensorCopyInADeviceFunctionIsRefused) {
  const std::string text = R"(.version 8.8
.target sm_90
.address_size 64
.func f(.param .b64 f_param_0)
{
	.reg .b32 	%r<4>;
	.reg .b64 	%rd<3>;
	ld.param.u64 	%rd1, [f_param_0];
	cp.async.bulk.tensor.2d.global.shared::cta.bulk_group 	[%rd1, {%r1, %r2}], [%r3];
	ret;
}
)";
  EXPECT_NE(refusal(text).find("device function"), std::string::npos);
}

// Every occurrence of `from` replaced by `to`; with eraseIndent, the tabs before each go too.
// (Plain text: std::regex trips GCC 12's maybe-uninitialized under the sanitizer builds.)
std::string replaceAll(std::string text, const std::string& from, const std::string& to,
                       bool eraseIndent = false) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
    std::size_t begin = at;
    while (eraseIndent && begin > 0 && text[begin - 1] == '\t') --begin;
    text.replace(begin, at - begin + from.size(), to);
    at = begin + to.size();
  }
  return text;
}

TEST(PtxTensorMaps, TheCheckerFindsCopiesOutsideTheirScopeOrOnAnotherParameter) {
  const GuardResult guarded = guardModule(parsed(kernel()), options());
  ASSERT_TRUE(guarded.ok) << guarded.error;
  const std::string text = print(guarded.module);
  const std::string p = guarded.registerPrefix;
  // The scope's parameter changed to the 8-byte one.
  const std::string other = replaceAll(text, p + "_tp, k_param_0", p + "_tp, k_param_1");
  ASSERT_NE(other, text);
  EXPECT_FALSE(findUnguardedAccesses(parsed(other), options(), p).empty());
  // A copy of the program's own register, outside any scope, added after the checked ones.
  std::string loose = text;
  loose.insert(loose.find("$L__BB0_2:"),
               "\tcp.async.bulk.tensor.2d.global.shared::cta.bulk_group\t[%rd4, {%r1, %r2}], [%r12];\n");
  EXPECT_FALSE(findUnguardedAccesses(parsed(loose), options(), p).empty());
  // The scope's cvta dropped: the copy would read a param-space address as generic.
  const std::string noCvta = replaceAll(text, "cvta.param.u64\t" + p + "_tg, " + p + "_tp;\n", "", true);
  ASSERT_NE(noCvta, text);
  EXPECT_FALSE(findUnguardedAccesses(parsed(noCvta), options(), p).empty());
}

TEST(PtxTensorMaps, ReductionsAndPrefetchesThroughAMapAreTensorCopies) {
  const std::string reduce =
      "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%rd4, {%r1, %r2}], [%r12];";
  const GuardResult r = guardModule(
      parsed(kernel("%rd4", "", ".param .align 128 .b8 k_param_0[128], .param .u64 k_param_1", reduce)),
      options());
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.tensorMapCopies, 3u);
  const std::string prefetch = "cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%rd4, {%r1, %r2}];";
  const GuardResult f = guardModule(
      parsed(kernel("%rd4", "", ".param .align 128 .b8 k_param_0[128], .param .u64 k_param_1", prefetch)),
      options());
  ASSERT_TRUE(f.ok) << f.error;
  std::string output;
  EXPECT_EQ(assemble(print(r.module), &output), 0) << output;
  EXPECT_EQ(assemble(print(f.module), &output), 0) << output;
}

}  // namespace
}  // namespace agileos::ptx
