#include "client/nvrtc/include_resolver.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <utility>

#include "client/common/log.h"

namespace agileos::client::nvrtc_shim {
namespace {

// `text` with line continuations removed and comments replaced by a space; string and
// character literals are kept as they are (a "/*" in one starts no comment).
std::string withoutComments(std::string_view text) {
  std::string joined;
  joined.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\') {
      std::size_t j = i + 1;
      if (j < text.size() && text[j] == '\r') ++j;
      if (j < text.size() && text[j] == '\n') {
        i = j;
        continue;
      }
    }
    joined += text[i];
  }
  std::string out;
  out.reserve(joined.size());
  for (std::size_t i = 0; i < joined.size(); ++i) {
    const char c = joined[i];
    if (c == '/' && i + 1 < joined.size() && joined[i + 1] == '*') {
      const auto end = joined.find("*/", i + 2);
      i = end == std::string::npos ? joined.size() : end + 1;
      out += ' ';
    } else if (c == '/' && i + 1 < joined.size() && joined[i + 1] == '/') {
      const auto end = joined.find('\n', i);
      i = end == std::string::npos ? joined.size() : end - 1;
    } else if (c == '"' || c == '\'') {
      // A literal ends at its closing quote or at the end of the line.
      std::size_t j = i + 1;
      while (j < joined.size() && joined[j] != c && joined[j] != '\n') j += joined[j] == '\\' ? 2 : 1;
      j = std::min(j, joined.size() - 1);
      out.append(joined, i, j - i + 1);
      i = j;
    } else {
      out += c;
    }
  }
  return out;
}

std::size_t skipSpaces(const std::string& text, std::size_t i) {
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
  return i;
}

bool isIdentifierChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

std::optional<IncludeName> literalAt(const std::string& text, std::size_t i) {
  if (i >= text.size() || (text[i] != '"' && text[i] != '<')) return std::nullopt;
  const char close = text[i] == '"' ? '"' : '>';
  std::size_t end = i + 1;
  while (end < text.size() && text[end] != close && text[end] != '\n') ++end;
  if (end >= text.size() || text[end] != close || end == i + 1) return std::nullopt;
  return IncludeName{text.substr(i + 1, end - i - 1), close == '"'};
}

std::string directoryOf(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string joined(const std::string& directory, const std::string& name) {
  if (name.starts_with('/')) return name;
  return directory.ends_with('/') ? directory + name : directory + "/" + name;
}

}  // namespace

std::optional<std::string> readRegularFile(const std::string& path, std::size_t maxBytes) {
  // O_NONBLOCK: a FIFO named like a header must not hang the compilation (it is then refused
  // as not regular).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return std::nullopt;
  struct stat status {};
  std::optional<std::string> out;
  if (::fstat(fd, &status) == 0 && S_ISREG(status.st_mode) &&
      static_cast<std::size_t>(status.st_size) <= maxBytes) {
    std::string text;
    char buffer[65536];
    bool ok = true;
    while (true) {
      const ssize_t got = ::read(fd, buffer, sizeof buffer);
      if (got < 0) {
        ok = false;
        break;
      }
      if (got == 0) break;
      text.append(buffer, static_cast<std::size_t>(got));
      if (text.size() > maxBytes) {
        ok = false;  // grew while read
        break;
      }
    }
    if (ok) out = std::move(text);
  }
  ::close(fd);
  return out;
}

std::vector<IncludeName> includesIn(std::string_view source) {
  const std::string text = withoutComments(source);
  std::vector<IncludeName> out;
  std::size_t lineStart = 0;
  while (lineStart < text.size()) {
    std::size_t lineEnd = text.find('\n', lineStart);
    if (lineEnd == std::string::npos) lineEnd = text.size();
    std::size_t i = skipSpaces(text, lineStart);
    std::size_t hash = std::string::npos;
    if (i < text.size() && text[i] == '#') hash = i + 1;
    if (text.compare(i, 2, "%:") == 0) hash = i + 2;
    if (hash != std::string::npos && hash <= lineEnd) {
      const std::size_t at = skipSpaces(text, hash);
      std::size_t end = at;
      while (end < lineEnd && isIdentifierChar(text[end])) ++end;
      const std::string directive = text.substr(at, end - at);
      if (directive == "include" || directive == "include_next" || directive == "import") {
        if (auto literal = literalAt(text, skipSpaces(text, end))) out.push_back(std::move(*literal));
      }
    }
    for (std::size_t at = text.find("__has_include", lineStart); at < lineEnd;
         at = text.find("__has_include", at + 1)) {
      if (at > 0 && isIdentifierChar(text[at - 1])) continue;
      std::size_t j = at + std::string_view("__has_include").size();
      if (text.compare(j, 5, "_next") == 0) j += 5;
      j = skipSpaces(text, j);
      if (j >= lineEnd || text[j] != '(') continue;
      if (auto literal = literalAt(text, skipSpaces(text, j + 1))) out.push_back(std::move(*literal));
    }
    lineStart = lineEnd + 1;
  }
  return out;
}

