// Quoting of text that came from outside (a client's request, a config file) for error messages.
//
// Invariant: the result is printable ASCII only, at most about 4 * max_bytes + 5 bytes long, so a
// hostile name or requirement can neither forge log lines nor make a refusal arbitrarily large.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace agileos::modules {

// `text` in single quotes; bytes outside printable ASCII, the quote and the backslash become
// \xNN; beyond `max_bytes` input bytes the rest is cut and "..." appended after the quote.
std::string quoteText(std::string_view text, std::size_t max_bytes = 64);

}  // namespace agileos::modules
