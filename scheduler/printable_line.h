// Text from outside the daemon's trust (a client's Hello, an administrator's reason) made safe for
// one log line, an audit record or a message: at most `max_bytes` of it, control characters and
// bytes outside ASCII replaced by '?', "..." appended when it was cut.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace agileos::scheduler {

inline std::string printableLine(std::string_view text, std::size_t max_bytes) {
  std::string out;
  for (char ch : text.substr(0, max_bytes)) {
    const auto byte = static_cast<unsigned char>(ch);
    out += (byte < 0x20 || byte >= 0x7f) ? '?' : ch;
  }
  if (text.size() > max_bytes) out += "...";
  return out;
}

}  // namespace agileos::scheduler
