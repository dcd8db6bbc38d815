// ModuleInstance and tearDownInOrder with the real counter plugin (counter_plugin.c) and a fake
// ProtectedMemory: refused control calls never reach the plugin (its own call counter says so),
// the plugin's memory callbacks reach only its own allocations, and teardown revokes.
#include "modules/host/module_instance.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "modules/host/teardown.h"
#include "tests/cpu/modules/host/fake_protected_memory.h"

namespace agileos::modules {
namespace {

using testing::FakeProtectedMemory;

std::string bytesOf(const void* data, std::size_t size) {
  return std::string(static_cast<const char*>(data), size);
}

template <typename T>
T valueAt(const std::string& bytes, std::size_t offset) {
  T value{};
  std::memcpy(&value, bytes.data() + offset, sizeof value);
  return value;
}

class ModuleInstanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    library_ = PluginLibrary::open(AGILEOS_TEST_COUNTER_PLUGIN, &error);
    ASSERT_NE(library_, nullptr) << error;
    // A second reference to the same loaded library, for the plugin's own counters.
    handle_ = dlopen(AGILEOS_TEST_COUNTER_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    calls_ = reinterpret_cast<std::uint64_t (*)()>(dlsym(handle_, "counter_plugin_calls"));
    overlaps_ = reinterpret_cast<std::uint64_t (*)()>(dlsym(handle_, "counter_plugin_overlaps"));
    ASSERT_NE(calls_, nullptr);
    ASSERT_NE(overlaps_, nullptr);
  }
  void TearDown() override {
    if (handle_ != nullptr) dlclose(handle_);
  }

  std::unique_ptr<ModuleInstance> create(const std::string& name, std::uint64_t client = 1,
                                         const std::string& config = "{}") {
    ModuleInstanceConfig c;
    c.module_name = name;
    c.module_version = "1.0.0";
    c.client_id = client;
    c.config_json = config;
    c.log = [this, name](int level, std::string_view message) {
      if (level == AGILEOS_MODULE_LOG_INFO) events_.push_back(std::string(message) + " " + name);
      if (level == AGILEOS_MODULE_LOG_WARN) warnings_.emplace_back(message);
    };
    std::string error;
    auto instance = ModuleInstance::create(library_, std::move(c), memory_, &error);
    EXPECT_NE(instance, nullptr) << error;
    return instance;
  }

