#include "services/storage/open_files.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace agileos::services::storage {

int openBeneath(int root_fd, const std::string& path, std::uint64_t* file_bytes) {
#ifdef SYS_openat2
  open_how how{};
  how.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS;
  // glibc 2.36 has no wrapper.
  const long opened = ::syscall(SYS_openat2, root_fd, path.c_str(), &how, sizeof(how));
  if (opened < 0) return -errno;  // ENOSYS on kernels before 5.6: refused, never a weaker open
  UniqueFd fd(static_cast<int>(opened));
  struct stat status;
  if (::fstat(fd.get(), &status) != 0) return -errno;
  if (S_ISDIR(status.st_mode)) return -EISDIR;
  if (!S_ISREG(status.st_mode)) return -EINVAL;
  *file_bytes = static_cast<std::uint64_t>(status.st_size);
  return fd.release();
#else
  (void)root_fd;
  (void)path;
  (void)file_bytes;
  return -ENOSYS;
#endif
}

std::int64_t OpenFiles::add(UniqueFd fd, std::string path) {
  auto file = std::make_shared<OpenFile>(OpenFile{std::move(fd), std::move(path)});
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < files_.size(); ++i) {
    if (files_[i] == nullptr) {
      files_[i] = std::move(file);
      return static_cast<std::int64_t>(i) + 1;
    }
  }
  if (files_.size() >= kMaxOpenFiles) return -EMFILE;
  files_.push_back(std::move(file));
  return static_cast<std::int64_t>(files_.size());
}

int OpenFiles::close(std::uint32_t handle) {
  std::shared_ptr<const OpenFile> closing;  // released after the lock: may close the descriptor
  std::lock_guard lock(mutex_);
  if (handle < 1 || handle > files_.size() || files_[handle - 1] == nullptr) return -EBADF;
  closing = std::move(files_[handle - 1]);
  return 0;
}

std::shared_ptr<const OpenFile> OpenFiles::find(std::uint32_t handle) const {
  std::lock_guard lock(mutex_);
  if (handle < 1 || handle > files_.size()) return nullptr;
  return files_[handle - 1];
}

void OpenFiles::clear() {
  std::vector<std::shared_ptr<const OpenFile>> closing;
  {
    std::lock_guard lock(mutex_);
    closing.swap(files_);
  }
}

}  // namespace agileos::services::storage
