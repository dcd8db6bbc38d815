// ModuleInstance's resource callbacks (device constants, export_protected, map_io/unmap_io,
// register_dma/unregister_dma/export_dma, host_module_dma_revoked) with the real resource plugin
// (resource_plugin.c), a fake ProtectedMemory and a fake HostResources that records every call:
// the instance passes on only what is the instance's, keeps its own books of mappings and
// registrations, and undoes what the plugin left after host_cleanup_module.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <thread>

#include "modules/host/host_resources.h"
#include "modules/host/module_instance.h"
#include "tests/cpu/modules/host/fake_protected_memory.h"
#include "tests/cpu/modules/host/resource_plugin_bytes.h"

namespace agileos::modules {
namespace {

using testing::FakeProtectedMemory;

// Sizes of the descriptors the fake hands out, so a test can tell them apart in the plugin.
constexpr std::uint64_t kProtectedExportBytes = 12288;
constexpr std::uint64_t kDmaHandleBytes = 2u << 20;
constexpr std::uint64_t kDmaOffset = 768;
constexpr std::uint64_t kUserBase = 0xF8000000000ull;

// Records every call; refuses what it was not told to accept.
class FakeHostResources final : public HostResources {
 public:
  explicit FakeHostResources(std::vector<std::string>* events) : events_(events) {}

  struct MapCall {
    std::int64_t file_bytes = -1;  // fstat of the descriptor during the call
    std::uint64_t offset = 0;
    std::uint64_t bytes = 0;
    bool device_memory = false;
  };

  int exportProtected(std::uint64_t device_address, int* fd) override {
    exported_protected.push_back(device_address);
    return memfd(kProtectedExportBytes, fd);
  }
  int mapIo(int fd, std::uint64_t offset, std::uint64_t bytes, bool deviceMemory,
            std::uint64_t* address) override {
    struct stat status {};
    map_calls.push_back({::fstat(fd, &status) == 0 ? status.st_size : -1, offset, bytes, deviceMemory});
    if (map_result != AGILEOS_MODULE_OK) return map_result;
    *address = next_address_;
    next_address_ += 0x10000;
    mapped.insert(*address);
    event("map " + std::to_string(*address));
    return AGILEOS_MODULE_OK;
  }
  int unmapIo(std::uint64_t address) override {
    unmap_calls.push_back(address);
    event("unmap " + std::to_string(address));
    return mapped.erase(address) != 0 ? AGILEOS_MODULE_OK : AGILEOS_MODULE_EPERM;
  }
  int checkExactUserAllocation(std::uint64_t device_address, std::uint64_t bytes) override {
    checks.emplace_back(device_address, bytes);
    return user_allocations.count({device_address, bytes}) != 0 ? AGILEOS_MODULE_OK : AGILEOS_MODULE_EPERM;
  }
  int exportUserAllocation(std::uint64_t device_address, std::uint64_t bytes, int* fd,
                           std::uint64_t* handle_bytes, std::uint64_t* offset) override {
    exported_user.emplace_back(device_address, bytes);
    const int rc = memfd(kDmaHandleBytes, fd);
    if (rc != AGILEOS_MODULE_OK) return rc;
    *handle_bytes = kDmaHandleBytes;
    *offset = kDmaOffset;
    return AGILEOS_MODULE_OK;
  }

  std::size_t calls() const {
    return exported_protected.size() + map_calls.size() + unmap_calls.size() + checks.size() +
           exported_user.size();
  }

  static constexpr std::uint64_t kFirstAddress = 0xF0000000000ull;

  std::vector<std::uint64_t> exported_protected;
  std::vector<MapCall> map_calls;
  std::vector<std::uint64_t> unmap_calls;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> checks;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> exported_user;
  std::set<std::uint64_t> mapped;
  std::set<std::pair<std::uint64_t, std::uint64_t>> user_allocations;  // (base, size) accepted
  int map_result = AGILEOS_MODULE_OK;

 private:
  static int memfd(std::uint64_t bytes, int* fd) {
    const int made = ::memfd_create("fake-host-resources", MFD_CLOEXEC);
    if (made < 0) return AGILEOS_MODULE_EIO;
    if (::ftruncate(made, static_cast<off_t>(bytes)) != 0) {
      ::close(made);
      return AGILEOS_MODULE_EIO;
    }
    *fd = made;
    return AGILEOS_MODULE_OK;
  }
  void event(std::string line) {
    if (events_ != nullptr) events_->push_back(std::move(line));
  }

