// Return edges under the kernel memory guard (ptx/frame_confinement.h), on nvcc output
// (inputs/frame_writes.cu, plain and -G: recursion, a device function's own array, writes
// through a pointer) and on hand-written cases: in a .func every write that can land in the
// local window is bounded to the function's own .local variables in scope and traps
// otherwise, under every policy and the write's predicate; kernels are left alone; param
// stores stay inside their parameter; stack-moving instructions are refused; the result
// assembles; the independent checker accepts exactly that and flags every altered check.
#include "ptx/frame_confinement.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ptx/emitted_check.h"
#include "ptx/guard.h"
#include "ptx/parser.h"
#include "ptx/printer.h"
#include "tests/cpu/ptx/guard_test_options.h"
#include "tests/cpu/ptx/guarded_and_clean.h"
#include "tests/cpu/ptx/ptx_corpus.h"

namespace agileos::ptx {
namespace {

using testing::assemble;
using testing::kAllPolicies;
using testing::parsed;
using testing::readFile;

constexpr auto npos = std::string::npos;

GuardOptions options(GuardPolicy policy = GuardPolicy::kTrap) {
  GuardOptions o = testing::guardOptions(policy);
  o.confineFrameWrites = true;
  return o;
}

using testing::count;
using testing::expectEveryEditFlagged;
using testing::guardedAndClean;

// The printed module with tabs as spaces (the printer puts a tab after an opcode).
std::string text(const Module& module) {
  std::string out = print(module);
  for (char& c : out) {
    if (c == '\t') c = ' ';
  }
  return out;
}

std::string corpus(const char* name) { return readFile(std::string(AGILEOS_PTX_CORPUS_DIR) + "/" + name); }

// A .func with a 16-byte local array and a caller; WRITES goes into the .func's body.
std::string module(const std::string& writes, const std::string& kernelWrites = "") {
  return R"(.version 9.0
.target sm_90
.address_size 64

.func (.param .b32 ret) work(.param .b64 work_p, .param .b32 work_i)
{
	.local .align 8 .b8 depot[16];
	.reg .pred %p<4>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<8>;
	ld.param.u64 %rd1, [work_p];
	ld.param.u32 %r1, [work_i];
	mov.u64 %rd2, depot;
	cvt.u64.u32 %rd3, %r1;
	add.u64 %rd4, %rd2, %rd3;
	cvta.local.u64 %rd5, %rd4;
	mov.u32 %r2, depot;
	add.u32 %r3, %r2, %r1;
	setp.ne.u32 %p1, %r1, 0;
)" + writes +
         R"(
	ld.local.u32 %r4, [depot];
	st.param.b32 [ret+0], %r4;
	ret;
}

.visible .entry kernel(.param .u64 kernel_out, .param .u32 kernel_i)
{
	.local .align 8 .b8 own[32];
	.reg .b32 %r<8>;
	.reg .b64 %rd<8>;
	ld.param.u64 %rd1, [kernel_out];
	ld.param.u32 %r1, [kernel_i];
	mov.u64 %rd2, own;
	cvt.u64.u32 %rd3, %r1;
	add.u64 %rd4, %rd2, %rd3;
)" + kernelWrites +
         R"(
	{
	.param .b64 param0;
	.param .b32 param1;
	.param .b32 retval0;
	st.param.b64 [param0+0], %rd1;
	st.param.b32 [param1+0], %r1;
	call.uni (retval0), work, (param0, param1);
	ld.param.b32 %r2, [retval0+0];
	}
	cvta.to.global.u64 %rd5, %rd1;
	st.global.u32 [%rd5], %r2;
	ret;
}
)";
}

TEST(PtxFrameConfinement, NvccDeviceFunctionsAreBoundedUnderEveryPolicyAndAssemble) {
  for (const char* file : {"frame_writes.ptx", "frame_writes_debug.ptx", "indirect_calls.ptx"}) {
    const Module m = parsed(corpus(file));
    for (GuardPolicy policy : kAllPolicies) {
      SCOPED_TRACE(std::string(file) + " under " + toString(policy));
      const GuardResult guarded = guardedAndClean(m, options(policy));
      // fillOwn, recurse (st.local), fillThrough, bump (generic) and the kernels' calls.
      const std::string text = ptx::text(guarded.module);
      if (std::string(file) != "indirect_calls.ptx") {
        EXPECT_GE(guarded.confinedFrameWrites, 4u);
        EXPECT_GE(count(text, "isspacep.local"), 2u) << "the generic writes of fillThrough and bump";
      }
      EXPECT_GE(count(text, "st.param.b64 [%agileos_guard_fa"), 1u) << "every call passes the frame floor";
    }
  }
}

