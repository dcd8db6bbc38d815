// One connection's open files: handles 1..kMaxOpenFiles (0 is never a handle, so a zeroed
// submission names no file), each a file under the service's root opened read-only.
//
// An in-flight read holds its file through a shared_ptr, so CLOSE (or the end of the lease)
// never closes a descriptor a poller is reading, and a descriptor number is never reused under
// a read; a read that looks its handle up after CLOSE gets -EBADF.
//
// Thread-safety: all members may be called concurrently (the connection thread opens and
// closes, the lease's pollers look up).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "services/storage/unique_fd.h"

namespace agileos::services::storage {

inline constexpr std::uint32_t kMaxOpenFiles = 1024;

struct OpenFile {
  UniqueFd fd;
  std::string path;  // for the log
};

// Opens `path` (already checked by checkOpenPath) beneath root_fd with openat2:
// RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS, O_RDONLY; it must be a regular
// file. O_NONBLOCK keeps a FIFO from blocking the open; it has no effect on regular files.
// The descriptor, or a negative errno: -EXDEV (escapes the root), -ELOOP (a symlink), -EISDIR,
// -EINVAL (neither file nor directory), -ENOSYS (no openat2 here), open's other errors.
int openBeneath(int root_fd, const std::string& path, std::uint64_t* file_bytes);

class OpenFiles {
 public:
  // Takes fd; the handle, or -EMFILE when all kMaxOpenFiles are in use.
  std::int64_t add(UniqueFd fd, std::string path);
  // 0, or -EBADF for a handle that is not open.
  int close(std::uint32_t handle);
  // The file, or null (the caller answers -EBADF).
  std::shared_ptr<const OpenFile> find(std::uint32_t handle) const;
  void clear();

 private:
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<const OpenFile>> files_;  // index handle - 1; grows to kMaxOpenFiles
};

}  // namespace agileos::services::storage
