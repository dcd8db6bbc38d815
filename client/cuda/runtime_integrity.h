// The CUDA runtime's check of the driver it talks to (untrusted side).
//
// A CUDA runtime linked into a program (nvcc's default static cudart, and the one inside each
// math library) asks the driver for a private table (cuGetExportTable) whose second entry
// returns a 128-bit keyed digest of values the runtime can observe itself: the driver version,
// the process and thread, the addresses of two export tables and of the function, a timestamp,
// and each device's UUID and PCI location. The runtime computes the same digest and refuses a
// driver whose answer differs. The digest is HMAC-MD2 with a fixed key, as the public ZLUDA and
// Lupine projects found; it proves nothing about trust (anyone can compute it), it only has to
// match, so it is computed here, in the client, from exactly what this shim reports.
#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace agileos::client::cuda_shim {

// MD2 (RFC 1319) and HMAC-MD2 (RFC 2104 with MD2's 16-byte block).
std::array<std::uint8_t, 16> md2(std::span<const std::uint8_t> message);
std::array<std::uint8_t, 16> hmacMd2(std::span<const std::uint8_t, 16> key,
                                     std::span<const std::uint8_t> message);

// What the digest covers besides the devices, in the runtime's layout (little-endian, packed).
struct IntegrityInputs {
  std::uint32_t driverVersion;
  std::uint32_t runtimeVersion;  // the runtime's argument
  std::uint32_t processId;
  std::uint32_t threadId;  // the low 32 bits of pthread_self()
  std::uint64_t cudartTable;
  std::uint64_t integrityTable;
  std::uint64_t function;
  std::uint64_t unixSeconds;  // the runtime's argument
};
static_assert(sizeof(IntegrityInputs) == 48);

struct DeviceIdentity {
  std::array<std::uint8_t, 16> uuid;
  std::int32_t pciDomain;
  std::int32_t pciBus;
  std::int32_t pciDevice;
};
static_assert(sizeof(DeviceIdentity) == 28);

// The two 64-bit words the runtime expects. Runtime versions whose last decimal digit is 0 or 1
// get fixed words (no digest), as the driver answers them.
std::array<std::uint64_t, 2> runtimeIntegrityDigest(const IntegrityInputs& inputs,
                                                    std::span<const DeviceIdentity> devices);

}  // namespace agileos::client::cuda_shim