TEST(PtxFrameConfinement, EveryCorpusFileStillGuardsCleanly) {
  for (const std::string& path : testing::corpusFiles()) {
    SCOPED_TRACE(path);
    const GuardResult guarded = guardedAndClean(parsed(readFile(path)), options());
    (void)guarded;
  }
}

TEST(PtxFrameConfinement, ComputedLocalWriteInAFuncIsCheckedAgainstItsOwnVariables) {
  const GuardResult guarded = guardedAndClean(parsed(module("\tst.local.u32 [%rd4+4], %r1;")), options());
  ASSERT_TRUE(guarded.ok);
  EXPECT_EQ(guarded.confinedFrameWrites, 1u);
  const std::string text = ptx::text(guarded.module);
  // Bounded to depot: a 4-byte write may start at most 12 bytes in.
  EXPECT_NE(text.find("mov.u64 %agileos_guard_wb0, depot;"), npos) << text;
  EXPECT_NE(text.find("setp.gt.u64 %agileos_guard_wo, %agileos_guard_wd0, 0xc;"), npos) << text;
  EXPECT_NE(text.find("@%agileos_guard_wo trap;"), npos) << text;
  EXPECT_NE(text.find("st.local.u32 [%agileos_guard_wa], %r1;"), npos) << text;
  // The kernel's own local write is not a return edge: left alone.
  const GuardResult kernelOnly =
      guardedAndClean(parsed(module("", "\tst.local.u32 [%rd4], %r1;")), options());
  EXPECT_EQ(kernelOnly.confinedFrameWrites, 0u);
}

TEST(PtxFrameConfinement, GenericWriteInAFuncIsCheckedWhenItLandsInTheLocalWindow) {
  for (GuardPolicy policy : kAllPolicies) {
    SCOPED_TRACE(toString(policy));
    const GuardResult guarded = guardedAndClean(parsed(module("\tst.u32 [%rd5], %r1;")), options(policy));
    ASSERT_TRUE(guarded.ok);
    const std::string text = ptx::text(guarded.module);
    EXPECT_NE(text.find("isspacep.local %agileos_guard_wl, %agileos_guard_wa;"), npos) << text;
    EXPECT_NE(text.find("and.pred %agileos_guard_wo, %agileos_guard_wo, %agileos_guard_wl;"), npos) << text;
    EXPECT_EQ(count(text, "@%agileos_guard_wo trap;"), 1u) << "a trap under every policy";
  }
}

TEST(PtxFrameConfinement, ConstantWritesInsideAVariableNeedNoCheckAndOutsideAreRefused) {
  EXPECT_EQ(guardedAndClean(parsed(module("\tst.local.u32 [depot+12], %r1;")), options()).confinedFrameWrites,
            0u);
  for (const char* write :
       {"\tst.local.u32 [depot+13], %r1;", "\tst.local.u32 [depot+-4], %r1;",
        "\tst.local.v4.u32 [depot+4], {%r1, %r1, %r1, %r1};", "\tst.local.u32 [work_p], %r1;"}) {
    SCOPED_TRACE(write);
    const GuardResult guarded = guardModule(parsed(module(write)), options());
    EXPECT_FALSE(guarded.ok);
    EXPECT_NE(guarded.error.find("outside the function's own variables"), npos) << guarded.error;
  }
}

TEST(PtxFrameConfinement, ThirtyTwoBitLocalAddressesAreWidenedAndChecked) {
  const GuardResult guarded = guardedAndClean(parsed(module("\tst.local.u32 [%r3], %r1;")), options());
  ASSERT_TRUE(guarded.ok);
  EXPECT_NE(ptx::text(guarded.module).find("cvt.u64.u32 %agileos_guard_wa, %r3;"), npos);
  // A register the function never declared: the guard cannot tell its width.
  const GuardResult undeclared = guardModule(parsed(module("\tst.local.u32 [%q9], %r1;")), options());
  EXPECT_FALSE(undeclared.ok);
  EXPECT_NE(undeclared.error.find("width"), npos) << undeclared.error;
}

