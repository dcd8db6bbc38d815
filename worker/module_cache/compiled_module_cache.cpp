#include "worker/module_cache/compiled_module_cache.h"

#include <fcntl.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
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

constexpr std::string_view kMagic = "AGILEOS-CUBIN-2\n";  // 2: authenticated (HMAC)
constexpr std::size_t kHexDigestBytes = 64;
constexpr std::string_view kSuffix = ".cubin";

std::string toHex(const unsigned char* bytes, std::size_t length) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < length; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 0xf];
  }
  return out;
}

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
    return toHex(digest, length);
  }

 private:
  EVP_MD_CTX* context_;
};

// HMAC-SHA256 (OpenSSL 3 EVP_MAC) over length-prefixed fields.
class HmacSha256 {
 public:
  explicit HmacSha256(std::string_view key) {
    mac_ = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    if (mac_ != nullptr) context_ = EVP_MAC_CTX_new(mac_);
    char digest[] = "SHA256";
    const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                                 OSSL_PARAM_construct_end()};
    ok_ = context_ != nullptr &&
          EVP_MAC_init(context_, reinterpret_cast<const unsigned char*>(key.data()), key.size(), params) == 1;
  }
  ~HmacSha256() {
    EVP_MAC_CTX_free(context_);
    EVP_MAC_free(mac_);
  }
  HmacSha256(const HmacSha256&) = delete;
  HmacSha256& operator=(const HmacSha256&) = delete;

  void field(std::string_view bytes) {
    const std::uint64_t size = bytes.size();
    update(std::string_view(reinterpret_cast<const char*>(&size), sizeof size));
    update(bytes);
  }
  // Hex digest; empty if any step failed.
  std::string hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    std::size_t length = 0;
    if (!ok_ || EVP_MAC_final(context_, digest, &length, sizeof digest) != 1) return {};
    return toHex(digest, length);
  }

 private:
  void update(std::string_view bytes) {
    ok_ = ok_ &&
          EVP_MAC_update(context_, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()) == 1;
  }

  EVP_MAC* mac_ = nullptr;
  EVP_MAC_CTX* context_ = nullptr;
  bool ok_ = false;
};

bool inOurGroups(gid_t gid) {
  if (gid == ::getegid()) return true;
  gid_t groups[256];
  const int count = ::getgroups(256, groups);
  return count > 0 && std::find(groups, groups + count, gid) != groups + count;
}

// Who may write the entries: this worker alone (a directory it owns, closed to group and
// others), or the daemon's workers together (root's directory, its group one of this worker's,
// closed to others: PrivilegesSection in scheduler/daemon_config.h). Either way no client uid can
// write, and the entries' HMAC is checked besides.
bool trustedCacheDirectory(const struct stat& status) {
  const bool private_to_us = status.st_uid == ::geteuid() && (status.st_mode & (S_IWGRP | S_IWOTH)) == 0;
  const bool shared_with_group = (status.st_uid == 0 || status.st_uid == ::geteuid()) &&
                                 inOurGroups(status.st_gid) && (status.st_mode & S_IRWXO) == 0;
  return private_to_us || shared_with_group;
}

bool isKey(const std::string& key) {
  return key.size() == kHexDigestBytes && std::all_of(key.begin(), key.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

std::unique_ptr<CompiledModuleCache> CompiledModuleCache::open(const std::string& directory,
                                                               std::uint64_t maxBytes,
                                                               std::string_view macKey, std::string* error) {
  auto fail = [&](const std::string& why) -> std::unique_ptr<CompiledModuleCache> {
    if (error != nullptr) *error = "module cache " + directory + ": " + why;
    return nullptr;
  };
  if (macKey.size() != kKeyBytes) return fail("no entry-authentication key from the daemon");
  if (maxBytes == 0) return fail("a size bound of 0 bytes");
  if (directory.empty() || directory[0] != '/') return fail("not an absolute path");
  if (::mkdir(directory.c_str(), 0700) != 0 && errno != EEXIST) return fail(std::strerror(errno));
  struct stat status {};
  if (::lstat(directory.c_str(), &status) != 0) return fail(std::strerror(errno));
  if (!S_ISDIR(status.st_mode)) return fail("not a directory");
  if (!trustedCacheDirectory(status)) {
    return fail("neither this worker's alone nor root's and shared with its group only (owner " +
                std::to_string(status.st_uid) + ", group " + std::to_string(status.st_gid) + ", mode " +
                std::to_string(status.st_mode & 07777) + ")");
  }
  return std::unique_ptr<CompiledModuleCache>(new CompiledModuleCache(directory, maxBytes, macKey));
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

std::string CompiledModuleCache::mac(std::string_view key, std::string_view content) const {
  HmacSha256 hmac(macKey_);
  hmac.field("agileos compiled module entry v2");
  hmac.field(key);
  hmac.field(content);
  return hmac.hex();
}

std::optional<std::string> CompiledModuleCache::find(const std::string& key) {
  if (!isKey(key)) return std::nullopt;
  const std::string path = directory_ + "/" + key + std::string(kSuffix);
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string file = buffer.str();
  // Layout: magic, hex HMAC-SHA256(daemon key, cache key || cubin), '\n', the cubin.
  const std::size_t header = kMagic.size() + kHexDigestBytes + 1;
  bool authentic = false;
  if (file.size() > header && file.compare(0, kMagic.size(), kMagic) == 0 && file[header - 1] == '\n') {
    const std::string expected = mac(key, std::string_view(file).substr(header));
    authentic = expected.size() == kHexDigestBytes &&
                CRYPTO_memcmp(expected.data(), file.data() + kMagic.size(), kHexDigestBytes) == 0;
  }
  if (!authentic) {
    spdlog::warn("module cache: {} is damaged or was not produced under this daemon's key; removed", path);
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
  const std::string tag = mac(key, cubin);
  if (tag.size() != kHexDigestBytes) {
    spdlog::warn("module cache: cannot authenticate an entry (OpenSSL); not cached");
    return;
  }
  const std::string path = directory_ + "/" + key + std::string(kSuffix);
  // A unique temporary name per process and call, renamed into place once complete.
  static std::atomic<std::uint64_t> sequence{0};
  const std::string temporary =
      directory_ + "/.tmp-" + std::to_string(::getpid()) + "-" + std::to_string(sequence.fetch_add(1));
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << kMagic << tag << '\n';
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
