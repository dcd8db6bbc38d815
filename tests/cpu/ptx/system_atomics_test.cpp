// kernelsWithSystemAtomics: the kernels whose bodies hold atom/red with the .sys scope, from
// nvcc's spelling (atom.global.sys.add.u32) and others the ISA allows; comments, other scopes,
// other opcodes and prototypes do not count; a .func that uses them marks every kernel.
#include "ptx/system_atomics.h"

#include <gtest/gtest.h>

namespace agileos::ptx {
namespace {

using Names = std::vector<std::string>;

constexpr const char* kHeader = ".version 8.0\n.target sm_90\n.address_size 64\n";

std::string module(const std::string& body) { return std::string(kHeader) + body; }

TEST(SystemAtomics, NvccsSpellingMarksTheKernelThatHoldsIt) {
  // As nvcc 13 prints atomicAdd_system, atomicCAS_system and atomicAdd.
  const std::string ptx = module(R"(
.visible .entry _Z4syskPi(.param .u64 _Z4syskPi_param_0)
{
	.reg .b32 %r<3>; .reg .b64 %rd<4>;
	ld.param.u64 %rd1, [_Z4syskPi_param_0];
	cvta.to.global.u64 %rd2, %rd1;
	atom.global.sys.add.u32 	%r1, [%rd2], 1;
	atom.global.sys.cas.b32 	%r2, [%rd2+4], 0, 1;
	ret;
}
.visible .entry _Z4devkPi(.param .u64 _Z4devkPi_param_0)
{
	.reg .b32 %r<2>; .reg .b64 %rd<3>;
	ld.param.u64 %rd1, [_Z4devkPi_param_0];
	atom.global.add.u32 	%r1, [%rd1], 1;
	ret;
}
)");
  EXPECT_EQ(kernelsWithSystemAtomics(ptx), Names{"_Z4syskPi"});
}

TEST(SystemAtomics, EveryScopeSpellingOfAtomAndRedCounts) {
  for (const char* instruction :
       {"@%p1 atom.sys.global.add.u32 %r1, [%rd1], 1;", "red.release.sys.global.add.u32 [%rd1], 1;",
        "atom.acq_rel.sys.exch.b64 %rd2, [%rd1], %rd1;", "red.sys.add.f32 [%rd1], 0f3F800000;"}) {
    const std::string ptx =
        module(std::string(".visible .entry k()\n{\n.reg .pred %p<2>; .reg .b32 %r<2>;\n") +
               ".reg .b64 %rd<3>;\n" + instruction + "\nret;\n}\n");
    EXPECT_EQ(kernelsWithSystemAtomics(ptx), Names{"k"}) << instruction;
  }
}

TEST(SystemAtomics, OtherScopesOpcodesAndCommentsDoNot) {
  const std::string ptx = module(R"(
// atom.global.sys.add.u32 in a comment
.visible .entry k(.param .u64 k_param_0)
{
	.reg .b32 %r<2>; .reg .b64 %rd<3>;
	/* red.sys.add.u32 [%rd1], 1; */
	atom.gpu.global.add.u32 %r1, [%rd1], 1;
	red.cta.global.add.u32 [%rd1], 1;
	ld.acquire.sys.global.u32 %r1, [%rd1];
	st.release.sys.global.u32 [%rd1], %r1;
	fence.sc.sys;
	ret;
}
)");
  EXPECT_EQ(kernelsWithSystemAtomics(ptx), Names{});
}

TEST(SystemAtomics, AFunctionThatUsesThemMarksEveryKernel) {
  const std::string ptx = module(R"(
.func (.param .b32 func_retval0) helper(.param .b64 helper_param_0);
.visible .entry first() { ret; }
.func (.param .b32 func_retval0) helper(.param .b64 helper_param_0)
{
	.reg .b32 %r<2>; .reg .b64 %rd<2>;
	ld.param.b64 %rd1, [helper_param_0];
	atom.global.sys.exch.b32 %r1, [%rd1], 3;
	st.param.b32 [func_retval0], %r1;
	ret;
}
.visible .entry second() { ret; }
)");
  EXPECT_EQ(kernelsWithSystemAtomics(ptx), (Names{"first", "second"}));
}

TEST(SystemAtomics, OtherLayoutsAreReadAsPtxasReadsThem) {
  // One line, a braced initializer at the top level, performance directives between the
  // parameters and the body, a call prototype and nested braces inside a body.
  const std::string ptx = module(
      ".global .u32 table[2] = {1, 2}; .visible .entry quiet(.param .u64 p) .maxntid 256, 1, 1 { ret; } "
      ".visible .entry loud(.param .u64 p) .maxntid 128, 1, 1 .minnctapersm 1 { .reg .b32 %r<2>; "
      ".reg .b64 %rd<2>; proto : .callprototype (.param .b32 _) _ (.param .b64 _); { "
      "atom.sys.global.or.b32 %r1, [%rd1], 1; } ret; } .visible .entry after() { ret; }");
  EXPECT_EQ(kernelsWithSystemAtomics(ptx), Names{"loud"});
}

TEST(SystemAtomics, AModuleThatDoesNotLexIsUnknown) {
  EXPECT_EQ(kernelsWithSystemAtomics(module(".entry k() { atom.sys.add.u32 \x01; }")), std::nullopt);
  EXPECT_EQ(kernelsWithSystemAtomics(module(".entry k() { ret; }")), Names{}) << "no .sys: not even lexed";
}

}  // namespace
}  // namespace agileos::ptx
