// The relocatable objects of a separately compiled (-rdc) image, as stand-ins for its linked SASS.
//
// nvcc -rdc=true compiles each translation unit to a relocatable object (a fatbin with relocatable
// SASS and, when asked, PTX), and the device link (nvlink) joins them, with the device runtime
// (libcudadevrt), into one image of SASS only. The program registers that linked image, through a
// version-2 fatbin wrapper that also lists the objects it was linked from (the "prelinked" fatbins,
// which the driver itself uses to JIT-link the code for a GPU the SASS does not fit). The client
// sends those objects beside the linked image (ModuleLoad.relocatable_objects).
//
// The worker loads the linked SASS wherever SASS may load. Where it may not (the guard needs PTX:
// the context holds protected state, guard.sass_only = refuse, protected-module functions to link,
// __managed__ variables to rewrite, cudaGraphSetConditional to define) the objects' PTX stands in,
// and goes through the gate like any PTX: the one object's PTX is, with the device runtime's
// functions defined by the worker (cudaGraphSetConditional) or left to the JIT, the same program.
//
// Only an image linked from ONE object can be stood in for: the PTX of several objects would need
// a PTX linker (their calls to each other's functions), which AgileOS does not have. Then
// `unavailable` says so and there is no stand-in.
//
// Thread-safety: a pure function of its arguments.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "worker/fatbin/fatbin_reader.h"

namespace agileos::fatbin {

struct RelocatableStandIn {
  std::vector<Entry> ptx;   // the one object's PTX entries (payloads possibly still compressed)
  std::string unavailable;  // why there is no stand-in, when `ptx` is empty and objects were offered
};

// At most this many objects are looked at; more is refused as a whole (unavailable).
inline constexpr std::size_t kMaxRelocatableObjects = 4096;

// Parses each object (a fatbin container, checked as any fatbin is) and keeps the PTX of the one
// object that has code. No objects: empty, nothing unavailable.
RelocatableStandIn relocatableStandIn(const std::vector<std::string_view>& objects);

}  // namespace agileos::fatbin
