// client/cudart/error_api.cpp against the real libcudart, in one process.
//
// This test compiles error_api.cpp with AGILEOS_ERROR_API_PREFIX=agileos_test_, so its own
// functions are agileos_test_cudaGetErrorName/String and the binary defines no cudaGetError*
// symbol that could interpose on the library's. It does not link libcudart; it dlopens it
// (RTLD_LOCAL) and takes the real functions from that handle, then compares the two for every
// code. No GPU is needed: libcudart answers these calls without a driver (and with one loaded
// the texts are the same: checked on the H200 machine after cudaFree(0)).
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

extern "C" const char* agileos_test_cudaGetErrorName(cudaError_t error);
extern "C" const char* agileos_test_cudaGetErrorString(cudaError_t error);

namespace {

using ErrorTextFn = const char* (*)(cudaError_t);

class ErrorStringsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // The toolkit found at configure time; else the soname on the library search path, for a
    // test binary carried to a machine whose toolkit lives elsewhere.
    library_ = dlopen(AGILEOS_TEST_LIBCUDART, RTLD_NOW | RTLD_LOCAL);
    if (library_ == nullptr) library_ = dlopen(AGILEOS_TEST_LIBCUDART_SONAME, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(library_, nullptr) << "dlopen " << AGILEOS_TEST_LIBCUDART << " or "
                                 << AGILEOS_TEST_LIBCUDART_SONAME << ": " << dlerror();
    realName_ = reinterpret_cast<ErrorTextFn>(dlsym(library_, "cudaGetErrorName"));
    realString_ = reinterpret_cast<ErrorTextFn>(dlsym(library_, "cudaGetErrorString"));
  }
  static void TearDownTestSuite() {
    if (library_ != nullptr) dlclose(library_);
    library_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(realName_, nullptr);
    ASSERT_NE(realString_, nullptr);
  }

  // Compares both texts for `code`; returns true when they match.
  static bool sameTexts(std::uint32_t code) {
    const auto error = static_cast<cudaError_t>(code);
    const std::string realName = realName_(error);
    const std::string realString = realString_(error);
    const std::string ourName = agileos_test_cudaGetErrorName(error);
    const std::string ourString = agileos_test_cudaGetErrorString(error);
    EXPECT_EQ(ourName, realName) << "cudaGetErrorName(" << code << ")";
    EXPECT_EQ(ourString, realString) << "cudaGetErrorString(" << code << ")";
    return ourName == realName && ourString == realString;
  }

  static void* library_;
  static ErrorTextFn realName_;
  static ErrorTextFn realString_;
};

void* ErrorStringsTest::library_ = nullptr;
ErrorTextFn ErrorStringsTest::realName_ = nullptr;
ErrorTextFn ErrorStringsTest::realString_ = nullptr;

// Guards the comparison itself: the functions compared really are libcudart's, and this binary
// has no unprefixed definitions that the library could have bound to instead.
TEST_F(ErrorStringsTest, ComparesAgainstTheRealLibrary) {
  EXPECT_EQ(dlsym(RTLD_DEFAULT, "cudaGetErrorName"), nullptr);
  EXPECT_EQ(dlsym(RTLD_DEFAULT, "cudaGetErrorString"), nullptr);
  Dl_info info{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(realName_), &info), 0);
  EXPECT_NE(std::string(info.dli_fname).find("libcudart.so"), std::string::npos) << info.dli_fname;
  EXPECT_NE(reinterpret_cast<void*>(realName_), reinterpret_cast<void*>(&agileos_test_cudaGetErrorName));
}

TEST_F(ErrorStringsTest, EveryCodeFrom0To1100MatchesTheRealLibrary) {
  int mismatches = 0;
  for (std::uint32_t code = 0; code <= 1100; ++code) {
    if (!sameTexts(code)) ++mismatches;
  }
  EXPECT_EQ(mismatches, 0);
}

TEST_F(ErrorStringsTest, CodesBeyond1100MatchTheRealLibrary) {
  int mismatches = 0;
  for (std::uint32_t code = 1101; code <= 20000; ++code) {
    if (!sameTexts(code)) ++mismatches;
  }
  for (const std::uint32_t code :
       {65535u, 65536u, 1000000u, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFEu, 0xFFFFFFFFu}) {
    if (!sameTexts(code)) ++mismatches;
  }
  EXPECT_EQ(mismatches, 0);
}

// Literal expectations, independent of the generated table and of the library.
TEST_F(ErrorStringsTest, KnownTextsOfCuda13) {
  EXPECT_STREQ(agileos_test_cudaGetErrorName(cudaSuccess), "cudaSuccess");
  EXPECT_STREQ(agileos_test_cudaGetErrorString(cudaSuccess), "no error");
  EXPECT_STREQ(agileos_test_cudaGetErrorName(cudaErrorInvalidValue), "cudaErrorInvalidValue");
  EXPECT_STREQ(agileos_test_cudaGetErrorString(cudaErrorInvalidValue), "invalid argument");
  EXPECT_STREQ(agileos_test_cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation");
  EXPECT_STREQ(agileos_test_cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory");
  EXPECT_STREQ(agileos_test_cudaGetErrorName(cudaErrorUnknown), "cudaErrorUnknown");
  EXPECT_STREQ(agileos_test_cudaGetErrorString(cudaErrorUnknown), "unknown error");
  EXPECT_STREQ(agileos_test_cudaGetErrorName(cudaErrorApiFailureBase), "cudaErrorApiFailureBase");
}

TEST_F(ErrorStringsTest, UnknownCodesGetTheUnrecognizedText) {
  for (const std::uint32_t code : {916u, 998u, 1000u, 9999u, 10001u, 0xFFFFFFFFu}) {
    const auto error = static_cast<cudaError_t>(code);
    EXPECT_STREQ(agileos_test_cudaGetErrorName(error), "unrecognized error code") << code;
    EXPECT_STREQ(agileos_test_cudaGetErrorString(error), "unrecognized error code") << code;
  }
}

}  // namespace
