// The kernel memory guard (ptx/guard.h) on the PTX corpus and on hand-written cases:
// every rewritten module assembles with ptxas, the independent checker finds no access
// that can reach global memory left unguarded, the rewrite is deterministic, fresh
// registers never collide with the program's, and what cannot be bounded is refused.
#include "ptx/guard.h"

#include <gtest/gtest.h>

#include "memmgr/address_layout.h"
#include "ptx/emitted_check.h"
#include "ptx/parser.h"
#include "ptx/printer.h"
#include "tests/cpu/ptx/guard_test_options.h"
#include "tests/cpu/ptx/ptx_corpus.h"

namespace agileos::ptx {
namespace {

using testing::assemble;
using testing::corpusFiles;
using testing::readFile;

using testing::kAllPolicies;

// The memory checks on their own, with their exact texts: the frame confinement (on by
// default) is frame_confinement_test.cpp's; the corpus-wide tests run with it on.
GuardOptions options(GuardPolicy policy = GuardPolicy::kTrap) {
  GuardOptions o = testing::guardOptions(policy);
  o.confineFrameWrites = false;
  return o;
}

using testing::parsed;

constexpr char kKernel[] = R"(.version 9.0
.target sm_90
.address_size 64

.global .align 4 .u32 table[4];

.visible .entry k(
	.param .u64 k_param_0
)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<5>;
	.reg .b64 	%rd<5>;

