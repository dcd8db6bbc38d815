#include "worker/testing/fake_gpu/fake_ptx_symbols.h"

#include <algorithm>
#include <charconv>
#include <optional>

namespace agileos::worker::fake {
namespace {

// Largest object the scanner accepts; keeps every size computation far from overflow.
constexpr std::uint64_t kMaxObjectBytes = 1ull << 40;

// The text with // and /* */ comments replaced by blanks (string literals, which
// only `.file` directives carry, are kept as they are).
std::string withoutComments(std::string_view text) {
  std::string out(text);
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] == '"') {
      const std::size_t close = out.find('"', i + 1);
      i = close == std::string::npos ? out.size() : close;
    } else if (out.compare(i, 2, "//") == 0) {
      for (; i < out.size() && out[i] != '\n'; ++i) out[i] = ' ';
    } else if (out.compare(i, 2, "/*") == 0) {
      const std::size_t close = out.find("*/", i + 2);
      const std::size_t end = close == std::string::npos ? out.size() : close + 2;
      std::fill(out.begin() + static_cast<std::ptrdiff_t>(i), out.begin() + static_cast<std::ptrdiff_t>(end),
                ' ');
      i = end - 1;
    }
  }
  return out;
}

// Directives that end at the end of their line rather than at a ';'.
bool isLineDirective(std::string_view rest) {
  for (std::string_view directive : {".version", ".target", ".address_size", ".file", ".loc"}) {
    if (rest.starts_with(directive) && rest.size() > directive.size() &&
        (rest[directive.size()] == ' ' || rest[directive.size()] == '\t')) {
      return true;
    }
  }
  return false;
}

// Module-scope statements: a line directive, text up to a ';', or text up to the
// '{' that opens a function body (the body is skipped). A '{' after '=' opens an
// initializer and belongs to the statement.
std::vector<std::string> moduleStatements(const std::string& text) {
  std::vector<std::string> statements;
  std::string current;
  int initializerDepth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.' && current.find_first_not_of(" \t\r\n") == std::string::npos &&
        isLineDirective(std::string_view(text).substr(i))) {
      const std::size_t end = std::min(text.find('\n', i), text.size());
      statements.push_back(text.substr(i, end - i));
      current.clear();
      i = end;
    } else if (c == '"') {
      const std::size_t close = text.find('"', i + 1);
      const std::size_t end = close == std::string::npos ? text.size() : close + 1;
      current.append(text, i, end - i);
      i = end - 1;
    } else if (c == '{' && (initializerDepth > 0 || current.find('=') != std::string::npos)) {
      ++initializerDepth;
      current += c;
    } else if (c == '}' && initializerDepth > 0) {
      --initializerDepth;
      current += c;
    } else if (c == '{') {
      statements.push_back(std::move(current));
      current.clear();
      int depth = 1;
      while (depth > 0 && ++i < text.size()) {
        if (text[i] == '{') ++depth;
        if (text[i] == '}') --depth;
      }
    } else if (c == ';' && initializerDepth == 0) {
      statements.push_back(std::move(current));
      current.clear();
    } else {
      current += c;
    }
  }
  statements.push_back(std::move(current));
  return statements;
}

// Whitespace-separated tokens, with '(', ')', ',' and '=' as tokens of their own
// and a separated "[M]" joined to the name before it.
std::vector<std::string> tokens(std::string_view statement) {
  std::vector<std::string> out;
  std::string current;
  auto flush = [&] {
    if (current.empty()) return;
    if (current.front() == '[' && !out.empty()) {
      out.back() += current;
    } else {
      out.push_back(current);
    }
    current.clear();
  };
  for (char c : statement) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      flush();
    } else if (c == '(' || c == ')' || c == ',' || c == '=') {
      flush();
      out.emplace_back(1, c);
    } else {
      current += c;
    }
  }
  flush();
  return out;
}

bool has(const std::vector<std::string>& list, std::string_view token) {
  return std::find(list.begin(), list.end(), token) != list.end();
}

