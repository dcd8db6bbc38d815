// adversary_nvrtc_jail: NVRTC through AgileOS cannot read a file of the worker's machine (issue
// 13). Run under AgileOS only, by the GPU suite's nvrtc_jail step, which plants a secret file
// outside the sandbox, on the worker's side, and passes its path and the marker it holds:
//
//   adversary_nvrtc_jail SECRET_PATH MARKER
//
// Every spelling that could name the file (directives behind digraphs, trigraphs, continuations
// and macros, #line, _Pragma, __has_include, #embed, raw strings, include-path and pre-include
// options, a program name in the file's directory, supplied headers that reach for it) is
// compiled through NVRTC; each must either fail or succeed without the secret, and no log, PTX,
// CUBIN, lowered name or error string may contain the marker or its bytes as numbers. A program
// with a supplied header must compile, with the right PTX.
//
// Output: "PASS ..." / "FAIL ..." lines, then "adversary_nvrtc_jail: N passed, M failed"; exit 0
// only if all passed; 2 on bad arguments. The program never opens the secret itself.
#include <nvrtc.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace {

int passed = 0, failed = 0;
std::string secretPath, secretDir, marker;

void check(bool ok, const std::string& what, const std::string& detail = "") {
  std::printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", what.c_str(), detail.empty() ? "" : ": ", detail.c_str());
  std::fflush(stdout);
  (ok ? passed : failed) += 1;
}

std::string expand(std::string text) {
  const std::pair<std::string, std::string> keys[] = {{"$P", secretPath}, {"$D", secretDir}, {"$M", marker}};
  for (const auto& [key, value] : keys) {
    for (std::size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + value.size())) {
      text.replace(at, key.size(), value);
    }
  }
  return text;
}

// Whether `text` holds the marker, or its first 12 bytes as a run of numbers (what #embed makes).
bool leaks(const std::string& text) {
  if (!marker.empty() && text.find(marker) != std::string::npos) return true;
  std::vector<unsigned long long> numbers;
  for (std::size_t i = 0; i < text.size();) {
    const bool start =
        std::isdigit(static_cast<unsigned char>(text[i])) != 0 &&
        (i == 0 || (std::isalnum(static_cast<unsigned char>(text[i - 1])) == 0 && text[i - 1] != '_'));
    if (!start) {
      ++i;
      continue;
    }
    char* end = nullptr;
    numbers.push_back(std::strtoull(text.c_str() + i, &end, 0));
    const std::size_t next = static_cast<std::size_t>(end - text.c_str());
    i = next > i ? next : i + 1;
  }
  const std::size_t run = marker.size() < 12 ? marker.size() : 12;
  for (std::size_t i = 0; run > 0 && i + run <= numbers.size(); ++i) {
    bool all = true;
    for (std::size_t k = 0; k < run && all; ++k)
      all = numbers[i + k] == static_cast<unsigned char>(marker[k]);
    if (all) return true;
  }
  return false;
}

struct Outputs {
  nvrtcResult created = NVRTC_SUCCESS, compiled = NVRTC_SUCCESS;
  std::string log, ptx, cubin, lowered, errors;
};

