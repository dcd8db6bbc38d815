#include "worker/adapters/nvrtc/nvrtc_source_policy.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace agileos::adapters::nvrtc {
namespace {

// Options that take a value after '=' (both spellings NVRTC documents).
constexpr std::array kValueOptions = {
    "--gpu-architecture",
    "-arch",
    "--std",
    "-std",
    "--define-macro",
    "--undefine-macro",
    "--maxrregcount",
    "-maxrregcount",
    "--ftz",
    "-ftz",
    "--prec-sqrt",
    "-prec-sqrt",
    "--prec-div",
    "-prec-div",
    "--fmad",
    "-fmad",
    "--diag-suppress",
    "-diag-suppress",
    "--diag-error",
    "-diag-error",
    "--diag-warn",
    "-diag-warn",
    "--optimization-info",
    "-opt-info",
    "--dopt",
    "-dopt",
    "--Ofast-compile",
    "-Ofast-compile",
    "--relocatable-device-code",
    "-rdc",
    "--builtin-move-forward",
    "-builtin-move-forward",
    "--builtin-initializer-list",
    "-builtin-initializer-list",
    "--Werror",
    "-Werror",
    "--device-stack-protector",
    "-device-stack-protector",
    "--extensible-whole-program",
    "-ewp",
};
// Flags without a value.
constexpr std::array kFlagOptions = {
    "--device-debug",
    "-G",
    "--generate-line-info",
    "-lineinfo",
    "--use_fast_math",
    "-use_fast_math",
    "--extra-device-vectorization",
    "-extra-device-vectorization",
    "--device-as-default-execution-space",
    "-default-device",
    "--disable-warnings",
    "-w",
    "--restrict",
    "-restrict",
    "--display-error-number",
    "-err-no",
    "--no-display-error-number",
    "-no-err-no",
    "--device-int128",
    "-device-int128",
    "--minimal",
    "-minimal",
    "--fdevice-syntax-only",
    "-fdevice-syntax-only",
    "--no-source-include",
    "-no-source-include",
    // LTO IR instead of PTX/CUBIN: only the form of the output changes (nvrtcGetLTOIR).
    "--dlink-time-opt",
    "-dlto",
};

template <std::size_t N>
bool listed(const std::array<const char*, N>& list, std::string_view name) {
  return std::any_of(list.begin(), list.end(), [&](const char* entry) { return name == entry; });
}

bool isIdentifierChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// Line continuations removed; the digraph %: and the trigraph ??= read as '#'.
std::string normalized(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\') {
      std::size_t j = i + 1;
      if (j < text.size() && text[j] == '\r') ++j;
      if (j < text.size() && text[j] == '\n') {
        i = j;
        continue;
      }
    }
    if (text.compare(i, 2, "%:") == 0) {
      out += '#';
      ++i;
      continue;
    }
    if (text.compare(i, 3, "?\?=") == 0) {
      out += '#';
      i += 2;
      continue;
    }
    out += text[i];
  }
  return out;
}

// Skips whitespace (newlines too: conservative) and /* */ and // comments from `i`.
std::size_t skipBlank(const std::string& text, std::size_t i) {
  while (i < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[i])) != 0) {
      ++i;
    } else if (text.compare(i, 2, "/*") == 0) {
      const auto end = text.find("*/", i + 2);
      i = end == std::string::npos ? text.size() : end + 2;
    } else if (text.compare(i, 2, "//") == 0) {
      const auto end = text.find('\n', i);
      i = end == std::string::npos ? text.size() : end + 1;
    } else {
      break;
    }
  }
  return i;
}

std::string identifierAt(const std::string& text, std::size_t i) {
  std::size_t end = i;
  while (end < text.size() && isIdentifierChar(text[end])) ++end;
  return text.substr(i, end - i);
}

// Reads a "name" or <name> operand at `i`; nullopt if there is none (a computed include).
std::optional<std::pair<std::string, char>> literalAt(const std::string& text, std::size_t i) {
  if (i >= text.size() || (text[i] != '"' && text[i] != '<')) return std::nullopt;
  const char close = text[i] == '"' ? '"' : '>';
  const auto end = text.find_first_of(std::string(1, close) + "\n", i + 1);
  if (end == std::string::npos || text[end] != close) return std::nullopt;
  return std::make_pair(text.substr(i + 1, end - i - 1), text[i]);
}

bool supplied(const std::vector<std::string>& headerNames, const std::string& name) {
  return std::find(headerNames.begin(), headerNames.end(), name) != headerNames.end();
}

// Whether only blanks precede `i` on its line (a '#' in a comment or a string is not a directive).
bool startsLine(const std::string& text, std::size_t i) {
  while (i > 0 && (text[i - 1] == ' ' || text[i - 1] == '\t')) --i;
  return i == 0 || text[i - 1] == '\n';
}

// A name that is a path of its own: absolute, or climbing out of wherever it is looked up.
bool pathLike(const std::string& name) {
  return name.starts_with('/') || name.find("..") != std::string::npos;
}

}  // namespace

