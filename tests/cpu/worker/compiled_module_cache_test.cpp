// The compiled-module cache (worker/module_cache/compiled_module_cache.h): keys separate
// every input, entries survive a reopen, damaged, swapped or foreign (another daemon key's)
// files are misses that get removed, the directory is trimmed to its bound by least recent
// use, and an unsafe directory or a missing key is refused.
#include "worker/module_cache/compiled_module_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <utime.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/cpu/support/temp_dir.h"

namespace agileos::worker {
namespace {

namespace fs = std::filesystem;

const std::string kKey(CompiledModuleCache::kKeyBytes, '\x5a');       // "this daemon's" key
const std::string kOtherKey(CompiledModuleCache::kKeyBytes, '\x33');  // another daemon's

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class CompiledModuleCacheTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = root_.file("cache"); }

  std::unique_ptr<CompiledModuleCache> open(std::uint64_t maxBytes = 1 << 20, const std::string& key = kKey) {
    std::string error;
    auto cache = CompiledModuleCache::open(dir_, maxBytes, key, &error);
    EXPECT_NE(cache, nullptr) << error;
    return cache;
  }

  test_support::TempDir root_{"agileos-module-cache-test"};
  std::string dir_;
};

TEST_F(CompiledModuleCacheTest, KeysDifferForEveryInputAndAreStable) {
  const std::string key = CompiledModuleCache::keyFor("ptx", 90, "trap", 13000);
  EXPECT_EQ(key.size(), 64u);
  EXPECT_EQ(key, CompiledModuleCache::keyFor("ptx", 90, "trap", 13000));
  EXPECT_NE(key, CompiledModuleCache::keyFor("ptx ", 90, "trap", 13000));
  EXPECT_NE(key, CompiledModuleCache::keyFor("ptx", 100, "trap", 13000));
  EXPECT_NE(key, CompiledModuleCache::keyFor("ptx", 90, "poison", 13000));
  EXPECT_NE(key, CompiledModuleCache::keyFor("ptx", 90, "trap", 13010));
  // Fields are length-prefixed: moving bytes from one field to the next changes the key.
  EXPECT_NE(CompiledModuleCache::keyFor("ptx9", 0, "trap", 1),
            CompiledModuleCache::keyFor("ptx", 90, "trap", 1));
}

TEST_F(CompiledModuleCacheTest, StoredEntriesAreFoundAgainAfterAReopen) {
  const std::string key = CompiledModuleCache::keyFor("a", 90, "trap", 1);
  const std::string cubin(
      "\x7f"
      "ELF\0binary\n\xff",
      13);
  open()->store(key, cubin);
  auto again = open();
  EXPECT_EQ(again->find(key), cubin);
  EXPECT_FALSE(again->find(CompiledModuleCache::keyFor("b", 90, "trap", 1)).has_value());
  EXPECT_FALSE(again->find("../../etc/passwd").has_value()) << "only well-formed keys name files";
  struct stat status {};
  ASSERT_EQ(::stat(dir_.c_str(), &status), 0);
  EXPECT_EQ(status.st_mode & 0777, 0700u);
}

TEST_F(CompiledModuleCacheTest, ADamagedEntryIsAMissAndIsRemoved) {
  auto cache = open();
  const std::string key = CompiledModuleCache::keyFor("a", 90, "trap", 1);
  cache->store(key, std::string(4096, 'x'));
  const std::string path = dir_ + "/" + key + ".cubin";
  ASSERT_TRUE(fs::exists(path));
  fs::resize_file(path, fs::file_size(path) - 1);  // truncated
  EXPECT_FALSE(cache->find(key).has_value());
  EXPECT_FALSE(fs::exists(path));
  cache->store(key, std::string(4096, 'x'));
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-1, std::ios::end);
    file.put('y');  // one byte of the code changed
  }
  EXPECT_FALSE(cache->find(key).has_value());
}

TEST_F(CompiledModuleCacheTest, TheDirectoryIsTrimmedToItsBoundByLeastRecentUse) {
  auto cache = open(3 * 1100);
  std::string keys[4];
  for (int i = 0; i < 3; ++i) {
    keys[i] = CompiledModuleCache::keyFor(std::to_string(i), 90, "trap", 1);
    cache->store(keys[i], std::string(1000, static_cast<char>('a' + i)));
    // Distinct ages, oldest first, whatever the file system's timestamp resolution.
    const std::string path = dir_ + "/" + keys[i] + ".cubin";
    struct utimbuf times {
      1000 + i, 1000 + i
    };
    ASSERT_EQ(::utime(path.c_str(), &times), 0);
  }
  ASSERT_TRUE(cache->find(keys[0]).has_value());  // now the most recently used
  keys[3] = CompiledModuleCache::keyFor("3", 90, "trap", 1);
  cache->store(keys[3], std::string(1000, 'd'));
  EXPECT_TRUE(cache->find(keys[0]).has_value());
  EXPECT_FALSE(cache->find(keys[1]).has_value()) << "the least recently used entry goes";
  EXPECT_TRUE(cache->find(keys[2]).has_value());
  EXPECT_TRUE(cache->find(keys[3]).has_value());
  cache->store(CompiledModuleCache::keyFor("big", 90, "trap", 1), std::string(4000, 'z'));
  EXPECT_TRUE(cache->find(keys[3]).has_value()) << "an entry larger than the bound is not stored";
}