  std::vector<std::string>* events_;
  std::uint64_t next_address_ = kFirstAddress;
};

using agileos::modules::testing::Bytes;
using agileos::modules::testing::valueAt;

// Outcomes of the plugin's commands.
struct Export {
  int alloc_code = 0;
  int export_code = 0;
  std::int64_t fd_bytes = -1;
  std::uint64_t allocation = 0;
};
struct Mapped {
  int code = 0;
  std::uint64_t address = 0;
};
struct Registered {
  int code = 0;
  std::uint64_t registration = 0;
};
struct DmaExport {
  int code = 0;
  std::uint64_t handle_bytes = 0;
  std::uint64_t offset = 0;
  std::int64_t fd_bytes = -1;
};
struct Revocations {
  int unregister_code = 1;  // the plugin's "none yet"
  std::vector<std::uint64_t> ids;
};

// Drives one instance of the resource plugin; every command must reach the plugin and succeed.
class Plugin {
 public:
  explicit Plugin(ModuleInstance& instance) : instance_(instance) {}

  int publish(const std::string& name, std::uint64_t value) {
    return valueAt<std::int32_t>(run(1, Bytes().u64(value).text(name).str(), 4), 0);
  }
  // Allocates `alloc_bytes` (if not 0) and exports the allocation + `address` (else `address`).
  Export exportProtected(std::uint64_t alloc_bytes, std::uint64_t address) {
    const std::string r = run(2, Bytes().u64(alloc_bytes).u64(address).str(), 24);
    return {valueAt<std::int32_t>(r, 0), valueAt<std::int32_t>(r, 4), valueAt<std::int64_t>(r, 8),
            valueAt<std::uint64_t>(r, 16)};
  }
  Mapped mapIo(std::uint64_t file_bytes, std::uint64_t offset, std::uint64_t bytes, std::uint32_t flags,
               bool bad_fd = false) {
    const std::string r =
        run(3, Bytes().u64(file_bytes).u64(offset).u64(bytes).u32(flags).u32(bad_fd).str(), 16);
    return {valueAt<std::int32_t>(r, 0), valueAt<std::uint64_t>(r, 8)};
  }
  int unmapIo(std::uint64_t address) {
    return valueAt<std::int32_t>(run(4, Bytes().u64(address).str(), 4), 0);
  }
  Registered registerDma(std::uint64_t address, std::uint64_t bytes) {
    const std::string r = run(5, Bytes().u64(address).u64(bytes).str(), 16);
    return {valueAt<std::int32_t>(r, 0), valueAt<std::uint64_t>(r, 8)};
  }
  int unregisterDma(std::uint64_t registration) {
    return valueAt<std::int32_t>(run(6, Bytes().u64(registration).str(), 4), 0);
  }
  DmaExport exportDma(std::uint64_t registration) {
    const std::string r = run(7, Bytes().u64(registration).str(), 32);
    return {valueAt<std::int32_t>(r, 0), valueAt<std::uint64_t>(r, 8), valueAt<std::uint64_t>(r, 16),
            valueAt<std::int64_t>(r, 24)};
  }
  Revocations revoked() {
    std::string error;
    std::string r;
    EXPECT_EQ(instance_.control(8, "", &r, &error), AGILEOS_MODULE_OK) << error;
    Revocations result;
    const auto count = valueAt<std::uint32_t>(r, 0);
    result.unregister_code = valueAt<std::int32_t>(r, 4);
    for (std::uint32_t i = 0; i < count; ++i) result.ids.push_back(valueAt<std::uint64_t>(r, 8 + 8 * i));
    return result;
  }
  int fromThread(std::uint32_t which) {
    return valueAt<std::int32_t>(run(9, Bytes().u32(which).str(), 4), 0);
  }
  std::vector<int> nullOutputs() {
    const std::string r = run(10, "", 20);
    std::vector<int> codes;
    for (std::size_t i = 0; i < 5; ++i) codes.push_back(valueAt<std::int32_t>(r, 4 * i));
    return codes;
  }
  int freeProtected(std::uint64_t address) {
    return valueAt<std::int32_t>(run(11, Bytes().u64(address).str(), 4), 0);
  }

 private:
  std::string run(std::uint32_t command, const std::string& request, std::size_t response_bytes) {
    std::string response, error;
    EXPECT_EQ(instance_.control(command, request, &response, &error), AGILEOS_MODULE_OK)
        << "command " << command << ": " << error;
    EXPECT_EQ(response.size(), response_bytes) << "command " << command;
    return response;
  }
  ModuleInstance& instance_;
};

class ModuleInstanceResourcesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    library_ = PluginLibrary::open(AGILEOS_TEST_RESOURCE_PLUGIN, &error);
    ASSERT_NE(library_, nullptr) << error;
    ASSERT_NE(library_->dmaRevoked(), nullptr);
    handle_ = dlopen(AGILEOS_TEST_RESOURCE_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    revocations_ = reinterpret_cast<std::uint64_t (*)()>(dlsym(handle_, "resource_plugin_revocations"));
    ASSERT_NE(revocations_, nullptr);
  }
  void TearDown() override {
    if (handle_ != nullptr) dlclose(handle_);
  }

