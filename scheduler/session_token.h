// Session tokens: 32 random bytes from the kernel's CSPRNG (getrandom), minted per client.
// The client presents its token to its worker on every call (metadata "x-agileos-session");
// the worker accepts only the token the daemon attached it with.
//
// Thread-safety: safe from any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace agileos::scheduler {

inline constexpr std::size_t kSessionTokenBytes = 32;

// nullopt only if the kernel cannot supply random bytes (then no session may be created).
std::optional<std::string> mintSessionToken();

}  // namespace agileos::scheduler
