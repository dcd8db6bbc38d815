// ElfDeviceFootprint: the device memory a cubin takes when the driver loads it, for the
// loading client's quota (issue 14).
//
// cuModuleLoadData allocates device memory for a module's code, constant banks and global
// variables (.nv.global, .nv.global.init) outside the worker's memory manager. Uncounted, one
// client could take the whole device past its quota: measured on an H200, 139 modules that each
// declare a 1 GiB __device__ array took 149 GB. The footprint counts the sections the driver
// places in device memory (SHF_ALLOC, and by name .text.*, .nv.constant* and .nv.global* whatever
// their flags; never .nv.shared.* and .nv.local.*, which are on-chip shared memory and the
// per-thread stack: context_limits.h) and SHN_COMMON symbols, in three
// groups the driver allocates separately: code (.text.*), constant banks (.nv.constant*) and
// data (global variables, initialised or not). Each group's total is rounded up the way the
// driver was measured to place it: 2 MiB pages above 1 MiB (3 MiB of .nv.global.init takes
// 4 MiB), 64 KiB below (the driver packs the small modules of a context together, 256 of them
// taking nothing measurable, so this over-counts them; it never under-counts what was measured).
// The declared sizes are what counts, whatever bytes the image holds: a NOBITS .nv.global has
// none. The same image read by its loadable segments (PT_LOAD p_memsz, each placed) gives a second
// figure, and the larger of the two is charged: how the closed-source loader reads a crafted
// image in which sections and segments disagree is not known, so neither can hide memory.
//
// Thread-safety: a pure function of its argument.
#pragma once

#include <cstdint>
#include <span>

namespace agileos::fatbin {

// A footprint saturates here, so charges built from it cannot wrap.
inline constexpr std::uint64_t kMaxElfFootprint = std::uint64_t{1} << 62;

// Precondition: checkElfImage(image) accepted it (every table lies inside the image).
std::uint64_t elfDeviceFootprint(std::span<const std::uint8_t> image);

}  // namespace agileos::fatbin
