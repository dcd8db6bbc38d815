// WorkerHostResources (worker/protected_modules/) on a real MemoryManager over FakeGpuBackend: I/O mappings
// are real mmaps of the file in this process, placed by the memory manager inside the MMIO window,
// registered with the (fake) GPU and undone completely; the DMA checks and exports accept exactly
// one live allocation of the client and nothing else. The mapping tests skip in sanitizer builds,
// where the MMIO window is the sanitizer's memory (support/mmio_window.h).
#include "worker/protected_modules/worker_host_resources.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include "agileos/module_abi.h"
#include "memmgr/address_layout.h"
#include "tests/cpu/worker/support/mmio_window.h"
#include "worker/testing/fake_gpu/fake_gpu_backend.h"

namespace agileos::worker::protected_modules {
namespace {

using agileos::worker::testing::addressRangeIsFree;

constexpr memmgr::ClientId kClient = 7;
constexpr memmgr::ClientId kOtherClient = 8;

std::uint64_t pageSize() { return static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)); }

// A memfd of `bytes` (closed with the object).
class MemFd {
 public:
  explicit MemFd(std::uint64_t bytes) : fd_(::memfd_create("worker-host-resources-test", MFD_CLOEXEC)) {
    EXPECT_GE(fd_, 0);
    EXPECT_EQ(::ftruncate(fd_, static_cast<off_t>(bytes)), 0);
  }
  ~MemFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  MemFd(const MemFd&) = delete;
  MemFd& operator=(const MemFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// A separate shared mapping of [offset, offset + bytes) of a file, to see what the other one did.
class View {
 public:
  View(int fd, std::uint64_t offset, std::uint64_t bytes) : bytes_(bytes) {
    data_ = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(offset));
    EXPECT_NE(data_, MAP_FAILED);
  }
  ~View() {
    if (data_ != MAP_FAILED) ::munmap(data_, bytes_);
  }
  View(const View&) = delete;
  View& operator=(const View&) = delete;
  char* data() const { return data_ == MAP_FAILED ? nullptr : static_cast<char*>(data_); }

 private:
  void* data_;
  std::uint64_t bytes_;
};

std::uint64_t fileSize(int fd) {
  struct stat status {};
  EXPECT_EQ(::fstat(fd, &status), 0);
  return static_cast<std::uint64_t>(status.st_size);
}

bool insideMmioWindow(std::uint64_t address, std::uint64_t bytes) {
  return address >= memmgr::kMmioWindow.begin && bytes <= memmgr::kMmioWindow.end() - address;
}

class WorkerHostResourcesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_EQ(gpu_.init(0, &error), CUDA_SUCCESS) << error;
    memory_ = memmgr::MemoryManager::create(gpu_, &error);
    ASSERT_NE(memory_, nullptr) << error;
    resources_ = std::make_unique<WorkerHostResources>(*memory_, gpu_, kClient);
  }
  void TearDown() override {
    resources_.reset();
    EXPECT_EQ(gpu_.registeredHostRanges(), 0u);
    memory_.reset();
    EXPECT_TRUE(gpu_.misuse().empty()) << ::testing::PrintToString(gpu_.misuse());
  }

  // Maps [offset, offset + bytes) of fd or fails the test; returns its address (0 on failure).
  std::uint64_t map(int fd, std::uint64_t offset, std::uint64_t bytes, bool deviceMemory = false) {
    std::uint64_t address = 0;
    EXPECT_EQ(resources_->mapIo(fd, offset, bytes, deviceMemory, &address), AGILEOS_MODULE_OK);
    return address;
  }

  memmgr::DevicePtr allocate(memmgr::ClientId client, std::uint64_t size) {
    memmgr::DevicePtr p = 0;
    EXPECT_EQ(memory_->allocate(client, size, &p), CUDA_SUCCESS);
    return p;
  }

  FakeGpuBackend gpu_;
  std::unique_ptr<memmgr::MemoryManager> memory_;
  std::unique_ptr<WorkerHostResources> resources_;
};

// ---- I/O mappings ----