  std::vector<std::string> events_;
  std::vector<std::string> warnings_;
  FakeProtectedMemory memory_{&events_};
  std::shared_ptr<const PluginLibrary> library_;
  void* handle_ = nullptr;
  std::uint64_t (*calls_)() = nullptr;
  std::uint64_t (*overlaps_)() = nullptr;
};

TEST_F(ModuleInstanceTest, ValidCallsReachThePlugin) {
  auto instance = create("counter");
  std::string response, error;
  const std::uint64_t before = calls_();
  EXPECT_EQ(instance->control(1, "hello", &response, &error), AGILEOS_MODULE_OK) << error;
  EXPECT_EQ(response, "hello");
  EXPECT_EQ(instance->control(1, "", &response, &error), AGILEOS_MODULE_OK) << error;
  EXPECT_EQ(response, "");
  const std::uint32_t operands[2] = {0xFFFFFFFFu, 2};
  EXPECT_EQ(instance->control(2, bytesOf(operands, 8), &response, &error), AGILEOS_MODULE_OK) << error;
  ASSERT_EQ(response.size(), 8u);
  EXPECT_EQ(valueAt<std::uint64_t>(response, 0), 0x100000001ull);
  EXPECT_EQ(calls_(), before + 3);
}

TEST_F(ModuleInstanceTest, RefusedCallsNeverReachThePlugin) {
  auto instance = create("counter");
  std::string response = "stale", error;
  const std::uint64_t before = calls_();
  EXPECT_EQ(instance->control(42, "x", &response, &error), AGILEOS_MODULE_ENOTSUP);
  EXPECT_NE(error.find("no command 42"), std::string::npos) << error;
  EXPECT_EQ(response, "");
  EXPECT_EQ(instance->control(2, std::string(7, 'a'), &response, &error), AGILEOS_MODULE_EINVAL);  // short
  EXPECT_NE(error.find("not 7 bytes"), std::string::npos) << error;
  EXPECT_EQ(instance->control(2, std::string(9, 'a'), &response, &error), AGILEOS_MODULE_EINVAL);  // long
  EXPECT_EQ(instance->control(1, std::string(4097, 'a'), &response, &error), AGILEOS_MODULE_EINVAL);
  EXPECT_EQ(instance->control(3, "", &response, &error), AGILEOS_MODULE_EINVAL);  // store takes >= 1
  EXPECT_EQ(calls_(), before);
  EXPECT_EQ(memory_.allocate_calls, 0);
}

TEST_F(ModuleInstanceTest, AnOversizedResponseIsDiscarded) {
  auto instance = create("counter");
  std::string response, error;
  EXPECT_EQ(instance->control(4, "", &response, &error), AGILEOS_MODULE_ERANGE);
  EXPECT_NE(error.find("response of 17 bytes, more than its buffer of 16 bytes"), std::string::npos) << error;
  EXPECT_EQ(response, "");
}

TEST_F(ModuleInstanceTest, ProtectedMemoryGoesThroughTheHost) {
  auto instance = create("counter");
  std::string response, error;
  EXPECT_EQ(instance->control(3, "protected payload", &response, &error), AGILEOS_MODULE_OK) << error;
  EXPECT_EQ(response, "protected payload");
  EXPECT_EQ(memory_.allocate_calls, 1);
  EXPECT_EQ(memory_.live(), 1u);
  EXPECT_EQ(instance->control(6, "", &response, &error), AGILEOS_MODULE_OK) << error;
  EXPECT_EQ(valueAt<std::uint32_t>(response, 0), 1u);
  EXPECT_EQ(memory_.live(), 0u);
}

TEST_F(ModuleInstanceTest, ThePluginCannotTouchMemoryItDoesNotOwn) {
  auto other = create("counter", 2);
  auto instance = create("counter", 1);
  std::string response, error;
  ASSERT_EQ(other->control(3, "secret of client 2", &response, &error), AGILEOS_MODULE_OK) << error;
  ASSERT_EQ(instance->control(3, "mine", &response, &error), AGILEOS_MODULE_OK) << error;
  const int free_calls = memory_.free_calls;

  // Client 2's allocation, its inside, the gap after it (mapped to nobody) and null.
  const std::uint64_t addresses[] = {FakeProtectedMemory::kBase, FakeProtectedMemory::kBase + 4,
                                     FakeProtectedMemory::kBase + 0x1000, 0};
  for (std::uint64_t address : addresses) {
    SCOPED_TRACE(address);
    ASSERT_EQ(instance->control(5, bytesOf(&address, 8), &response, &error), AGILEOS_MODULE_OK) << error;
    ASSERT_EQ(response.size(), 16u);
    EXPECT_EQ(valueAt<std::int32_t>(response, 0), AGILEOS_MODULE_EPERM);    // free
    EXPECT_EQ(valueAt<std::int32_t>(response, 4), AGILEOS_MODULE_EPERM);    // read
    EXPECT_EQ(valueAt<std::int32_t>(response, 8), AGILEOS_MODULE_EPERM);    // write
    EXPECT_EQ(valueAt<std::int32_t>(response, 12), AGILEOS_MODULE_ERANGE);  // own, one byte past the end
  }
  EXPECT_EQ(memory_.free_calls, free_calls);
  EXPECT_TRUE(memory_.isLive(FakeProtectedMemory::kBase));
}

TEST_F(ModuleInstanceTest, CallbacksFromAnotherThreadAreRefused) {
  auto instance = create("counter");
  std::string response, error;
  ASSERT_EQ(instance->control(8, "", &response, &error), AGILEOS_MODULE_OK) << error;
  EXPECT_EQ(valueAt<std::int32_t>(response, 0), AGILEOS_MODULE_EPERM);
  EXPECT_EQ(memory_.allocate_calls, 0);
}

TEST_F(ModuleInstanceTest, CallsOnOneInstanceAreSerialized) {
  auto instance = create("counter");
  const std::uint64_t overlaps = overlaps_();
  auto hammer = [&] {
    std::string response, error;
    for (int i = 0; i < 200; ++i) EXPECT_EQ(instance->control(7, "", &response, &error), AGILEOS_MODULE_OK);
  };
  std::thread first(hammer), second(hammer);
  first.join();
  second.join();
  EXPECT_EQ(overlaps_(), overlaps);
}

TEST_F(ModuleInstanceTest, CleanupRevokesWhatThePluginLeft) {
  auto instance = create("counter");
  std::string response, error;
  ASSERT_EQ(instance->control(3, "one", &response, &error), AGILEOS_MODULE_OK) << error;
  ASSERT_EQ(instance->control(3, "two!", &response, &error), AGILEOS_MODULE_OK) << error;
  EXPECT_EQ(memory_.live(), 2u);
  const RevocationReport report = instance->shutdown();
  EXPECT_EQ(report.allocations, 2u);
  EXPECT_EQ(report.bytes, 7u);
  EXPECT_EQ(memory_.live(), 0u);
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("revoked 2 protected allocation(s), 7 bytes"), std::string::npos)
      << warnings_[0];
  // After shutdown the instance refuses calls, and the plugin is not called again.
  const std::uint64_t before = calls_();
  EXPECT_EQ(instance->control(1, "x", &response, &error), AGILEOS_MODULE_EPERM);
  EXPECT_EQ(calls_(), before);
  EXPECT_EQ(instance->shutdown().allocations, 0u);
}