TEST(PtxFrameConfinement, PredicatedWritesAreCheckedUnderTheirPredicate) {
  for (const char* write : {"\t@%p1 st.local.u32 [%rd4], %r1;", "\t@!%p1 st.u32 [%rd5], %r1;"}) {
    SCOPED_TRACE(write);
    const GuardResult guarded = guardedAndClean(parsed(module(write)), options());
    ASSERT_TRUE(guarded.ok);
    const std::string text = ptx::text(guarded.module);
    EXPECT_TRUE(text.find("and.pred %agileos_guard_wo, %agileos_guard_wo, %p1;") != npos ||
                text.find("not.pred %agileos_guard_wn, %p1;") != npos)
        << text;
  }
}

TEST(PtxFrameConfinement, OnlyVariablesInScopeBoundAWrite) {
  // `inner` is declared in a nested block: a write after the block may not use it.
  const std::string text = module(
      "\t{\n\t.local .b8 inner[64];\n\tmov.u64 %rd6, inner;\n\tst.local.u32 [%rd6], %r1;\n\t}\n"
      "\tst.local.u32 [%rd4], %r1;");
  const GuardResult guarded = guardedAndClean(parsed(text), options());
  ASSERT_TRUE(guarded.ok);
  EXPECT_EQ(guarded.confinedFrameWrites, 2u);
  const std::string out = ptx::text(guarded.module);
  EXPECT_EQ(count(out, ", inner;"), 2u) << "once by the program, once by the check inside the block\n" << out;
}

TEST(PtxFrameConfinement, ParamStoresStayInsideTheirParameterAndStackMovesAreRefused) {
  for (const char* write : {"\tst.param.b32 [ret+4], %r1;", "\tst.param.b32 [%rd1], %r1;",
                            "\talloca.u64 %rd6, 16;", "\tstackrestore.u64 %rd1;", "\tstacksave.u64 %rd6;"}) {
    SCOPED_TRACE(write);
    EXPECT_FALSE(guardModule(parsed(module(write)), options()).ok);
  }
  // Parameter stores are bounded whether or not frame writes are confined; the stack moves
  // only matter when they are.
  GuardOptions open = options();
  open.confineFrameWrites = false;
  EXPECT_FALSE(guardModule(parsed(module("\tst.param.b32 [ret+4], %r1;")), open).ok);
  EXPECT_FALSE(guardModule(parsed(module("\tst.param.b32 [%rd1], %r1;")), open).ok);
  EXPECT_TRUE(guardModule(parsed(module("\tstacksave.u64 %rd6;")), open).ok);
  const GuardResult unconfined = guardedAndClean(parsed(module("\tst.local.u32 [%rd4], %r1;")), open);
  EXPECT_EQ(unconfined.confinedFrameWrites, 0u) << "off by default";
  // stackrestore could move a callee's frame above the floor: refused in a kernel too; a
  // kernel's alloca only moves later frames down.
  EXPECT_FALSE(guardModule(parsed(module("", "\tstackrestore.u64 %rd1;\n")), options()).ok);
  EXPECT_TRUE(guardModule(parsed(module("", "\talloca.u64 %rd6, 16;\n")), options()).ok);
  // In a kernel too: a call argument past its parameter.
  const std::string past = module("");
  std::string text = past;
  text.replace(text.find("st.param.b32 [param1+0], %r1;"), 29, "st.param.b32 [param1+4], %r1;");
  EXPECT_FALSE(guardModule(parsed(text), options()).ok);
}

TEST(PtxFrameConfinement, CheckerFlagsEveryAlteredCheck) {
  const GuardOptions o = options(GuardPolicy::kTrap);
  const GuardResult guarded =
      guardedAndClean(parsed(module("\tst.u32 [%rd5], %r1;\n\tst.local.u32 [%rd4], %r1;")), o);
  ASSERT_TRUE(guarded.ok);
  const std::string text = ptx::text(guarded.module);
  expectEveryEditFlagged(text,
                         {{"@%agileos_guard_wo trap;", ""},
                          {", 0xc;", ", 0xd;"},
                          {"and.pred %agileos_guard_wo, %agileos_guard_wo, %agileos_guard_wl;", ""},
                          {"st.local.u32 [%agileos_guard_wa], %r1;", "st.local.u32 [%rd4], %r1;"},
                          {"mov.u64 %agileos_guard_wb0, depot;", "mov.u64 %agileos_guard_wb0, work_p;"}},
                         o, guarded.registerPrefix);
}

