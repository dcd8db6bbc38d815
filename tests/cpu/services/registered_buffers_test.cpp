// One lease's table of registered buffers (services/storage/registered_buffers.h), without the
// service: ids, the limit, and removal waiting for the writes that hold a buffer.
#include "services/storage/registered_buffers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <thread>

namespace agileos::services::storage {
namespace {

using namespace std::chrono_literals;

// An import that records where and whether it was released.
struct Release {
  std::atomic<bool> released{false};
  std::thread::id thread;
};

class FakeImport final : public ImportedBuffer {
 public:
  explicit FakeImport(Release* release) : release_(release) {}
  ~FakeImport() override {
    if (release_ == nullptr) return;
    release_->thread = std::this_thread::get_id();
    release_->released.store(true);
  }
  std::uint64_t size() const override { return 1 << 20; }
  std::unique_ptr<SlotWriter> makeWriter(std::uint32_t, std::string*) override { return nullptr; }

 private:
  Release* release_;
};

RegisteredBuffer buffer(Release* release = nullptr, std::uint64_t offset = 0, std::uint64_t bytes = 4096) {
  RegisteredBuffer registered;
  registered.import = std::make_unique<FakeImport>(release);
  registered.offset = offset;
  registered.bytes = bytes;
  return registered;
}

TEST(StorageRegisteredBuffersTest, IdsStartAtOneAndAreNotReused) {
  RegisteredBuffers buffers;
  EXPECT_EQ(buffers.add(buffer(nullptr, 10, 20)), 1);
  EXPECT_EQ(buffers.add(buffer()), 2);
  ASSERT_NE(buffers.find(1), nullptr);
  EXPECT_EQ(buffers.find(1)->offset, 10u);
  EXPECT_EQ(buffers.find(1)->bytes, 20u);
  EXPECT_EQ(buffers.find(0), nullptr);
  EXPECT_EQ(buffers.find(3), nullptr);
  EXPECT_EQ(buffers.remove(1), 0);
  EXPECT_EQ(buffers.find(1), nullptr);
  EXPECT_EQ(buffers.remove(1), -ENOENT);
  EXPECT_EQ(buffers.remove(0), -ENOENT);
  EXPECT_EQ(buffers.add(buffer()), 3);  // not 1 again
  EXPECT_NE(buffers.find(2), nullptr);
}

TEST(StorageRegisteredBuffersTest, AtMostTheLimitAreLive) {
  RegisteredBuffers buffers;
  for (std::size_t i = 0; i < kMaxRegisteredBuffers; ++i) {
    EXPECT_FALSE(buffers.full());
    ASSERT_GE(buffers.add(buffer()), 1);
  }
  EXPECT_TRUE(buffers.full());
  Release refused;
  EXPECT_EQ(buffers.add(buffer(&refused)), -EMFILE);
  EXPECT_TRUE(refused.released.load()) << "a refused buffer stays imported";
  EXPECT_EQ(buffers.remove(5), 0);
  EXPECT_FALSE(buffers.full());
  EXPECT_EQ(buffers.add(buffer()), static_cast<std::int64_t>(kMaxRegisteredBuffers) + 1);
}

TEST(StorageRegisteredBuffersTest, RemoveWaitsForTheWritesHoldingIt) {
  RegisteredBuffers buffers;
  Release release;
  const std::int64_t id = buffers.add(buffer(&release));
  RegisteredBuffers::Ref writing = buffers.find(static_cast<std::uint32_t>(id));  // a poller's
  ASSERT_NE(writing, nullptr);
  std::atomic<bool> removed{false};
  std::thread::id remover_thread;
  std::thread remover([&] {
    remover_thread = std::this_thread::get_id();
    EXPECT_EQ(buffers.remove(static_cast<std::uint32_t>(id)), 0);
    removed.store(true);
  });
  // No new reference once removal has begun...
  ASSERT_TRUE([&] {
    for (int i = 0; i < 1000 && buffers.find(static_cast<std::uint32_t>(id)) != nullptr; ++i)
      std::this_thread::sleep_for(1ms);
    return buffers.find(static_cast<std::uint32_t>(id)) == nullptr;
  }());
  // ...but the buffer stays while the write holds it.
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(removed.load());
  EXPECT_FALSE(release.released.load());
  writing.reset();  // the write completes
  remover.join();
  EXPECT_TRUE(removed.load());
  EXPECT_TRUE(release.released.load());
  EXPECT_EQ(release.thread, remover_thread) << "released on the poller's thread, not the remover's";
}

TEST(StorageRegisteredBuffersTest, ClearReleasesEverything) {
  Release first;
  Release second;
  {
    RegisteredBuffers buffers;
    buffers.add(buffer(&first));
    buffers.add(buffer(&second));
    buffers.clear();
    EXPECT_TRUE(first.released.load());
    EXPECT_TRUE(second.released.load());
    EXPECT_EQ(buffers.find(1), nullptr);
    EXPECT_EQ(buffers.add(buffer()), 3);
  }
  Release at_destruction;
  {
    RegisteredBuffers buffers;
    buffers.add(buffer(&at_destruction));
  }
  EXPECT_TRUE(at_destruction.released.load());
}

}  // namespace
}  // namespace agileos::services::storage
