// PCI bus ids as CUDA spells them (cudaDeviceGetByPCIBusId, cuDeviceGetByPCIBusId), shared by
// the runtime and driver shims (untrusted side).
#pragma once

namespace agileos::client {

struct PciLocation {
  unsigned domain = 0;
  unsigned bus = 0;
  unsigned device = 0;
};

// Parses "[domain]:[bus]:[device].[function]", "[domain]:[bus]:[device]" or
// "[bus]:[device].[function]" (hexadecimal fields; a missing domain or function is 0); false for
// any other text.
bool parsePciBusId(const char* text, PciLocation* location, unsigned* function);

}  // namespace agileos::client