TEST_F(WorkerHostResourcesTest, AMappingIsInTheMmioWindowAndReachesTheFile) {
  AGILEOS_SKIP_WITHOUT_MMIO_WINDOW();
  const std::uint64_t page = pageSize();
  MemFd file(3 * page);
  std::uint64_t address = 0;
  {
    // Map through a second descriptor of the same file and close it at once: the mapping keeps
    // its own reference (a plugin may close its descriptor after map_io).
    const int duplicate = ::dup(file.get());
    ASSERT_GE(duplicate, 0);
    ASSERT_EQ(resources_->mapIo(duplicate, 0, 3 * page, true, &address), AGILEOS_MODULE_OK);
    ::close(duplicate);
  }
  EXPECT_TRUE(insideMmioWindow(address, 3 * page)) << std::hex << address;
  EXPECT_EQ(address % page, 0u);
  EXPECT_EQ(resources_->liveMappings(), 1u);
  EXPECT_EQ(gpu_.registeredHostRanges(), 1u);

  View view(file.get(), 0, 3 * page);
  ASSERT_NE(view.data(), nullptr);
  char* mapped = reinterpret_cast<char*>(address);
  std::memcpy(mapped + page + 5, "through the I/O mapping", 24);
  EXPECT_STREQ(view.data() + page + 5, "through the I/O mapping");
  std::memcpy(view.data() + 2 * page, "through the file", 17);
  EXPECT_STREQ(mapped + 2 * page, "through the file");
}

TEST_F(WorkerHostResourcesTest, AMappingStartsAtItsOffsetInTheFile) {
  AGILEOS_SKIP_WITHOUT_MMIO_WINDOW();
  const std::uint64_t page = pageSize();
  MemFd file(4 * page);
  const std::uint64_t address = map(file.get(), 2 * page, 100);
  ASSERT_NE(address, 0u);
  View view(file.get(), 0, 4 * page);
  ASSERT_NE(view.data(), nullptr);
  std::memcpy(view.data() + 2 * page, "page two", 9);
  EXPECT_STREQ(reinterpret_cast<const char*>(address), "page two");
}

TEST_F(WorkerHostResourcesTest, MappingsDoNotOverlap) {
  AGILEOS_SKIP_WITHOUT_MMIO_WINDOW();
  const std::uint64_t page = pageSize();
  MemFd small(page);
  MemFd large(40 * page);
  const std::uint64_t first = map(small.get(), 0, 1);
  const std::uint64_t second = map(large.get(), 0, 40 * page);
  const std::uint64_t third = map(small.get(), 0, page);
  ASSERT_NE(first, 0u);
  ASSERT_NE(second, 0u);
  ASSERT_NE(third, 0u);
  const std::pair<std::uint64_t, std::uint64_t> ranges[] = {
      {first, page}, {second, 40 * page}, {third, page}};
  for (const auto& [a, a_bytes] : ranges) {
    EXPECT_TRUE(insideMmioWindow(a, a_bytes));
    for (const auto& [b, b_bytes] : ranges) {
      if (a == b) continue;
      EXPECT_TRUE(a + a_bytes <= b || b + b_bytes <= a) << std::hex << a << " " << b;
    }
  }
  // Each reaches its own file.
  *reinterpret_cast<volatile char*>(first) = 'f';
  *reinterpret_cast<volatile char*>(second + 39 * page) = 's';
  View small_view(small.get(), 0, page);
  View large_view(large.get(), 0, 40 * page);
  ASSERT_NE(small_view.data(), nullptr);
  ASSERT_NE(large_view.data(), nullptr);
  EXPECT_EQ(small_view.data()[0], 'f');
  EXPECT_EQ(*reinterpret_cast<volatile char*>(third), 'f');  // the same file as `first`
  EXPECT_EQ(large_view.data()[39 * page], 's');
  EXPECT_EQ(resources_->liveMappings(), 3u);
}

TEST_F(WorkerHostResourcesTest, ARangePastTheEndOfTheFileIsRefused) {
  AGILEOS_SKIP_WITHOUT_MMIO_WINDOW();
  const std::uint64_t page = pageSize();
  MemFd file(page);
  std::uint64_t address = 0;
  EXPECT_EQ(resources_->mapIo(file.get(), 0, 2 * page, false, &address), AGILEOS_MODULE_ERANGE);
  EXPECT_EQ(resources_->mapIo(file.get(), 0, page + 1, false, &address), AGILEOS_MODULE_ERANGE);
  EXPECT_EQ(resources_->mapIo(file.get(), page, 1, false, &address), AGILEOS_MODULE_ERANGE);
  EXPECT_EQ(resources_->liveMappings(), 0u);
  EXPECT_EQ(gpu_.callCount(FakeGpuCall::kHostRegister), 0u);
  EXPECT_TRUE(addressRangeIsFree(memmgr::kMmioWindow.begin, 2 * page));
}

