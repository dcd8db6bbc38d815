// ShmWorkerChannel against hand-written client bytes: the ring mechanics (wraparound,
// full rings, arena payloads, empty messages) and the refusals of malformed input.
#include <gtest/gtest.h>

#include "agileos/v1/client_api.pb.h"
#include "tests/cpu/shm/raw_region_client.h"
#include "worker/transport/shm_worker_channel.h"

namespace agileos::worker {
namespace {

using shm::CompletionStatus;
using shm::testing::RawRegionClient;
using Take = ShmWorkerChannel::Take;
using Put = ShmWorkerChannel::Put;

class WorkerChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    region_ = shm::MappedRegion::create(shm::testing::smallRegionSizes(), &error);
    ASSERT_NE(region_, nullptr) << error;
    channel_ = std::make_unique<ShmWorkerChannel>(*region_);
    client_ = std::make_unique<RawRegionClient>(*region_);
  }

  std::unique_ptr<shm::MappedRegion> region_;
  std::unique_ptr<ShmWorkerChannel> channel_;
  std::unique_ptr<RawRegionClient> client_;
  std::uint64_t callId_ = 0;
  std::string message_;
  bool noReply_ = false;
};

TEST_F(WorkerChannelTest, EmptyRingHasNothing) {
  EXPECT_FALSE(channel_->requestIndexMoved());
  EXPECT_EQ(channel_->takeRequest(&callId_, &message_, &noReply_), Take::kEmpty);
}

TEST_F(WorkerChannelTest, RequestsWrapAroundTheRingInOrder) {
  for (std::uint64_t i = 0; i < 11; ++i) {  // 11 > 2 * 4 slots
    const std::string payload = "request " + std::to_string(i);
    client_->pushRequest(100 + i, payload);
    ASSERT_TRUE(channel_->requestIndexMoved());
    ASSERT_EQ(channel_->takeRequest(&callId_, &message_, &noReply_), Take::kRequest) << channel_->violation();
    EXPECT_EQ(callId_, 100 + i);
    EXPECT_EQ(message_, payload);
  }
  EXPECT_EQ(region_->control().requestConsumed.value.load(), 11u);
  EXPECT_EQ(channel_->takeRequest(&callId_, &message_, &noReply_), Take::kEmpty);
}

TEST_F(WorkerChannelTest, AFullRingIsTakenWhole) {
  for (std::uint64_t i = 0; i < 4; ++i) client_->pushRequest(i, std::string(i + 1, 'x'));
  for (std::uint64_t i = 0; i < 4; ++i) {
    ASSERT_EQ(channel_->takeRequest(&callId_, &message_, &noReply_), Take::kRequest);
    EXPECT_EQ(callId_, i);
    EXPECT_EQ(message_.size(), i + 1);
  }
  EXPECT_EQ(channel_->takeRequest(&callId_, &message_, &noReply_), Take::kEmpty);
}

// The hint that decides whether a launch is held for the ones behind it: the next slot's flag,
// read without consuming it, and false on an empty ring or a garbage index (never a violation).
TEST_F(WorkerChannelTest, TheNextQueuedRequestsNoReplyFlagIsAHintThatConsumesNothing) {
  EXPECT_FALSE(channel_->unawaitedRequestQueued());
  shm::SlotHeader header{};
  header.kind = static_cast<std::uint32_t>(shm::SlotKind::kInline);
  header.status = shm::kNoReply;
  header.callId = 1;
  client_->pushHeader(header);
  EXPECT_TRUE(channel_->unawaitedRequestQueued());
  EXPECT_TRUE(channel_->unawaitedRequestQueued()) << "nothing was consumed";
  header.status = 0;
  header.callId = 2;
  client_->pushHeader(header);
  ASSERT_EQ(channel_->takeRequest(&callId_, &message_, &noReply_), Take::kRequest);
  EXPECT_TRUE(noReply_);
  EXPECT_FALSE(channel_->unawaitedRequestQueued()) << "the next one is awaited";
  ASSERT_EQ(channel_->takeRequest(&callId_, &message_, &noReply_), Take::kRequest);
  EXPECT_FALSE(channel_->unawaitedRequestQueued());
  client_->publishRequests(1u << 30);  // garbage: the hint reads a slot of the ring, takeRequest refuses
  channel_->unawaitedRequestQueued();
  EXPECT_EQ(channel_->takeRequest(&callId_, &message_, &noReply_), Take::kViolation);
}

TEST_F(WorkerChannelTest, ZeroLengthRequest) {
  client_->pushRequest(7, "");
  ASSERT_EQ(channel_->takeRequest(&callId_, &message_, &noReply_), Take::kRequest);
  EXPECT_EQ(callId_, 7u);
  EXPECT_TRUE(message_.empty());
}

TEST_F(WorkerChannelTest, LargeRequestGoesThroughTheArena) {
  std::string payload(40000, '\0');
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 31);
  client_->pushRequest(1, payload);
  ASSERT_EQ(channel_->takeRequest(&callId_, &message_, &noReply_), Take::kRequest) << channel_->violation();
  EXPECT_EQ(message_, payload);
}

TEST_F(WorkerChannelTest, IndexTooFarAheadIsAViolation) {
  client_->publishRequests(5);  // 5 entries in a 4-slot ring
  EXPECT_EQ(channel_->takeRequest(&callId_, &message_, &noReply_), Take::kViolation);
  EXPECT_NE(channel_->violation().find("ahead"), std::string::npos) << channel_->violation();
}