	ld.param.u64 	%rd1, [k_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r1, %tid.x;
	setp.lt.u32 	%p1, %r1, 16;
	ld.global.v4.u32 	{%r1, %r2, %r3, %r4}, [%rd2+16];
	@%p1 st.global.u32 	[%rd2+-4], %r1;
	@!%p1 st.u64 	[%rd1], %rd2;
	atom.global.add.u32 	%r2, [%rd2], 1;
	ld.global.u32 	%r3, [table+8];
	ret;
}
)";

TEST(PtxGuard, EveryGlobalOrGenericAccessIsCheckedOverItsWidthUnderItsPredicate) {
  const GuardResult guarded = guardModule(parsed(kKernel), options());
  ASSERT_TRUE(guarded.ok) << guarded.error;
  EXPECT_EQ(guarded.checkedAccesses, 5u)
      << "ld.v4, predicated st, negated-predicate generic st, atom, symbol ld";
  const std::string text = print(guarded.module);
  // The zone [0xEFF00000000, 0xF8000000000) on the high word: an access of any width below
  // 4 GiB that overlaps the protected range starts in it.
  EXPECT_NE(text.find("mov.b64\t{%agileos_guard_l0, %agileos_guard_h0}, %agileos_guard_a0;"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("sub.u32\t%agileos_guard_d0, %agileos_guard_h0, 0xeff;"), std::string::npos) << text;
  EXPECT_NE(text.find("setp.lt.u32\t%agileos_guard_v0, %agileos_guard_d0, 0x81;"), std::string::npos) << text;
  EXPECT_NE(text.find("sub.u64\t%agileos_guard_a0, %rd2, 0x4;"), std::string::npos) << text;
  EXPECT_NE(text.find("not.pred\t%agileos_guard_np0, %p1;"), std::string::npos) << text;
  EXPECT_NE(text.find("mov.u64\t%agileos_guard_t0, 0xf0fc0000000;"), std::string::npos)
      << "a hit goes to the fault window\n"
      << text;
  EXPECT_NE(text.find("[%agileos_guard_r0]"), std::string::npos) << text;
  EXPECT_EQ(text.find("trap;"), std::string::npos) << "no trap, no branch: straight-line checks\n" << text;
  EXPECT_TRUE(findUnguardedAccesses(guarded.module, options(), guarded.registerPrefix).empty());
  std::string output;
  EXPECT_EQ(assemble(text, &output), 0) << output << text;
}

// The guard denies a protected range; it does not confine accesses to the user range. Mapped,
// registered and managed host memory (the worker's host addresses, memmgr::kManagedWindow) is
// ordinary memory to it under every policy: the emitted check, evaluated here exactly as the
// device evaluates it (the high word minus the zone's, unsigned, below the span), flags the
// protected range and its zone and nothing of those windows.
// nvcc 4's targets: sm_10 and sm_11 become sm_12 (the redirecting policies' red.add.u64 needs it)
// where the module's ISA knows sm_12 (1.2 on); an older ISA keeps its target, which ptxas would
// refuse beside sm_12.
TEST(PtxGuard, LegacyTargetsAreRaisedWhereTheirIsaKnowsSm12) {
  const auto targetAfterGuard = [](const std::string& version, const std::string& target) {
    const ParseResult parsed =
        parse(".version " + version + "\n.target " + target + ", map_f64_to_f32\n.entry k\n{\nexit;\n}\n");
    EXPECT_TRUE(parsed.ok) << parsed.error;
    const GuardResult guarded = guardModule(parsed.module, options(GuardPolicy::kPoison));
    EXPECT_TRUE(guarded.ok) << guarded.error;
    const std::string text = print(guarded.module);
    return text.substr(text.find(".target"), text.find('\n', text.find(".target")) - text.find(".target"));
  };
  EXPECT_NE(targetAfterGuard("1.4", "sm_10").find("sm_12"), std::string::npos);
  EXPECT_NE(targetAfterGuard("1.2", "sm_11").find("sm_12"), std::string::npos);
  EXPECT_NE(targetAfterGuard("1.4", "sm_10").find("map_f64_to_f32"), std::string::npos);
  EXPECT_NE(targetAfterGuard("1.1", "sm_10").find("sm_10"), std::string::npos);
  EXPECT_NE(targetAfterGuard("1.0", "sm_11").find("sm_11"), std::string::npos);
  EXPECT_NE(targetAfterGuard("1.4", "sm_13").find("sm_13"), std::string::npos);
}

TEST(PtxGuard, MappedAndManagedHostMemoryIsNeverFlagged) {
  for (GuardPolicy policy : kAllPolicies) {
    SCOPED_TRACE(toString(policy));
    const GuardResult result = guardModule(parsed(kKernel), options(policy));
    ASSERT_TRUE(result.ok) << result.error;
    const std::string text = print(result.module);
    // The check's two immediates: `sub.u32 d, h, zoneHigh;` then `setp.lt.u32 v, d, span;`.
    const std::size_t sub = text.find("sub.u32");
    ASSERT_NE(sub, std::string::npos);
    const std::size_t setp = text.find("setp.lt.u32", sub);
    ASSERT_NE(setp, std::string::npos);
    auto lastImmediate = [&](std::size_t at) {
      const std::size_t end = text.find(';', at);
      const std::size_t hex = text.rfind("0x", end);
      return std::stoull(text.substr(hex + 2, end - hex - 2), nullptr, 16);
    };
    const std::uint64_t zoneHigh = lastImmediate(sub);
    const std::uint64_t span = lastImmediate(setp);
    auto flagged = [&](std::uint64_t address) {
      const auto high = static_cast<std::uint32_t>(address >> 32);
      return static_cast<std::uint32_t>(high - static_cast<std::uint32_t>(zoneHigh)) < span;
    };
    EXPECT_TRUE(flagged(memmgr::kIoAperture.begin));
    EXPECT_TRUE(flagged(memmgr::kModuleRange.end() - 1));
    EXPECT_TRUE(flagged(memmgr::kGuardZone.begin));
    EXPECT_FALSE(flagged(memmgr::kUserRange.begin));
    EXPECT_FALSE(flagged(memmgr::kManagedWindow.begin));
    EXPECT_FALSE(flagged(memmgr::kManagedWindow.end() - 1));
    EXPECT_FALSE(flagged(0x7f1234567000ull)) << "where Linux maps the worker's segments";
    EXPECT_FALSE(flagged(0x555555554000ull)) << "the worker's heap";
    EXPECT_FALSE(flagged(0x7ffff7d00000ull));
  }
}

TEST(PtxGuard, TheCheckerFindsAccessesThatAreNotGuarded) {
  const Module original = parsed(kKernel);
  EXPECT_EQ(findUnguardedAccesses(original, options(), "%agileos_guard").size(), 5u);

  GuardResult guarded = guardModule(original, options());
  ASSERT_TRUE(guarded.ok);
  // Remove the action of one check: that access is no longer guarded.
  std::vector<Statement>& body = guarded.module.items[4].function.body;
  int removed = 0;
  for (Statement& s : body) {
    if (s.kind != Statement::Kind::kBlock || removed > 0) continue;
    for (auto it = s.block.begin(); it != s.block.end(); ++it) {
      if (it->kind == Statement::Kind::kInstruction && it->instruction.opcode == "selp") {
        s.block.erase(it);
        ++removed;
        break;
      }
    }
  }
  ASSERT_EQ(removed, 1);
  EXPECT_EQ(findUnguardedAccesses(guarded.module, options(), guarded.registerPrefix).size(), 1u);
  // A zone that starts at the protected range itself misses accesses that straddle its
  // start: the checker does not accept it.
  GuardResult narrow = guardModule(original, options());
  for (Statement& s : narrow.module.items[4].function.body) {
    if (s.kind != Statement::Kind::kBlock) continue;
    for (Statement& inner : s.block) {
      if (inner.kind == Statement::Kind::kInstruction && inner.instruction.opcode == "sub" &&
          inner.instruction.modifiers[0] == ".u32") {
        inner.instruction.operands[2].tokens[0].text = "0xf00";
      }
    }
  }
  EXPECT_EQ(findUnguardedAccesses(narrow.module, options(), narrow.registerPrefix).size(), 5u)
      << "every check now starts at the range, not 4 GiB below it";
}

TEST(PtxGuard, APredicateNamedWithoutPercentIsCheckedAndRecognised) {
  std::string text = kKernel;
  text.insert(text.find("\tret;"),
              "\t{\n\t.reg .pred flag;\n\tsetp.ne.u32 flag, %r1, 0;\n"
              "\t@flag st.global.u32 [%rd2], %r1;\n\t@!flag st.global.u32 [%rd2+4], %r1;\n\t}\n");
  for (GuardPolicy policy : kAllPolicies) {
    SCOPED_TRACE(toString(policy));
    const GuardResult guarded = guardModule(parsed(text), options(policy));
    ASSERT_TRUE(guarded.ok) << guarded.error;
    EXPECT_EQ(guarded.checkedAccesses, 7u);
    EXPECT_TRUE(findUnguardedAccesses(guarded.module, options(policy), guarded.registerPrefix).empty());
    std::string output;
    EXPECT_EQ(assemble(print(guarded.module), &output), 0) << output;
  }
}

TEST(PtxGuard, RegistersNeverCollideWithTheProgramsNames) {
  std::string text = kKernel;
  // The program already uses the guard's preferred prefix.
  const std::string declaration = "\t.reg .b64 \t%agileos_guard_a0;\n\t.reg .b64 \t%agileos_guard_;\n";
  text.insert(text.find("\tld.param.u64"), declaration);
  const GuardResult guarded = guardModule(parsed(text), options());
  ASSERT_TRUE(guarded.ok) << guarded.error;
  EXPECT_EQ(guarded.registerPrefix, "%agileos_guard__");
  std::string output;
  EXPECT_EQ(assemble(print(guarded.module), &output), 0) << output;
}

TEST(PtxGuard, ReportPolicyCountsInProtectedMemoryAndLetsTheAccessRun) {
  const GuardResult guarded = guardModule(parsed(kKernel), options(GuardPolicy::kReport));
  ASSERT_TRUE(guarded.ok) << guarded.error;
  const std::string text = print(guarded.module);
  EXPECT_NE(text.find("mov.u64\t%agileos_guard_c0, 0xf1000000000;"), std::string::npos) << text;
  EXPECT_NE(text.find("@%agileos_guard_v0 red.global.add.u64\t[%agileos_guard_c0], 1;"), std::string::npos)
      << text;
  EXPECT_NE(text.find("[%rd2+16]"), std::string::npos) << "the access is unchanged\n" << text;
  EXPECT_EQ(text.find("selp"), std::string::npos) << text;
  EXPECT_TRUE(
      findUnguardedAccesses(guarded.module, options(GuardPolicy::kReport), guarded.registerPrefix).empty());
  std::string output;
  EXPECT_EQ(assemble(text, &output), 0) << output;
}

TEST(PtxGuard, RedirectingPoliciesCountAndSendTheAccessElsewhere) {
  for (GuardPolicy policy :
       {GuardPolicy::kTrap, GuardPolicy::kPoison, GuardPolicy::kSink, GuardPolicy::kRemapOr}) {
    SCOPED_TRACE(toString(policy));
    const GuardResult guarded = guardModule(parsed(kKernel), options(policy));
    ASSERT_TRUE(guarded.ok) << guarded.error;
    const std::string text = print(guarded.module);
    EXPECT_EQ(text.find("red.global.add.u64\t[%agileos_guard_c0], 1;") != std::string::npos,
              policy != GuardPolicy::kTrap)
        << "every policy but trap counts\n"
        << text;
    EXPECT_NE(
        text.find("selp.b64\t%agileos_guard_r0, %agileos_guard_t0, %agileos_guard_a0, %agileos_guard_v0;"),
        std::string::npos)
        << text;
    EXPECT_NE(text.find("ld.global.v4.u32\t{%r1, %r2, %r3, %r4}, [%agileos_guard_r0];"), std::string::npos)
        << "the access uses the selected address\n"
        << text;
    EXPECT_EQ(text.find("[%rd2+16]"), std::string::npos) << text;
    if (policy == GuardPolicy::kRemapOr) {
      EXPECT_NE(text.find("and.b64\t%agileos_guard_t0, %agileos_guard_a0, 0x1fffff;"), std::string::npos)
          << text;
      EXPECT_NE(text.find("or.b64\t%agileos_guard_t0, %agileos_guard_t0, 0xf8000000000;"), std::string::npos)
          << text;
    } else if (policy != GuardPolicy::kTrap) {
      EXPECT_NE(text.find("mov.u64\t%agileos_guard_t0, 0xf1000010000;"), std::string::npos) << text;
    }
    EXPECT_TRUE(findUnguardedAccesses(guarded.module, options(policy), guarded.registerPrefix).empty());
    std::string output;
    EXPECT_EQ(assemble(text, &output), 0) << output;

    // The checker notices an access that no longer uses the selected address.
    GuardResult tampered = guardModule(parsed(kKernel), options(policy));
    int restored = 0;
    for (Statement& s : tampered.module.items[4].function.body) {
      if (s.kind != Statement::Kind::kBlock || restored > 0) continue;
      Instruction& access = s.block.back().instruction;
      access.operands.back() = parsed(kKernel).items[4].function.body[7].instruction.operands.back();
      ++restored;
    }
    ASSERT_EQ(restored, 1);
    EXPECT_EQ(findUnguardedAccesses(tampered.module, options(policy), tampered.registerPrefix).size(), 1u);
  }
}

TEST(PtxGuard, ARunTimeWidthTooWideToRedirectTraps) {
  std::string text = kKernel;
  text.insert(
      text.find("\tret;"),
      "\t.shared .align 16 .b8 buf[1024];\n\t.shared .align 8 .b64 bar;\n"
      "\tcp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [buf], [%rd2], %r1, [bar];\n");
  for (GuardPolicy policy : kAllPolicies) {
    SCOPED_TRACE(toString(policy));
    const GuardResult guarded = guardModule(parsed(text), options(policy));
    ASSERT_TRUE(guarded.ok) << guarded.error;
    const std::string printed = print(guarded.module);
    const bool limitTrap = printed.find(
                               "setp.gt.and.u64\t%agileos_guard_big0, %agileos_guard_s0, 0x40000, "
                               "%agileos_guard_v0;") != std::string::npos;
    EXPECT_EQ(limitTrap, redirects(policy)) << printed;
    EXPECT_TRUE(findUnguardedAccesses(guarded.module, options(policy), guarded.registerPrefix).empty());
    std::string output;
    EXPECT_EQ(assemble(printed, &output), 0) << output;
  }
}

// A wmma fragment is checked at its first byte, with its span: computed from the stride register
// (a span of 4 GiB or more stops the kernel under every redirecting policy, hit or not), or the
// constant span of an immediate or omitted stride. Every form assembles.
TEST(PtxGuard, MatrixFragmentsAreCheckedWithTheirSpan) {
  std::string text = kKernel;
  text.insert(
      text.find("\tret;"),
      "\t.reg .b32 %hf<9>;\n\t.reg .f32 %acc<9>;\n"
      "\twmma.load.a.sync.aligned.row.m16n16k16.global.f16 {%hf1, %hf2, %hf3, %hf4, %hf5, %hf6, %hf7, "
      "%hf8}, [%rd2], %r1;\n"
      "\twmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%rd2], {%acc1, %acc2, %acc3, %acc4, %acc5, "
      "%acc6, %acc7, %acc8}, 64;\n"
      "\twmma.load.b.sync.aligned.col.m16n16k16.f16 {%hf1, %hf2, %hf3, %hf4, %hf5, %hf6, %hf7, %hf8}, "
      "[%rd1];\n");
  for (GuardPolicy policy : kAllPolicies) {
    SCOPED_TRACE(toString(policy));
    const GuardResult guarded = guardModule(parsed(text), options(policy));
    ASSERT_TRUE(guarded.ok) << guarded.error;
    const std::string printed = print(guarded.module);
    if (redirects(policy)) {
      EXPECT_NE(printed.find("mul.lo.u64\t%agileos_guard_s"), std::string::npos) << printed;
      EXPECT_NE(printed.find(", 0x1e;"), std::string::npos) << "15 rows of 2-byte elements per stride";
      EXPECT_NE(printed.find(", 0xFFFFFFFF;"), std::string::npos) << "the 4 GiB span stop";
      EXPECT_NE(printed.find(", 0xf40;"), std::string::npos) << "(15 * 64 + 16) * 4 bytes";
      EXPECT_NE(printed.find(", 0x200;"), std::string::npos) << "16 * 16 * 2 bytes";
    }
    EXPECT_TRUE(findUnguardedAccesses(guarded.module, options(policy), guarded.registerPrefix).empty());
    std::string output;
    EXPECT_EQ(assemble(printed, &output), 0) << output;
  }
}

// The independent checker does not take a matrix access whose span check is missing or names
// another stride.
TEST(PtxGuard, TheCheckerRefusesAMatrixAccessWithoutItsSpanCheck) {
  std::string text = kKernel;
  text.insert(
      text.find("\tret;"),
      "\t.reg .b32 %hf<9>;\n"
      "\twmma.load.a.sync.aligned.row.m16n16k16.global.f16 {%hf1, %hf2, %hf3, %hf4, %hf5, %hf6, %hf7, "
      "%hf8}, [%rd2], %r1;\n");
  const GuardResult guarded = guardModule(parsed(text), options(GuardPolicy::kTrap));
  ASSERT_TRUE(guarded.ok) << guarded.error;
  const std::string printed = print(guarded.module);
  ASSERT_TRUE(
      findUnguardedAccesses(guarded.module, options(GuardPolicy::kTrap), guarded.registerPrefix).empty());
  // The access uses the guard's 32-bit copy of its stride.
  EXPECT_NE(printed.find("mov.b32\t%agileos_guard_st0, %r1;"), std::string::npos) << printed;
  // The access given back its own stride register: the checked copy is not what it uses.
  std::string own = printed;
  const std::size_t access = own.find("wmma.load.a");
  ASSERT_NE(access, std::string::npos) << printed;
  const std::size_t copy = own.find("%agileos_guard_st0", access);
  ASSERT_NE(copy, std::string::npos) << printed;
  own.replace(copy, std::string("%agileos_guard_st0").size(), "%r1");
  EXPECT_FALSE(
      findUnguardedAccesses(parsed(own), options(GuardPolicy::kTrap), guarded.registerPrefix).empty());
  // The span computed from another register than the checked copy.
  std::string other = printed;
  const std::size_t cvt = other.find("cvt.u64.u32\t%agileos_guard_s");
  ASSERT_NE(cvt, std::string::npos) << printed;
  const std::size_t from = other.find("%agileos_guard_st0;", cvt);
  ASSERT_NE(from, std::string::npos) << printed;
  other.replace(from, std::string("%agileos_guard_st0;").size(), "%r2;");
  EXPECT_FALSE(
      findUnguardedAccesses(parsed(other), options(GuardPolicy::kTrap), guarded.registerPrefix).empty());
  // The 4 GiB span stop removed.
  std::string noWide = printed;
  const std::size_t wide = noWide.find("@%agileos_guard_w");
  ASSERT_NE(wide, std::string::npos) << printed;
  noWide.erase(wide, noWide.find('\n', wide) - wide);
  EXPECT_FALSE(
      findUnguardedAccesses(parsed(noWide), options(GuardPolicy::kTrap), guarded.registerPrefix).empty());
}

// A stride in a 64-bit register: the guard's 32-bit copy of it does not assemble, so the module
// cannot load with a check that read other bits than the access would.
TEST(PtxGuard, AMatrixStrideInAWideRegisterDoesNotAssemble) {
  std::string text = kKernel;
  text.insert(
      text.find("\tret;"),
      "\t.reg .b32 %hf<9>;\n"
      "\twmma.load.a.sync.aligned.row.m16n16k16.global.f16 {%hf1, %hf2, %hf3, %hf4, %hf5, %hf6, %hf7, "
      "%hf8}, [%rd2], %rd3;\n");
  const GuardResult guarded = guardModule(parsed(text), options(GuardPolicy::kTrap));
  ASSERT_TRUE(guarded.ok) << guarded.error;
  std::string output;
  EXPECT_NE(assemble(print(guarded.module), &output), 0) << output;
}

TEST(PtxGuard, OptionsThatWouldBreakIsolationAreRefused) {
  GuardOptions unaligned = options();
  unaligned.protectedBegin += 4096;
  EXPECT_NE(validate(unaligned), "") << "the high-word check needs 4 GiB boundaries";
  EXPECT_EQ(validate(options(GuardPolicy::kSink)), "");
  EXPECT_EQ(validate(options(GuardPolicy::kRemapOr)), "");
  GuardOptions o = options(GuardPolicy::kSink);
  o.sink = memmgr::kUserRange.begin;
  EXPECT_NE(validate(o), "") << "a sink outside the protected range";
  o = options(GuardPolicy::kPoison);
  o.hitCounter = o.sink + 8;
  EXPECT_NE(validate(o), "") << "a counter that redirected writes could overwrite";
  o = options(GuardPolicy::kReport);
  o.hitCounter = memmgr::kUserRange.begin;
  EXPECT_NE(validate(o), "") << "a counter users can write";
  o = options(GuardPolicy::kRemapOr);
  o.remapBase = memmgr::kModuleRange.begin;
  EXPECT_NE(validate(o), "") << "a remap window in the protected range";
  o = options(GuardPolicy::kRemapOr);
  o.remapMask = 0xffffffffff;
  EXPECT_NE(validate(o), "") << "mask and base overlap";
  o = options(GuardPolicy::kSink);
  o.redirectLimit = 0;
  EXPECT_NE(validate(o), "");
  EXPECT_FALSE(guardModule(parsed(kKernel), o).ok);
  for (GuardPolicy policy : kAllPolicies) EXPECT_EQ(parseGuardPolicy(toString(policy)), policy);
  EXPECT_FALSE(parseGuardPolicy("off").has_value());
}

// Texture and surface instructions on object handles reach only what the context's descriptors
// describe (docs/security-model.md): admitted unchanged, and every form assembles.
TEST(PtxGuard, TextureAndSurfaceInstructionsOnObjectHandlesAreAdmitted) {
  std::string text = kKernel;
  text.insert(text.find("\tret;"),
              "\t.reg .f32 %tf<9>;\n"
              "\ttex.2d.v4.f32.f32 {%tf1, %tf2, %tf3, %tf4}, [%rd1, {%tf5, %tf6}];\n"
              "\ttex.level.2d.v4.f32.f32 {%tf1, %tf2, %tf3, %tf4}, [%rd1, {%tf5, %tf6}], %tf7;\n"
              "\ttld4.r.2d.v4.f32.f32 {%tf1, %tf2, %tf3, %tf4}, [%rd1, {%tf5, %tf6}];\n"
              "\ttxq.width.b32 %r1, [%rd1];\n"
              "\tsuld.b.2d.b32.trap {%r2}, [%rd2, {%r3, %r4}];\n"
              "\tsust.b.2d.b32.trap [%rd2, {%r3, %r4}], {%r2};\n"
              "\tsuq.width.b32 %r1, [%rd2];\n");
  for (GuardPolicy policy : kAllPolicies) {
    SCOPED_TRACE(toString(policy));
    const GuardResult guarded = guardModule(parsed(text), options(policy));
    ASSERT_TRUE(guarded.ok) << guarded.error;
    const std::string printed = print(guarded.module);
    EXPECT_NE(printed.find("tex.2d.v4.f32.f32"), std::string::npos);
    EXPECT_NE(printed.find("sust.b.2d.b32.trap"), std::string::npos);
    EXPECT_TRUE(findUnguardedAccesses(guarded.module, options(policy), guarded.registerPrefix).empty());
    EXPECT_EQ(checkEmittedText(printed, guarded.module, options(policy), guarded.registerPrefix), "");
    std::string output;
    EXPECT_EQ(assemble(printed, &output), 0) << output;
  }
}

TEST(PtxGuard, WhatCannotBeBoundedMakesTheModuleRefused) {
  for (const char* line :
       {"multimem.ld_reduce.relaxed.sys.global.add.u32 %r1, [%rd1];",
        "tex.1d.v4.u32.s32 {%r1, %r2, %r3, %r4}, [%rd1+8, {%r1}];", "frobnicate %r1, [%rd1];"}) {
    std::string text = kKernel;
    text.insert(text.find("\tret;"), std::string("\t") + line + "\n");
    const GuardResult guarded = guardModule(parsed(text), options());
    EXPECT_FALSE(guarded.ok) << line;
    EXPECT_EQ(guarded.error.rfind("line ", 0), 0u) << guarded.error;
  }
}

TEST(PtxGuard, TheWholeCorpusIsGuardedDeterministicallyAndAssembles) {
  std::size_t files = 0, checked = 0;
  for (const std::string& file : corpusFiles()) {
    SCOPED_TRACE(file);
    const Module module = parsed(readFile(file));
    for (GuardPolicy policy : kAllPolicies) {
      const GuardResult first = guardModule(module, options(policy));
      ASSERT_TRUE(first.ok) << first.error;
      const GuardResult second = guardModule(module, options(policy));
      const std::string text = print(first.module);
      EXPECT_EQ(text, print(second.module)) << "deterministic";
      EXPECT_TRUE(findUnguardedAccesses(first.module, options(policy), first.registerPrefix).empty());
      // Printed, re-parsed and checked again: the guard survives the round trip.
      const ParseResult reparsed = parse(text);
      ASSERT_TRUE(reparsed.ok) << reparsed.error;
      EXPECT_TRUE(findUnguardedAccesses(reparsed.module, options(policy), first.registerPrefix).empty());
      std::string output;
      EXPECT_EQ(assemble(text, &output), 0) << toString(policy) << ": " << output;
      if (policy == GuardPolicy::kTrap) checked += first.checkedAccesses;
    }
    ++files;
  }
  EXPECT_GE(files, 20u);
  EXPECT_GT(checked, 300u);
}

}  // namespace
}  // namespace agileos::ptx