std::optional<std::uint64_t> decimal(std::string_view text) {
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// .u8 .s16 .b32 .f64 ... -> bytes; anything else -> nullopt.
std::optional<std::uint32_t> scalarBytes(std::string_view type) {
  if (type.size() < 3 || type[0] != '.' || std::string_view("usbf").find(type[1]) == std::string_view::npos) {
    return std::nullopt;
  }
  const auto bits = decimal(type.substr(2));
  if (!bits || (*bits != 8 && *bits != 16 && *bits != 32 && *bits != 64)) return std::nullopt;
  return static_cast<std::uint32_t>(*bits / 8);
}

struct Declarator {
  std::string name;
  std::uint64_t elements = 1;
};

// "name", "name[24]", "name[2][3]".
std::optional<Declarator> declarator(std::string_view text) {
  Declarator out;
  const std::size_t bracket = text.find('[');
  out.name = std::string(text.substr(0, bracket));
  if (out.name.empty()) return std::nullopt;
  std::string_view dimensions = bracket == std::string_view::npos ? std::string_view() : text.substr(bracket);
  while (!dimensions.empty()) {
    const std::size_t close = dimensions.find(']');
    if (dimensions.front() != '[' || close == std::string_view::npos) return std::nullopt;
    const auto count = decimal(dimensions.substr(1, close - 1));
    if (!count || *count == 0 || *count > kMaxObjectBytes / out.elements) return std::nullopt;
    out.elements *= *count;
    dimensions.remove_prefix(close + 1);
  }
  return out;
}

struct TypedObject {
  std::uint64_t size = 0;
  std::uint64_t align = 0;
  std::string name;
};

// Reads "[.align N] TYPE [.ptr [space] [.align N]] NAME[dims]" from `words`
// (state-space, linkage and `.param` words already removed).
std::optional<TypedObject> typedObject(const std::vector<std::string>& words, std::string* error) {
  std::optional<std::uint32_t> elementBytes;
  std::uint64_t align = 0;
  bool pointer = false;
  for (std::size_t i = 0; i + 1 < words.size(); ++i) {
    const std::string& word = words[i];
    if (word == ".align" && i + 2 < words.size()) {
      const auto n = decimal(words[++i]);
      if (!n || *n == 0 || (*n & (*n - 1)) != 0) return (*error = "bad .align " + words[i], std::nullopt);
      if (!pointer) align = *n;  // after .ptr, .align describes the pointee
    } else if (word == ".ptr") {
      pointer = true;
    } else if (pointer && (word == ".global" || word == ".const" || word == ".local" || word == ".shared")) {
      continue;
    } else if (auto bytes = scalarBytes(word); bytes && !elementBytes) {
      elementBytes = bytes;
    } else {
      *error = "unsupported word '" + word + "'";
      return std::nullopt;
    }
  }
  if (!elementBytes || words.empty()) return (*error = "no scalar type", std::nullopt);
  const auto named = declarator(words.back());
  if (!named) return (*error = "unreadable declarator '" + words.back() + "'", std::nullopt);
  if (named->elements > kMaxObjectBytes / *elementBytes) return (*error = "object too large", std::nullopt);
  return TypedObject{named->elements * *elementBytes, align != 0 ? align : *elementBytes, named->name};
}

bool scanEntry(const std::vector<std::string>& words, PtxSymbols* out) {
  auto entry = std::find(words.begin(), words.end(), ".entry");
  if (entry + 1 >= words.end()) return (out->error = ".entry without a name", false);
  PtxEntry result;
  result.name = *(entry + 1);
  auto open = entry + 2;
  if (open != words.end() && *open == "(") {
    auto close = std::find(open, words.end(), ")");
    if (close == words.end()) return (out->error = "unterminated parameter list of " + result.name, false);
    std::uint64_t offset = 0;
    for (auto begin = open + 1; begin < close;) {
      auto end = std::find(begin, close, ",");
      std::vector<std::string> param(begin, end);
      if (param.empty() || param.front() != ".param") {
        return (out->error = "parameter of " + result.name + " is not a .param", false);
      }
      param.erase(param.begin());
      std::string why;
      const auto object = typedObject(param, &why);
      if (!object) return (out->error = "parameter of " + result.name + ": " + why, false);
      offset = (offset + object->align - 1) / object->align * object->align;
      if (offset + object->size > kMaxObjectBytes) return (out->error = "parameters too large", false);
      result.params.push_back({static_cast<std::uint32_t>(offset), static_cast<std::uint32_t>(object->size)});
      offset += object->size;
      begin = end == close ? close : end + 1;
    }
  }
  out->entries.push_back(std::move(result));
  return true;
}

bool scanVariable(std::vector<std::string> words, PtxSymbols* out) {
  const bool constant = has(words, ".const");
  if (auto eq = std::find(words.begin(), words.end(), "="); eq != words.end()) words.erase(eq, words.end());
  std::erase_if(words, [](const std::string& w) {
    return w == ".global" || w == ".const" || w == ".visible" || w == ".weak" || w == ".common";
  });
  std::string why;
  const auto object = typedObject(words, &why);
  if (!object) return (out->error = "module variable: " + why, false);
  out->variables.push_back({object->name, object->size, constant});
  return true;
}

}  // namespace

PtxSymbols scanPtxSymbols(std::string_view ptx) {
  PtxSymbols out;
  bool sawVersion = false;
  for (const std::string& statement : moduleStatements(withoutComments(ptx))) {
    const std::vector<std::string> words = tokens(statement);
    if (words.empty()) continue;
    if (words[0] == ".version" && words.size() == 2) {
      const std::size_t dot = words[1].find('.');
      const auto major = decimal(std::string_view(words[1]).substr(0, dot));
      const auto minor = dot == std::string::npos ? std::optional<std::uint64_t>(0)
                                                  : decimal(std::string_view(words[1]).substr(dot + 1));
      if (!major || !minor) return (out.error = "bad .version", out);
      out.versionMajor = static_cast<int>(*major);
      out.versionMinor = static_cast<int>(*minor);
      sawVersion = true;
    } else if (words[0] == ".target" && words.size() >= 2 && words[1].starts_with("sm_")) {
      std::string_view arch = std::string_view(words[1]).substr(3);
      while (!arch.empty() && (arch.back() < '0' || arch.back() > '9')) arch.remove_suffix(1);  // sm_90a
      out.targetSm = static_cast<int>(decimal(arch).value_or(0));
    } else if (has(words, ".extern") || has(words, ".func")) {
      continue;  // declarations and device functions expose nothing to the host
    } else if (has(words, ".entry")) {
      if (!scanEntry(words, &out)) return out;
    } else if (has(words, ".global") || has(words, ".const")) {
      if (!scanVariable(words, &out)) return out;
    }
  }
  if (!sawVersion) {
    out.error = "no .version directive: not PTX text";
    return out;
  }
  out.ok = true;
  return out;
}

}  // namespace agileos::worker::fake
