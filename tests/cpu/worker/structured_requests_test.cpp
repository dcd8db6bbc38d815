// The fuzzer's structured input format (support/structured_requests.h): its
// templates, which seed the fuzzer, must decode into the requests they describe.
#include "tests/cpu/worker/support/structured_requests.h"

#include <gtest/gtest.h>

#include "tests/cpu/worker/support/test_fatbins.h"

namespace agileos::worker::testing {
namespace {

class StructuredRequestsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    scenario = FuzzScenario::create(fatbin, &error);
    ASSERT_NE(scenario, nullptr) << error;
  }

  std::vector<v1::CallRequest> decode(const std::string& bytes) {
    return decodeStructuredRequests(
        std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()),
        *scenario, fatbin, 8);
  }

  v1::CallReply run(v1::CallRequest request) {
    resolveSymbols(&request, *scenario);
    v1::CallReply reply;
    EXPECT_EQ(scenario->runtime().call(scenario->fuzzed().token, request, reply),
              WorkerRuntime::CallStatus::kOk);
    return reply;
  }

  std::string fatbin = readTestFatbin(TestFatbin::kDefaultArch);
  std::unique_ptr<FuzzScenario> scenario;
};

TEST_F(StructuredRequestsTest, EveryTemplateDecodesIntoOneRequestOfItsOperation) {
  const auto* op = v1::CallRequest::descriptor()->FindOneofByName("op");
  ASSERT_EQ(structuredOperationCount(), op->field_count());
  for (int i = 0; i < structuredOperationCount(); ++i) {
    const auto requests = decode(structuredTemplate(i, 0));
    ASSERT_EQ(requests.size(), 1u) << op->field(i)->name();
    EXPECT_EQ(static_cast<int>(requests[0].op_case()), op->field(i)->number()) << op->field(i)->name();
  }
  EXPECT_EQ(structuredOperationIndex("memcpy_htod"), 8);
  EXPECT_EQ(structuredOperationIndex("no_such_operation"), -1);
}

TEST_F(StructuredRequestsTest, MemoryTemplatesFillTheirRangeAndSucceed) {
  const ScenarioAllocation first = scenario->fuzzed().allocations[0];
  ASSERT_EQ(structuredPointerTargets(*scenario)[0].base, first.base);

  const auto htod = decode(structuredTemplate(structuredOperationIndex("memcpy_htod"), 0));
  ASSERT_EQ(htod.size(), 1u);
  EXPECT_EQ(htod[0].memcpy_htod().dst(), first.base);
  EXPECT_EQ(htod[0].memcpy_htod().total_size(), first.size);
  EXPECT_EQ(run(htod[0]).error(), 0);

  const auto dtoh = decode(structuredTemplate(structuredOperationIndex("memcpy_dtoh"), 0));
  ASSERT_EQ(dtoh.size(), 1u);
  EXPECT_EQ(dtoh[0].memcpy_dtoh().size(), first.size) << "size is the rest of the copy";
  EXPECT_EQ(run(dtoh[0]).host_data().data().size(), first.size);

  const auto memset = decode(structuredTemplate(structuredOperationIndex("memset"), 0));
  EXPECT_EQ(memset[0].memset().size(), first.size);
  EXPECT_EQ(run(memset[0]).error(), 0);

  const auto launch = decode(structuredTemplate(structuredOperationIndex("launch_kernel"), 0));
  EXPECT_EQ(run(launch[0]).error(), 0) << "symbol 0 with a 24-byte blob is the add kernel";
}

TEST_F(StructuredRequestsTest, OneChangedSelectorMovesASizeOnePastTheRange) {
  std::string bytes = structuredTemplate(structuredOperationIndex("memset"), 0);
  // op, dst (3 bytes), value (2 bytes), then the size selector.
  ASSERT_EQ(bytes[6], 6);
  bytes[6] = 7;
  const auto requests = decode(bytes);
  EXPECT_EQ(requests[0].memset().size(), scenario->fuzzed().allocations[0].size + 1);
  EXPECT_EQ(run(requests[0]).error(), cudaErrorInvalidValue);
}

TEST_F(StructuredRequestsTest, SymbolsNameTheScenariosHandlesAndOtherValuesPassAsTheyAre) {
  v1::CallRequest request;
  request.mutable_event_record()->set_event(kFirstSymbol + 0);
  request.mutable_event_record()->set_stream(kFirstSymbol + 1);
  resolveSymbols(&request, *scenario);
  EXPECT_EQ(request.event_record().event(), scenario->handles(HandleKind::kEvent)[0]);
  EXPECT_EQ(request.event_record().stream(), scenario->handles(HandleKind::kStream)[1]);
  request.mutable_event_record()->set_stream(2);
  request.mutable_event_record()->set_event(0xABCDEF);
  resolveSymbols(&request, *scenario);
  EXPECT_EQ(request.event_record().stream(), 2u);
  EXPECT_EQ(request.event_record().event(), 0xABCDEFu);
}

TEST_F(StructuredRequestsTest, ArbitraryBytesAlwaysDecode) {
  std::string bytes;
  for (int i = 0; i < 4096; ++i) bytes += static_cast<char>((i * 131 + 7) & 0xff);
  for (std::size_t cut = 0; cut < bytes.size(); cut += 97) {
    const auto requests = decode(bytes.substr(0, cut));
    EXPECT_LE(requests.size(), 8u);
    for (const auto& request : requests) EXPECT_NE(request.op_case(), v1::CallRequest::OP_NOT_SET);
  }
}

TEST_F(StructuredRequestsTest, ScenarioTearsDownCleanly) { EXPECT_EQ(scenario->tearDownAndCheck(), ""); }

}  // namespace
}  // namespace agileos::worker::testing
