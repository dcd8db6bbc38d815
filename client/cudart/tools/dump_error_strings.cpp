// Build tool: writes the cudaGetErrorName / cudaGetErrorString texts of the build host's real
// libcudart as a C++ include file, so that the shim answers with NVIDIA's exact texts without
// linking any CUDA library itself.
//
//   agileos_dump_error_strings <output.inc>
//
// It runs on the build host only (error_api.cmake runs it; it is never installed or shipped)
// and needs no GPU: libcudart answers these two calls from its own tables. It asks about every
// code in [0, kScanEnd), keeps those whose name or text differs from the answer for an
// unassigned code, and writes them in ascending order, followed by that unassigned-code answer.
// Exit status 0 on success; 1, with a message on stderr, when the library answers something it
// cannot represent (a null pointer, or unassigned codes that disagree) or the file cannot be
// written. The output appears atomically (written to a temporary file, then renamed), so a
// failed run never leaves a half-written table for the build to pick up.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

// Every cudaError_t enumerator of the headers lies below this bound (cudaErrorApiFailureBase,
// 10000, is the largest in CUDA 13.0); the scan is a few milliseconds.
constexpr std::uint32_t kScanEnd = 1u << 16;
static_assert(static_cast<std::uint32_t>(cudaErrorApiFailureBase) < kScanEnd, "scan misses enumerators");

// Codes no release assigns, used to learn the library's answer for an unknown code; they must
// all agree, or the shim could not answer unknown codes with one text.
constexpr std::uint32_t kUnassignedProbes[] = {kScanEnd, 0x7FFFFFFFu, 0xFFFFFFFFu};

struct ErrorText {
  std::uint32_t code;
  std::string name;
  std::string description;
};

bool textsOf(std::uint32_t code, std::string* name, std::string* description) {
  const auto error = static_cast<cudaError_t>(code);
  const char* n = cudaGetErrorName(error);
  const char* d = cudaGetErrorString(error);
  if (n == nullptr || d == nullptr) {
    std::fprintf(stderr, "dump_error_strings: libcudart returned a null text for code %u\n", code);
    return false;
  }
  *name = n;
  *description = d;
  return true;
}

// A C++ string literal with the same bytes as `text`. Octal escapes are always three digits,
// so a following digit can never extend them.
std::string cppLiteral(std::string_view text) {
  std::string literal = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      literal += '\\';
      literal += c;
    } else if (byte < 0x20 || byte >= 0x7F) {
      char escaped[5];
      std::snprintf(escaped, sizeof(escaped), "\\%03o", byte);
      literal += escaped;
    } else {
      literal += c;
    }
  }
  literal += '"';
  return literal;
}

std::string render(const std::vector<ErrorText>& known, const ErrorText& unknown, int runtimeVersion) {
  std::string out;
  out += "// Generated at build time by client/cudart/tools/dump_error_strings.cpp from the build\n";
  out += "// host's libcudart. Do not edit. Included by client/cudart/error_api.cpp, which defines\n";
  out += "// ErrorText. Entries are in ascending code order.\n";
  out += "constexpr int kErrorTableRuntimeVersion = " + std::to_string(runtimeVersion) + ";\n";
  out += "constexpr ErrorText kErrorTexts[] = {\n";
  for (const ErrorText& entry : known) {
    out += "    {" + std::to_string(entry.code) + "u, " + cppLiteral(entry.name) + ", " +
           cppLiteral(entry.description) + "},\n";
  }
  out += "};\n";
  out += "constexpr const char* kUnknownErrorName = " + cppLiteral(unknown.name) + ";\n";
  out += "constexpr const char* kUnknownErrorString = " + cppLiteral(unknown.description) + ";\n";
  return out;
}

bool writeAtomically(const std::string& path, const std::string& content) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    file << content;
    if (!file.flush()) {
      std::fprintf(stderr, "dump_error_strings: cannot write %s\n", temporary.c_str());
      return false;
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::perror(("dump_error_strings: rename to " + path).c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <output.inc>\n", argv[0]);
    return 1;
  }

  ErrorText unknown{};
  for (const std::uint32_t probe : kUnassignedProbes) {
    ErrorText answer{probe, "", ""};
    if (!textsOf(probe, &answer.name, &answer.description)) return 1;
    if (probe == kUnassignedProbes[0]) {
      unknown = answer;
    } else if (answer.name != unknown.name || answer.description != unknown.description) {
      std::fprintf(stderr, "dump_error_strings: unassigned codes %u and %u have different texts\n",
                   kUnassignedProbes[0], probe);
      return 1;
    }
  }

  std::vector<ErrorText> known;
  for (std::uint32_t code = 0; code < kScanEnd; ++code) {
    ErrorText entry{code, "", ""};
    if (!textsOf(code, &entry.name, &entry.description)) return 1;
    if (entry.name != unknown.name || entry.description != unknown.description) known.push_back(entry);
  }
  if (known.empty() || known.front().code != static_cast<std::uint32_t>(cudaSuccess)) {
    std::fprintf(stderr, "dump_error_strings: libcudart does not name cudaSuccess; refusing\n");
    return 1;
  }

  int runtimeVersion = 0;
  if (cudaRuntimeGetVersion(&runtimeVersion) != cudaSuccess) {
    std::fprintf(stderr, "dump_error_strings: cudaRuntimeGetVersion failed\n");
    return 1;
  }
  return writeAtomically(argv[1], render(known, unknown, runtimeVersion)) ? 0 : 1;
}
