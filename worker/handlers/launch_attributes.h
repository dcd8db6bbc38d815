// The launch attributes a client may give a launch or an occupancy query (cuLaunchKernelEx's
// CUlaunchAttribute list), read from the wire into the driver's form.
//
// Admitted: the ones that shape how the launch runs on the client's own work and name nothing
// outside it: cluster dimensions (and the preferred ones), the cluster scheduling policy,
// programmatic stream serialization, priority, the memory synchronization domain and its map,
// the synchronization policy and the shared memory carveout; and the access policy window (an L2
// caching hint over an address range), whose range the caller's WindowCheck confines to the
// client's memory. Refused: attributes that carry a handle (programmatic and completion events)
// and every id not listed, so that a new attribute is never passed on unread. Values the driver judges
// itself pass as they are (a cluster of any size, any priority); an enum's value must be one of
// its members.
#pragma once

#include <cuda.h>
#include <google/protobuf/repeated_ptr_field.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "agileos/v1/client_api.pb.h"

namespace agileos::worker {

// The most attributes one launch may carry: every admitted kind once, with room to spare.
inline constexpr int kMaxLaunchAttributes = 16;

// Confines an access policy window of *bytes bytes at base (bytes > 0) to the client's memory:
// false refuses it; it may shrink *bytes. A window of no bytes (the hint turned off) is not asked.
using WindowCheck = std::function<bool(std::uint64_t base, std::uint64_t* bytes)>;

// False, with the reason, when an attribute is not admitted or a value is out of its range.
bool readLaunchAttributes(const google::protobuf::RepeatedPtrField<v1::LaunchAttribute>& wire,
                          std::vector<CUlaunchAttribute>* attributes, std::string* reason,
                          const WindowCheck& window);
bool readLaunchAttribute(const v1::LaunchAttribute& wire, CUlaunchAttribute* out, std::string* reason,
                         const WindowCheck& window);

// The wire form of an attribute the driver answered (cuStreamGetAttribute), for the ids
// readLaunchAttribute admits.
void writeLaunchAttribute(const CUlaunchAttribute& attribute, v1::LaunchAttribute* wire);

}  // namespace agileos::worker
