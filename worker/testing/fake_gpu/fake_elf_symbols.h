// FakeElfSymbols: the symbols FakeGpuBackend exposes for an ELF (SASS) module. TEST-ONLY.
//
// What a real driver reads from a cubin, as far as the worker asks for it: each kernel (a
// `.text.NAME` section with its `.nv.info.NAME` attributes) with its parameters' offsets and sizes
// (the EIATTR_KPARAM_INFO records ptxas writes), and each variable (an STT_OBJECT symbol in a
// `.nv.global*` or `.nv.constant*` section) with its size. It lets CPU tests load the cubins of
// real libraries (cuBLAS) on the fake; their kernels are recorded when launched, never run.
//
// The image has passed the worker's structural check (worker/fatbin/elf_image_check.h), which
// bounds every header and section; this scan still checks each read against the image's extent
// and fails (ok = false) on anything it cannot read, so a test never runs on a guessed layout.
//
// Thread-safety: scanElfSymbols is a pure function.
#pragma once

#include <cstdint>
#include <span>

#include "worker/testing/fake_gpu/fake_ptx_symbols.h"

namespace agileos::worker::fake {

// The extent of the ELF image at `image` (the end of its last header table or section), read from
// its headers, which the worker's check has bounded; 0 if they are not an ELF64 image's.
std::uint64_t elfImageSize(const void* image);

// Kernels and variables of the ELF image (versionMajor/versionMinor/targetSm stay 0).
PtxSymbols scanElfSymbols(std::span<const std::uint8_t> image);

}  // namespace agileos::worker::fake