std::vector<MissingHeader> missingHeadersIn(std::string_view log) {
  std::vector<MissingHeader> out;
  std::size_t lineStart = 0;
  while (lineStart < log.size()) {
    std::size_t lineEnd = log.find('\n', lineStart);
    if (lineEnd == std::string_view::npos) lineEnd = log.size();
    const std::string_view line = log.substr(lineStart, lineEnd - lineStart);
    lineStart = lineEnd + 1;
    // FILE(LINE): [catastrophic ]error: c(annot|ould not) open source file "NAME"[ (...)]
    std::size_t marker = std::string_view::npos;
    std::size_t nameStart = 0;
    for (std::string_view phrase :
         {"error: cannot open source file \"", "error: could not open source file \""}) {
      marker = line.find(phrase);
      if (marker != std::string_view::npos) {
        nameStart = marker + phrase.size();
        break;
      }
    }
    if (marker == std::string_view::npos) continue;
    const auto nameEnd = line.find('"', nameStart);
    const auto location = line.rfind("): ", marker);
    const auto open = location == std::string_view::npos ? location : line.rfind('(', location);
    if (nameEnd == std::string_view::npos || nameEnd == nameStart || open == std::string_view::npos) continue;
    MissingHeader missing{std::string(line.substr(0, open)),
                          std::string(line.substr(nameStart, nameEnd - nameStart))};
    // NVRTC quotes the directive on the next line: <name> there means it was not "name".
    const std::size_t nextEnd = std::min(log.find('\n', lineStart), log.size());
    if (lineStart < log.size() &&
        log.substr(lineStart, nextEnd - lineStart).find("<" + missing.name + ">") != std::string_view::npos) {
      missing.quoted = false;
    }
    out.push_back(std::move(missing));
  }
  return out;
}

HeaderSet::HeaderSet(std::string programName, std::size_t sourceBytes, std::vector<std::string> headers,
                     std::vector<std::string> includeNames, std::vector<std::string> includePaths,
                     FileReader reader, Limits limits)
    : programName_(std::move(programName)),
      headers_(std::move(headers)),
      includeNames_(std::move(includeNames)),
      given_(headers_.size()),
      includePaths_(std::move(includePaths)),
      reader_(std::move(reader)),
      limits_(limits),
      bytes_(sourceBytes) {
  // Natively the source's quoted includes search its name's directory, and an in-memory
  // header's those of the directory its include name spells (both relative to the working
  // directory).
  directoryOf_[programName_] = directoryOf(programName_);
  for (std::size_t i = 0; i < given_; ++i) {
    bytes_ += headers_[i].size();
    directoryOf_.emplace(includeNames_[i], directoryOf(includeNames_[i]));
    pathOf_.emplace(includeNames_[i], std::string());
    indexOf_.emplace(includeNames_[i], i);
  }
}

std::optional<HeaderSet::Found> HeaderSet::find(const IncludeName& include,
                                                const std::string& includerDirectory) {
  std::vector<std::string> directories;
  if (include.quoted && !includerDirectory.empty()) directories.push_back(includerDirectory);
  directories.insert(directories.end(), includePaths_.begin(), includePaths_.end());
  const std::size_t left = limits_.maxBytes > bytes_ ? limits_.maxBytes - bytes_ : 0;
  for (const std::string& directory : directories) {
    const std::string path = joined(directory, include.name);
    if (auto text = reader_(path, left)) {
      // The worker refuses text with NUL in it (nvrtcCreateProgram's headers are C strings).
      if (text->find('\0') != std::string::npos) return std::nullopt;
      return Found{path, std::move(*text)};
    }
    if (include.name.starts_with('/')) break;  // the same path under every directory
  }
  return std::nullopt;
}

bool HeaderSet::supply(const std::string& includer, const IncludeName& include,
                       std::vector<std::string>* pending) {
  const auto known = directoryOf_.find(includer);
  const std::string includerDirectory = known != directoryOf_.end() ? known->second : std::string();
  if (const auto supplied = indexOf_.find(include.name); supplied != indexOf_.end()) {
    // Already supplied. Natively a quoted name found in another includer's directory would be
    // another file; one name can carry only one in-memory header, so say so (once) when the
    // two differ.
    const std::string& path = pathOf_[include.name];
    if (!path.empty() && include.quoted && !includerDirectory.empty()) {
      const std::string here = joined(includerDirectory, include.name);
      if (here != path) {
        const auto other = reader_(here, limits_.maxBytes);
        if (other && *other != headers_[supplied->second] && firstTime("nvrtc include " + include.name)) {
          AGILEOS_LOG_WARN(
              "NVRTC: \"%s\" names %s for one file and %s for another; in-memory headers are matched by "
              "name only, so the first is used for both",
              include.name.c_str(), path.c_str(), here.c_str());
        }
      }
    }
    return false;
  }
  if (headers_.size() >= limits_.maxHeaders) return false;
  auto found = find(include, includerDirectory);
  if (!found) return false;
  bytes_ += found->text.size();
  indexOf_.emplace(include.name, headers_.size());
  headers_.push_back(std::move(found->text));
  includeNames_.push_back(include.name);
  pathOf_.emplace(include.name, found->path);
  directoryOf_.emplace(include.name, directoryOf(found->path));
  pending->push_back(include.name);
  return true;
}

void HeaderSet::scanPending(std::vector<std::string> pending) {
  while (!pending.empty()) {
    const std::string name = std::move(pending.back());
    pending.pop_back();
    // Copied: supply() appends to headers_, which may move the text being scanned.
    const std::string text = headers_[indexOf_.at(name)];
    for (const IncludeName& include : includesIn(text)) supply(name, include, &pending);
  }
}

void HeaderSet::addIncludesOf(const std::string& includer, std::string_view text) {
  std::vector<std::string> pending;
  for (const IncludeName& include : includesIn(text)) supply(includer, include, &pending);
  scanPending(std::move(pending));
}

bool HeaderSet::addMissing(const MissingHeader& missing) {
  std::vector<std::string> pending;
  if (!supply(missing.includer, IncludeName{missing.name, missing.quoted}, &pending)) return false;
  scanPending(std::move(pending));
  return true;
}

}  // namespace agileos::client::nvrtc_shim