TEST_F(WorkerHostResourcesTest, BadArgumentsAreRefused) {
  const std::uint64_t page = pageSize();
  MemFd file(4 * page);
  std::uint64_t address = 0;
  EXPECT_EQ(resources_->mapIo(file.get(), 100, page, false, &address), AGILEOS_MODULE_EINVAL);  // unaligned
  EXPECT_EQ(resources_->mapIo(file.get(), page / 2, page, false, &address), AGILEOS_MODULE_EINVAL);
  EXPECT_EQ(resources_->mapIo(file.get(), 0, 0, false, &address), AGILEOS_MODULE_EINVAL);  // no bytes
  EXPECT_EQ(resources_->mapIo(file.get(), std::numeric_limits<std::uint64_t>::max() / page * page, page,
                              false, &address),
            AGILEOS_MODULE_EINVAL);  // the range wraps
  EXPECT_EQ(resources_->mapIo(file.get(), 0, memmgr::kMmioWindow.size + 1, false, &address),
            AGILEOS_MODULE_EINVAL);  // larger than the window
  EXPECT_EQ(resources_->mapIo(-1, 0, page, false, &address), AGILEOS_MODULE_EINVAL);  // not a descriptor
  EXPECT_EQ(resources_->liveMappings(), 0u);
  EXPECT_EQ(gpu_.callCount(FakeGpuCall::kHostRegister), 0u);
}

TEST_F(WorkerHostResourcesTest, AnUnmappableDescriptorGivesItsPlacementBack) {
  AGILEOS_SKIP_WITHOUT_MMIO_WINDOW();
  const std::uint64_t page = pageSize();
  int pipe_ends[2];
  ASSERT_EQ(::pipe2(pipe_ends, O_CLOEXEC), 0);
  std::uint64_t address = 0;
  EXPECT_EQ(resources_->mapIo(pipe_ends[0], 0, page, false, &address), AGILEOS_MODULE_EINVAL);
  ::close(pipe_ends[0]);
  ::close(pipe_ends[1]);
  EXPECT_EQ(resources_->liveMappings(), 0u);
  MemFd file(page);
  EXPECT_EQ(map(file.get(), 0, page), memmgr::kMmioWindow.begin);  // the placement is free again
}

TEST_F(WorkerHostResourcesTest, AFailedGpuRegistrationIsUndone) {
  AGILEOS_SKIP_WITHOUT_MMIO_WINDOW();
  const std::uint64_t page = pageSize();
  MemFd file(page);
  gpu_.failNext(FakeGpuCall::kHostRegister, CUDA_ERROR_OUT_OF_MEMORY);
  std::uint64_t address = 0;
  EXPECT_EQ(resources_->mapIo(file.get(), 0, page, false, &address), AGILEOS_MODULE_EIO);
  EXPECT_EQ(address, 0u);
  EXPECT_EQ(resources_->liveMappings(), 0u);
  EXPECT_EQ(gpu_.registeredHostRanges(), 0u);
  EXPECT_TRUE(addressRangeIsFree(memmgr::kMmioWindow.begin, page));  // unmapped
  EXPECT_EQ(map(file.get(), 0, page), memmgr::kMmioWindow.begin);    // and placeable again
}

