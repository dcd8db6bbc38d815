// CompiledModuleCache: JIT-compiled modules (cubins) on disk, so that a guarded PTX
// module is compiled once per (rewritten PTX, GPU architecture, guard policy, driver)
// rather than at every load. JIT-compiling a large module takes seconds to minutes.
//
// Key: SHA-256 over the rewritten PTX, the architecture, the policy and the driver
// version (keyFor). The rewrite is deterministic (ptx/guard.h), so the same program
// finds its entry again. A cryptographic hash because clients choose the PTX: a client
// must not be able to make its module's entry collide with another program's.
//
// Trust: the directory must be owned by this process's user and writable by nobody
// else; open() refuses it otherwise (the worker then runs without a cache), and client
// sandboxes do not see it (agileos-sandbox hides it). An entry is used only if it was
// produced under this daemon's key: the daemon creates a random 32-byte key at start and
// hands it to its workers over their control channel (never on a command line or in the
// environment); each file carries HMAC-SHA256(key, cache key || content), checked on every
// find() in constant time. A file that fails (damaged, truncated, written under another key,
// or moved from another entry's name) is a miss and is removed, never a load. A cache
// without a key cannot be opened: a worker that has none runs without the cache. NVRTC
// results (worker/adapters/nvrtc) are entries like any other and are authenticated the same way.
//
// Bound: after a store the directory is trimmed to `maxBytes` by removing the least
// recently used files (find() refreshes a file's modification time).
//
// Several workers may share one directory: files are written to a temporary name and
// renamed into place, so a reader sees a whole file or none.
//
// Thread-safety: find() and store() may be called concurrently.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace agileos::worker {

class CompiledModuleCache {
 public:
  static constexpr std::size_t kKeyBytes = 32;

  // Creates `directory` (mode 0700) if it is missing. nullptr and *error when it cannot
  // be used (not a directory, wrong owner, group/world-writable, maxBytes == 0) or `macKey`
  // (the daemon's entry-authentication key) is not kKeyBytes long.
  static std::unique_ptr<CompiledModuleCache> open(const std::string& directory, std::uint64_t maxBytes,
                                                   std::string_view macKey, std::string* error);

  // Hex SHA-256 of the inputs, each length-prefixed so that no two inputs share a key.
  static std::string keyFor(std::string_view ptx, std::uint32_t smArch, std::string_view policy,
                            int driverVersion);

  // Hex SHA-256 of `fields`, each length-prefixed (for other cached artefacts, e.g. NVRTC
  // results, and for identifying images).
  static std::string keyOf(std::initializer_list<std::string_view> fields);

  // The cached cubin for `key`, if a whole one produced under this cache's MAC key for this
  // `key` is there (anything else found under the name is removed).
  std::optional<std::string> find(const std::string& key);
  // Stores `cubin` under `key` (replacing any entry) and trims the directory. Failures
  // (disk full, ...) are logged and otherwise ignored: the cache is an optimisation.
  void store(const std::string& key, std::string_view cubin);

  const std::string& directory() const { return directory_; }
  std::uint64_t maxBytes() const { return maxBytes_; }

 private:
  CompiledModuleCache(std::string directory, std::uint64_t maxBytes, std::string_view macKey)
      : directory_(std::move(directory)), maxBytes_(maxBytes), macKey_(macKey) {}
  void trim();
  // Hex HMAC-SHA256(macKey_, key || content), each length-prefixed; empty if OpenSSL fails.
  std::string mac(std::string_view key, std::string_view content) const;

  const std::string directory_;
  const std::uint64_t maxBytes_;
  const std::string macKey_;
  std::mutex trimMutex_;
};

}  // namespace agileos::worker
