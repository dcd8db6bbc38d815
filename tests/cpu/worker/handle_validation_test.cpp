// Streams, events, modules and functions are named by per-client tokens. A
// forged token, a stale one (its object was destroyed) and another client's
// token must all be refused with the error CUDA gives for a bad handle, before
// anything reaches the driver.
#include <gtest/gtest.h>

#include <functional>

#include "tests/cpu/worker/support/worker_harness.h"

namespace agileos::worker::testing {
namespace {

using memmgr::DevicePtr;

struct Fixture {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  TestClient other = worker.attach(2);
  DevicePtr p = client.malloc(4096);
  std::uint64_t stream = client.createStream();
  std::uint64_t event = client.createEvent();
  TestClient::LoadedModule module = client.loadModule(readTestFatbin(TestFatbin::kDefaultArch));
  std::uint64_t emptyKernel = module.function(kEmptyKernel);

  std::uint64_t staleStream = [this] {
    const std::uint64_t token = client.createStream();
    EXPECT_EQ(client.call(requests::streamDestroy(token)).error(), 0);
    return token;
  }();
  std::uint64_t staleEvent = [this] {
    const std::uint64_t token = client.createEvent();
    EXPECT_EQ(client.call(requests::eventDestroy(token)).error(), 0);
    return token;
  }();
  TestClient::LoadedModule unloaded = [this] {
    TestClient::LoadedModule loaded = client.loadModule(readTestFatbin(TestFatbin::kDefaultArch));
    EXPECT_EQ(client.call(requests::moduleUnload(loaded.module)).error(), 0);
    return loaded;
  }();

  std::uint64_t otherStream = other.createStream();
  std::uint64_t otherEvent = other.createEvent();
  TestClient::LoadedModule otherModule = other.loadModule(readTestFatbin(TestFatbin::kDefaultArch));

