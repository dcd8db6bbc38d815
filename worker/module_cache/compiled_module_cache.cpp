#include "worker/module_cache/compiled_module_cache.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace agileos::worker {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kMagic = "AGILEOS-CUBIN-1\n";
constexpr std::size_t kHexDigestBytes = 64;
constexpr std::string_view kSuffix = ".cubin";

class Sha256 {
 public:
  Sha256() : context_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(context_, EVP_sha256(), nullptr); }
  ~Sha256() { EVP_MD_CTX_free(context_); }
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::string_view bytes) { EVP_DigestUpdate(context_, bytes.data(), bytes.size()); }
  // Length-prefixed, so that ("ab", "c") and ("a", "bc") hash differently.
  void field(std::string_view bytes) {
    const std::uint64_t size = bytes.size();
    update(std::string_view(reinterpret_cast<const char*>(&size), sizeof size));
    update(bytes);
  }
  std::string hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    EVP_DigestFinal_ex(context_, digest, &length);
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    for (unsigned i = 0; i < length; ++i) {
      out += kDigits[digest[i] >> 4];
      out += kDigits[digest[i] & 0xf];
    }
    return out;
  }

 private:
  EVP_MD_CTX* context_;
};

std::string sha256(std::string_view bytes) {
  Sha256 hash;
  hash.update(bytes);
  return hash.hex();
}

bool isKey(const std::string& key) {
  return key.size() == kHexDigestBytes && std::all_of(key.begin(), key.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

std::unique_ptr<CompiledModuleCache> CompiledModuleCache::open(const std::string& directory,
                                                               std::uint64_t maxBytes, std::string* error) {
  auto fail = [&](const std::string& why) -> std::unique_ptr<CompiledModuleCache> {
    if (error != nullptr) *error = "module cache " + directory + ": " + why;
    return nullptr;
  };
  if (maxBytes == 0) return fail("a size bound of 0 bytes");
  if (directory.empty() || directory[0] != '/') return fail("not an absolute path");
  if (::mkdir(directory.c_str(), 0700) != 0 && errno != EEXIST) return fail(std::strerror(errno));
  struct stat status {};
  if (::lstat(directory.c_str(), &status) != 0) return fail(std::strerror(errno));
  if (!S_ISDIR(status.st_mode)) return fail("not a directory");
  if (status.st_uid != ::geteuid()) return fail("owned by another user");
  if ((status.st_mode & (S_IWGRP | S_IWOTH)) != 0) return fail("writable by group or others");
  return std::unique_ptr<CompiledModuleCache>(new CompiledModuleCache(directory, maxBytes));
}

std::string CompiledModuleCache::keyFor(std::string_view ptx, std::uint32_t smArch, std::string_view policy,
                                        int driverVersion) {
  Sha256 hash;
  hash.field("agileos compiled module v1");
  hash.field(ptx);
  hash.field(std::to_string(smArch));
  hash.field(policy);
  hash.field(std::to_string(driverVersion));
  return hash.hex();
}

std::string CompiledModuleCache::keyOf(std::initializer_list<std::string_view> fields) {
  Sha256 hash;
  for (std::string_view field : fields) hash.field(field);
  return hash.hex();
}

std::optional<std::string> CompiledModuleCache::find(const std::string& key) {
  if (!isKey(key)) return std::nullopt;
  const std::string path = directory_ + "/" + key + std::string(kSuffix);
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string file = buffer.str();
  // Layout: magic, hex SHA-256 of the cubin, '\n', the cubin.
  const std::size_t header = kMagic.size() + kHexDigestBytes + 1;
  if (file.size() <= header || file.compare(0, kMagic.size(), kMagic) != 0 || file[header - 1] != '\n' ||
      sha256(std::string_view(file).substr(header)) != file.substr(kMagic.size(), kHexDigestBytes)) {
    spdlog::warn("module cache: {} is damaged; removed", path);
    std::error_code ignored;
    fs::remove(path, ignored);
    return std::nullopt;
  }
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // most recently used
  return file.substr(header);
}

void CompiledModuleCache::store(const std::string& key, std::string_view cubin) {
  if (!isKey(key) || cubin.empty()) return;
  if (cubin.size() > maxBytes_) return;  // would evict everything and still not fit
  const std::string path = directory_ + "/" + key + std::string(kSuffix);
  // A unique temporary name per process and call, renamed into place once complete.
  static std::atomic<std::uint64_t> sequence{0};
  const std::string temporary =
      directory_ + "/.tmp-" + std::to_string(::getpid()) + "-" + std::to_string(sequence.fetch_add(1));
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << kMagic << sha256(cubin) << '\n';
    out.write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
    out.flush();
    if (!out) {
      spdlog::warn("module cache: cannot write {} (disk full?); not cached", temporary);
      std::error_code ignored;
      fs::remove(temporary, ignored);
      return;
    }
  }
  std::error_code renamed;
  fs::rename(temporary, path, renamed);
  if (renamed) {
    spdlog::warn("module cache: cannot rename {}: {}", temporary, renamed.message());
    std::error_code ignored;
    fs::remove(temporary, ignored);
    return;
  }
  trim();
}

void CompiledModuleCache::trim() {
  std::lock_guard lock(trimMutex_);
  struct Entry {
    fs::path path;
    fs::file_time_type used;
    std::uint64_t bytes;
  };
  std::vector<Entry> entries;
  std::uint64_t total = 0;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(directory_, error)) {
    std::error_code ignored;
    if (!entry.is_regular_file(ignored) || entry.path().extension() != kSuffix) continue;
    const std::uint64_t bytes = entry.file_size(ignored);
    if (ignored) continue;
    entries.push_back({entry.path(), entry.last_write_time(ignored), bytes});
    total += bytes;
  }
  if (total <= maxBytes_) return;
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const Entry& entry : entries) {
    if (total <= maxBytes_) break;
    std::error_code ignored;
    if (fs::remove(entry.path, ignored)) total -= entry.bytes;
  }
}

}  // namespace agileos::worker