TEST(PtxFrameConfinement, TheFloorIsTheKernelsLowestVariableAndEveryCallPassesIt) {
  // Two leading local variables: the floor is the lower of the two.
  std::string text = module("\tst.u32 [%rd5], %r1;");
  text.replace(text.find("\t.local .align 8 .b8 own[32];"), 29,
               "\t.local .align 8 .b8 own[32];\n\t.local .align 4 .b8 other[8];");
  const GuardResult guarded = guardedAndClean(parsed(text), options());
  ASSERT_TRUE(guarded.ok);
  const std::string out = ptx::text(guarded.module);
  // The kernel computes its floor right before the call, not in a register live across it.
  EXPECT_NE(out.find("mov.u64 %agileos_guard_fk0, own;"), npos) << out;
  EXPECT_NE(out.find("min.u64 %agileos_guard_fk0, %agileos_guard_fk0, %agileos_guard_fk0_m1;"), npos) << out;
  EXPECT_NE(out.find("st.param.b64 [%agileos_guard_fa0+0], %agileos_guard_fk0;"), npos) << out;
  EXPECT_NE(out.find("ld.param.u64 %agileos_guard_floor, [%agileos_guard_fp];"), npos) << out;
  EXPECT_NE(out.find("work(.param .b64 work_p, .param .b32 work_i, .param .b64 %agileos_guard_fp)"), npos)
      << out;
  EXPECT_NE(out.find("call.uni (retval0), work, (param0, param1, %agileos_guard_fa0);"), npos) << out;
  EXPECT_NE(
      out.find(
          "setp.lt.and.u64 %agileos_guard_wo, %agileos_guard_wx, %agileos_guard_floor, %agileos_guard_wo;"),
      npos)
      << out;
  // A kernel without local variables: nothing of the stack is the callee's to write.
  std::string bare = module("\tst.u32 [%rd5], %r1;");
  bare.replace(bare.find("\t.local .align 8 .b8 own[32];\n"), 30, "");
  bare.replace(bare.find("\tmov.u64 %rd2, own;\n"), 21, "\tmov.u64 %rd2, 0;\n");
  const GuardResult none = guardedAndClean(parsed(bare), options());
  ASSERT_TRUE(none.ok);
  EXPECT_NE(ptx::text(none.module).find("mov.u64 %agileos_guard_fk0, 0xffffffffffffffff;"), npos);
}

// The floor names the kernel's variables: a block that declares one of those names again
// (a register the program controls) would make the floor whatever the program put there.
TEST(PtxFrameConfinement, ABlockThatShadowsAKernelVariableIsRefused) {
  std::string text = module("\tst.u32 [%rd5], %r1;");
  const std::string call = "\t{\n\t.param .b64 param0;";
  text.replace(text.find(call), call.size(),
               "\t{\n\t.reg .u64 own;\n\tmov.u64 own, 0;\n\t.param .b64 param0;");
  const GuardResult shadowed = guardModule(parsed(text), options());
  EXPECT_FALSE(shadowed.ok);
  EXPECT_NE(shadowed.error.find("shadows a local variable of the kernel"), npos) << shadowed.error;
  // A variable named like a register ('%' first) is still a variable.
  std::string percent = module("\tst.u32 [%rd5], %r1;");
  for (std::size_t at = percent.find("own"); at != npos; at = percent.find("own", at + 4)) {
    percent.replace(at, 3, "%own");
  }
  guardedAndClean(parsed(percent), options());
}

TEST(PtxFrameConfinement, CheckerFlagsAlteredFloorPlumbing) {
  const GuardOptions o = options(GuardPolicy::kTrap);
  const GuardResult guarded = guardedAndClean(parsed(module("\tst.u32 [%rd5], %r1;")), o);
  ASSERT_TRUE(guarded.ok);
  const std::string text = print(guarded.module);
  expectEveryEditFlagged(
      text,
      {{"mov.u64\t%agileos_guard_fk0, own;", "mov.u64\t%agileos_guard_fk0, 0;"},
       {"st.param.b64\t[%agileos_guard_fa0+0], %agileos_guard_fk0;",
        "st.param.b64\t[%agileos_guard_fa0+0], 0;"},
       {"\tst.param.b64\t[%agileos_guard_fa0+0]",
        "\tadd.u64\t%agileos_guard_fk0, %agileos_guard_fk0, "
        "1;\n\t\tst.param.b64\t[%agileos_guard_fa0+0]"},
       {"ld.param.u64\t%agileos_guard_floor, [%agileos_guard_fp];", "mov.u64\t%agileos_guard_floor, 0;"},
       {"\t@%agileos_guard_wo trap;", "\tmov.u64\t%agileos_guard_floor, 0;\n\t@%agileos_guard_wo trap;"}},
      o, guarded.registerPrefix);
}

}  // namespace
}  // namespace agileos::ptx