TEST_F(WorkerHostResourcesTest, AForeignMappingAtThePlacementIsLeftAloneAndAvoided) {
  AGILEOS_SKIP_WITHOUT_MMIO_WINDOW();
  const std::uint64_t page = pageSize();
  // The premise: a fresh memory manager places the first I/O range at the window's start.
  const std::optional<memmgr::DevicePtr> probe = memory_->placeIoRange(kOtherClient, page);
  ASSERT_EQ(probe, memmgr::kMmioWindow.begin);
  ASSERT_TRUE(memory_->releaseIoRange(kOtherClient, *probe));

  void* want = reinterpret_cast<void*>(memmgr::kMmioWindow.begin);
  void* squatter =
      ::mmap(want, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  ASSERT_EQ(squatter, want);
  std::memset(squatter, 0x5A, page);

  MemFd file(page);
  std::uint64_t address = 0;
  ASSERT_EQ(resources_->mapIo(file.get(), 0, page, false, &address), AGILEOS_MODULE_OK);
  EXPECT_NE(address, memmgr::kMmioWindow.begin);
  EXPECT_TRUE(insideMmioWindow(address, page));
  std::memset(reinterpret_cast<void*>(address), 0x11, page);
  View view(file.get(), 0, page);
  ASSERT_NE(view.data(), nullptr);
  EXPECT_EQ(view.data()[page - 1], 0x11);

  const auto untouched = [&] {
    const auto* bytes = static_cast<const unsigned char*>(squatter);
    for (std::uint64_t i = 0; i < page; ++i) {
      if (bytes[i] != 0x5A) return false;
    }
    return true;
  };
  EXPECT_TRUE(untouched());
  EXPECT_EQ(resources_->unmapIo(memmgr::kMmioWindow.begin), AGILEOS_MODULE_EPERM);  // not its mapping
  EXPECT_EQ(resources_->unmapIo(address), AGILEOS_MODULE_OK);
  EXPECT_TRUE(untouched());
  resources_.reset();
  EXPECT_TRUE(untouched());  // the destructor neither
  ASSERT_EQ(::munmap(squatter, page), 0);
  // Everything was given back, the placement kept out of use included.
  EXPECT_EQ(memory_->placeIoRange(kClient, page), memmgr::kMmioWindow.begin);
}

TEST_F(WorkerHostResourcesTest, UnmapIoReleasesTheMapping) {
  AGILEOS_SKIP_WITHOUT_MMIO_WINDOW();
  const std::uint64_t page = pageSize();
  MemFd file(2 * page);
  const std::uint64_t address = map(file.get(), 0, 2 * page);
  ASSERT_NE(address, 0u);
  EXPECT_FALSE(addressRangeIsFree(address, 2 * page));
  EXPECT_EQ(resources_->unmapIo(address + page), AGILEOS_MODULE_EPERM);  // not a mapping's start
  EXPECT_EQ(resources_->unmapIo(0), AGILEOS_MODULE_EPERM);
  EXPECT_EQ(resources_->liveMappings(), 1u);

  EXPECT_EQ(resources_->unmapIo(address), AGILEOS_MODULE_OK);
  EXPECT_EQ(resources_->liveMappings(), 0u);
  EXPECT_EQ(gpu_.registeredHostRanges(), 0u);
  EXPECT_TRUE(addressRangeIsFree(address, 2 * page));
  EXPECT_EQ(resources_->unmapIo(address), AGILEOS_MODULE_EPERM);  // twice
  EXPECT_EQ(map(file.get(), 0, 2 * page), address);               // the address is reusable
}

TEST_F(WorkerHostResourcesTest, APlacementWhoseGpuUnregistrationFailedIsKeptOutOfUse) {
  AGILEOS_SKIP_WITHOUT_MMIO_WINDOW();
  const std::uint64_t page = pageSize();
  MemFd file(page);
  const std::uint64_t address = map(file.get(), 0, page);
  ASSERT_NE(address, 0u);
  gpu_.failNext(FakeGpuCall::kHostUnregister, CUDA_ERROR_UNKNOWN);
  EXPECT_EQ(resources_->unmapIo(address), AGILEOS_MODULE_EIO);
  EXPECT_EQ(resources_->liveMappings(), 0u);
  EXPECT_EQ(resources_->unmapIo(address), AGILEOS_MODULE_EPERM);  // no longer a mapping of it
  // The GPU may still hold the range: the next mapping goes elsewhere.
  const std::uint64_t next = map(file.get(), 0, page);
  EXPECT_NE(next, 0u);
  EXPECT_NE(next, address);
  ASSERT_EQ(gpu_.hostUnregister(reinterpret_cast<void*>(address)),
            CUDA_SUCCESS);  // the driver's late success
  resources_.reset();
  EXPECT_EQ(memory_->placeIoRange(kClient, page), memmgr::kMmioWindow.begin);  // given back at the end
}

TEST_F(WorkerHostResourcesTest, AnotherClientsResourcesCannotUnmapAMapping) {
  AGILEOS_SKIP_WITHOUT_MMIO_WINDOW();
  const std::uint64_t page = pageSize();
  MemFd file(page);
  const std::uint64_t address = map(file.get(), 0, page);
  ASSERT_NE(address, 0u);
  {
    WorkerHostResources other(*memory_, gpu_, kOtherClient);
    EXPECT_EQ(other.unmapIo(address), AGILEOS_MODULE_EPERM);
  }
  EXPECT_EQ(resources_->liveMappings(), 1u);
  EXPECT_FALSE(addressRangeIsFree(address, page));
  EXPECT_FALSE(memory_->releaseIoRange(kOtherClient, address));
}

TEST_F(WorkerHostResourcesTest, TheDestructorUnmapsWhatIsLeft) {
  AGILEOS_SKIP_WITHOUT_MMIO_WINDOW();
  const std::uint64_t page = pageSize();
  MemFd file(8 * page);
  const std::uint64_t first = map(file.get(), 0, page);
  const std::uint64_t second = map(file.get(), 4 * page, 4 * page, true);
  ASSERT_NE(first, 0u);
  ASSERT_NE(second, 0u);
  EXPECT_EQ(gpu_.registeredHostRanges(), 2u);
  resources_.reset();
  EXPECT_EQ(gpu_.registeredHostRanges(), 0u);
  EXPECT_TRUE(addressRangeIsFree(first, page));
  EXPECT_TRUE(addressRangeIsFree(second, 4 * page));
  // The placements went back to the memory manager too.
  EXPECT_EQ(memory_->placeIoRange(kClient, page), memmgr::kMmioWindow.begin);
}

// ---- DMA checks and exports ----

TEST_F(WorkerHostResourcesTest, CheckExactUserAllocationAcceptsExactlyALiveAllocation) {
  const memmgr::DevicePtr small = allocate(kClient, 1000);
  const memmgr::DevicePtr large = allocate(kClient, 3u << 20);
  const memmgr::DevicePtr others = allocate(kOtherClient, 1000);
  const memmgr::DevicePtr freed = allocate(kClient, 512);
  ASSERT_EQ(memory_->free(kClient, freed), CUDA_SUCCESS);

  EXPECT_EQ(resources_->checkExactUserAllocation(small, 1000), AGILEOS_MODULE_OK);
  EXPECT_EQ(resources_->checkExactUserAllocation(large, 3u << 20), AGILEOS_MODULE_OK);

  EXPECT_EQ(resources_->checkExactUserAllocation(small + 256, 1000 - 256), AGILEOS_MODULE_EPERM);
  EXPECT_EQ(resources_->checkExactUserAllocation(small, 999), AGILEOS_MODULE_EPERM);
  EXPECT_EQ(resources_->checkExactUserAllocation(small, 1001), AGILEOS_MODULE_EPERM);
  EXPECT_EQ(resources_->checkExactUserAllocation(small, 1024), AGILEOS_MODULE_EPERM);      // the slot size
  EXPECT_EQ(resources_->checkExactUserAllocation(large, 4u << 20), AGILEOS_MODULE_EPERM);  // as mapped
  EXPECT_EQ(resources_->checkExactUserAllocation(others, 1000), AGILEOS_MODULE_EPERM);
  EXPECT_EQ(resources_->checkExactUserAllocation(freed, 512), AGILEOS_MODULE_EPERM);
  EXPECT_EQ(resources_->checkExactUserAllocation(0, 0), AGILEOS_MODULE_EPERM);
}

TEST_F(WorkerHostResourcesTest, CheckExactUserAllocationRefusesProtectedMemoryAndModuleGlobals) {
  memmgr::DevicePtr protected_memory = 0;
  ASSERT_EQ(memory_->allocateProtected(kClient, 4096, &protected_memory), CUDA_SUCCESS);
  EXPECT_EQ(resources_->checkExactUserAllocation(protected_memory, 4096), AGILEOS_MODULE_EPERM);
  const memmgr::DevicePtr global = 0x10000000ull;
  ASSERT_TRUE(memory_->registerModuleGlobal(kClient, global, 64));
  EXPECT_EQ(resources_->checkExactUserAllocation(global, 64), AGILEOS_MODULE_EPERM);
  memory_->releaseProtected(kClient);
}

TEST_F(WorkerHostResourcesTest, ExportUserAllocationOfALargeAllocationIsItsWholeMapping) {
  const std::uint64_t size = (3u << 20) + 100;
  const memmgr::DevicePtr p = allocate(kClient, size);
  int fd = -1;
  std::uint64_t handle_bytes = 0, offset = 1;
  ASSERT_EQ(resources_->exportUserAllocation(p, size, &fd, &handle_bytes, &offset), AGILEOS_MODULE_OK);
  EXPECT_EQ(offset, 0u);
  EXPECT_GE(handle_bytes, size);
  EXPECT_EQ(handle_bytes % memory_->granularity(), 0u);
  EXPECT_EQ(fileSize(fd), handle_bytes);  // the fake exports a memfd of the physical size
  ::close(fd);
}

TEST_F(WorkerHostResourcesTest, ExportUserAllocationOfASmallAllocationIsItsPlaceInTheChunk) {
  const memmgr::DevicePtr first = allocate(kClient, 1000);
  const memmgr::DevicePtr second = allocate(kClient, 1000);
  int fd = -1;
  std::uint64_t first_bytes = 0, first_offset = 0, second_bytes = 0, second_offset = 0;
  ASSERT_EQ(resources_->exportUserAllocation(first, 1000, &fd, &first_bytes, &first_offset),
            AGILEOS_MODULE_OK);
  EXPECT_EQ(fileSize(fd), first_bytes);
  ::close(fd);
  ASSERT_EQ(resources_->exportUserAllocation(second, 1000, &fd, &second_bytes, &second_offset),
            AGILEOS_MODULE_OK);
  ::close(fd);
  for (const std::uint64_t offset : {first_offset, second_offset}) {
    EXPECT_LE(offset + 1000, first_bytes);
    EXPECT_EQ(offset % memmgr::kAllocationAlignment, 0u);
  }
  // Both in one chunk (the client's first): the offsets are their distance from its start.
  EXPECT_EQ(second_bytes, first_bytes);
  EXPECT_EQ(first - first_offset, second - second_offset);
  EXPECT_NE(first_offset, second_offset);
}

TEST_F(WorkerHostResourcesTest, ExportUserAllocationRefusesAnythingButAnExactLiveAllocation) {
  const memmgr::DevicePtr mine = allocate(kClient, 4096);
  const memmgr::DevicePtr others = allocate(kOtherClient, 4096);
  const memmgr::DevicePtr freed = allocate(kClient, 2u << 20);
  ASSERT_EQ(memory_->free(kClient, freed), CUDA_SUCCESS);
  int fd = -1;
  std::uint64_t handle_bytes = 0, offset = 0;
  EXPECT_EQ(resources_->exportUserAllocation(mine + 256, 4096 - 256, &fd, &handle_bytes, &offset),
            AGILEOS_MODULE_EPERM);
  EXPECT_EQ(resources_->exportUserAllocation(mine, 4095, &fd, &handle_bytes, &offset), AGILEOS_MODULE_EPERM);
  EXPECT_EQ(resources_->exportUserAllocation(others, 4096, &fd, &handle_bytes, &offset),
            AGILEOS_MODULE_EPERM);
  EXPECT_EQ(resources_->exportUserAllocation(freed, 2u << 20, &fd, &handle_bytes, &offset),
            AGILEOS_MODULE_EPERM);
  EXPECT_EQ(fd, -1);
}

TEST_F(WorkerHostResourcesTest, ExportProtectedOnlyOfTheClientsOwnProtectedAllocation) {
  memmgr::DevicePtr mine = 0, others = 0;
  ASSERT_EQ(memory_->allocateProtected(kClient, 4096, &mine), CUDA_SUCCESS);
  ASSERT_EQ(memory_->allocateProtected(kOtherClient, 4096, &others), CUDA_SUCCESS);
  const memmgr::DevicePtr user = allocate(kClient, 4096);
  int fd = -1;
  ASSERT_EQ(resources_->exportProtected(mine, &fd), AGILEOS_MODULE_OK);
  EXPECT_EQ(fileSize(fd), memory_->protectedSize(kClient, mine));
  ::close(fd);
  fd = -1;
  EXPECT_EQ(resources_->exportProtected(others, &fd), AGILEOS_MODULE_EPERM);
  EXPECT_EQ(resources_->exportProtected(mine + 4096, &fd), AGILEOS_MODULE_EPERM);
  EXPECT_EQ(resources_->exportProtected(user, &fd), AGILEOS_MODULE_EPERM);
  EXPECT_EQ(resources_->exportProtected(0, &fd), AGILEOS_MODULE_EPERM);
  EXPECT_EQ(fd, -1);
  memory_->releaseProtected(kClient);
  memory_->releaseProtected(kOtherClient);
}

}  // namespace
}  // namespace agileos::worker::protected_modules
