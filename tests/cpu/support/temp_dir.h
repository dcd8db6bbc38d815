// A fresh directory under /tmp for one test, removed with everything in it when the test ends.
// Header only, so that every CPU test target can use it without another library.
//
// The path is short on purpose: unix socket addresses are limited to 107 bytes and several
// tests put sockets in it. The namespace is not `testing`, so that it never hides GoogleTest's
// ::testing from code inside namespace agileos.
#pragma once

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace agileos::test_support {

class TempDir {
 public:
  // "/tmp/<prefix>-XXXXXX": the prefix says which tests a leftover directory came from.
  explicit TempDir(const std::string& prefix = "agileos-test") {
    std::string pattern = "/tmp/" + prefix + "-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("mkdtemp " + pattern + ": " + std::strerror(errno));
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace agileos::test_support
