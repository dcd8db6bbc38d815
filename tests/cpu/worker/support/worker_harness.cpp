#include "tests/cpu/worker/support/worker_harness.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

namespace agileos::worker::testing {

std::string describe(const v1::CallReply& reply) {
  return "error " + std::to_string(reply.error()) + " (" + reply.error_detail() + ")";
}

WorkerRuntime::CallStatus TestClient::callStatus(const v1::CallRequest& request, v1::CallReply* reply) {
  v1::CallReply ignored;
  return runtime_->call(token_, request, reply != nullptr ? *reply : ignored);
}

v1::CallReply TestClient::call(const v1::CallRequest& request) {
  v1::CallReply reply;
  if (runtime_->call(token_, request, reply) != WorkerRuntime::CallStatus::kOk) {
    ADD_FAILURE() << "client " << id_
                  << ": call unexpectedly unauthenticated: " << request.ShortDebugString();
    reply.set_error(-1);
  }
  return reply;
}

memmgr::DevicePtr TestClient::malloc(std::uint64_t size) {
  const v1::CallReply reply = call(requests::memAlloc(size));
  EXPECT_EQ(reply.error(), 0) << "malloc(" << size << "): " << describe(reply);
  return reply.device_pointer().dptr();
}

void TestClient::free(memmgr::DevicePtr p) {
  const v1::CallReply reply = call(requests::memFree(p));
  EXPECT_EQ(reply.error(), 0) << "free: " << describe(reply);
}

void TestClient::write(memmgr::DevicePtr dst, const std::string& bytes) {
  const v1::CallReply reply = call(requests::memcpyHtoD(dst, bytes));
  EXPECT_EQ(reply.error(), 0) << "write: " << describe(reply);
}

std::string TestClient::read(memmgr::DevicePtr src, std::uint64_t size) {
  const v1::CallReply reply = call(requests::memcpyDtoH(src, size));
  EXPECT_EQ(reply.error(), 0) << "read: " << describe(reply);
  return reply.host_data().data();
}

std::uint64_t TestClient::createStream(std::uint32_t flags) {
  const v1::CallReply reply = call(requests::streamCreate(flags));
  EXPECT_EQ(reply.error(), 0) << "createStream: " << describe(reply);
  return reply.token().token();
}

std::uint64_t TestClient::createEvent(std::uint32_t flags) {
  const v1::CallReply reply = call(requests::eventCreate(flags));
  EXPECT_EQ(reply.error(), 0) << "createEvent: " << describe(reply);
  return reply.token().token();
}

std::uint64_t TestClient::LoadedModule::function(const std::string& name) const {
  auto it = functions.find(name);
  return it == functions.end() ? 0 : it->second.token();
}

std::uint64_t TestClient::LoadedModule::variable(const std::string& name) const {
  auto it = variables.find(name);
  return it == variables.end() ? 0 : it->second.dptr();
}

TestClient::LoadedModule TestClient::loadModule(const std::string& fatbin,
                                                const std::vector<std::string>& functions,
                                                const std::vector<std::string>& variables) {
  const v1::CallReply reply = call(requests::moduleLoad(fatbin, functions, variables));
  EXPECT_EQ(reply.error(), 0) << "loadModule: " << describe(reply);
  LoadedModule loaded;
  loaded.module = reply.module_loaded().module();
  for (const v1::FunctionInfo& info : reply.module_loaded().functions()) {
    EXPECT_EQ(info.error(), 0) << "function " << info.name();
    loaded.functions.emplace(info.name(), info);
  }
  for (const v1::VariableInfo& info : reply.module_loaded().variables()) {
    EXPECT_EQ(info.error(), 0) << "variable " << info.name();
    loaded.variables.emplace(info.name(), info);
  }
  return loaded;
}

WorkerHarness::WorkerHarness(FakeGpuConfig config)
    : gpu_(std::make_unique<FakeGpuBackend>(std::move(config))) {
  std::string error;
  if (gpu_->init(0, &error) != CUDA_SUCCESS) {
    std::fprintf(stderr, "FakeGpuBackend::init failed: %s\n", error.c_str());
    std::abort();
  }
  memory_ = memmgr::MemoryManager::create(*gpu_, &error);
  if (!memory_) {
    std::fprintf(stderr, "MemoryManager::create on the fake failed: %s\n", error.c_str());
    std::abort();
  }
  runtime_ = std::make_unique<WorkerRuntime>(*gpu_, *memory_, nullptr, nullptr);
}

WorkerHarness::~WorkerHarness() { shutDown(); }

void WorkerHarness::shutDown() {
  if (runtime_) runtime_->releaseAll();
  runtime_.reset();
  memory_.reset();
}

TestClient WorkerHarness::attach(ClientId id, const GuardConfig& guard) {
  EXPECT_TRUE(runtime_->attach(id, tokenFor(id), guard)) << "attach of client " << id;
  return TestClient(*runtime_, id, tokenFor(id));
}

}  // namespace agileos::worker::testing