TEST_F(ModuleInstanceTest, AFailedInitIsRefusedAndItsMemoryRevoked) {
  ModuleInstanceConfig config;
  config.module_name = "counter";
  config.client_id = 3;
  config.config_json = "fail";
  std::string error;
  auto instance = ModuleInstance::create(library_, std::move(config), memory_, &error);
  EXPECT_EQ(instance, nullptr);
  EXPECT_NE(error.find("host_init_module for client 3 failed with code -12"), std::string::npos) << error;
  EXPECT_EQ(memory_.allocate_calls, 1);
  EXPECT_EQ(memory_.live(), 0u);
  EXPECT_TRUE(events_.empty() || events_.back().rfind("free ", 0) == 0);  // no cleanup was called
}

TEST_F(ModuleInstanceTest, TeardownIsInReverseOrderOfCreation) {
  std::vector<std::unique_ptr<ModuleInstance>> instances;
  std::vector<std::string> frees;
  for (const char* name : {"base", "middle", "top"}) {
    instances.push_back(create(name));
    std::string response, error;
    ASSERT_EQ(instances.back()->control(3, name, &response, &error), AGILEOS_MODULE_OK) << error;
  }
  events_.clear();
  tearDownInOrder(instances);
  EXPECT_TRUE(instances.empty());
  // Addresses are handed out in creation order: base, middle, top.
  const std::string base = "free " + std::to_string(FakeProtectedMemory::kBase);
  const std::string middle = "free " + std::to_string(FakeProtectedMemory::kBase + 0x2000);
  const std::string top = "free " + std::to_string(FakeProtectedMemory::kBase + 0x4000);
  const std::vector<std::string> expected = {"cleanup top",  top, "cleanup middle", middle,
                                             "cleanup base", base};
  EXPECT_EQ(events_, expected);
  EXPECT_EQ(memory_.live(), 0u);
}

}  // namespace
}  // namespace agileos::modules
