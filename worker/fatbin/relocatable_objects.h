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
// and goes through the gate like any PTX: with the device runtime's functions defined by the
// worker (cudaGraphSetConditional) or left to the JIT, it is the same program.
//
// The objects' PTX is kept per object: one object's PTX is the program as it is; several
// objects' PTX is merged into one module first (ptx/object_merge.h, in the worker's preparation:
// prepareModuleImage with relocatable objects, worker/module_guard.h), as nvlink joined their
// SASS. An object with code but no PTX leaves no stand-in, and `unavailable` says why.
//
// Thread-safety: a pure function of its arguments.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "worker/fatbin/fatbin_reader.h"

namespace agileos::fatbin {

struct RelocatableStandIn {
  // The PTX entries of each object that has code, in list order (payloads possibly still
  // compressed); empty when there is no stand-in.
  std::vector<std::vector<Entry>> objects;
  std::string unavailable;  // why there is no stand-in, when `objects` is empty and some were offered
};

// At most this many objects are looked at; more is refused as a whole (unavailable).
inline constexpr std::size_t kMaxRelocatableObjects = 4096;

// Parses each object (a fatbin container, checked as any fatbin is) and keeps the PTX of each
// object that has code. No objects: empty, nothing unavailable.
RelocatableStandIn relocatableStandIn(const std::vector<std::string_view>& objects);

}  // namespace agileos::fatbin