Outputs compile(const std::string& source, const std::string& name, const std::vector<std::string>& options,
                const std::vector<std::pair<std::string, std::string>>& headers,
                const std::vector<std::string>& expressions = {}) {
  Outputs out;
  std::vector<const char*> headerSources, headerNames, optionPointers;
  for (const auto& [include, content] : headers) {
    headerNames.push_back(include.c_str());
    headerSources.push_back(content.c_str());
  }
  for (const std::string& option : options) optionPointers.push_back(option.c_str());
  nvrtcProgram program = nullptr;
  out.created = nvrtcCreateProgram(&program, source.c_str(), name.c_str(), static_cast<int>(headers.size()),
                                   headerSources.data(), headerNames.data());
  out.errors += nvrtcGetErrorString(out.created);
  if (out.created != NVRTC_SUCCESS) return out;
  for (const std::string& expression : expressions) nvrtcAddNameExpression(program, expression.c_str());
  out.compiled = nvrtcCompileProgram(program, static_cast<int>(optionPointers.size()), optionPointers.data());
  out.errors += std::string(" ") + nvrtcGetErrorString(out.compiled);
  std::size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) == NVRTC_SUCCESS && size > 0) {
    out.log.resize(size);
    if (nvrtcGetProgramLog(program, out.log.data()) != NVRTC_SUCCESS) out.log.clear();
  }
  if (out.compiled == NVRTC_SUCCESS) {
    if (nvrtcGetPTXSize(program, &size) == NVRTC_SUCCESS && size > 0) {
      out.ptx.resize(size);
      if (nvrtcGetPTX(program, out.ptx.data()) != NVRTC_SUCCESS) out.ptx.clear();
    }
    if (nvrtcGetCUBINSize(program, &size) == NVRTC_SUCCESS && size > 0) {
      out.cubin.resize(size);
      if (nvrtcGetCUBIN(program, out.cubin.data()) != NVRTC_SUCCESS) out.cubin.clear();
    }
    for (const std::string& expression : expressions) {
      const char* lowered = nullptr;
      if (nvrtcGetLoweredName(program, expression.c_str(), &lowered) == NVRTC_SUCCESS && lowered != nullptr) {
        out.lowered += lowered;
      }
    }
  }
  nvrtcDestroyProgram(&program);
  return out;
}

struct Spelling {
  const char* what;
  const char* source;
  std::vector<const char*> options = {};
  const char* name = "attack.cu";
  std::vector<std::pair<const char*, const char*>> headers = {};
};

