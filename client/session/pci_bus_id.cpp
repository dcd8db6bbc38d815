#include "client/session/pci_bus_id.h"

#include <cstdlib>
#include <string>

namespace agileos::client {
namespace {

// One hexadecimal field of a PCI bus id: at least one digit, nothing else.
bool parseHexField(const std::string& text, unsigned* value) {
  if (text.empty() || text.size() > 8 ||
      text.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
    return false;
  }
  *value = static_cast<unsigned>(std::strtoul(text.c_str(), nullptr, 16));
  return true;
}

}  // namespace

bool parsePciBusId(const char* text, PciLocation* location, unsigned* function) {
  std::string rest(text);
  std::string fields[3];
  int count = 0;
  for (std::size_t colon; count < 2 && (colon = rest.find(':')) != std::string::npos; ++count) {
    fields[count] = rest.substr(0, colon);
    rest.erase(0, colon + 1);
  }
  fields[count++] = rest;
  if (count < 2) return false;
  std::string& last = fields[count - 1];
  const std::size_t dot = last.find('.');
  const bool hasFunction = dot != std::string::npos;
  if (count == 2 && !hasFunction) return false;  // "[bus]:[device]" is not one of the forms
  *function = 0;
  if (hasFunction) {
    if (!parseHexField(last.substr(dot + 1), function)) return false;
    last.erase(dot);
  }
  location->domain = 0;
  if (count == 3 && !parseHexField(fields[0], &location->domain)) return false;
  return parseHexField(fields[count - 2], &location->bus) && parseHexField(last, &location->device);
}

}  // namespace agileos::client
