#include "scheduler/session_token.h"

#include <sys/random.h>

#include <cerrno>

namespace agileos::scheduler {

std::optional<std::string> mintSessionToken() {
  std::string token(kSessionTokenBytes, '\0');
  std::size_t filled = 0;
  while (filled < token.size()) {
    const ssize_t got = ::getrandom(token.data() + filled, token.size() - filled, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    filled += static_cast<std::size_t>(got);
  }
  return token;
}

}  // namespace agileos::scheduler
