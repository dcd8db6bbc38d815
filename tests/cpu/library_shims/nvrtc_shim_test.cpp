// The NVRTC shim's logic (client/nvrtc), linked from its objects with a fake of the runtime
// shim's agileos_library_call (fake_worker.h), which checks every call against the NVRTC
// adapter's declaration: the program objects kept in this process, what a compilation sends
// and keeps, the cached library queries, error strings (compared with the real libnvrtc.so.13)
// and the fail-closed entry points.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "client/nvrtc/library_facts.h"
#include "client/nvrtc/program.h"
#include "nvrtc_api.gen.h"  // also declares __nvrtcCPEx, which no header does
#include "tests/cpu/library_shims/fake_worker.h"

#ifndef AGILEOS_REAL_NVRTC
#error "AGILEOS_REAL_NVRTC must name NVIDIA's libnvrtc.so.13"
#endif

namespace {

using agileos::test::Answer;
using agileos::test::Call;
using agileos::test::FakeWorker;
using agileos::test::Value;

// What the fake worker's compilation returns unless a test says otherwise.
const std::string kPtx = std::string("//\n.version 9.0\n.target sm_90\n") + '\0';
const std::string kLog = "warning: something harmless";

// Answers "compile" like NVRTC would for a good program: lowered names "_Z<expression>".
Answer nvrtcWorker(const Call& call) {
  if (call.operation == "compile") {
    std::vector<std::string> lowered;
    for (const std::string& expression : call.args[5].texts) lowered.push_back("_Z" + expression);
    return Answer::Ok({Value::Text(kLog), Value::Blob(kPtx),
                       Value::Blob(std::string("\x7f"
                                               "ELF\x02",
                                               5)),
                       Value::Texts(lowered)});
  }
  if (call.operation == "version") return Answer::Ok({Value::Integer(13), Value::Integer(0)});
  if (call.operation == "supported_archs") return Answer::Ok({Value::Integers({75, 80, 86, 90, 100})});
  return Answer::Refused(801, "unexpected operation");
}

class NvrtcShimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeWorker::instance().reset();
    FakeWorker::instance().respond(nvrtcWorker);
  }
  void TearDown() override {
    EXPECT_EQ(FakeWorker::instance().outstandingReplies(), 0) << "a reply was not freed";
  }

  static std::vector<Call> calls() { return FakeWorker::instance().calls(); }

  static nvrtcProgram created(const char* source = "extern \"C\" __global__ void k() {}") {
    nvrtcProgram prog = nullptr;
    EXPECT_EQ(nvrtcCreateProgram(&prog, source, "k.cu", 0, nullptr, nullptr), NVRTC_SUCCESS);
    return prog;
  }

  static std::string log(nvrtcProgram prog) {
    size_t size = 0;
    EXPECT_EQ(nvrtcGetProgramLogSize(prog, &size), NVRTC_SUCCESS);
    std::vector<char> buffer(size, '\x7f');
    EXPECT_EQ(nvrtcGetProgramLog(prog, buffer.data()), NVRTC_SUCCESS);
    EXPECT_EQ(buffer.back(), '\0');
    return std::string(buffer.data(), size - 1);
  }

  static std::string ptx(nvrtcProgram prog) {
    size_t size = 0;
    EXPECT_EQ(nvrtcGetPTXSize(prog, &size), NVRTC_SUCCESS);
    std::vector<char> buffer(size, '\x7f');
    EXPECT_EQ(nvrtcGetPTX(prog, buffer.data()), NVRTC_SUCCESS);
    return std::string(buffer.data(), size);
  }
};