std::optional<std::string> refuseOption(std::string_view option) {
  if (listed(kFlagOptions, option)) return std::nullopt;
  const auto equals = option.find('=');
  if (equals != std::string_view::npos && equals + 1 < option.size() &&
      listed(kValueOptions, option.substr(0, equals))) {
    const std::string_view name = option.substr(0, equals);
    if ((name == "--gpu-architecture" || name == "-arch") &&
        option.find_first_of("/\\", equals) != std::string_view::npos) {
      return "option " + std::string(option) + " is malformed";
    }
    return std::nullopt;
  }
  // -DNAME[=value] and -UNAME.
  if (option.size() > 2 && (option.starts_with("-D") || option.starts_with("-U")) &&
      isIdentifierChar(option[2])) {
    return std::nullopt;
  }
  return "option '" + std::string(option.substr(0, 128)) +
         "' is not allowed here (include paths, pre-includes, precompiled headers, file output and unknown "
         "options are "
         "refused; supply headers through nvrtcCreateProgram)";
}

std::optional<std::string> refuseSource(std::string_view source,
                                        const std::vector<std::string>& headerNames) {
  const std::string text = normalized(source);
  std::size_t defineEnd = 0;  // the end of the #define directive being read, if any
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '#') {
      const std::size_t at = skipBlank(text, i + 1);
      const std::string directive = identifierAt(text, at);
      if (directive == "define" && startsLine(text, i)) {
        const auto end = text.find('\n', at);
        defineEnd = end == std::string::npos ? text.size() : end;
        continue;
      }
      if (directive != "include" && directive != "include_next" && directive != "import" &&
          directive != "embed") {
        continue;
      }
      const auto literal = literalAt(text, skipBlank(text, at + directive.size()));
      if (!literal) return "#" + directive + " with a computed operand is not allowed";
      // #include <name> searches the include paths only, and the adapter refuses every option
      // that adds one: with a relative name it reads no file, here or in the jail, and NVRTC
      // reports it missing. Libraries name host headers (<cassert>, <pthread.h>) in branches
      // NVRTC never takes, which this scanner cannot tell from the taken ones.
      // "name" also searches the program's directory, and the other directives do more, so
      // they must name a supplied header.
      const bool searchesNoDirectory =
          directive == "include" && literal->second == '<' && !pathLike(literal->first);
      if (!supplied(headerNames, literal->first) && !searchesNoDirectory) {
        return "#" + directive + " of '" + literal->first.substr(0, 256) +
               "', which is not one of the headers given to nvrtcCreateProgram (the compiler may read no "
               "files)";
      }
      continue;
    }
    if (text[i] == '_' && (i == 0 || !isIdentifierChar(text[i - 1]))) {
      const std::string word = identifierAt(text, i);
      if (word != "__has_include" && word != "__has_include_next" && word != "__has_embed") continue;
      // A macro that wraps the probe (CCCL: #define _CCCL_HAS_INCLUDE(_X) __has_include(_X))
      // names what it probes where it is used, which this scanner cannot follow: such a
      // definition is left to the jail, which answers every probe of a host path "no". A
      // computed probe outside a #define is refused.
      const bool inDefine = i < defineEnd;
      std::size_t at = skipBlank(text, i + word.size());
      if (at >= text.size() || text[at] != '(') {
        // `#ifdef __has_include`, `defined(__has_include)`: a test for the feature, no probe.
        std::size_t next = i + word.size();
        while (next < text.size() && (text[next] == ' ' || text[next] == '\t')) ++next;
        if (inDefine || next == text.size() || text[next] == '\n' || text[next] == ')') continue;
        return word + " without a literal operand is not allowed";
      }
      const auto literal = literalAt(text, skipBlank(text, at + 1));
      if (!literal) {
        if (inDefine) continue;
        return word + " with a computed operand is not allowed";
      }
      const std::string& name = literal->first;
      // <...> searches no directory (include paths are refused), so it reads nothing unless the
      // name is a path of its own.
      if (!supplied(headerNames, name) && (literal->second == '"' || pathLike(name))) {
        return word + " of '" + name.substr(0, 256) +
               "', which is not one of the headers given to nvrtcCreateProgram";
      }
      i += word.size() - 1;
    }
  }
  return std::nullopt;
}

std::optional<std::vector<std::string>> withVirtualArchitecture(const std::vector<std::string>& options) {
  std::vector<std::string> out = options;
  bool replaced = false;
  for (std::string& option : out) {
    for (std::string_view prefix : {"--gpu-architecture=sm_", "-arch=sm_"}) {
      if (option.starts_with(prefix)) {
        option = std::string(prefix.substr(0, prefix.size() - 3)) + "compute_" + option.substr(prefix.size());
        replaced = true;
      }
    }
  }
  if (!replaced) return std::nullopt;
  return out;
}

}  // namespace agileos::adapters::nvrtc
