// FakeVmmBackend: a host-only VmmBackend that keeps the driver's bookkeeping and
// checks every call the way the driver would, plus the memory manager's own
// discipline (unmap before release, scrub before unmap, nothing left mapped in a
// freed reservation). Misuse is recorded as a violation (and the call fails
// without effect) so tests can assert that none happened.
//
// Physical memory has no contents: each handle only carries a "dirty" flag, set by
// write() (standing in for a client kernel) and cleared by a zero fill covering the
// handle's whole mapping. Unmapping the last mapping of dirty memory is a violation (a client's
// own extra mappings, cuMemMap, may go while the memory manager's stays).
//
// Failure injection: failNthCall(n, r) makes the n-th backend call from now (of any
// method) return r with no effect; failNextCall(method, r) does the same for the
// next call of one method. Both are one-shot.
//
// Thread-safety: every method is safe to call concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "memmgr/vmm_backend.h"

namespace agileos::memmgr::testing {

enum class VmmCall {
  kAllocationGranularity,
  kReserve,
  kFreeReservation,
  kCreatePhysical,
  kReleasePhysical,
  kMap,
  kSetAccess,
  kUnmap,
  kFill,
};

struct FillRecord {
  DevicePtr va;
  std::uint8_t value;
  std::size_t size;
};

class FakeVmmBackend final : public VmmBackend {
 public:
  static constexpr std::size_t kDefaultGranularity = 2u << 20;
  // Where a reservation lands when its fixed address is taken (as the driver would do).
  static constexpr DevicePtr kElsewhere = 0x7000'0000'0000ull;

  explicit FakeVmmBackend(std::size_t granularity = kDefaultGranularity);

  // VmmBackend.
  CUresult allocationGranularity(std::size_t* bytes) override;
  CUresult reserve(DevicePtr fixed, std::size_t size, DevicePtr* got) override;
  CUresult freeReservation(DevicePtr base, std::size_t size) override;
  CUresult createPhysical(std::size_t size, PhysicalHandle* handle) override;
  // Every fake handle is exportable; exports are counted and give a descriptor of /dev/null.
  CUresult createExportablePhysical(std::size_t size, PhysicalHandle* handle) override {
    return createPhysical(size, handle);
  }
  CUresult exportToFd(PhysicalHandle handle, int* fd) override;
  std::size_t exportCount() const { return exports_; }
  // Compression: granted unless setGrantsCompression(false), at setCompressibleGranularity's
  // granularity (the plain one by default); each request is counted.
  CUresult createCompressiblePhysical(std::size_t size, PhysicalHandle* handle, bool* compressed) override;
  CUresult compressibleGranularity(std::size_t* bytes) override;
  void setGrantsCompression(bool grants);
  void setCompressibleGranularity(std::size_t bytes);
  std::size_t compressibleRequests() const;
  CUresult releasePhysical(PhysicalHandle handle) override;
  CUresult map(DevicePtr va, std::size_t size, PhysicalHandle handle) override;
  CUresult setAccess(DevicePtr va, std::size_t size) override;
  CUresult unmap(DevicePtr va, std::size_t size) override;
  CUresult fill(DevicePtr va, std::uint8_t value, std::size_t size) override;

  // Configuration.
  void setPhysicalCapacity(std::uint64_t bytes);  // createPhysical beyond it gives CUDA_ERROR_OUT_OF_MEMORY
  void failNthCall(std::uint64_t n, CUresult result);
  void failNextCall(VmmCall method, CUresult result);
  void clearInjectedFailures();

  // A client kernel writing [va, va+size): the range must be mapped and accessible.
  // Returns false (and records a violation) otherwise.
  bool write(DevicePtr va, std::size_t size);

  // Observations.
  std::size_t liveHandles() const;
  std::size_t liveMappings() const;
  std::size_t liveReservations() const;
  bool hasReservation(DevicePtr base, std::size_t size) const;
  std::uint64_t physicalBytes() const;
  std::uint64_t callCount() const;
  std::uint64_t callCount(VmmCall method) const;
  bool isMappedAndAccessible(DevicePtr va, std::size_t size) const;
  std::vector<FillRecord> fills() const;
  std::vector<std::string> violations() const;

 private:
  std::size_t exports_ = 0;
  bool grantsCompression_ = true;
  std::size_t compressibleGranularity_ = 0;  // 0: the plain granularity
  std::size_t compressibleRequests_ = 0;
  struct Handle {
    std::size_t size = 0;
    std::size_t mappings = 0;  // the driver lets a handle be mapped at several addresses
    bool dirty = false;
  };
  struct Mapping {
    std::size_t size = 0;
    PhysicalHandle handle = 0;
    bool accessible = false;
  };

  // Counts the call and returns an injected failure, if one is due. Caller holds mutex_.
  std::optional<CUresult> enter(VmmCall method);
  CUresult violation(std::string what);  // records it; returns CUDA_ERROR_INVALID_VALUE
  // The mapping containing all of [va, va+size), or nullptr. Caller holds mutex_.
  const Mapping* mappingCovering(DevicePtr va, std::size_t size, DevicePtr* mappingBase) const;
  bool aligned(std::uint64_t value) const { return value % granularity_ == 0; }

  mutable std::mutex mutex_;
  const std::size_t granularity_;
  std::uint64_t capacity_ = UINT64_MAX;
  std::uint64_t physicalBytes_ = 0;
  PhysicalHandle nextHandle_ = 1;
  DevicePtr nextElsewhere_ = kElsewhere;
  std::map<DevicePtr, std::size_t> reservations_;  // base -> size
  std::map<PhysicalHandle, Handle> handles_;
  std::map<DevicePtr, Mapping> mappings_;  // by va
  std::uint64_t calls_ = 0;
  std::map<VmmCall, std::uint64_t> callsByMethod_;
  std::optional<std::pair<std::uint64_t, CUresult>> failAtCall_;  // absolute call number
  std::map<VmmCall, CUresult> failNext_;
  std::vector<FillRecord> fills_;
  std::vector<std::string> violations_;
};

// Joins the fake's violations for an assertion message.
inline std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

}  // namespace agileos::memmgr::testing
