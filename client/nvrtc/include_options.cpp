#include "client/nvrtc/include_options.h"

#include <algorithm>
#include <optional>
#include <string_view>

namespace agileos::client::nvrtc_shim {
namespace {

constexpr std::string_view kLong = "--include-path";
constexpr std::string_view kShort = "-I";

// The directory an option names on its own (`-Idir`, `-I=dir`, `--include-path=dir`); nullopt
// for anything else, including the two spellings whose directory is the next option.
std::optional<std::string> attachedDirectory(std::string_view option) {
  if (option.starts_with(kLong) && option.size() > kLong.size() && option[kLong.size()] == '=')
    return std::string(option.substr(kLong.size() + 1));
  if (option.starts_with(kShort) && option.size() > kShort.size()) {
    std::string_view rest = option.substr(kShort.size());
    if (rest.front() == '=') rest.remove_prefix(1);
    return std::string(rest);
  }
  return std::nullopt;
}

}  // namespace

IncludeOptions splitIncludeOptions(const std::vector<std::string>& options) {
  IncludeOptions out;
  auto add = [&](std::string directory) {
    if (directory.empty()) directory = ".";
    if (std::find(out.includePaths.begin(), out.includePaths.end(), directory) == out.includePaths.end())
      out.includePaths.push_back(std::move(directory));
  };
  for (std::size_t i = 0; i < options.size(); ++i) {
    const std::string& option = options[i];
    if (option == kShort || option == kLong) {
      // The next option is the directory, whatever it looks like (as NVRTC reads it); none: "".
      add(i + 1 < options.size() ? options[++i] : std::string());
    } else if (auto directory = attachedDirectory(option)) {
      add(std::move(*directory));
    } else {
      out.forwarded.push_back(option);
    }
  }
  return out;
}

}  // namespace agileos::client::nvrtc_shim