  std::unique_ptr<ModuleInstance> create(HostResources* resources, std::uint64_t client = 1,
                                         const std::string& config = "{}",
                                         std::shared_ptr<const PluginLibrary> library = nullptr) {
    ModuleInstanceConfig c;
    c.module_name = "resources";
    c.module_version = "1.0.0";
    c.client_id = client;
    c.config_json = config;
    c.log = [this](int level, std::string_view message) {
      if (level == AGILEOS_MODULE_LOG_INFO) events_.emplace_back(message);
    };
    std::string error;
    auto instance =
        ModuleInstance::create(library ? library : library_, std::move(c), memory_, &error, resources);
    EXPECT_NE(instance, nullptr) << error;
    return instance;
  }

  bool hasEvent(const std::string& part) const {
    for (const std::string& event : events_) {
      if (event.find(part) != std::string::npos) return true;
    }
    return false;
  }

  std::vector<std::string> events_;
  FakeProtectedMemory memory_{&events_};
  FakeHostResources resources_{&events_};
  std::shared_ptr<const PluginLibrary> library_;
  void* handle_ = nullptr;
  std::uint64_t (*revocations_)() = nullptr;
};

// ---- Device constants ----

TEST_F(ModuleInstanceResourcesTest, PublishedConstantsAreReadable) {
  auto instance = create(&resources_);
  Plugin plugin(*instance);
  const std::string longest(AGILEOS_MODULE_MAX_CONSTANT_NAME, 'z');
  EXPECT_EQ(plugin.publish("queue_base", 0xF0000001000ull), AGILEOS_MODULE_OK);
  EXPECT_EQ(plugin.publish("Depth_9", 7), AGILEOS_MODULE_OK);
  EXPECT_EQ(plugin.publish(longest, 48), AGILEOS_MODULE_OK);
  const std::map<std::string, std::uint64_t> expected = {
      {"queue_base", 0xF0000001000ull}, {"Depth_9", 7}, {longest, 48}};
  EXPECT_EQ(instance->deviceConstants(), expected);
  EXPECT_EQ(resources_.calls(), 0u);
}

TEST_F(ModuleInstanceResourcesTest, InvalidConstantNamesAreRefused) {
  auto instance = create(&resources_);
  Plugin plugin(*instance);
  const std::string names[] = {"",         std::string(AGILEOS_MODULE_MAX_CONSTANT_NAME + 1, 'a'),
                               "bad-name", "with space",
                               "a.b",      "caf\xc3\xa9",
                               "tab\t",    std::string(64, 'b')};
  for (const std::string& name : names) {
    SCOPED_TRACE("name '" + name + "'");
    EXPECT_EQ(plugin.publish(name, 1), AGILEOS_MODULE_EINVAL);
  }
  EXPECT_TRUE(instance->deviceConstants().empty());
}

TEST_F(ModuleInstanceResourcesTest, RepublishingReplacesTheValue) {
  auto instance = create(&resources_);
  Plugin plugin(*instance);
  ASSERT_EQ(plugin.publish("doorbell", 1), AGILEOS_MODULE_OK);
  ASSERT_EQ(plugin.publish("other", 5), AGILEOS_MODULE_OK);
  ASSERT_EQ(plugin.publish("doorbell", 0xFFFFFFFFFFFFFFFFull), AGILEOS_MODULE_OK);
  const std::map<std::string, std::uint64_t> expected = {{"doorbell", 0xFFFFFFFFFFFFFFFFull}, {"other", 5}};
  EXPECT_EQ(instance->deviceConstants(), expected);
}

TEST_F(ModuleInstanceResourcesTest, ConstantsAreReadableFromAnotherThread) {
  auto instance = create(&resources_);
  Plugin plugin(*instance);
  ASSERT_EQ(plugin.publish("seen", 42), AGILEOS_MODULE_OK);
  std::map<std::string, std::uint64_t> seen;
  std::thread reader([&] { seen = instance->deviceConstants(); });
  reader.join();
  EXPECT_EQ(seen, (std::map<std::string, std::uint64_t>{{"seen", 42}}));
}

// ---- export_protected ----

TEST_F(ModuleInstanceResourcesTest, ExportsTheInstancesOwnAllocation) {
  auto instance = create(&resources_);
  Plugin plugin(*instance);
  const Export exported = plugin.exportProtected(100, 0);
  ASSERT_EQ(exported.alloc_code, AGILEOS_MODULE_OK);
  EXPECT_EQ(exported.export_code, AGILEOS_MODULE_OK);
  EXPECT_EQ(exported.fd_bytes, static_cast<std::int64_t>(kProtectedExportBytes));  // the fake's descriptor
  EXPECT_EQ(resources_.exported_protected, std::vector<std::uint64_t>{exported.allocation});
}

TEST_F(ModuleInstanceResourcesTest, ExportOfAnythingButAnOwnAllocationStartIsRefused) {
  auto other = create(&resources_, 2);
  auto instance = create(&resources_, 1);
  Plugin other_plugin(*other);
  Plugin plugin(*instance);
  const Export others = other_plugin.exportProtected(4096, 0);  // client 2's allocation, exported
  ASSERT_EQ(others.export_code, AGILEOS_MODULE_OK);
  const std::size_t exports = resources_.exported_protected.size();

  const Export inside = plugin.exportProtected(4096, 16);  // own allocation, not its start
  ASSERT_EQ(inside.alloc_code, AGILEOS_MODULE_OK);
  EXPECT_EQ(inside.export_code, AGILEOS_MODULE_EPERM);
  EXPECT_EQ(plugin.exportProtected(0, others.allocation).export_code, AGILEOS_MODULE_EPERM);
  EXPECT_EQ(plugin.exportProtected(0, 0).export_code, AGILEOS_MODULE_EPERM);
  EXPECT_EQ(plugin.exportProtected(0, kUserBase).export_code, AGILEOS_MODULE_EPERM);
  // A freed allocation of its own is no longer its own.
  const Export freed = plugin.exportProtected(64, 0);
  ASSERT_EQ(freed.export_code, AGILEOS_MODULE_OK);
  ASSERT_EQ(plugin.freeProtected(freed.allocation), AGILEOS_MODULE_OK);
  EXPECT_EQ(plugin.exportProtected(0, freed.allocation).export_code, AGILEOS_MODULE_EPERM);
  EXPECT_EQ(resources_.exported_protected.size(), exports + 1);  // only the live, own start
}

// ---- map_io / unmap_io ----

TEST_F(ModuleInstanceResourcesTest, MapIoPassesTheRequestOn) {
  auto instance = create(&resources_);
  Plugin plugin(*instance);
  const Mapped device = plugin.mapIo(8192, 4096, 4096, AGILEOS_MODULE_IO_DEVICE_MEMORY);
  ASSERT_EQ(device.code, AGILEOS_MODULE_OK);
  const Mapped plain = plugin.mapIo(3 * 4096, 0, 100, 0);
  ASSERT_EQ(plain.code, AGILEOS_MODULE_OK);
  EXPECT_EQ(device.address, FakeHostResources::kFirstAddress);
  EXPECT_EQ(plain.address, FakeHostResources::kFirstAddress + 0x10000);
  ASSERT_EQ(resources_.map_calls.size(), 2u);
  EXPECT_EQ(resources_.map_calls[0].file_bytes, 8192);  // the plugin's memfd, still open during the call
  EXPECT_EQ(resources_.map_calls[0].offset, 4096u);
  EXPECT_EQ(resources_.map_calls[0].bytes, 4096u);
  EXPECT_TRUE(resources_.map_calls[0].device_memory);
  EXPECT_EQ(resources_.map_calls[1].file_bytes, 3 * 4096);
  EXPECT_EQ(resources_.map_calls[1].bytes, 100u);
  EXPECT_FALSE(resources_.map_calls[1].device_memory);
  EXPECT_EQ(instance->liveIoMappings(), 2u);
}

TEST_F(ModuleInstanceResourcesTest, MapIoRefusesBadArgumentsBeforeTheHost) {
  auto instance = create(&resources_);
  Plugin plugin(*instance);
  EXPECT_EQ(plugin.mapIo(4096, 0, 4096, 2).code, AGILEOS_MODULE_EINVAL);
  EXPECT_EQ(plugin.mapIo(4096, 0, 4096, AGILEOS_MODULE_IO_DEVICE_MEMORY | 0x80000000u).code,
            AGILEOS_MODULE_EINVAL);
  EXPECT_EQ(plugin.mapIo(4096, 0, 0, 0).code, AGILEOS_MODULE_EINVAL);                      // no bytes
  EXPECT_EQ(plugin.mapIo(4096, 0, 4096, 0, /*bad_fd=*/true).code, AGILEOS_MODULE_EINVAL);  // fd -1
  EXPECT_TRUE(resources_.map_calls.empty());
  EXPECT_EQ(instance->liveIoMappings(), 0u);
}

TEST_F(ModuleInstanceResourcesTest, AFailedHostMappingIsNotRecorded) {
  auto instance = create(&resources_);
  Plugin plugin(*instance);
  resources_.map_result = AGILEOS_MODULE_ERANGE;
  EXPECT_EQ(plugin.mapIo(4096, 0, 8192, 0).code, AGILEOS_MODULE_ERANGE);
  EXPECT_EQ(resources_.map_calls.size(), 1u);
  EXPECT_EQ(instance->liveIoMappings(), 0u);
  instance->shutdown();
  EXPECT_TRUE(resources_.unmap_calls.empty());
}

TEST_F(ModuleInstanceResourcesTest, UnmapIoUndoesOnlyTheInstancesOwnMappings) {
  auto other = create(&resources_, 2);
  auto instance = create(&resources_, 1);
  Plugin other_plugin(*other);
  Plugin plugin(*instance);
  const Mapped others = other_plugin.mapIo(4096, 0, 4096, 0);
  const Mapped mine = plugin.mapIo(4096, 0, 4096, 0);
  ASSERT_EQ(others.code, AGILEOS_MODULE_OK);
  ASSERT_EQ(mine.code, AGILEOS_MODULE_OK);

  EXPECT_EQ(plugin.unmapIo(others.address), AGILEOS_MODULE_EPERM);  // client 2's
  EXPECT_EQ(plugin.unmapIo(mine.address + 4096), AGILEOS_MODULE_EPERM);
  EXPECT_EQ(plugin.unmapIo(0xF0000F00000ull), AGILEOS_MODULE_EPERM);  // never mapped
  EXPECT_TRUE(resources_.unmap_calls.empty());

  EXPECT_EQ(plugin.unmapIo(mine.address), AGILEOS_MODULE_OK);
  EXPECT_EQ(resources_.unmap_calls, std::vector<std::uint64_t>{mine.address});
  EXPECT_EQ(instance->liveIoMappings(), 0u);
  EXPECT_EQ(plugin.unmapIo(mine.address), AGILEOS_MODULE_EPERM);  // twice
  EXPECT_EQ(resources_.unmap_calls.size(), 1u);
  EXPECT_EQ(other->liveIoMappings(), 1u);
  EXPECT_EQ(resources_.mapped, std::set<std::uint64_t>{others.address});
}

TEST_F(ModuleInstanceResourcesTest, MappingsLeftAtCleanupAreUnmappedAfterIt) {
  auto instance = create(&resources_);
  Plugin plugin(*instance);
  const Mapped first = plugin.mapIo(4096, 0, 4096, 0);
  const Mapped second = plugin.mapIo(8192, 0, 8192, AGILEOS_MODULE_IO_DEVICE_MEMORY);
  const Mapped third = plugin.mapIo(4096, 0, 4096, 0);
  ASSERT_EQ(third.code, AGILEOS_MODULE_OK);
  ASSERT_EQ(plugin.unmapIo(third.address), AGILEOS_MODULE_OK);
  events_.clear();
  instance->shutdown();
  EXPECT_EQ(instance->liveIoMappings(), 0u);
  EXPECT_TRUE(resources_.mapped.empty());
  // The plugin's cleanup ran first, then the two mappings it left were unmapped (in either order).
  ASSERT_FALSE(events_.empty());
  EXPECT_EQ(events_[0], "cleanup");
  std::set<std::string> unmaps;
  for (const std::string& event : events_) {
    if (event.rfind("unmap ", 0) == 0) unmaps.insert(event);
  }
  EXPECT_EQ(unmaps, (std::set<std::string>{"unmap " + std::to_string(first.address),
                                           "unmap " + std::to_string(second.address)}));
  EXPECT_EQ(resources_.unmap_calls.size(), 3u);  // the plugin's own unmap and the two left
  EXPECT_TRUE(hasEvent("unmapped 2 I/O mapping(s)"));
}

TEST_F(ModuleInstanceResourcesTest, MappingsThePluginUnmapsInCleanupAreNotUnmappedTwice) {
  auto instance = create(&resources_, 1, "tidy");
  Plugin plugin(*instance);
  ASSERT_EQ(plugin.mapIo(4096, 0, 4096, 0).code, AGILEOS_MODULE_OK);
  ASSERT_EQ(plugin.mapIo(4096, 0, 4096, 0).code, AGILEOS_MODULE_OK);
  instance->shutdown();
  EXPECT_EQ(resources_.unmap_calls.size(), 2u);
  EXPECT_TRUE(resources_.mapped.empty());
  EXPECT_EQ(instance->liveIoMappings(), 0u);
}

TEST_F(ModuleInstanceResourcesTest, AMappingOfAFailedInitIsUnmapped) {
  ModuleInstanceConfig config;
  config.module_name = "resources";
  config.client_id = 4;
  config.config_json = "map_then_fail";
  std::string error;
  auto instance = ModuleInstance::create(library_, std::move(config), memory_, &error, &resources_);
  EXPECT_EQ(instance, nullptr);
  EXPECT_NE(error.find("failed with code -5"), std::string::npos) << error;
  ASSERT_EQ(resources_.map_calls.size(), 1u);
  EXPECT_EQ(resources_.unmap_calls, std::vector<std::uint64_t>{FakeHostResources::kFirstAddress});
  EXPECT_TRUE(resources_.mapped.empty());
}

// ---- register_dma / unregister_dma / export_dma ----

TEST_F(ModuleInstanceResourcesTest, RegisterDmaNeedsAnExactUserAllocation) {
  auto instance = create(&resources_);
  Plugin plugin(*instance);
  resources_.user_allocations.insert({kUserBase + 0x100, 4096});

  const Registered refused = plugin.registerDma(kUserBase + 0x100, 4095);
  EXPECT_EQ(refused.code, AGILEOS_MODULE_EPERM);
  EXPECT_EQ(plugin.registerDma(kUserBase + 0x200, 4096).code, AGILEOS_MODULE_EPERM);
  EXPECT_EQ(instance->liveDmaRegistrations(), 0u);
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> asked = {{kUserBase + 0x100, 4095},
                                                                      {kUserBase + 0x200, 4096}};
  EXPECT_EQ(resources_.checks, asked);

  EXPECT_EQ(plugin.registerDma(kUserBase + 0x100, 0).code, AGILEOS_MODULE_EINVAL);  // not asked
  EXPECT_EQ(resources_.checks.size(), 2u);

  const Registered accepted = plugin.registerDma(kUserBase + 0x100, 4096);
  ASSERT_EQ(accepted.code, AGILEOS_MODULE_OK);
  EXPECT_NE(accepted.registration, 0u);
  EXPECT_EQ(instance->liveDmaRegistrations(), 1u);
  const Registered again = plugin.registerDma(kUserBase + 0x100, 4096);  // a second registration
  ASSERT_EQ(again.code, AGILEOS_MODULE_OK);
  EXPECT_NE(again.registration, accepted.registration);
  EXPECT_EQ(instance->liveDmaRegistrations(), 2u);
}

TEST_F(ModuleInstanceResourcesTest, ExportDmaOnlyForALiveRegistration) {
  auto instance = create(&resources_);
  Plugin plugin(*instance);
  resources_.user_allocations.insert({kUserBase, 1u << 20});
  const Registered registered = plugin.registerDma(kUserBase, 1u << 20);
  ASSERT_EQ(registered.code, AGILEOS_MODULE_OK);

  const DmaExport exported = plugin.exportDma(registered.registration);
  ASSERT_EQ(exported.code, AGILEOS_MODULE_OK);
  EXPECT_EQ(exported.handle_bytes, kDmaHandleBytes);
  EXPECT_EQ(exported.offset, kDmaOffset);
  EXPECT_EQ(exported.fd_bytes, static_cast<std::int64_t>(kDmaHandleBytes));
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> range = {{kUserBase, 1u << 20}};
  EXPECT_EQ(resources_.exported_user, range);  // exactly the registered range

  EXPECT_EQ(plugin.exportDma(registered.registration + 1).code, AGILEOS_MODULE_EPERM);
  EXPECT_EQ(plugin.exportDma(0).code, AGILEOS_MODULE_EPERM);
  EXPECT_EQ(plugin.unregisterDma(registered.registration + 1), AGILEOS_MODULE_EPERM);
  EXPECT_EQ(instance->liveDmaRegistrations(), 1u);

  EXPECT_EQ(plugin.unregisterDma(registered.registration), AGILEOS_MODULE_OK);
  EXPECT_EQ(instance->liveDmaRegistrations(), 0u);
  EXPECT_EQ(plugin.exportDma(registered.registration).code, AGILEOS_MODULE_EPERM);
  EXPECT_EQ(plugin.unregisterDma(registered.registration), AGILEOS_MODULE_EPERM);
  EXPECT_EQ(resources_.exported_user.size(), 1u);
}

TEST_F(ModuleInstanceResourcesTest, RegistrationsAreTheInstancesOwn) {
  auto owner = create(&resources_, 1);
  auto other = create(&resources_, 2);
  Plugin owner_plugin(*owner);
  Plugin other_plugin(*other);
  resources_.user_allocations.insert({kUserBase, 256});
  const Registered registered = owner_plugin.registerDma(kUserBase, 256);
  ASSERT_EQ(registered.code, AGILEOS_MODULE_OK);
  EXPECT_EQ(other_plugin.exportDma(registered.registration).code, AGILEOS_MODULE_EPERM);
  EXPECT_EQ(other_plugin.unregisterDma(registered.registration), AGILEOS_MODULE_EPERM);
  EXPECT_TRUE(resources_.exported_user.empty());
  EXPECT_EQ(owner->liveDmaRegistrations(), 1u);
  EXPECT_EQ(owner_plugin.exportDma(registered.registration).code, AGILEOS_MODULE_OK);
}

TEST_F(ModuleInstanceResourcesTest, RevokeDmaForDropsTheRegistrationsOfThatAddressAndTellsThePlugin) {
  auto instance = create(&resources_);
  Plugin plugin(*instance);
  const std::uint64_t freed = kUserBase + 0x1000;
  const std::uint64_t kept = kUserBase + 0x2000;
  resources_.user_allocations.insert({freed, 512});
  resources_.user_allocations.insert({kept, 512});
  const Registered first = plugin.registerDma(freed, 512);
  const Registered on_kept = plugin.registerDma(kept, 512);
  const Registered second = plugin.registerDma(freed, 512);
  ASSERT_EQ(first.code, AGILEOS_MODULE_OK);
  ASSERT_EQ(on_kept.code, AGILEOS_MODULE_OK);
  ASSERT_EQ(second.code, AGILEOS_MODULE_OK);
  const std::uint64_t before = revocations_();

  EXPECT_EQ(instance->revokeDmaFor(kUserBase + 0x3000), 0u);  // registered nowhere
  EXPECT_EQ(instance->revokeDmaFor(freed + 256), 0u);         // inside, not the start
  EXPECT_EQ(revocations_(), before);
  EXPECT_EQ(instance->liveDmaRegistrations(), 3u);

  EXPECT_EQ(instance->revokeDmaFor(freed), 2u);
  EXPECT_EQ(revocations_(), before + 2);
  const Revocations told = plugin.revoked();
  EXPECT_EQ(std::set<std::uint64_t>(told.ids.begin(), told.ids.end()),
            (std::set<std::uint64_t>{first.registration, second.registration}));
  EXPECT_EQ(told.ids.size(), 2u);
  // Callbacks work inside host_module_dma_revoked, and the registration is already gone there.
  EXPECT_EQ(told.unregister_code, AGILEOS_MODULE_EPERM);
  EXPECT_EQ(instance->liveDmaRegistrations(), 1u);
  EXPECT_EQ(plugin.exportDma(first.registration).code, AGILEOS_MODULE_EPERM);
  EXPECT_EQ(plugin.exportDma(second.registration).code, AGILEOS_MODULE_EPERM);
  EXPECT_EQ(plugin.exportDma(on_kept.registration).code, AGILEOS_MODULE_OK);
  EXPECT_TRUE(hasEvent("revoked 2 DMA registration(s) of freed memory"));

  EXPECT_EQ(instance->revokeDmaFor(freed), 0u);  // nothing left there
  EXPECT_EQ(revocations_(), before + 2);
}

TEST_F(ModuleInstanceResourcesTest, RevokeDmaForWorksWithoutTheOptionalExport) {
  std::string error;
  auto library = PluginLibrary::open(AGILEOS_TEST_RESOURCE_NOREVOKE_PLUGIN, &error);
  ASSERT_NE(library, nullptr) << error;
  EXPECT_EQ(library->dmaRevoked(), nullptr);
  auto instance = create(&resources_, 1, "{}", library);
  Plugin plugin(*instance);
  resources_.user_allocations.insert({kUserBase, 256});
  const Registered registered = plugin.registerDma(kUserBase, 256);
  ASSERT_EQ(registered.code, AGILEOS_MODULE_OK);
  EXPECT_EQ(instance->revokeDmaFor(kUserBase), 1u);
  EXPECT_EQ(instance->liveDmaRegistrations(), 0u);
  EXPECT_EQ(plugin.exportDma(registered.registration).code, AGILEOS_MODULE_EPERM);
}

TEST_F(ModuleInstanceResourcesTest, RegistrationsLeftAtCleanupAreDroppedWithoutTellingThePlugin) {
  auto instance = create(&resources_);
  Plugin plugin(*instance);
  resources_.user_allocations.insert({kUserBase, 256});
  ASSERT_EQ(plugin.registerDma(kUserBase, 256).code, AGILEOS_MODULE_OK);
  ASSERT_EQ(plugin.registerDma(kUserBase, 256).code, AGILEOS_MODULE_OK);
  const std::uint64_t before = revocations_();
  instance->shutdown();
  EXPECT_EQ(instance->liveDmaRegistrations(), 0u);
  EXPECT_TRUE(hasEvent("revoked 2 DMA registration(s)"));
  // The plugin's instance is gone after cleanup: nothing may call into it any more.
  EXPECT_EQ(instance->revokeDmaFor(kUserBase), 0u);
  EXPECT_EQ(revocations_(), before);
}

// ---- Refusals common to every resource callback ----

TEST_F(ModuleInstanceResourcesTest, WithoutHostResourcesTheResourceCallbacksAreNotSupported) {
  auto instance = create(nullptr);
  Plugin plugin(*instance);
  const Export exported = plugin.exportProtected(4096, 0);
  ASSERT_EQ(exported.alloc_code, AGILEOS_MODULE_OK);  // protected memory does not need them
  EXPECT_EQ(exported.export_code, AGILEOS_MODULE_ENOTSUP);
  EXPECT_EQ(plugin.mapIo(4096, 0, 4096, 0).code, AGILEOS_MODULE_ENOTSUP);
  EXPECT_EQ(plugin.registerDma(kUserBase, 256).code, AGILEOS_MODULE_ENOTSUP);
  // Nothing can have been mapped or registered; the undoing callbacks are unsupported too.
  for (int code : {plugin.unmapIo(FakeHostResources::kFirstAddress), plugin.unregisterDma(1),
                   plugin.exportDma(1).code}) {
    EXPECT_EQ(code, AGILEOS_MODULE_ENOTSUP);
  }
  EXPECT_EQ(instance->liveIoMappings(), 0u);
  EXPECT_EQ(instance->liveDmaRegistrations(), 0u);
  EXPECT_EQ(plugin.publish("still_fine", 3), AGILEOS_MODULE_OK);  // needs no host resources
  EXPECT_EQ(instance->deviceConstants().at("still_fine"), 3u);
}

TEST_F(ModuleInstanceResourcesTest, CallbacksFromAnotherThreadAreRefused) {
  auto instance = create(&resources_);
  Plugin plugin(*instance);
  resources_.user_allocations.insert({kUserBase, 256});
  // Something of the instance's own for unmap_io, unregister_dma and export_dma to name.
  ASSERT_EQ(plugin.mapIo(4096, 0, 4096, 0).code, AGILEOS_MODULE_OK);
  const Registered registered = plugin.registerDma(kUserBase, 256);
  ASSERT_EQ(registered.code, AGILEOS_MODULE_OK);
  ASSERT_EQ(registered.registration, 1u);  // the id the plugin's thread names
  const std::size_t calls = resources_.calls();
  for (std::uint32_t which = 1; which <= 7; ++which) {
    SCOPED_TRACE(which);
    EXPECT_EQ(plugin.fromThread(which), AGILEOS_MODULE_EPERM);
  }
  EXPECT_EQ(resources_.calls(), calls);
  EXPECT_TRUE(instance->deviceConstants().empty());
  EXPECT_EQ(instance->liveIoMappings(), 1u);
  EXPECT_EQ(instance->liveDmaRegistrations(), 1u);
}

TEST_F(ModuleInstanceResourcesTest, NullOutputsAreRefused) {
  auto instance = create(&resources_);
  Plugin plugin(*instance);
  resources_.user_allocations.insert({kUserBase, 256});
  ASSERT_EQ(plugin.registerDma(kUserBase, 256).code, AGILEOS_MODULE_OK);  // registration 1, for export_dma
  const std::size_t calls = resources_.calls();
  const std::vector<int> codes = plugin.nullOutputs();
  EXPECT_EQ(codes, std::vector<int>(5, AGILEOS_MODULE_EINVAL));
  EXPECT_EQ(resources_.calls(), calls);
  EXPECT_EQ(instance->liveIoMappings(), 0u);
  EXPECT_EQ(instance->liveDmaRegistrations(), 1u);
}

}  // namespace
}  // namespace agileos::modules
