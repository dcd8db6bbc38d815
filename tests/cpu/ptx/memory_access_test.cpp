#include "ptx/memory_access.h"

#include <gtest/gtest.h>

#include <vector>

#include "ptx/parser.h"
#include "tests/cpu/ptx/ptx_corpus.h"

namespace agileos::ptx {
namespace {

using Verdict = MemoryClassification::Verdict;

Instruction instruction(const std::string& text) {
  const ParseResult r = parse(".version 9.0\n.entry k()\n{\n" + text + "\n}\n");
  EXPECT_TRUE(r.ok) << r.error;
  if (!r.ok) return {};
  return r.module.items[1].function.body.at(0).instruction;
}

struct Expected {
  const char* text;
  StateSpace space;
  std::uint32_t bytes;
  std::size_t operand;
};

TEST(PtxMemoryAccess, EveryAccessFormHasItsSpaceAndFullWidth) {
  const Expected cases[] = {
      {"ld.global.u32 %r1, [%rd1];", StateSpace::kGlobal, 4, 1},
      {"ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1+16];", StateSpace::kGlobal, 16, 1},
      {"ld.global.nc.v2.u64 {%rd2, %rd3}, [%rd1];", StateSpace::kGlobal, 16, 1},
      {"ld.u8 %rs1, [%rd1];", StateSpace::kGeneric, 1, 1},
      {"ld.acquire.gpu.u32 %r1, [%rd1];", StateSpace::kGeneric, 4, 1},
      {"ld.global.b128 %rq1, [%rd1];", StateSpace::kGlobal, 16, 1},
      {"ldu.global.f64 %fd1, [%rd1];", StateSpace::kGlobal, 8, 1},
      {"st.global.v2.f64 [%rd1], {%fd1, %fd2};", StateSpace::kGlobal, 16, 0},
      {"st.u64 [%rd1+-8], %rd2;", StateSpace::kGeneric, 8, 0},
      {"st.shared.f32 [%r1], %f1;", StateSpace::kShared, 4, 0},
      {"st.local.v4.u32 [%rd1], {%r1, %r2, %r3, %r4};", StateSpace::kLocal, 16, 0},
      {"atom.global.add.u64 %rd1, [%rd2], 1;", StateSpace::kGlobal, 8, 1},
      {"atom.cas.b32 %r1, [%rd2], %r3, %r4;", StateSpace::kGeneric, 4, 1},
      {"atom.global.v4.f32.add {%f1, %f2, %f3, %f4}, [%rd1], {%f5, %f6, %f7, %f8};", StateSpace::kGlobal, 16,
       1},
      {"red.global.add.u32 [%rd1], 1;", StateSpace::kGlobal, 4, 0},
      {"red.release.gpu.max.s64 [%rd1], %rd2;", StateSpace::kGeneric, 8, 0},
      {"prefetch.global.L2 [%rd1];", StateSpace::kGlobal, 1, 0},
      {"discard.global.L2 [%rd1], 128;", StateSpace::kGlobal, 128, 0},
      {"mbarrier.arrive.b64 %rd1, [%rd2];", StateSpace::kGeneric, 8, 1},
      {"cp.async.mbarrier.arrive.b64 [%rd2];", StateSpace::kGeneric, 8, 0},
  };
  for (const Expected& c : cases) {
    SCOPED_TRACE(c.text);
    const MemoryClassification m = classifyMemory(instruction(c.text));
    ASSERT_EQ(m.verdict, Verdict::kAccess) << m.reason;
    ASSERT_EQ(m.accesses.size(), 1u);
    EXPECT_EQ(m.accesses[0].space, c.space);
    EXPECT_EQ(m.accesses[0].bytes, c.bytes);
    EXPECT_EQ(m.accesses[0].addressOperand, c.operand);
  }
}

TEST(PtxMemoryAccess, AsyncAndBulkCopiesNameBothSides) {
  const MemoryClassification async =
      classifyMemory(instruction("cp.async.ca.shared.global [%r1], [%rd1], 16;"));
  ASSERT_EQ(async.verdict, Verdict::kAccess);
  ASSERT_EQ(async.accesses.size(), 2u);
  EXPECT_EQ(async.accesses[0].space, StateSpace::kGlobal);
  EXPECT_EQ(async.accesses[0].addressOperand, 1u);
  EXPECT_EQ(async.accesses[0].bytes, 16u);
  EXPECT_TRUE(async.accesses[0].reads);

  const MemoryClassification bulk = classifyMemory(instruction(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], %r2, [%r3];"));
  ASSERT_EQ(bulk.verdict, Verdict::kAccess) << bulk.reason;
  ASSERT_EQ(bulk.accesses.size(), 2u);
  EXPECT_EQ(bulk.accesses[1].space, StateSpace::kGlobal);
  EXPECT_EQ(bulk.accesses[1].sizeOperand, std::optional<std::size_t>(2));

  const MemoryClassification reduce = classifyMemory(
      instruction("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32 [%rd1], [%r1], %r2;"));
  ASSERT_EQ(reduce.verdict, Verdict::kAccess) << reduce.reason;
  EXPECT_EQ(reduce.accesses[0].space, StateSpace::kGlobal);
  EXPECT_TRUE(reduce.accesses[0].writes);

  const MemoryClassification prefetch =
      classifyMemory(instruction("cp.async.bulk.prefetch.L2.global [%rd1], %r2;"));
  ASSERT_EQ(prefetch.verdict, Verdict::kAccess) << prefetch.reason;
  EXPECT_EQ(prefetch.accesses[0].sizeOperand, std::optional<std::size_t>(1));

  EXPECT_EQ(classifyMemory(instruction("cp.async.commit_group;")).verdict, Verdict::kNone);
  EXPECT_EQ(classifyMemory(instruction("cp.async.wait_group 0;")).verdict, Verdict::kNone);
}

TEST(PtxMemoryAccess, WhatCannotBeBoundedIsRefusedWithAReason) {
  for (const char* text : {
           "cp.async.bulk.tensor.2d.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%r1], [%rd1, "
           "{%r2, %r3}], [%r4];",
           "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], "
           "[%r4];",
           "cp.async.bulk.prefetch.tensor.2d.L2.global [%rd1, {%r2, %r3}], [%r4];",
           "tensormap.replace.tile.global_address.global.b1024.b64 [%rd1], %rd2;",
           "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%rd1], "
           "[%r1], "
           "128;",
           "multimem.ld_reduce.relaxed.sys.global.add.u32 %r1, [%rd1];",
           "tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1+8, {%f5, %f6}];",
           "sust.b.1d.b32.trap [{%r1}], {%r2};",
           "wmma.load.a.sync.aligned.row.m8n8k32.global.s4 {%r1}, [%rd1], %r3;",
           "wmma.load.b.sync.aligned.col.m8n8k128.global.b1 {%r1}, [%rd1], %r3;",
           "wmma.load.d.sync.aligned.row.m16n16k16.global.f32 {%f1}, [%rd1], %r3;",
           "wmma.store.a.sync.aligned.row.m16n16k16.global.f16 [%rd1], {%r1}, %r3;",
           "wmma.load.a.sync.aligned.m16n16k16.global.f16 {%r1}, [%rd1], %r3;",
           "wmma.load.a.sync.aligned.row.col.m16n16k16.global.f16 {%r1}, [%rd1], %r3;",
           "tcgen05.ld.sync.aligned.16x64b.x1.b32 {%r1}, [%r2];",
           "prefetch.const.tensormap [%rd1];",
           "prefetch.global.tensormap [%rd1];",
           "prefetch.param.tensormap [%rd1];",
           "frobnicate.global.u32 %r1, [%rd1];",
           "ld.global.shared.u32 %r1, [%rd1];",
           "cp.async.ca.shared.global [%r1], [%rd1], %r9;",
           "ld.global.u32 %r1, %rd1;",
       }) {
    const MemoryClassification m = classifyMemory(instruction(text));
    EXPECT_EQ(m.verdict, Verdict::kUnsupported) << text;
    EXPECT_FALSE(m.reason.empty()) << text;
  }
}

// Tensor copies reach global memory only through their map (ptx/tensor_maps.h proves it is a
// kernel parameter); their other addresses are shared memory, by the instruction's state space.
TEST(PtxMemoryAccess, TensorCopiesNameTheirMapAndSharedMemoryOnly) {
  struct Case {
    const char* text;
    std::size_t map;
    std::vector<std::size_t> shared;
  };
  const Case cases[] = {
      {"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, "
       "%r3}], "
       "[%r4];",
       1,
       {0, 2}},
      {"cp.async.bulk.tensor.3d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes.multicast::"
       "cluster "
       "[%r1], [%rd1, {%r2, %r3, %r5}], [%r4], {%rs1}, %rs2;",
       1,
       {0, 2}},
      {"cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd1, {%r2, %r3}], [%r4];", 0, {1}},
      {"cp.reduce.async.bulk.tensor.1d.global.shared::cta.add.tile.bulk_group [%rd1, {%r2}], [%r4];", 0, {1}},
      {"cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%rd1, {%r2, %r3}];", 0, {}},
      {"prefetch.tensormap [%rd1];", 0, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    const MemoryClassification m = classifyMemory(instruction(c.text));
    ASSERT_EQ(m.verdict, Verdict::kAccess) << m.reason;
    std::vector<std::size_t> shared;
    std::size_t maps = 0;
    for (const MemoryAccess& access : m.accesses) {
      EXPECT_FALSE(access.mayReachGlobal());
      if (access.tensorMap) {
        ++maps;
        EXPECT_EQ(access.addressOperand, c.map);
        EXPECT_EQ(access.space, StateSpace::kParam);
        EXPECT_EQ(access.bytes, 128u);
      } else {
        EXPECT_EQ(access.space, StateSpace::kShared);
        shared.push_back(access.addressOperand);
      }
    }
    EXPECT_EQ(maps, 1u);
    EXPECT_EQ(shared, c.shared);
  }
}

TEST(PtxMemoryAccess, TextureAndSurfaceInstructionsOnObjectHandlesTouchNoAddress) {
  for (const char* text : {
           "tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}];",
           "tex.a2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%r1, %f1, %f2, %f2}];",
           "tex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [tex_param, {%r2}];",
           "tld4.r.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}];",
           "txq.width.b32 %r1, [%rd1];",
           "suld.b.2d.b32.trap {%r5}, [%rd2, {%r3, %r4}];",
           "sust.b.a2d.b32.trap [%rd2, {%r1, %r3, %r4, %r4}], {%r8};",
           "sured.b.add.2d.trap.u32 [%rd2, {%r1, %r2}], %r3;",
           "suq.width.b32 %r1, [%rd2];",
       }) {
    const MemoryClassification m = classifyMemory(instruction(text));
    EXPECT_EQ(m.verdict, Verdict::kNone) << text << ": " << m.reason;
  }
}

// wmma fragments: ((lines - 1) * stride + line length) * element bytes from the address, the
// lines being rows for .row and columns for .col of A (m x k), B (k x n), C and D (m x n).
TEST(PtxMemoryAccess, MatrixFragmentsSpanTheirLinesAStrideApart) {
  struct Case {
    const char* text;
    std::size_t address;
    bool reads;
    std::optional<std::size_t> strideOperand;
    std::uint64_t bytesPerStride, constantBytes;
  };
  const Case cases[] = {
      // A of m32n8k16, row major: 32 rows of 16 halves.
      {"wmma.load.a.sync.aligned.row.m32n8k16.global.f16 {%r1, %r2}, [%rd1], %r3;", 1, true, 2, 31 * 2,
       16 * 2},
      // A of m32n8k16, column major: 16 columns of 32 halves.
      {"wmma.load.a.sync.aligned.col.m32n8k16.f16 {%r1, %r2}, [%rd1], %r3;", 1, true, 2, 15 * 2, 32 * 2},
      // B of m32n8k16 (16 x 8), row major: 16 rows of 8.
      {"wmma.load.b.sync.aligned.row.m32n8k16.global.bf16 {%r1}, [%rd1], %r3;", 1, true, 2, 15 * 2, 8 * 2},
      // C of m8n32k16 (8 x 32), column major: 32 columns of 8 floats.
      {"wmma.load.c.sync.aligned.col.m8n32k16.global.f32 {%f1}, [%rd1], %r3;", 1, true, 2, 31 * 4, 8 * 4},
      // D of m16n16k16, an immediate stride of 64: (15 * 64 + 16) floats.
      {"wmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%rd1], {%f1, %f2}, 64;", 0, false, std::nullopt,
       0, (15 * 64 + 16) * 4},
      // No stride: packed, 16 x 8 tf32 of m16n16k8's A... (m16 x k8), row major.
      {"wmma.load.a.sync.aligned.row.m16n16k8.global.tf32 {%r1}, [%rd1];", 1, true, std::nullopt, 0,
       16 * 8 * 4},
      // f64 and s8.
      {"wmma.load.b.sync.aligned.col.m8n8k4.global.f64 {%fd1}, [%rd1], %r3;", 1, true, 2, 7 * 8, 4 * 8},
      {"wmma.load.a.sync.aligned.row.m16n16k16.global.s8 {%r1}, [%rd1], %r3;", 1, true, 2, 15, 16},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    const MemoryClassification m = classifyMemory(instruction(c.text));
    ASSERT_EQ(m.verdict, Verdict::kAccess) << m.reason;
    ASSERT_EQ(m.accesses.size(), 1u);
    const MemoryAccess& a = m.accesses[0];
    EXPECT_EQ(a.addressOperand, c.address);
    EXPECT_EQ(a.reads, c.reads);
    EXPECT_EQ(a.writes, !c.reads);
    EXPECT_EQ(a.bytes, 0u);
    EXPECT_FALSE(a.sizeOperand);
    ASSERT_TRUE(a.extent);
    EXPECT_EQ(a.extent->strideOperand, c.strideOperand);
    EXPECT_EQ(a.extent->bytesPerStride, c.bytesPerStride);
    EXPECT_EQ(a.extent->constantBytes, c.constantBytes);
  }
  const MemoryClassification shared =
      classifyMemory(instruction("wmma.load.a.sync.aligned.row.m16n16k16.shared.f16 {%r1}, [%r2], %r3;"));
  ASSERT_EQ(shared.verdict, Verdict::kAccess);
  EXPECT_FALSE(shared.accesses[0].mayReachGlobal());
}

// wgmma.mma_async names its matrices by registers and shared-memory descriptors only.
TEST(PtxMemoryAccess, WarpgroupMmaReachesNoGlobalMemory) {
  EXPECT_EQ(
      classifyMemory(instruction("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3, %f4}, "
                                 "%rd1, %rd2, 1, 1, 1, 0, 0;"))
          .verdict,
      Verdict::kNone);
  EXPECT_EQ(classifyMemory(instruction("wgmma.fence.sync.aligned;")).verdict, Verdict::kNone);
}

TEST(PtxMemoryAccess, ArithmeticAndAddressComputationAccessNothing) {
  for (const char* text :
       {"add.s32 %r1, %r2, %r3;", "cvta.to.global.u64 %rd1, %rd2;", "isspacep.global %p1, %rd1;",
        "bar.sync 0;", "@%p1 bra $L__BB0_2;", "ret;", "mov.u32 %r1, %tid.x;", "fence.acq_rel.gpu;",
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1, %r2, %r3, %r4}, [%r5];"}) {
    EXPECT_EQ(classifyMemory(instruction(text)).verdict, Verdict::kNone) << text;
  }
}

void classifyAll(const std::vector<Statement>& statements, int* accesses, std::vector<std::string>* refused) {
  for (const Statement& s : statements) {
    if (s.kind == Statement::Kind::kBlock) classifyAll(s.block, accesses, refused);
    if (s.kind != Statement::Kind::kInstruction) continue;
    const MemoryClassification m = classifyMemory(s.instruction);
    if (m.verdict == Verdict::kUnsupported) refused->push_back(s.instruction.opcode + ": " + m.reason);
    if (m.verdict == Verdict::kAccess) *accesses += static_cast<int>(m.accesses.size());
  }
}

TEST(PtxMemoryAccess, EveryInstructionOfTheCorpusIsClassified) {
  int accesses = 0;
  for (const std::string& file : testing::corpusFiles()) {
    SCOPED_TRACE(file);
    const ParseResult r = parse(testing::readFile(file));
    ASSERT_TRUE(r.ok) << r.error;
    std::vector<std::string> refused;
    for (const TopLevel& item : r.module.items) {
      if (item.kind == TopLevel::Kind::kFunction) classifyAll(item.function.body, &accesses, &refused);
    }
    EXPECT_TRUE(refused.empty()) << refused.front();
  }
  EXPECT_GT(accesses, 500);
}

// ptxas makes ld/st/atom/red/mbarrier on .shared::cluster generic accesses: a computed address
// could leave the shared window, so only a shared variable's name is taken.
TEST(PtxMemoryAccess, ClusterSharedMemoryThroughAComputedAddressIsRefused) {
  for (const char* text :
       {"st.shared::cluster.u32 [%rd1], %r1;", "ld.shared::cluster.u32 %r1, [%r2+4];",
        "atom.shared::cluster.add.u32 %r1, [%rd1], 1;", "red.shared::cluster.add.u32 [%r1], 1;",
        "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r1];"}) {
    const MemoryClassification c = classifyMemory(instruction(text));
    EXPECT_EQ(c.verdict, MemoryClassification::Verdict::kUnsupported) << text;
  }
  EXPECT_NE(classifyMemory(instruction("st.shared::cluster.u32 [buffer+8], %r1;")).verdict,
            MemoryClassification::Verdict::kUnsupported);
  EXPECT_NE(classifyMemory(instruction("st.shared::cta.u32 [%rd1], %r1;")).verdict,
            MemoryClassification::Verdict::kUnsupported)
      << "CTA shared memory stays shared (STS)";
}

}  // namespace
}  // namespace agileos::ptx