TEST_F(CompiledModuleCacheTest, AnUnsafeDirectoryIsRefused) {
  std::string error;
  EXPECT_EQ(CompiledModuleCache::open(dir_, 0, kKey, &error), nullptr);
  EXPECT_EQ(CompiledModuleCache::open("relative/dir", 1024, kKey, &error), nullptr);
  ASSERT_EQ(::mkdir(dir_.c_str(), 0777), 0);
  ASSERT_EQ(::chmod(dir_.c_str(), 0777), 0);
  EXPECT_EQ(CompiledModuleCache::open(dir_, 1024, kKey, &error), nullptr);
  EXPECT_NE(error.find("neither this worker's alone"), std::string::npos) << error;
  // The daemon's shared form (PrivilegesSection): root's, the worker's group, closed to others.
  ASSERT_EQ(::chmod(dir_.c_str(), 02770), 0);
  EXPECT_NE(CompiledModuleCache::open(dir_, 1024, kKey, &error), nullptr) << error;
  ASSERT_EQ(::chmod(dir_.c_str(), 02771), 0);
  EXPECT_EQ(CompiledModuleCache::open(dir_, 1024, kKey, &error), nullptr) << "others may pass through";
  if (::geteuid() == 0) {
    ASSERT_EQ(::chmod(dir_.c_str(), 02770), 0);
    ASSERT_EQ(::chown(dir_.c_str(), 0, 4350), 0);  // a group this process is not in
    EXPECT_EQ(CompiledModuleCache::open(dir_, 1024, kKey, &error), nullptr) << "another group's";
  }
  const std::string file = root_.file("file");
  std::ofstream(file) << "x";
  EXPECT_EQ(CompiledModuleCache::open(file, 1024, kKey, &error), nullptr);
  EXPECT_NE(error.find("not a directory"), std::string::npos) << error;
}

TEST_F(CompiledModuleCacheTest, WithoutTheDaemonsKeyThereIsNoCache) {
  std::string error;
  EXPECT_EQ(CompiledModuleCache::open(dir_, 1024, "", &error), nullptr);
  EXPECT_NE(error.find("key"), std::string::npos) << error;
  EXPECT_EQ(CompiledModuleCache::open(dir_, 1024, std::string(16, 'k'), &error), nullptr) << "a short key";
}

TEST_F(CompiledModuleCacheTest, AnEntryOfThisKeyIsUsedAndOneWrittenUnderAnotherKeyIsRefusedAndRemoved) {
  const std::string key = CompiledModuleCache::keyFor("a", 90, "trap", 1);
  const std::string path = dir_ + "/" + key + ".cubin";
  open(1 << 20, kOtherKey)->store(key, "code compiled under another daemon's key");
  ASSERT_TRUE(fs::exists(path));
  auto cache = open();
  EXPECT_FALSE(cache->find(key).has_value());
  EXPECT_FALSE(fs::exists(path)) << "a foreign entry is removed";
  cache->store(key, "code of this daemon");
  EXPECT_EQ(cache->find(key), "code of this daemon");
  EXPECT_EQ(open()->find(key), "code of this daemon") << "the same key after a reopen";
}

TEST_F(CompiledModuleCacheTest, AnEntryMovedUnderAnotherKeysNameIsRefused) {
  auto cache = open();
  const std::string benign = CompiledModuleCache::keyFor("benign", 90, "trap", 1);
  const std::string target = CompiledModuleCache::keyFor("target", 90, "trap", 1);
  cache->store(benign, "code for the benign module");
  cache->store(target, "code for the target module");
  // Swap: the benign module's authentic entry under the target's name.
  fs::copy_file(dir_ + "/" + benign + ".cubin", dir_ + "/" + target + ".cubin",
                fs::copy_options::overwrite_existing);
  EXPECT_FALSE(cache->find(target).has_value()) << "the MAC covers the cache key";
  EXPECT_FALSE(fs::exists(dir_ + "/" + target + ".cubin"));
  EXPECT_EQ(cache->find(benign), "code for the benign module");
}

TEST_F(CompiledModuleCacheTest, EveryChangedByteAndEveryTruncationIsRefused) {
  auto cache = open();
  const std::string key = CompiledModuleCache::keyFor("a", 90, "trap", 1);
  const std::string path = dir_ + "/" + key + ".cubin";
  cache->store(key, "some cubin bytes");
  const std::string original = readFile(path);
  ASSERT_FALSE(original.empty());
  for (std::size_t at = 0; at < original.size(); ++at) {
    std::string changed = original;
    changed[at] = static_cast<char>(changed[at] ^ 0x01);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << changed;
    EXPECT_FALSE(cache->find(key).has_value()) << "byte " << at << " changed";
    EXPECT_FALSE(fs::exists(path));
  }
  for (std::size_t length : {std::size_t{0}, std::size_t{10}, original.size() - 1}) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << original.substr(0, length);
    EXPECT_FALSE(cache->find(key).has_value()) << "truncated to " << length;
  }
  std::ofstream(path, std::ios::binary | std::ios::trunc) << original;
  EXPECT_EQ(cache->find(key), "some cubin bytes") << "the untouched entry verifies";
}

}  // namespace
}  // namespace agileos::worker
