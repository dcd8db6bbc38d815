// Include paths resolved in the client (client/nvrtc/include_options.h, include_resolver.h,
// compile_rounds.h): the options' every spelling, the scan of includes, NVRTC's "cannot open"
// lines, the header set over a fake file system, and the rounds over a fake compilation.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "client/nvrtc/compile_rounds.h"
#include "client/nvrtc/include_options.h"
#include "client/nvrtc/include_resolver.h"

namespace agileos::client::nvrtc_shim {
namespace {

using Strings = std::vector<std::string>;

TEST(NvrtcIncludeOptions, EverySpellingIsTakenOutAndKeptInOrder) {
  const IncludeOptions split = splitIncludeOptions(
      {"-Ia", "-arch=sm_90", "-I", "b", "--include-path=c", "--include-path", "d", "-I=e", "-DX=1"});
  EXPECT_EQ(split.includePaths, (Strings{"a", "b", "c", "d", "e"}));
  EXPECT_EQ(split.forwarded, (Strings{"-arch=sm_90", "-DX=1"}));
}

TEST(NvrtcIncludeOptions, HostileAndOddSpellings) {
  // Paths of the client's own file system, whatever they name: the client reads them, the worker
  // never sees them.
  EXPECT_EQ(splitIncludeOptions({"-I/etc", "-I../../..", "-I/a/../b"}).includePaths,
            (Strings{"/etc", "../../..", "/a/../b"}));
  // Repeats are searched once.
  const IncludeOptions repeated = splitIncludeOptions({"-Ia", "--include-path=a", "-I", "a"});
  EXPECT_EQ(repeated.includePaths, Strings{"a"});
  EXPECT_TRUE(repeated.forwarded.empty());
  // An empty directory is the working directory, as in NVRTC; the separate spelling takes the
  // next option whatever it is.
  EXPECT_EQ(splitIncludeOptions({"-I"}).includePaths, Strings{"."});
  EXPECT_EQ(splitIncludeOptions({"--include-path="}).includePaths, Strings{"."});
  EXPECT_EQ(splitIncludeOptions({"-I", "-arch=sm_90"}).includePaths, Strings{"-arch=sm_90"});
  // Not include paths: forwarded, for the worker's allowlist to judge.
  EXPECT_EQ(splitIncludeOptions({"-include", "--include-pathx", "--pre-include=x", "-i"}).forwarded,
            (Strings{"-include", "--include-pathx", "--pre-include=x", "-i"}));
}

TEST(NvrtcIncludeScan, FindsLiteralOperandsOnly) {
  const auto found = includesIn(
      "#include \"a.h\"\n"
      "  #  include <b/c.h>\n"
      "%:include \"d.h\"\n"
      "#inc\\\nlude \"e.h\"\n"
      "/* x */ #include <f.h>\n"
      "// #include \"commented.h\"\n"
      "/* #include \"block.h\" */\n"
      "#define H \"computed.h\"\n#include H\n"
      "#if __has_include(<g.h>) && __has_include_next(\"h.h\")\n#endif\n"
      "#include_next <i.h>\n"
      "const char* s = \"#include <string.h>\";\n");
  Strings names;
  for (const auto& include : found) names.push_back((include.quoted ? "q:" : "a:") + include.name);
  EXPECT_EQ(names, (Strings{"q:a.h", "a:b/c.h", "q:d.h", "q:e.h", "a:f.h", "a:g.h", "q:h.h", "a:i.h"}));
}

TEST(NvrtcIncludeScan, ReadsNvrtcsMissingHeaderLines) {
  const auto missing = missingHeadersIn(
      "dir/k.cu(3): catastrophic error: cannot open source file \"x.h\"\n"
      "  #include \"x.h\"\n"
      "                ^\n"
      "\n"
      "a(b).h(1): catastrophic error: could not open source file \"y/z.h\" (no directories in search list)\n"
      "  #include <y/z.h>\n"
      "k.cu(9): error: identifier \"x\" is undefined\n");
  ASSERT_EQ(missing.size(), 2u);
  EXPECT_EQ(missing[0].includer, "dir/k.cu");
  EXPECT_EQ(missing[0].name, "x.h");
  EXPECT_TRUE(missing[0].quoted);
  EXPECT_EQ(missing[1].includer, "a(b).h");
  EXPECT_EQ(missing[1].name, "y/z.h");
  EXPECT_FALSE(missing[1].quoted);
  EXPECT_TRUE(missingHeadersIn("cannot open source file \"\"\nerror: cannot open source file \"x\"").empty());
}

// A file system of `files` (path -> text); every read is recorded.
struct FakeFiles {
  std::map<std::string, std::string> files;
  Strings reads;
  FileReader reader() {
    return [this](const std::string& path, std::size_t maxBytes) -> std::optional<std::string> {
      reads.push_back(path);
      const auto found = files.find(path);
      if (found == files.end() || found->second.size() > maxBytes) return std::nullopt;
      return found->second;
    };
  }
};

TEST(NvrtcHeaderSet, FollowsNvrtcsSearchOrder) {
  FakeFiles fs;
  fs.files = {
      {"src/common.h", "#include \"detail/info.h\"\n#include <lib.h>\n"},
      {"src/detail/info.h", "#include \"helpers.h\"\n"},  // next to info.h
      {"src/detail/helpers.h", "int helpers;"},
      {"inc1/lib.h", "#include \"lib_impl.h\"\n"},
      {"inc2/lib.h", "#error the second include path"},
      {"inc2/lib_impl.h", "int impl;"},  // not next to lib.h: found in an include path
      {"inc1/angled_only.h", "int a;"},
      {"src/angled_only.h", "#error <> does not search the source's directory"},
  };
  HeaderSet set("src/k.cu", 10, {}, {}, {"inc1", "inc2"}, fs.reader());
  set.addIncludesOf("src/k.cu", "#include \"common.h\"\n#include <angled_only.h>\n#include \"absent.h\"\n");
  std::map<std::string, std::string> byName;
  for (std::size_t i = 0; i < set.headers().size(); ++i) byName[set.includeNames()[i]] = set.headers()[i];
  EXPECT_EQ(byName.size(), 6u);
  EXPECT_EQ(byName["common.h"], fs.files["src/common.h"]);
  EXPECT_EQ(byName["detail/info.h"], fs.files["src/detail/info.h"]);
  EXPECT_EQ(byName["helpers.h"], fs.files["src/detail/helpers.h"]);
  EXPECT_EQ(byName["lib.h"], fs.files["inc1/lib.h"]);
  EXPECT_EQ(byName["lib_impl.h"], fs.files["inc2/lib_impl.h"]);
  EXPECT_EQ(byName["angled_only.h"], fs.files["inc1/angled_only.h"]);
  EXPECT_EQ(byName.count("absent.h"), 0u);
  for (const std::string& read : fs.reads) {
    EXPECT_TRUE(read.starts_with("src/") || read.starts_with("inc1/") || read.starts_with("inc2/")) << read;
  }
}

TEST(NvrtcHeaderSet, TheProgramsOwnHeadersWinAndAreScannedToo) {
  FakeFiles fs;
  fs.files = {{"./mine.h", "#error not this"}, {"./extra.h", "int extra;"}, {"sub/other.h", "int o;"}};
  HeaderSet set("k.cu", 0, {"#include \"extra.h\""}, {"mine.h"}, {}, fs.reader());
  set.addIncludesOf("k.cu", "#include \"mine.h\"\n");
  set.addIncludesOf("mine.h", "#include \"extra.h\"\n");
  EXPECT_EQ(set.includeNames(), (Strings{"mine.h", "extra.h"}));
  EXPECT_EQ(set.headers()[0], "#include \"extra.h\"");
  // A supplied header's quoted includes search the directory its name spells.
  HeaderSet nested("k.cu", 0, {"#include \"other.h\""}, {"sub/mine.h"}, {}, fs.reader());
  nested.addIncludesOf("sub/mine.h", "#include \"other.h\"\n");
  EXPECT_EQ(nested.includeNames(), (Strings{"sub/mine.h", "other.h"}));
}

TEST(NvrtcHeaderSet, NamesWithSeparatorsNulAndLimits) {
  FakeFiles fs;
  fs.files = {{"./a/b.h", "int b;"},
              {"/abs/c.h", "int c;"},
              {"./nul.h", std::string("int\0x;", 6)},
              {"./big.h", std::string(100, 'x')}};
  HeaderSet set("k.cu", 0, {}, {}, {}, fs.reader(), HeaderLimits{16, 64});
  set.addIncludesOf("k.cu",
                    "#include \"a/b.h\"\n#include \"/abs/c.h\"\n#include \"nul.h\"\n#include \"big.h\"\n");
  // The spelled name, separators and all; a NUL or an oversized file stays missing.
  EXPECT_EQ(set.includeNames(), (Strings{"a/b.h", "/abs/c.h"}));
  HeaderSet few("k.cu", 0, {}, {}, {}, fs.reader(), HeaderLimits{1, 1 << 20});
  few.addIncludesOf("k.cu", "#include \"a/b.h\"\n#include \"/abs/c.h\"\n");
  EXPECT_EQ(few.includeNames(), Strings{"a/b.h"});
}

TEST(NvrtcHeaderSet, AMissingHeaderIsLookedUpFromItsIncluder) {
  FakeFiles fs;
  fs.files = {{"src/a.h", "int a;"}, {"inc/m.h", "#include \"n.h\"\n"}, {"inc/n.h", "int n;"}};
  HeaderSet set("src/k.cu", 0, {}, {}, {"inc"}, fs.reader());
  EXPECT_TRUE(set.addMissing({"src/k.cu", "a.h", true}));
  EXPECT_FALSE(set.addMissing({"src/k.cu", "a.h", true})) << "already supplied";
  EXPECT_FALSE(set.addMissing({"src/k.cu", "a.h", false}));
  EXPECT_TRUE(set.addMissing({"a.h", "m.h", false}));
  EXPECT_EQ(set.includeNames(), (Strings{"a.h", "m.h", "n.h"}));
  EXPECT_FALSE(set.addMissing({"src/k.cu", "nowhere.h", true}));
}

TEST(NvrtcHeaderSet, ReadsOnlyRegularFiles) {
  char directory[] = "/tmp/agileos-nvrtc-include-XXXXXX";
  ASSERT_NE(mkdtemp(directory), nullptr);
  const std::string dir = directory;
  ASSERT_EQ(mkfifo((dir + "/fifo.h").c_str(), 0600), 0);
  EXPECT_EQ(readRegularFile(dir + "/fifo.h", 1 << 20), std::nullopt) << "a FIFO must not block or be read";
  EXPECT_EQ(readRegularFile(dir, 1 << 20), std::nullopt);
  EXPECT_EQ(readRegularFile(dir + "/absent.h", 1 << 20), std::nullopt);
  unlink((dir + "/fifo.h").c_str());
  rmdir(directory);
}

// A fake NVRTC that knows only headers it was given, and includes "macro.h" through a macro the
// scan cannot see.
nvrtcResult fakeNvrtc(const Strings& headers, const Strings& names, std::string* log, int* rounds) {
  ++*rounds;
  (void)headers;
  for (const char* needed : {"macro.h", "deeper.h"}) {
    if (std::find(names.begin(), names.end(), needed) == names.end()) {
      *log = std::string("k.cu(2): catastrophic error: cannot open source file \"") + needed +
             "\"\n  #include M\n";
      return NVRTC_ERROR_COMPILATION;
    }
  }
  *log = "round " + std::to_string(*rounds);
  return NVRTC_SUCCESS;
}

TEST(NvrtcCompileRounds, MissingHeadersAreAddedAndTheLastLogIsKept) {
  FakeFiles fs;
  fs.files = {{"./macro.h", "int m;"}, {"inc/deeper.h", "int d;"}, {"./seen.h", "int s;"}};
  const std::string source = "#include \"seen.h\"\n#define M \"macro.h\"\n#include M\n";
  const std::string name = "k.cu";
  const Strings none;
  int rounds = 0;
  Strings sentOptions;
  std::string lastLog;
  const nvrtcResult result = compileWithIncludes(
      ProgramText{source, name, none, none}, {"-I", "inc", "-arch=sm_90"},
      [&](const Strings& headers, const Strings& names, const Strings& options, std::string* log) {
        sentOptions = options;
        const nvrtcResult r = fakeNvrtc(headers, names, log, &rounds);
        lastLog = *log;
        return r;
      },
      fs.reader());
  EXPECT_EQ(result, NVRTC_SUCCESS);
  EXPECT_EQ(rounds, 3);
  EXPECT_EQ(lastLog, "round 3");
  EXPECT_EQ(sentOptions, Strings{"-arch=sm_90"});
}

TEST(NvrtcCompileRounds, AHeaderFoundNowhereEndsTheRoundsWithNvrtcsError) {
  FakeFiles fs;
  const std::string source = "#define M \"macro.h\"\n#include M\n";
  const std::string name = "k.cu";
  const Strings none;
  int rounds = 0;
  std::string lastLog;
  const nvrtcResult result = compileWithIncludes(
      ProgramText{source, name, none, none}, {},
      [&](const Strings& headers, const Strings& names, const Strings&, std::string* log) {
        const nvrtcResult r = fakeNvrtc(headers, names, log, &rounds);
        lastLog = *log;
        return r;
      },
      fs.reader());
  EXPECT_EQ(result, NVRTC_ERROR_COMPILATION);
  EXPECT_EQ(rounds, 1);
  EXPECT_EQ(lastLog, "k.cu(2): catastrophic error: cannot open source file \"macro.h\"\n  #include M\n");
}

TEST(NvrtcCompileRounds, TheRoundsAreBounded) {
  // Every round names a new header that exists: the loop stops at kMaxRounds compilations.
  int rounds = 0;
  const std::string source, name = "k.cu";
  const Strings none;
  const FileReader everything = [](const std::string&, std::size_t) {
    return std::optional<std::string>("int x;");
  };
  const nvrtcResult result = compileWithIncludes(
      ProgramText{source, name, none, none}, {},
      [&](const Strings&, const Strings&, const Strings&, std::string* log) {
        ++rounds;
        *log = "k.cu(1): catastrophic error: cannot open source file \"h" + std::to_string(rounds) + ".h\"\n";
        return NVRTC_ERROR_COMPILATION;
      },
      everything);
  EXPECT_EQ(result, NVRTC_ERROR_COMPILATION);
  EXPECT_EQ(rounds, kMaxRounds);
}

}  // namespace
}  // namespace agileos::client::nvrtc_shim