TEST_F(WorkerChannelTest, PublishedIndexMayNotShrinkBelowWhatWasSeen) {
  client_->pushRequest(1, "a");
  client_->pushRequest(2, "b");
  ASSERT_EQ(channel_->takeRequest(&callId_, &message_, &noReply_), Take::kRequest);  // sees produced = 2
  client_->publishRequests(1);  // below what it published before, but not below consumed
  EXPECT_EQ(channel_->takeRequest(&callId_, &message_, &noReply_), Take::kViolation);
  EXPECT_NE(channel_->violation().find("backwards"), std::string::npos) << channel_->violation();
}

TEST_F(WorkerChannelTest, InlineLengthBeyondTheSlotIsAViolation) {
  shm::SlotHeader header{};
  header.kind = static_cast<std::uint32_t>(shm::SlotKind::kInline);
  header.inlineBytes = 256;  // the slot is 256 bytes including the header
  client_->pushHeader(header);
  EXPECT_EQ(channel_->takeRequest(&callId_, &message_, &noReply_), Take::kViolation);
}

TEST_F(WorkerChannelTest, ArenaRangeOutsideTheArenaIsAViolation) {
  shm::SlotHeader header{};
  header.kind = static_cast<std::uint32_t>(shm::SlotKind::kArena);
  header.arenaOffset = 1;
  header.arenaBytes = ~0ull;  // offset + length wraps around
  client_->pushHeader(header);
  EXPECT_EQ(channel_->takeRequest(&callId_, &message_, &noReply_), Take::kViolation);
  EXPECT_NE(channel_->violation().find("arena"), std::string::npos);
}

TEST_F(WorkerChannelTest, UnknownSlotKindIsAViolation) {
  shm::SlotHeader header{};
  header.kind = 99;
  client_->pushHeader(header);
  EXPECT_EQ(channel_->takeRequest(&callId_, &message_, &noReply_), Take::kViolation);
}

v1::CallReply replyWithData(std::size_t bytes) {
  v1::CallReply reply;
  reply.mutable_host_data()->set_data(std::string(bytes, 'd'));
  return reply;
}

TEST_F(WorkerChannelTest, CompletionsFillTheRingThenWaitForTheClient) {
  const v1::CallReply reply = replyWithData(10);
  for (std::uint64_t i = 0; i < 4; ++i) {
    ASSERT_EQ(channel_->putCompletion(i, CompletionStatus::kOk, &reply), Put::kDone);
  }
  EXPECT_EQ(channel_->putCompletion(4, CompletionStatus::kOk, &reply), Put::kFull);
  EXPECT_EQ(client_->completionsProduced(), 4u);
  for (std::uint64_t i = 0; i < 4; ++i) {
    const auto completion = client_->peekCompletion(i);
    EXPECT_EQ(completion.header.callId, i);
    v1::CallReply parsed;
    ASSERT_TRUE(parsed.ParseFromString(completion.message));
    EXPECT_EQ(parsed.host_data().data(), std::string(10, 'd'));
  }
  client_->consumeCompletions(2);
  EXPECT_EQ(channel_->putCompletion(4, CompletionStatus::kOk, &reply), Put::kDone);
  EXPECT_EQ(client_->peekCompletion(4).header.callId, 4u);  // slot 0 again: wrapped
}

TEST_F(WorkerChannelTest, LargeReplyGoesThroughTheArena) {
  const v1::CallReply reply = replyWithData(50000);
  ASSERT_EQ(channel_->putCompletion(9, CompletionStatus::kOk, &reply), Put::kDone);
  const auto completion = client_->peekCompletion(0);
  EXPECT_EQ(completion.header.kind, static_cast<std::uint32_t>(shm::SlotKind::kArena));
  v1::CallReply parsed;
  ASSERT_TRUE(parsed.ParseFromString(completion.message));
  EXPECT_EQ(parsed.host_data().data().size(), 50000u);
}

TEST_F(WorkerChannelTest, ReplyBeyondTheArenaIsReportedNotWritten) {
  const v1::CallReply reply = replyWithData(70000);  // arena is 64 KiB
  ASSERT_EQ(channel_->putCompletion(9, CompletionStatus::kOk, &reply), Put::kDone);
  EXPECT_EQ(client_->peekCompletion(0).header.status,
            static_cast<std::uint32_t>(CompletionStatus::kReplyTooLarge));
}

// The worker reads the client's consume index only when its own view leaves no free slot
// or the reply needs the arena (a shared cache line fewer per call); whenever it reads it,
// an index ahead of what was produced, or one that went back, ends the connection.
TEST_F(WorkerChannelTest, ClientConsumingTheFutureOrGoingBackIsAViolationWhenRead) {
  const v1::CallReply large = replyWithData(1000);  // needs the arena: the index is read
  client_->consumeCompletions(1);                   // nothing was produced
  EXPECT_EQ(channel_->putCompletion(0, CompletionStatus::kOk, &large), Put::kViolation);

  ShmWorkerChannel second(*region_);
  const v1::CallReply small = replyWithData(1);
  client_->consumeCompletions(0);
  ASSERT_EQ(second.putCompletion(0, CompletionStatus::kOk, &small), Put::kDone);
  ASSERT_EQ(second.putCompletion(1, CompletionStatus::kOk, &small), Put::kDone);
  client_->consumeCompletions(2);
  ASSERT_EQ(second.putCompletion(2, CompletionStatus::kOk, &large), Put::kDone) << "read: 2 consumed";
  client_->consumeCompletions(1);  // backwards
  ASSERT_EQ(second.putCompletion(3, CompletionStatus::kOk, &small), Put::kDone) << "not read: room in view";
  ASSERT_EQ(second.putCompletion(4, CompletionStatus::kOk, &small), Put::kDone);
  ASSERT_EQ(second.putCompletion(5, CompletionStatus::kOk, &small), Put::kDone);
  EXPECT_EQ(second.putCompletion(6, CompletionStatus::kOk, &small), Put::kViolation) << "read: went back";
}

}  // namespace
}  // namespace agileos::worker