TEST_F(NvrtcShimTest, ErrorStringsAreTheRealLibrarysForEveryCode) {
  // Never unloaded (RTLD_NODELETE): the real library allocates at load time and keeps the
  // memory for the life of the process, which LeakSanitizer would report after a dlclose.
  void* real = dlopen(AGILEOS_REAL_NVRTC, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  ASSERT_NE(real, nullptr) << dlerror();
  auto* realGetErrorString =
      reinterpret_cast<decltype(&nvrtcGetErrorString)>(dlsym(real, "nvrtcGetErrorString"));
  ASSERT_NE(realGetErrorString, nullptr) << dlerror();
  ASSERT_NE(realGetErrorString, &nvrtcGetErrorString);
  for (int code = -2; code <= 40; ++code) {
    const auto result = static_cast<nvrtcResult>(code);
    EXPECT_STREQ(nvrtcGetErrorString(result), realGetErrorString(result)) << "code " << code;
  }
  EXPECT_STREQ(nvrtcGetErrorString(NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED),
               "NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED");
  dlclose(real);
  EXPECT_TRUE(calls().empty());
}

TEST_F(NvrtcShimTest, CreateProgramChecksItsArgumentsLikeNvrtc) {
  nvrtcProgram prog = nullptr;
  const char* headers[] = {"int h;"};
  const char* names[] = {"h.h"};
  const char* nullEntry[] = {nullptr};
  EXPECT_EQ(nvrtcCreateProgram(nullptr, "int x;", "x", 0, nullptr, nullptr), NVRTC_ERROR_INVALID_PROGRAM);
  EXPECT_EQ(nvrtcCreateProgram(&prog, nullptr, "x", 0, nullptr, nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcCreateProgram(&prog, "int x;", "x", -1, nullptr, nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcCreateProgram(&prog, "int x;", "x", 1, nullptr, names), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcCreateProgram(&prog, "int x;", "x", 1, headers, nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcCreateProgram(&prog, "int x;", "x", 1, nullEntry, names), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcCreateProgram(&prog, "int x;", "x", 1, headers, nullEntry), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(prog, nullptr);
  EXPECT_TRUE(calls().empty());
}

TEST_F(NvrtcShimTest, CreateCopiesEverythingAndCompileSendsIt) {
  std::string source = "#include \"a.h\"\n__global__ void k(int* p) { *p = A; }\n";
  std::string header = "#define A 7\n";
  std::string name = "a.h";
  const char* headers[] = {header.c_str()};
  const char* names[] = {name.c_str()};
  nvrtcProgram prog = nullptr;
  ASSERT_EQ(nvrtcCreateProgram(&prog, source.c_str(), "prog.cu", 1, headers, names), NVRTC_SUCCESS);
  ASSERT_NE(prog, nullptr);
  std::string expression = "&k";
  ASSERT_EQ(nvrtcAddNameExpression(prog, expression.c_str()), NVRTC_SUCCESS);
  // The caller's buffers may change or go away after the calls.
  const std::string originalSource = source, originalHeader = header;
  source.assign(source.size(), 'x');
  header.assign(header.size(), 'y');
  name.assign(name.size(), 'z');
  expression.assign(expression.size(), 'w');

  const char* options[] = {"--gpu-architecture=compute_90", "-default-device"};
  ASSERT_EQ(nvrtcCompileProgram(prog, 2, options), NVRTC_SUCCESS);
  const auto all = calls();
  ASSERT_EQ(all.size(), 1u);
  const Call& compile = all[0];
  EXPECT_EQ(compile.library, "nvrtc");
  EXPECT_EQ(compile.operation, "compile");
  EXPECT_EQ(compile.args[0].bytes, originalSource);
  EXPECT_EQ(compile.args[1].bytes, "prog.cu");
  EXPECT_EQ(compile.args[2].texts, std::vector<std::string>{originalHeader});
  EXPECT_EQ(compile.args[3].texts, std::vector<std::string>{"a.h"});
  EXPECT_EQ(compile.args[4].texts,
            (std::vector<std::string>{"--gpu-architecture=compute_90", "-default-device"}));
  EXPECT_EQ(compile.args[5].texts, std::vector<std::string>{"&k"});
  EXPECT_EQ(nvrtcDestroyProgram(&prog), NVRTC_SUCCESS);
}

TEST_F(NvrtcShimTest, AProgramWithoutANameIsDefaultProgram) {
  nvrtcProgram prog = nullptr;
  ASSERT_EQ(nvrtcCreateProgram(&prog, "int x;", nullptr, 0, nullptr, nullptr), NVRTC_SUCCESS);
  ASSERT_EQ(nvrtcCompileProgram(prog, 0, nullptr), NVRTC_SUCCESS);
  EXPECT_EQ(calls().at(0).args[1].bytes, "default_program");
  EXPECT_TRUE(calls().at(0).args[2].texts.empty());
  EXPECT_TRUE(calls().at(0).args[4].texts.empty());
  EXPECT_EQ(nvrtcDestroyProgram(&prog), NVRTC_SUCCESS);
}

TEST_F(NvrtcShimTest, OutputsBeforeCompilationAreEmptyLikeNvrtcs) {
  nvrtcProgram prog = created();
  EXPECT_EQ(log(prog), "");
  EXPECT_EQ(ptx(prog), std::string(1, '\0'));
  size_t size = 5;
  EXPECT_EQ(nvrtcGetCUBINSize(prog, &size), NVRTC_SUCCESS);
  EXPECT_EQ(size, 0u);
  EXPECT_EQ(nvrtcGetPTXSize(prog, nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcGetPTX(prog, nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcGetCUBINSize(prog, nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcGetCUBIN(prog, nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcGetProgramLogSize(prog, nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcGetProgramLog(prog, nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_TRUE(calls().empty());
  EXPECT_EQ(nvrtcDestroyProgram(&prog), NVRTC_SUCCESS);
}

TEST_F(NvrtcShimTest, NameExpressionsBeforeAndAfterCompilation) {
  nvrtcProgram prog = created();
  const char* lowered = "untouched";
  EXPECT_EQ(nvrtcGetLoweredName(prog, "axpy<float>", &lowered),
            NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION);
  ASSERT_EQ(nvrtcAddNameExpression(prog, "axpy<float>"), NVRTC_SUCCESS);
  ASSERT_EQ(nvrtcAddNameExpression(prog, "&ns::fill"), NVRTC_SUCCESS);
  EXPECT_EQ(nvrtcAddNameExpression(prog, nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcGetLoweredName(prog, "axpy<float>", &lowered),
            NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION);
  EXPECT_STREQ(lowered, "untouched");

  ASSERT_EQ(nvrtcCompileProgram(prog, 0, nullptr), NVRTC_SUCCESS);
  EXPECT_EQ(calls().back().args[5].texts, (std::vector<std::string>{"axpy<float>", "&ns::fill"}));
  ASSERT_EQ(nvrtcGetLoweredName(prog, "&ns::fill", &lowered), NVRTC_SUCCESS);
  EXPECT_STREQ(lowered, "_Z&ns::fill");
  ASSERT_EQ(nvrtcGetLoweredName(prog, "axpy<float>", &lowered), NVRTC_SUCCESS);
  EXPECT_STREQ(lowered, "_Zaxpy<float>");
  const char* unknown = "untouched";
  EXPECT_EQ(nvrtcGetLoweredName(prog, "axpy<int>", &unknown), NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID);
  EXPECT_STREQ(unknown, "untouched");
  EXPECT_EQ(nvrtcGetLoweredName(prog, nullptr, &unknown), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcGetLoweredName(prog, "axpy<float>", nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcAddNameExpression(prog, "axpy<double>"), NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION);

  EXPECT_EQ(log(prog), kLog);
  EXPECT_EQ(ptx(prog), kPtx);
  size_t size = 0;
  ASSERT_EQ(nvrtcGetCUBINSize(prog, &size), NVRTC_SUCCESS);
  ASSERT_EQ(size, 5u);
  char cubin[5] = {};
  ASSERT_EQ(nvrtcGetCUBIN(prog, cubin), NVRTC_SUCCESS);
  EXPECT_EQ(std::string(cubin, 5), std::string("\x7f"
                                               "ELF\x02",
                                               5));
  EXPECT_EQ(nvrtcDestroyProgram(&prog), NVRTC_SUCCESS);
}

TEST_F(NvrtcShimTest, AFailedCompilationKeepsItsLogAndNoOutputs) {
  FakeWorker::instance().respond([](const Call&) {
    return Answer::Status(NVRTC_ERROR_COMPILATION, {Value::Text("k.cu(1): error: expected an expression"),
                                                    Value::Blob(""), Value::Blob(""), Value::Texts({})});
  });
  nvrtcProgram prog = created("__global__ void k(int* p) { p[0] = ; }");
  ASSERT_EQ(nvrtcAddNameExpression(prog, "k"), NVRTC_SUCCESS);
  EXPECT_EQ(nvrtcCompileProgram(prog, 0, nullptr), NVRTC_ERROR_COMPILATION);
  EXPECT_EQ(log(prog), "k.cu(1): error: expected an expression");
  EXPECT_EQ(ptx(prog), std::string(1, '\0'));
  const char* lowered = nullptr;
  EXPECT_EQ(nvrtcGetLoweredName(prog, "k", &lowered), NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION);
  EXPECT_EQ(nvrtcAddNameExpression(prog, "j"), NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION);
  EXPECT_EQ(nvrtcDestroyProgram(&prog), NVRTC_SUCCESS);
}

TEST_F(NvrtcShimTest, PtxWithoutItsNulGetsOne) {
  FakeWorker::instance().respond([](const Call&) {
    return Answer::Ok({Value::Text(""), Value::Blob(".version 9.0"), Value::Blob(""), Value::Texts({})});
  });
  nvrtcProgram prog = created();
  ASSERT_EQ(nvrtcCompileProgram(prog, 0, nullptr), NVRTC_SUCCESS);
  EXPECT_EQ(ptx(prog), std::string(".version 9.0") + '\0');
  size_t size = 1;
  ASSERT_EQ(nvrtcGetCUBINSize(prog, &size), NVRTC_SUCCESS);
  EXPECT_EQ(size, 0u);
  char untouched = 'u';
  EXPECT_EQ(nvrtcGetCUBIN(prog, &untouched), NVRTC_SUCCESS);
  EXPECT_EQ(untouched, 'u');
  EXPECT_EQ(nvrtcDestroyProgram(&prog), NVRTC_SUCCESS);
}

TEST_F(NvrtcShimTest, CompileFailuresThatAreNotTheCompilers) {
  nvrtcProgram prog = created();
  const char* nullOption[] = {nullptr};
  EXPECT_EQ(nvrtcCompileProgram(prog, 1, nullptr), NVRTC_ERROR_INVALID_OPTION);
  EXPECT_EQ(nvrtcCompileProgram(prog, 1, nullOption), NVRTC_ERROR_INVALID_OPTION);
  EXPECT_EQ(nvrtcCompileProgram(prog, -1, nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_TRUE(calls().empty());

  // No session: nothing was compiled, so name expressions may still be added.
  FakeWorker::instance().respond([](const Call&) { return Answer::NoSession(); });
  EXPECT_EQ(nvrtcCompileProgram(prog, 0, nullptr), NVRTC_ERROR_INTERNAL_ERROR);
  EXPECT_EQ(nvrtcAddNameExpression(prog, "k"), NVRTC_SUCCESS);
  // Refused by the worker without an NVRTC status (e.g. not admitted).
  FakeWorker::instance().respond(
      [](const Call&) { return Answer::Refused(800, "nvrtc.compile is not admitted"); });
  EXPECT_EQ(nvrtcCompileProgram(prog, 0, nullptr), NVRTC_ERROR_INVALID_INPUT);
  // Success without the declared results (no lowered name for the expression).
  FakeWorker::instance().respond([](const Call&) {
    return Answer::Ok({Value::Text(""), Value::Blob(kPtx), Value::Blob(""), Value::Texts({})});
  });
  EXPECT_EQ(nvrtcCompileProgram(prog, 0, nullptr), NVRTC_ERROR_INTERNAL_ERROR);
  const char* lowered = nullptr;
  EXPECT_EQ(nvrtcGetLoweredName(prog, "k", &lowered), NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION);
  EXPECT_EQ(ptx(prog), std::string(1, '\0'));
  EXPECT_EQ(nvrtcDestroyProgram(&prog), NVRTC_SUCCESS);
}

TEST_F(NvrtcShimTest, DestroyedAndMadeUpProgramsAreInvalid) {
  nvrtcProgram prog = created();
  const nvrtcProgram stale = prog;
  ASSERT_EQ(nvrtcDestroyProgram(&prog), NVRTC_SUCCESS);
  EXPECT_EQ(prog, nullptr);
  EXPECT_EQ(nvrtcDestroyProgram(&prog), NVRTC_ERROR_INVALID_PROGRAM);
  EXPECT_EQ(nvrtcDestroyProgram(nullptr), NVRTC_ERROR_INVALID_PROGRAM);
  const nvrtcProgram madeUp = reinterpret_cast<nvrtcProgram>(0x12345678);
  size_t size = 0;
  const char* lowered = nullptr;
  char buffer[8];
  for (nvrtcProgram p : {stale, madeUp, static_cast<nvrtcProgram>(nullptr)}) {
    EXPECT_EQ(nvrtcCompileProgram(p, 0, nullptr), NVRTC_ERROR_INVALID_PROGRAM);
    EXPECT_EQ(nvrtcAddNameExpression(p, "k"), NVRTC_ERROR_INVALID_PROGRAM);
    EXPECT_EQ(nvrtcGetLoweredName(p, "k", &lowered), NVRTC_ERROR_INVALID_PROGRAM);
    EXPECT_EQ(nvrtcGetPTXSize(p, &size), NVRTC_ERROR_INVALID_PROGRAM);
    EXPECT_EQ(nvrtcGetPTX(p, buffer), NVRTC_ERROR_INVALID_PROGRAM);
    EXPECT_EQ(nvrtcGetCUBINSize(p, &size), NVRTC_ERROR_INVALID_PROGRAM);
    EXPECT_EQ(nvrtcGetCUBIN(p, buffer), NVRTC_ERROR_INVALID_PROGRAM);
    EXPECT_EQ(nvrtcGetProgramLogSize(p, &size), NVRTC_ERROR_INVALID_PROGRAM);
    EXPECT_EQ(nvrtcGetProgramLog(p, buffer), NVRTC_ERROR_INVALID_PROGRAM);
  }
  nvrtcProgram next = created();
  EXPECT_NE(next, stale) << "a destroyed program's handle was handed out again";
  EXPECT_EQ(nvrtcDestroyProgram(&next), NVRTC_SUCCESS);
  EXPECT_TRUE(calls().empty());
}

TEST_F(NvrtcShimTest, VersionAndArchitecturesAreAskedOnce) {
  int major = 0, minor = -1;
  ASSERT_EQ(nvrtcVersion(&major, &minor), NVRTC_SUCCESS);
  EXPECT_EQ(major, 13);
  EXPECT_EQ(minor, 0);
  ASSERT_EQ(nvrtcVersion(&major, &minor), NVRTC_SUCCESS);
  int count = 0;
  ASSERT_EQ(nvrtcGetNumSupportedArchs(&count), NVRTC_SUCCESS);
  EXPECT_EQ(count, 5);
  std::vector<int> archs(static_cast<std::size_t>(count));
  ASSERT_EQ(nvrtcGetSupportedArchs(archs.data()), NVRTC_SUCCESS);
  EXPECT_EQ(archs, (std::vector<int>{75, 80, 86, 90, 100}));
  EXPECT_EQ(FakeWorker::instance().operations(), (std::vector<std::string>{"version", "supported_archs"}));
  EXPECT_EQ(nvrtcVersion(nullptr, &minor), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcVersion(&major, nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcGetNumSupportedArchs(nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(nvrtcGetSupportedArchs(nullptr), NVRTC_ERROR_INVALID_INPUT);
  EXPECT_EQ(calls().size(), 2u);
}

TEST_F(NvrtcShimTest, LibraryFactsTakeEitherIntegerFormAndDoNotCacheFailures) {
  agileos::client::nvrtc_shim::LibraryFacts facts;
  int major = -1, minor = -1;
  std::vector<int> archs;
  FakeWorker::instance().respond([](const Call&) { return Answer::NoSession(); });
  EXPECT_EQ(facts.version(&major, &minor), NVRTC_ERROR_INTERNAL_ERROR);
  EXPECT_EQ(facts.supportedArchs(&archs), NVRTC_ERROR_INTERNAL_ERROR);
  EXPECT_EQ(major, -1);
  FakeWorker::instance().respond([](const Call& call) {
    if (call.operation == "version") return Answer::Ok({Value::Integers({13, 1})});
    return Answer::Ok({Value::Integer(80), Value::Integer(90)});
  });
  ASSERT_EQ(facts.version(&major, &minor), NVRTC_SUCCESS);
  EXPECT_EQ(major, 13);
  EXPECT_EQ(minor, 1);
  ASSERT_EQ(facts.supportedArchs(&archs), NVRTC_SUCCESS);
  EXPECT_EQ(archs, (std::vector<int>{80, 90}));
  FakeWorker::instance().respond([](const Call&) { return Answer::Ok({Value::Integer(13)}); });
  agileos::client::nvrtc_shim::LibraryFacts malformed;
  EXPECT_EQ(malformed.version(&major, &minor), NVRTC_ERROR_INTERNAL_ERROR);
  EXPECT_EQ(
      FakeWorker::instance().operations(),
      (std::vector<std::string>{"version", "supported_archs", "version", "supported_archs", "version"}));
}

// ---------------------------------------------------------------------------------------------
// The fail-closed entry points

std::set<std::string> callEveryUnsupportedEntryPoint(
    std::vector<std::pair<std::string, nvrtcResult>>* results) {
  nvrtcProgram prog = nullptr;
  EXPECT_EQ(nvrtcCreateProgram(&prog, "int x;", "x", 0, nullptr, nullptr), NVRTC_SUCCESS);
  size_t size = 99;
  char buffer[4] = {'a', 'b', 'c', 'd'};
  const std::vector<std::pair<const char*, std::function<nvrtcResult()>>> entryPoints = {
      {"nvrtcGetOptiXIRSize", [&] { return nvrtcGetOptiXIRSize(prog, &size); }},
      {"nvrtcGetOptiXIR", [&] { return nvrtcGetOptiXIR(prog, buffer); }},
      {"nvrtcGetPCHHeapSize", [&] { return nvrtcGetPCHHeapSize(&size); }},
      {"nvrtcSetPCHHeapSize", [&] { return nvrtcSetPCHHeapSize(1 << 20); }},
      {"nvrtcGetPCHCreateStatus", [&] { return nvrtcGetPCHCreateStatus(prog); }},
      {"nvrtcGetPCHHeapSizeRequired", [&] { return nvrtcGetPCHHeapSizeRequired(prog, &size); }},
      {"nvrtcSetFlowCallback",
       [&] {
         return nvrtcSetFlowCallback(
             prog, [](void*, void*) { return 0; }, nullptr);
       }},
      {"__nvrtcCPEx", [&] { return __nvrtcCPEx(); }},
  };
  std::set<std::string> names;
  for (const auto& [name, run] : entryPoints) {
    results->emplace_back(name, run());
    names.insert(name);
  }
  EXPECT_EQ(size, 99u) << "an output argument was written";
  EXPECT_EQ(std::string(buffer, 4), "abcd") << "an output argument was written";
  EXPECT_EQ(nvrtcDestroyProgram(&prog), NVRTC_SUCCESS);
  return names;
}

TEST_F(NvrtcShimTest, UnsupportedEntryPointsFailClosedAndLogTheTablesReasonOnce) {
  const auto rows = agileos::client::nvrtc_shim::failClosedEntries();
  std::vector<std::pair<std::string, nvrtcResult>> results;
  ::testing::internal::CaptureStderr();
  const std::set<std::string> called = callEveryUnsupportedEntryPoint(&results);
  const std::string firstLog = ::testing::internal::GetCapturedStderr();
  ::testing::internal::CaptureStderr();
  callEveryUnsupportedEntryPoint(&results);
  const std::string secondLog = ::testing::internal::GetCapturedStderr();

  std::set<std::string> tableNames;
  for (const auto& row : rows) {
    tableNames.insert(row.symbol);
    EXPECT_STREQ(nvrtcGetErrorString(static_cast<nvrtcResult>(row.result)), row.result_name) << row.symbol;
    EXPECT_NE(row.result, NVRTC_SUCCESS) << row.symbol;
    for (const auto& [name, result] : results) {
      if (name == row.symbol) {
        EXPECT_EQ(result, row.result) << name;
      }
    }
    const std::string line = std::string(row.symbol) + " is not supported by AgileOS (" + row.reason +
                             "); returning " + row.result_name;
    const auto at = firstLog.find(line);
    EXPECT_NE(at, std::string::npos) << "not logged: " << line << "\nlog:\n" << firstLog;
    if (at != std::string::npos) {
      EXPECT_EQ(firstLog.find(line, at + 1), std::string::npos) << "logged twice: " << line;
    }
  }
  EXPECT_EQ(called, tableNames) << "the test and the table disagree on which entry points are unsupported";
  EXPECT_EQ(results.size(), 2 * rows.size());
  EXPECT_EQ(firstLog.find("has no row"), std::string::npos) << firstLog;
  EXPECT_EQ(secondLog, "") << "an unsupported entry point logged again";
  EXPECT_TRUE(calls().empty()) << "an unsupported entry point called the worker";
}

TEST_F(NvrtcShimTest, UnsupportedCodesAreTheDocumentedOnes) {
  std::vector<std::pair<std::string, nvrtcResult>> results;
  ::testing::internal::CaptureStderr();
  callEveryUnsupportedEntryPoint(&results);
  ::testing::internal::GetCapturedStderr();
  for (const auto& [name, result] : results) {
    if (name == "__nvrtcCPEx") {
      EXPECT_EQ(result, NVRTC_ERROR_INTERNAL_ERROR);
    } else if (name == "nvrtcGetPCHCreateStatus") {
      EXPECT_EQ(result, NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED);
    } else {
      EXPECT_EQ(result, NVRTC_ERROR_INVALID_OPTION) << name;
    }
  }
}

}  // namespace
