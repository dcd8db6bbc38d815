// The wire operation table (proto/wire/wire_operations.h) against the proto's descriptor, the
// behaviour the client and the worker had before it (issue 15: no change in behaviour), and the
// docs generated from it.
#include "proto/wire/wire_operations.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace agileos::wire {
namespace {

using Op = v1::CallRequest::OpCase;
namespace pb = google::protobuf;

TEST(WireOperations, EveryOperationOfTheProtoHasExactlyOneRow) {
  const pb::OneofDescriptor* oneof = v1::CallRequest::descriptor()->FindOneofByName("op");
  ASSERT_NE(oneof, nullptr);
  EXPECT_EQ(wireOperations().size(), static_cast<std::size_t>(oneof->field_count()));
  std::set<int> seen;
  for (int i = 0; i < oneof->field_count(); ++i) {
    const pb::FieldDescriptor* field = oneof->field(i);
    const WireOperation* row = findWireOperation(static_cast<Op>(field->number()));
    ASSERT_NE(row, nullptr) << field->name() << " has no row";
    EXPECT_EQ(row->name, field->name());
    EXPECT_TRUE(seen.insert(field->number()).second);
  }
  EXPECT_EQ(findWireOperation(v1::CallRequest::OP_NOT_SET), nullptr);
}

TEST(WireOperations, UnlessAsyncOnlyWhereTheRequestHasAnAsyncField) {
  for (const WireOperation& row : wireOperations()) {
    if (row.checksGuard != When::kUnlessAsync && row.deliversAsyncErrors != When::kUnlessAsync) continue;
    const pb::FieldDescriptor* field =
        v1::CallRequest::descriptor()->FindFieldByNumber(static_cast<int>(row.op));
    ASSERT_NE(field, nullptr);
    ASSERT_NE(field->message_type(), nullptr) << row.name;
    const pb::FieldDescriptor* async = field->message_type()->FindFieldByName("async");
    ASSERT_NE(async, nullptr) << row.name << " has no async field";
    EXPECT_EQ(async->type(), pb::FieldDescriptor::TYPE_BOOL) << row.name;
  }
}

// The operations each fact held for before the table (the worker's and the client's two
// isSynchronizing functions, and the calls the client sent with invokeAsync).
std::set<Op> where(bool (*fact)(const v1::CallRequest&), bool async) {
  std::set<Op> ops;
  for (const WireOperation& row : wireOperations()) {
    v1::CallRequest request;
    const pb::FieldDescriptor* field =
        v1::CallRequest::descriptor()->FindFieldByNumber(static_cast<int>(row.op));
    pb::Message* message = request.GetReflection()->MutableMessage(&request, field);
    if (const pb::FieldDescriptor* flag = message->GetDescriptor()->FindFieldByName("async")) {
      message->GetReflection()->SetBool(message, flag, async);
    }
    if (fact(request)) ops.insert(row.op);
  }
  return ops;
}

TEST(WireOperations, TheFactsHoldWhereTheyDidBeforeTheTable) {
  EXPECT_EQ(
      where(checksGuard, false),
      (std::set<Op>{Op::kDeviceSynchronize, Op::kStreamSynchronize, Op::kEventSynchronize, Op::kModuleUnload,
                    Op::kMemcpyHtod, Op::kMemcpyDtoh, Op::kMemcpyDtod, Op::kMemset}));
  EXPECT_EQ(where(checksGuard, true), (std::set<Op>{Op::kDeviceSynchronize, Op::kStreamSynchronize,
                                                    Op::kEventSynchronize, Op::kModuleUnload}));
  EXPECT_EQ(
      where(deliversAsyncErrors, false),
      (std::set<Op>{Op::kDeviceSynchronize, Op::kStreamSynchronize, Op::kEventSynchronize, Op::kStreamQuery,
                    Op::kEventQuery, Op::kMemcpyHtod, Op::kMemcpyDtoh, Op::kMemcpyDtod}));
  EXPECT_EQ(where(deliversAsyncErrors, true),
            (std::set<Op>{Op::kDeviceSynchronize, Op::kStreamSynchronize, Op::kEventSynchronize,
                          Op::kStreamQuery, Op::kEventQuery}));
  EXPECT_EQ(where(mayBeSentWithoutWaiting, true),
            (std::set<Op>{Op::kLaunchKernel, Op::kAdapterCall, Op::kStreamWaitEvent, Op::kEventRecord,
                          Op::kMemcpyHtod, Op::kMemcpyDtoh, Op::kMemcpyDtod, Op::kMemset}));
  const v1::CallRequest empty;
  EXPECT_FALSE(checksGuard(empty) || deliversAsyncErrors(empty) || mayBeSentWithoutWaiting(empty));
}

// A StreamOrderedMemory request may go unwaited only as a FREE (cudaFreeAsync, a graph's free
// node); an allocation must return its address, and the other steps answer or change state that
// later calls read. No other row uses kFreeStepOnly, and no other fact does.
TEST(WireOperations, OnlyAStreamOrderedFreeMayGoUnwaited) {
  for (const WireOperation& row : wireOperations()) {
    EXPECT_NE(row.checksGuard, When::kFreeStepOnly) << row.name;
    EXPECT_NE(row.deliversAsyncErrors, When::kFreeStepOnly) << row.name;
    EXPECT_EQ(row.sentWithoutWaiting == When::kFreeStepOnly, row.op == Op::kStreamOrderedMemory) << row.name;
  }
  const pb::EnumDescriptor* steps = v1::StreamOrderedMemory::Step_descriptor();
  for (int i = 0; i < steps->value_count(); ++i) {
    v1::CallRequest request;
    const auto step = static_cast<v1::StreamOrderedMemory::Step>(steps->value(i)->number());
    request.mutable_stream_ordered_memory()->set_step(step);
    EXPECT_EQ(mayBeSentWithoutWaiting(request), step == v1::StreamOrderedMemory::FREE)
        << steps->value(i)->name();
    EXPECT_FALSE(checksGuard(request) || deliversAsyncErrors(request)) << steps->value(i)->name();
  }
}

TEST(WireOperations, TheDocsListTheTable) {
  const std::string path = AGILEOS_WIRE_OPERATIONS_DOC;
  const std::string expected = wireOperationsMarkdown();
  if (std::getenv("AGILEOS_WRITE_WIRE_DOC") != nullptr) std::ofstream(path) << expected;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), expected) << path << " is stale; rerun this test with AGILEOS_WRITE_WIRE_DOC=1";
}

}  // namespace
}  // namespace agileos::wire
