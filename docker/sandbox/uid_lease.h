// A host uid (and the gid of the same number) that no other running sandbox holds.
//
// Invariant: while a UidLease lives, no other agileos-sandbox on the machine holds the same id:
// the lease is an exclusive flock on <stateDir>/<id>, which the kernel drops when the holder
// exits however it ends, so a crashed launcher never leaks an id. Distinct ids keep tenants
// apart where namespaces do not (signals, RLIMIT_NPROC, files a tenant could create in a shared
// writable path, SO_PEERCRED seen by the daemon).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace agileos::sandbox {

class UidLease {
 public:
  // Takes the first free id in [base, base + count), starting at a point derived from the pid
  // (so concurrent launchers rarely contend). nullopt with *error if the directory cannot be
  // made private (root-owned, mode 0700) or every id is held.
  static std::optional<UidLease> acquire(const std::string& stateDir, uid_t base, unsigned count,
                                         std::string* error);

  UidLease(UidLease&& other) noexcept;
  UidLease& operator=(UidLease&&) = delete;
  UidLease(const UidLease&) = delete;
  ~UidLease();

  uid_t id() const { return id_; }

 private:
  UidLease(int fd, uid_t id) : fd_(fd), id_(id) {}
  int fd_;
  uid_t id_;
};

}  // namespace agileos::sandbox
