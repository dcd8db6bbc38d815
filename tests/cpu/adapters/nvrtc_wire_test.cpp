// The compile result's encoding (worker/adapters/nvrtc/nvrtc_wire.h), which is also the format of
// the compiled-module cache's NVRTC entries: LTO IR is one more field, present only when there is
// some, so entries written before it still decode.
#include "worker/adapters/nvrtc/nvrtc_wire.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace agileos::adapters::nvrtc {
namespace {

CompileResult sample() {
  CompileResult result;
  result.status = NVRTC_SUCCESS;
  result.log = "log";
  result.ptx = std::string(".version 9.0\n") + '\0';
  result.loweredNames = {"_Z1kv"};
  return result;
}

void append(std::string& out, std::string_view field) {
  const std::uint64_t size = field.size();
  out.append(reinterpret_cast<const char*>(&size), sizeof size);
  out.append(field);
}

TEST(NvrtcWire, LtoIrRoundTrips) {
  CompileResult result = sample();
  result.ltoir = std::string("\x7fNVVM\0ir", 8);
  const auto decoded = decodeResult(encodeResult(result));
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->ltoir, result.ltoir);
  EXPECT_EQ(decoded->loweredNames, result.loweredNames);
  EXPECT_EQ(decoded->ptx, result.ptx);
}

TEST(NvrtcWire, AResultWithoutLtoIrHasTheOldFormat) {
  const std::string encoded = encodeResult(sample());
  // The format entries were written in before LTO IR: status, log, PTX, CUBIN, substitute PTX,
  // count, names.
  std::string old;
  const CompileResult expected = sample();  // outlives the views below
  for (std::string_view field :
       {std::string_view("0"), std::string_view("log"), std::string_view(expected.ptx), std::string_view(""),
        std::string_view(""), std::string_view("1"), std::string_view("_Z1kv")}) {
    append(old, field);
  }
  EXPECT_EQ(encoded, old);
  const auto decoded = decodeResult(old);
  ASSERT_TRUE(decoded);
  EXPECT_TRUE(decoded->ltoir.empty());
}

TEST(NvrtcWire, MoreThanOneTrailingFieldIsRefused) {
  std::string encoded = encodeResult(sample());
  append(encoded, "ir");
  ASSERT_TRUE(decodeResult(encoded));
  append(encoded, "more");
  EXPECT_FALSE(decodeResult(encoded));
}

}  // namespace
}  // namespace agileos::adapters::nvrtc