  // Runs `request` and expects `error` with no driver call at all.
  void expectRefusedBeforeTheDriver(const v1::CallRequest& request, int error) {
    const std::uint64_t callsBefore = worker.gpu().callCount();
    const v1::CallReply reply = client.call(request);
    EXPECT_EQ(reply.error(), error) << request.ShortDebugString() << ": " << describe(reply);
    EXPECT_FALSE(reply.error_detail().empty());
    EXPECT_EQ(worker.gpu().callCount(), callsBefore) << "reached the driver: " << request.ShortDebugString();
    EXPECT_TRUE(worker.gpu().misuse().empty());
  }
};

struct BadToken {
  const char* what;
  std::function<std::uint64_t(const Fixture&)> token;
};

TEST(HandleValidation, BadStreamTokensAreInvalidResourceHandle) {
  Fixture f;
  const std::vector<BadToken> bad = {
      {"forged", [](const Fixture&) { return 0xDEADBEEFCAFEF00Dull; }},
      {"forged small", [](const Fixture&) { return 3ull; }},
      {"stale", [](const Fixture& f) { return f.staleStream; }},
      {"another client's", [](const Fixture& f) { return f.otherStream; }},
      {"an event's", [](const Fixture& f) { return f.event; }},
  };
  for (const BadToken& token : bad) {
    SCOPED_TRACE(token.what);
    const std::uint64_t s = token.token(f);
    for (const v1::CallRequest& request : {
             requests::streamSynchronize(s),
             requests::streamQuery(s),
             requests::streamDestroy(s),
             requests::streamWaitEvent(s, f.event),
             requests::memcpyHtoD(f.p, "x", s),
             requests::memcpyDtoH(f.p, 1, s),
             requests::memcpyDtoD(f.p, f.p + 8, 8, s),
             requests::memset(f.p, 0, 1, s),
             requests::eventRecord(f.event, s),
             requests::launchKernel(f.emptyKernel, "", {}, {}, s),
         }) {
      f.expectRefusedBeforeTheDriver(request, cudaErrorInvalidResourceHandle);
    }
  }
  EXPECT_EQ(f.other.call(requests::streamSynchronize(f.otherStream)).error(), 0) << "owner lost its stream";
}

TEST(HandleValidation, BadEventTokensAreInvalidResourceHandle) {
  Fixture f;
  const std::vector<BadToken> bad = {
      {"forged", [](const Fixture&) { return 0x0123456789ABCDEFull; }},
      {"zero", [](const Fixture&) { return 0ull; }},
      {"stale", [](const Fixture& f) { return f.staleEvent; }},
      {"another client's", [](const Fixture& f) { return f.otherEvent; }},
      {"a stream's", [](const Fixture& f) { return f.stream; }},
  };
  for (const BadToken& token : bad) {
    SCOPED_TRACE(token.what);
    const std::uint64_t e = token.token(f);
    for (const v1::CallRequest& request : {
             requests::eventRecord(e, f.stream),
             requests::eventSynchronize(e),
             requests::eventQuery(e),
             requests::eventDestroy(e),
             requests::eventElapsedTime(e, f.event),
             requests::eventElapsedTime(f.event, e),
             requests::streamWaitEvent(f.stream, e),
         }) {
      f.expectRefusedBeforeTheDriver(request, cudaErrorInvalidResourceHandle);
    }
  }
  EXPECT_EQ(f.other.call(requests::eventQuery(f.otherEvent)).error(), 0) << "owner lost its event";
}

TEST(HandleValidation, BadFunctionTokensAreInvalidDeviceFunction) {
  Fixture f;
  const std::vector<BadToken> bad = {
      {"forged", [](const Fixture&) { return 0xFEEDFACE00000001ull; }},
      {"zero", [](const Fixture&) { return 0ull; }},
      {"stale (module unloaded)", [](const Fixture& f) { return f.unloaded.function(kEmptyKernel); }},
      {"another client's", [](const Fixture& f) { return f.otherModule.function(kEmptyKernel); }},
      {"a module's", [](const Fixture& f) { return f.module.module; }},
  };
  for (const BadToken& token : bad) {
    SCOPED_TRACE(token.what);
    const std::uint64_t fn = token.token(f);
    for (const v1::CallRequest& request : {
             requests::launchKernel(fn, ""),
             requests::funcGetAttributes(fn),
             requests::funcSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1024),
             requests::funcSetCacheConfig(fn, CU_FUNC_CACHE_PREFER_L1),
             requests::occupancyMaxActiveBlocks(fn, 256),
         }) {
      f.expectRefusedBeforeTheDriver(request, cudaErrorInvalidDeviceFunction);
    }
  }
  EXPECT_TRUE(f.worker.gpu().launches().empty());
  EXPECT_EQ(f.other.call(requests::launchKernel(f.otherModule.function(kEmptyKernel), "")).error(), 0);
}

TEST(HandleValidation, BadModuleTokensAreInvalidResourceHandle) {
  Fixture f;
  const std::size_t modulesBefore = f.worker.gpu().liveModules();
  for (std::uint64_t m : {std::uint64_t{0xABCDEF0123456789ull}, std::uint64_t{0}, f.unloaded.module,
                          f.otherModule.module, f.emptyKernel}) {
    f.expectRefusedBeforeTheDriver(requests::moduleUnload(m), cudaErrorInvalidResourceHandle);
  }
  EXPECT_EQ(f.worker.gpu().liveModules(), modulesBefore);
  EXPECT_EQ(f.other.call(requests::launchKernel(f.otherModule.function(kEmptyKernel), "")).error(), 0)
      << "another client's unload attempt touched the owner's module";
}

TEST(HandleValidation, DestroyingTheDefaultStreamsIsRefused) {
  Fixture f;
  for (std::uint64_t s : {0ull, 1ull, 2ull}) {
    f.expectRefusedBeforeTheDriver(requests::streamDestroy(s), cudaErrorInvalidResourceHandle);
  }
}

TEST(HandleValidation, TokensAreNeverTheDefaultStreamValuesAndNeverRepeat) {
  Fixture f;
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 200; ++i) {
    const std::uint64_t s = f.client.createStream();
    const std::uint64_t e = f.client.createEvent();
    for (std::uint64_t token : {s, e}) {
      EXPECT_GT(token, 2u);
      EXPECT_TRUE(seen.insert(token).second) << "token minted twice: " << token;
    }
    ASSERT_EQ(f.client.call(requests::streamDestroy(s)).error(), 0);
    ASSERT_EQ(f.client.call(requests::eventDestroy(e)).error(), 0);
  }
  EXPECT_TRUE(f.worker.gpu().misuse().empty());
}

}  // namespace
}  // namespace agileos::worker::testing