const Spelling kSpellings[] = {
    {"#include of the absolute path", "#include \"$P\"\n"},
    {"#include <absolute path>", "#include <$P>\n"},
    {"#include with a relative path up to /", "#include \"../../../../../../../$P\"\n"},
    {"#include through /proc/self/root", "#include \"/proc/self/root$P\"\n"},
    {"#include_next of the absolute path", "#include_next \"$P\"\n"},
    {"#import", "#import \"$P\"\n"},
    {"#embed", "const unsigned char data[] = {\n#embed \"$P\"\n};\n"},
    {"__has_include", "#if __has_include(\"$P\")\n#error SECRET_EXISTS\n#endif\n"},
    {"__has_include <>", "#if __has_include(<$P>)\n#error SECRET_EXISTS\n#endif\n"},
    {"__has_include_next", "#if __has_include_next(\"$P\")\n#error SECRET_EXISTS\n#endif\n"},
    {"#line naming the secret, then an error", "#line 3 \"$P\"\nint broken = undefined_name;\n"},
    {"_Pragma include_alias",
     "_Pragma(\"include_alias(\\\"alias.h\\\", \\\"$P\\\")\")\n#include \"alias.h\"\n"},
    {"digraph %:include", "%:include \"$P\"\n"},
    {"digraph straddling a continuation", "%\\\n:include \"$P\"\n"},
    {"trigraph ?\?=include", "?\?=include \"$P\"\n", {"--std=c++03"}},
    {"trigraph ?\?/ forming a continuation in the directive", "#inc?\?/\nlude \"$P\"\n", {"--std=c++03"}},
    {"continuation inside the directive name", "#inc\\\nlude \"$P\"\n"},
    {"continuation after #", "#\\\ninclude \"$P\"\n"},
    {"comment between # and include", "#/**/include \"$P\"\n"},
    {"macro expanding to the path", "#define WHERE \"$P\"\n#include WHERE\n"},
    {"stringized macro", "#define STR(x) #x\n#define XSTR(x) STR(x)\n#include XSTR($P)\n"},
    {"raw string holding the directive", "__device__ const char* s = R\"(\n#include \"$P\"\n)\";\n"},
    {"-I the directory", "#include \"secret.h\"\n", {"-I$D"}},
    {"--include-path", "#include \"secret.h\"\n", {"--include-path=$D"}},
    {"--pre-include", "__device__ int x;\n", {"--pre-include=$P"}},
    {"-include PATH", "__device__ int x;\n", {"-include", "$P"}},
    {"--use-pch", "__device__ int x;\n", {"--use-pch=$P"}},
    {"-time into the directory", "__device__ int x;\n", {"-time=$D/time.csv"}},
    {"program name in the secret's directory", "#include \"secret.h\"\n", {}, "$D/main.cu"},
    {"program name is the secret", "#include \"secret.h\"\n", {}, "$P"},
    {"supplied header with an absolute name, #include_next from it",
     "#include \"$D/x.h\"\n",
     {},
     "attack.cu",
     {{"$D/x.h", "#include_next \"secret.h\"\n"}}},
    {"supplied header includes the secret by path",
     "#include \"z.h\"\n",
     {},
     "attack.cu",
     {{"z.h", "#include \"$P\"\n"}}},
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || argv[1][0] != '/' || std::strlen(argv[2]) < 12) {
    std::fprintf(
        stderr, "usage: adversary_nvrtc_jail SECRET_PATH MARKER (an absolute path, a marker of 12+ chars)\n");
    return 2;
  }
  secretPath = argv[1];
  secretDir = secretPath.substr(0, secretPath.rfind('/'));
  marker = argv[2];

  for (const Spelling& spelling : kSpellings) {
    std::vector<std::string> options;
    for (const char* option : spelling.options) options.push_back(expand(option));
    std::vector<std::pair<std::string, std::string>> headers;
    for (const auto& [name, content] : spelling.headers) headers.emplace_back(expand(name), expand(content));
    const std::string source =
        expand(spelling.source) + "extern \"C\" __global__ void probe(int* p) { *p = 7; }\n";
    const Outputs out = compile(source, expand(spelling.name), options, headers);
    std::string where;
    if (leaks(out.log)) where += " log";
    if (leaks(out.ptx)) where += " PTX";
    if (leaks(out.cubin)) where += " CUBIN";
    if (leaks(out.errors)) where += " error-string";
    if (out.log.find("SECRET_EXISTS") != std::string::npos) where += " __has_include-saw-the-file";
    const bool fine = where.empty() && (out.created != NVRTC_SUCCESS || out.compiled != NVRTC_SUCCESS ||
                                        out.ptx.find(".entry probe") != std::string::npos);
    // Who stopped it: the adapter's source policy (its log starts "AgileOS: ") or NVRTC in the
    // jail (its own log: "cannot open source file ...").
    std::string how = out.compiled == NVRTC_SUCCESS        ? "compiled without the secret"
                      : out.log.rfind("AgileOS: ", 0) == 0 ? "refused by the source policy"
                                                           : "failed in the jail";
    if (out.compiled != NVRTC_SUCCESS && out.log.rfind("AgileOS: ", 0) != 0) {
      how += ": " + out.log.substr(0, out.log.find('\n')).substr(0, 160);
    }
    check(fine, spelling.what, fine ? how : "the secret reached" + where + " (" + out.errors + ")");
  }

  // A supplied header still works, through the same adapter and helper.
  const Outputs good = compile(
      "#include \"values.h\"\ntemplate <int N> __global__ void store(int* p) { *p = N + VALUE; }\n"
      "template __global__ void store<5>(int*);\n",
      "good.cu", {"--gpu-architecture=sm_90"}, {{"values.h", "#define VALUE 1234000\n"}}, {"store<5>"});
  check(good.compiled == NVRTC_SUCCESS && good.lowered == "_Z5storeILi5EEvPi" && good.cubin.size() > 4 &&
            std::memcmp(good.cubin.data(),
                        "\x7f"
                        "ELF",
                        4) == 0,
        "a program with a supplied header compiles to an sm_90 CUBIN", good.errors + " " + good.lowered);
  const Outputs ptx =
      compile("#include \"values.h\"\nextern \"C\" __global__ void store(int* p) { *p = VALUE + 5; }\n",
              "good_ptx.cu", {"--gpu-architecture=compute_90"}, {{"values.h", "#define VALUE 1234000\n"}});
  check(ptx.compiled == NVRTC_SUCCESS && ptx.ptx.find(".entry store") != std::string::npos &&
            ptx.ptx.find("1234005") != std::string::npos,
        "its PTX stores VALUE + 5 = 1234005", ptx.errors);

  std::printf("adversary_nvrtc_jail: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
