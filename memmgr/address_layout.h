// The fixed GPU virtual-address layout of the AgileOS paper (Table I).
//
// Every worker reserves these ranges (and the guard zone below them) at start-up, exactly at these
// addresses. The classification rule is purely arithmetic, so it can be
// applied to any untrusted pointer before any table lookup.
#pragma once

#include <cstdint>

namespace agileos::memmgr {

using DevicePtr = std::uint64_t;
using ClientId = std::uint64_t;

struct Region {
  DevicePtr begin;
  std::uint64_t size;
  constexpr DevicePtr end() const { return begin + size; }  // one past the last byte
  constexpr bool contains(DevicePtr p) const { return p >= begin && p < end(); }
};

inline constexpr std::uint64_t kGiB = 1ull << 30;

// Protected I/O aperture for MMIO mappings (PCIe BARs registered for GPU access).
inline constexpr Region kIoAperture{0xF0000000000ull, 64 * kGiB};
// The part of the I/O aperture where host mappings (device resources, a service's queues) are
// placed with mmap(MAP_FIXED_NOREPLACE) and registered for GPU access. It is NOT reserved in the
// GPU's virtual address space: a registered host range gets the device address equal to its
// host address (unified addressing), so it must stay free there. The rest of the aperture
// (kIoApertureReserved, which holds the guard's fault window) is reserved and never mapped.
inline constexpr Region kMmioWindow{kIoAperture.begin, 32 * kGiB};
inline constexpr Region kIoApertureReserved{kMmioWindow.end(), kIoAperture.end() - kMmioWindow.end()};
// Protected AgileOS kernel/module memory and imported service memory.
inline constexpr Region kModuleRange{0xF1000000000ull, 448 * kGiB};
// User allocations returned through CUDA-facing APIs.
inline constexpr Region kUserRange{0xF8000000000ull, 1024 * kGiB};

// The kernel memory guard's fault window (ptx/guard.h, policy trap): the last GiB of the
// I/O aperture, reserved with it and never mapped, so that an access the guard sends there
// faults. Nothing may ever be mapped here (MMIO mappings are placed below it).
inline constexpr Region kGuardFaultWindow{kIoAperture.end() - kGiB, kGiB};

// The kernel memory guard's zone below the protected range (ptx/guard.h): the guard's
// check flags any access that starts in [kGuardZone.begin, kModuleRange.end()), which is
// cheap (the high word only) and sound for every access narrower than 4 GiB. These 4 GiB
// are reserved and never mapped, so flagging them stops nothing that could have worked.
inline constexpr Region kGuardZone{kIoAperture.begin - 4 * kGiB, 4 * kGiB};

static_assert(kGuardZone.end() == kIoAperture.begin);
static_assert(kIoAperture.end() == kModuleRange.begin);
static_assert(kModuleRange.end() == kUserRange.begin);
static_assert(kGuardFaultWindow.begin >= kMmioWindow.end());

// Managed memory (cudaMallocManaged) and mapped page-locked memory (cudaHostAllocMapped): host
// segments that the client and the device reach at ONE address. The worker maps each one here (mmap
// MAP_FIXED_NOREPLACE, addresses handed out once by a per-worker bump allocator) and registers it for the
// device, whose address for it equals the host address under unified addressing; the client maps the same
// memfd at the same address. It is NOT reserved on the GPU (like the MMIO window, a registered host range
// takes its own address there), lies far above everything the fixed layout reserves, and far below where
// Linux places mmap and stacks (top-down from 0x7fxx'xxxx'xxxx), so both processes normally have it free. The
// guard flags only [kGuardZone.begin, kModuleRange.end()): this window is ordinary memory to it.
inline constexpr Region kManagedWindow{0x300000000000ull, 0x100000000000ull};
static_assert(kManagedWindow.begin >= kUserRange.end());
static_assert(kManagedWindow.end() <= 0x7f0000000000ull);

enum class RegionKind { kIoAperture, kProtectedModule, kUser, kOutside };

constexpr RegionKind classify(DevicePtr p) {
  if (kIoAperture.contains(p)) return RegionKind::kIoAperture;
  if (kModuleRange.contains(p)) return RegionKind::kProtectedModule;
  if (kUserRange.contains(p)) return RegionKind::kUser;
  return RegionKind::kOutside;
}

// True when any byte of [p, p+n) lies in the I/O aperture or the module range.
// The two protected ranges are contiguous, so one interval test suffices.
// Callers must have rejected p+n overflow first.
constexpr bool touchesProtected(DevicePtr p, std::uint64_t n) {
  if (n == 0) return classify(p) == RegionKind::kIoAperture || classify(p) == RegionKind::kProtectedModule;
  return p < kModuleRange.end() && p + n > kIoAperture.begin;
}

}  // namespace agileos::memmgr
