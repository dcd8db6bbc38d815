// Every device range a memory call names is checked against the calling
// client's live allocations before the driver sees it. Each refusal below must
// be cudaErrorInvalidValue (what native CUDA gives for a bad pointer) with no
// transfer reaching the fake driver.
#include <gtest/gtest.h>

#include <limits>

#include "memmgr/address_layout.h"
#include "tests/cpu/worker/support/worker_harness.h"

namespace agileos::worker::testing {
namespace {

using memmgr::DevicePtr;
constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

// The state every case runs against.
struct Fixture {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  TestClient other = worker.attach(2);
  DevicePtr own = client.malloc(4096);
  DevicePtr large = client.malloc(3u << 20);
  DevicePtr freed = [this] {
    const DevicePtr p = client.malloc(512);
    client.free(p);
    return p;
  }();
  DevicePtr foreign = [this] {
    const DevicePtr p = other.malloc(4096);
    other.write(p, std::string(4096, 'F'));
    return p;
  }();
};

enum class Op { kHtoD, kDtoH, kDtoDDestination, kDtoDSource, kMemset };

const char* name(Op op) {
  switch (op) {
    case Op::kHtoD:
      return "HtoD";
    case Op::kDtoH:
      return "DtoH";
    case Op::kDtoDDestination:
      return "DtoDDestination";
    case Op::kDtoDSource:
      return "DtoDSource";
    case Op::kMemset:
      return "Memset";
  }
  return "?";
}

// The request of `op` whose checked range is [p, p+n); its other range (if any) is valid.
v1::CallRequest requestFor(Op op, const Fixture& f, DevicePtr p, std::uint64_t n) {
  const std::uint64_t chunk = std::min<std::uint64_t>(n, 4096);
  switch (op) {
    case Op::kHtoD:
      return requests::memcpyHtoDChunk(p, n, 0, std::string(chunk, 'x'));
    case Op::kDtoH:
      return requests::memcpyDtoHChunk(p, n, 0, chunk);
    case Op::kDtoDDestination:
      return requests::memcpyDtoD(p, f.large, n);
    case Op::kDtoDSource:
      return requests::memcpyDtoD(f.large, p, n);
    case Op::kMemset:
      return requests::memset(p, 0xAB, n);
  }
  return {};
}

struct BadRange {
  const char* name;
  DevicePtr (*pointer)(const Fixture&);
  std::uint64_t size;
};

const BadRange kBadRanges[] = {
    {"Null", [](const Fixture&) -> DevicePtr { return 0; }, 16},
    {"NeverAllocatedUserAddress",
     [](const Fixture&) -> DevicePtr { return memmgr::kUserRange.begin + (512ull << 30); }, 16},
    {"OutsideEveryRange", [](const Fixture&) -> DevicePtr { return 0x100000; }, 16},
    {"Freed", [](const Fixture& f) -> DevicePtr { return f.freed; }, 16},
    {"IoAperture", [](const Fixture&) -> DevicePtr { return memmgr::kIoAperture.begin + 4096; }, 16},
    {"ModuleRange", [](const Fixture&) -> DevicePtr { return memmgr::kModuleRange.begin + 4096; }, 16},
    {"StraddlesIntoIoAperture", [](const Fixture&) -> DevicePtr { return memmgr::kIoAperture.begin - 8; },
     16},
    {"StraddlesModuleRangeEnd", [](const Fixture&) -> DevicePtr { return memmgr::kUserRange.begin - 8; }, 16},
    {"OtherClientsAllocation", [](const Fixture& f) -> DevicePtr { return f.foreign; }, 16},
    {"InsideOtherClientsAllocation", [](const Fixture& f) -> DevicePtr { return f.foreign + 100; }, 16},
    {"RunsPastTheEnd", [](const Fixture& f) -> DevicePtr { return f.own + 4096 - 8; }, 16},
    {"StartsAtTheEnd", [](const Fixture& f) -> DevicePtr { return f.own + 4096; }, 1},
    {"WholeAllocationPlusOne", [](const Fixture& f) -> DevicePtr { return f.own; }, 4097},
    {"Overflowing", [](const Fixture&) -> DevicePtr { return 0xFFFFFFFFFFFFFF00ull; }, 0x200},
    {"SizeWrapsAround", [](const Fixture& f) -> DevicePtr { return f.own; }, kMax},
    {"SizeWrapsBackIntoTheAllocation", [](const Fixture& f) -> DevicePtr { return f.own + 16; }, kMax - 15},
};

class BadRangeTest : public ::testing::TestWithParam<std::tuple<Op, BadRange>> {};

TEST_P(BadRangeTest, IsRefusedWithInvalidValueBeforeTheDriver) {
  const auto& [op, bad] = GetParam();
  Fixture f;
  const std::size_t transfersBefore = f.worker.gpu().transfers().size();
  const DevicePtr p = bad.pointer(f);

  const v1::CallReply reply = f.client.call(requestFor(op, f, p, bad.size));

  EXPECT_EQ(reply.error(), cudaErrorInvalidValue) << describe(reply);
  EXPECT_FALSE(reply.error_detail().empty());
  EXPECT_FALSE(reply.has_host_data());
  EXPECT_EQ(f.worker.gpu().transfers().size(), transfersBefore) << "the driver saw the refused transfer";
  EXPECT_TRUE(f.worker.gpu().misuse().empty());
  EXPECT_EQ(f.other.read(f.foreign, 4096), std::string(4096, 'F')) << "the other client's memory changed";
}

INSTANTIATE_TEST_SUITE_P(AllMemoryCalls, BadRangeTest,
                         ::testing::Combine(::testing::Values(Op::kHtoD, Op::kDtoH, Op::kDtoDDestination,
                                                              Op::kDtoDSource, Op::kMemset),
                                            ::testing::ValuesIn(kBadRanges)),
                         [](const auto& info) {
                           return std::string(name(std::get<0>(info.param))) + "_" +
                                  std::get<1>(info.param).name;
                         });

// The same calls with valid ranges do reach the driver: the refusals above are
// about the ranges, not about the requests' shape.
TEST(MemoryValidation, ValidRangesOfEveryCallReachTheDriver) {
  for (Op op : {Op::kHtoD, Op::kDtoH, Op::kDtoDDestination, Op::kDtoDSource, Op::kMemset}) {
    Fixture f;
    const std::size_t transfersBefore = f.worker.gpu().transfers().size();
    const v1::CallReply reply = f.client.call(requestFor(op, f, f.own + 16, 4096 - 16));
    EXPECT_EQ(reply.error(), 0) << name(op) << ": " << describe(reply);
    EXPECT_EQ(f.worker.gpu().transfers().size(), transfersBefore + 1) << name(op);
  }
}

class ChunkFieldsTest : public ::testing::Test {
 protected:
  void expectRefused(const v1::CallRequest& request) {
    const std::size_t transfersBefore = f.worker.gpu().transfers().size();
    const v1::CallReply reply = f.client.call(request);
    EXPECT_EQ(reply.error(), cudaErrorInvalidValue) << request.ShortDebugString().substr(0, 200);
    EXPECT_FALSE(reply.has_host_data());
    EXPECT_EQ(f.worker.gpu().transfers().size(), transfersBefore) << "the driver saw the refused chunk";
  }
  Fixture f;
};

TEST_F(ChunkFieldsTest, HtoDChunkOutsideTheDeclaredCopyIsRefused) {
  expectRefused(requests::memcpyHtoDChunk(f.own, 64, 60, std::string(8, 'x')));  // ends past total_size
  expectRefused(requests::memcpyHtoDChunk(f.own, 64, 65, std::string(1, 'x')));  // starts past total_size
  expectRefused(requests::memcpyHtoDChunk(f.own, 64, 64, std::string(1, 'x')));  // starts at total_size
  expectRefused(requests::memcpyHtoDChunk(f.own, kMax, kMax - 2, std::string(16, 'x')));  // offset+size wraps
  expectRefused(
      requests::memcpyHtoDChunk(f.own, 8192, 0, std::string(16, 'x')));  // total_size past the allocation
}

TEST_F(ChunkFieldsTest, DtoHChunkOutsideTheDeclaredCopyIsRefused) {
  expectRefused(requests::memcpyDtoHChunk(f.own, 64, 60, 8));
  expectRefused(requests::memcpyDtoHChunk(f.own, 64, 65, 0));
  expectRefused(requests::memcpyDtoHChunk(f.own, kMax, kMax - 2, 16));
  expectRefused(requests::memcpyDtoHChunk(f.own, 64, 8, kMax));
  expectRefused(requests::memcpyDtoHChunk(f.own, 8192, 0, 16));
}

TEST_F(ChunkFieldsTest, DtoHChunkAboveTheTransportLimitIsRefusedEvenInsideTheAllocation) {
  constexpr std::uint64_t kLimit = 64ull << 20;
  const DevicePtr big = f.client.malloc(kLimit + 4096);
  expectRefused(requests::memcpyDtoHChunk(big, kLimit + 4096, 0, kLimit + 1));
  const v1::CallReply reply = f.client.call(requests::memcpyDtoHChunk(big, kLimit + 4096, 4096, kLimit));
  EXPECT_EQ(reply.error(), 0) << describe(reply);
  EXPECT_EQ(reply.host_data().data().size(), kLimit);
}

TEST_F(ChunkFieldsTest, ZeroByteCopiesSucceedWithoutTouchingTheDriver) {
  // As in CUDA, a copy of zero bytes is a successful no-op whatever its pointers.
  const std::size_t transfersBefore = f.worker.gpu().transfers().size();
  EXPECT_EQ(f.client.call(requests::memcpyHtoD(0, "")).error(), 0);
  EXPECT_EQ(f.client.call(requests::memcpyDtoH(0, 0)).error(), 0);
  EXPECT_EQ(f.client.call(requests::memcpyDtoD(0, 0, 0)).error(), 0);
  EXPECT_EQ(f.client.call(requests::memset(0, 0, 0)).error(), 0);
  EXPECT_EQ(f.worker.gpu().transfers().size(), transfersBefore);
}

TEST(MemoryValidation, FreeRefusesAnythingButTheBaseOfAnOwnLiveAllocation) {
  Fixture f;
  for (DevicePtr p : {f.own + 16, f.freed, f.foreign, memmgr::kModuleRange.begin, DevicePtr{0x1234}}) {
    const v1::CallReply reply = f.client.call(requests::memFree(p));
    EXPECT_EQ(reply.error(), cudaErrorInvalidValue) << std::hex << p;
  }
  EXPECT_EQ(f.other.read(f.foreign, 4), "FFFF") << "the other client's allocation was freed";
  EXPECT_EQ(f.client.call(requests::memFree(0)).error(), 0) << "cudaFree(NULL) is a no-op";
  EXPECT_EQ(f.client.call(requests::memFree(f.own)).error(), 0);
  EXPECT_EQ(f.client.call(requests::memFree(f.own)).error(), cudaErrorInvalidValue) << "double free";
}

}  // namespace
}  // namespace agileos::worker::testing
