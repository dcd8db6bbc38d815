// cudaDeviceProp from the worker's description of the virtual device.
//
// The worker answers GetDeviceInfo with an agileos.v1.DeviceInfo: the name, uuid and total
// memory in dedicated fields, and every other property as a (CUdevice_attribute, value) pair
// (CUdevice_attribute and cudaDeviceAttr share numbering). The client fills the application's
// cudaDeviceProp from that, field by field, exactly as libcudart fills it from the driver's
// attributes; structs are never copied across the wire, because cudaDeviceProp changes
// layout between CUDA releases.
//
// The worker decides what the virtual device offers (it may, for instance, report
// canMapHostMemory = 0 or a smaller memory size than the physical GPU has); the client reports
// what it was told and adds nothing of its own.
//
// Both functions are pure: no I/O, no shared state, safe from any thread.
#pragma once

#include <cuda_runtime_api.h>

#include <optional>

#include "agileos/v1/client_api.pb.h"

namespace agileos::client {

// Overwrites every byte of *prop (prop must not be null). name is the reported name truncated
// to 255 bytes and NUL-terminated; uuid is copied when the worker sent exactly 16 bytes and is
// zero otherwise; totalGlobalMem comes from total_global_mem; every other field with a
// CUdevice_attribute counterpart takes that attribute's value, and a field whose attribute the
// worker did not report is zero, as are the fields with no attribute at all (luid,
// luidDeviceNodeMask, reserved): the same as a value-initialised cudaDeviceProp.
// When an attribute is reported more than once, the first report counts.
void fillDeviceProperties(const agileos::v1::DeviceInfo& info, cudaDeviceProp* prop);

// The value of `attribute` (a cudaDeviceAttr / CUdevice_attribute number) as the worker
// reported it, or nullopt when it did not. When reported more than once, the first report.
std::optional<int> findAttribute(const agileos::v1::DeviceInfo& info, int attribute);

}  // namespace agileos::client
