// Every call is authenticated by its session token before anything runs.
#include <gtest/gtest.h>

#include "tests/cpu/worker/support/worker_harness.h"

namespace agileos::worker::testing {
namespace {

using CallStatus = WorkerRuntime::CallStatus;

TEST(WorkerAuthentication, UnknownAndEmptyTokensAreUnauthenticatedAndRunNothing) {
  WorkerHarness worker;
  worker.attach(1);
  const std::uint64_t callsBefore = worker.gpu().callCount();
  for (const std::string& token : {std::string(), std::string("not-a-token"),
                                   WorkerHarness::tokenFor(1) + "x", WorkerHarness::tokenFor(1).substr(1)}) {
    v1::CallReply reply;
    EXPECT_EQ(worker.runtime().call(token, requests::memAlloc(4096), reply), CallStatus::kUnauthenticated)
        << "token '" << token << "'";
    EXPECT_EQ(reply.error(), 0);
    EXPECT_FALSE(reply.has_device_pointer()) << "an unauthenticated call produced a result";
  }
  EXPECT_EQ(worker.gpu().callCount(), callsBefore) << "an unauthenticated call reached the driver";
  EXPECT_EQ(worker.memory().table().size(), 0u);
}

TEST(WorkerAuthentication, AttachRefusesEmptyAndDuplicateIdsOrTokens) {
  WorkerHarness worker;
  EXPECT_FALSE(worker.runtime().attach(1, ""));
  EXPECT_TRUE(worker.runtime().attach(1, "token-a"));
  EXPECT_FALSE(worker.runtime().attach(1, "token-b")) << "same client id";
  EXPECT_FALSE(worker.runtime().attach(2, "token-a")) << "same token";
  EXPECT_EQ(worker.runtime().clientCount(), 1u);
}

TEST(WorkerAuthentication, AReleasedClientsTokenStopsWorking) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  ASSERT_EQ(client.callStatus(requests::deviceSynchronize()), CallStatus::kOk);
  ASSERT_TRUE(worker.runtime().release(1));
  EXPECT_EQ(client.callStatus(requests::deviceSynchronize()), CallStatus::kUnauthenticated);
  EXPECT_FALSE(worker.runtime().release(1)) << "releasing twice";
  // The id and the token may be attached again, as a new session with nothing in it.
  TestClient again = worker.attach(1);
  EXPECT_EQ(again.callStatus(requests::deviceSynchronize()), CallStatus::kOk);
}

TEST(WorkerAuthentication, TheTokenDecidesWhoseSessionACallRunsIn) {
  WorkerHarness worker;
  TestClient first = worker.attach(1);
  TestClient second = worker.attach(2);
  const memmgr::DevicePtr p = first.malloc(256);
  EXPECT_EQ(worker.memory().table().find(p)->owner, 1u);
  const memmgr::DevicePtr q = second.malloc(256);
  EXPECT_EQ(worker.memory().table().find(q)->owner, 2u);
}

TEST(WorkerAuthentication, EmptyRequestIsNotSupportedAndRunsNothing) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const std::uint64_t callsBefore = worker.gpu().callCount();
  const v1::CallReply reply = client.call(v1::CallRequest());
  EXPECT_EQ(reply.error(), cudaErrorNotSupported);
  EXPECT_FALSE(reply.error_detail().empty());
  EXPECT_EQ(worker.gpu().callCount(), callsBefore);
}

TEST(WorkerAuthentication, GetDeviceInfoDescribesTheWorkersDevice) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const v1::CallReply reply = client.call(requests::getDeviceInfo());
  ASSERT_EQ(reply.error(), 0) << describe(reply);
  EXPECT_EQ(reply.device_info().device_count(), 1);
  EXPECT_EQ(reply.device_info().name(), "AgileOS Fake GPU");
  EXPECT_EQ(reply.device_info().uuid().size(), 16u);
  bool sawMajor = false;
  for (const v1::DeviceAttribute& attribute : reply.device_info().attributes()) {
    if (attribute.attribute() == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) {
      sawMajor = true;
      EXPECT_EQ(attribute.value(), 9);
    }
  }
  EXPECT_TRUE(sawMajor);
}

}  // namespace
}  // namespace agileos::worker::testing
