// The digest a CUDA runtime in the program checks the driver with (client/cuda/runtime_integrity.h):
// MD2 against RFC 1319's test suite, and the digest of one set of inputs against the value the
// ZLUDA project's tests pin (inputs captured from a real driver; our Python port of its passes
// reproduced its intermediate vectors). A static-cudart program passing on the H200 is the
// end-to-end proof (tests/gpu: programs-static).
#include "client/cuda/runtime_integrity.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

namespace agileos::client::cuda_shim {
namespace {

std::string hex(std::span<const std::uint8_t> bytes) {
  std::string text;
  char byte[3];
  for (std::uint8_t b : bytes) {
    std::snprintf(byte, sizeof byte, "%02x", b);
    text += byte;
  }
  return text;
}

std::string md2Hex(std::string_view message) {
  return hex(md2({reinterpret_cast<const std::uint8_t*>(message.data()), message.size()}));
}

TEST(RuntimeIntegrity, Md2MatchesRfc1319) {
  EXPECT_EQ(md2Hex(""), "8350e5a3e24c153df2275c9f80692773");
  EXPECT_EQ(md2Hex("a"), "32ec01ec4a6dac72c0ab96fb34c0b5d1");
  EXPECT_EQ(md2Hex("abc"), "da853b0d3f88d99b30283a69e6ded6bb");
  EXPECT_EQ(md2Hex("message digest"), "ab4f496bfb2a530b219ff33031fe06b0");
  EXPECT_EQ(md2Hex("abcdefghijklmnopqrstuvwxyz"), "4e8ddff3650292ab5a4108c3aa47940b");
  EXPECT_EQ(md2Hex("12345678901234567890123456789012345678901234567890123456789012345678901234567890"),
            "d5976f79d83d3a0dc9806c3c66f3efd8");
}

TEST(RuntimeIntegrity, DigestOfCapturedInputs) {
  IntegrityInputs inputs{};
  inputs.driverVersion = 0x2f30;
  inputs.runtimeVersion = 12082;
  inputs.processId = 0x2fa423;
  inputs.threadId = 0xf79c1000;
  inputs.cudartTable = 0x7ffff6958240;
  inputs.integrityTable = 0x7ffff6958220;
  inputs.function = 0x7ffff2aaf4a0;
  inputs.unixSeconds = 0x682b9cee;
  DeviceIdentity device{};
  const std::uint32_t uuidWords[4] = {0x8a2bfe9a, 0x382d25ac, 0xc5ae37ea, 0x5f32716d};
  std::memcpy(device.uuid.data(), uuidWords, sizeof uuidWords);
  device.pciDomain = 0;
  device.pciBus = 2;
  device.pciDevice = 0;
  const std::array<std::uint64_t, 2> words = runtimeIntegrityDigest(inputs, {&device, 1});
  std::uint8_t bytes[16];
  std::memcpy(bytes, words.data(), sizeof bytes);
  EXPECT_EQ(hex(bytes), "4448a171b026cef76c8c3e39051b02dd");
}

TEST(RuntimeIntegrity, RuntimeVersionsEndingInZeroOrOneGetFixedWords) {
  IntegrityInputs inputs{};
  inputs.runtimeVersion = 13000;
  EXPECT_EQ(runtimeIntegrityDigest(inputs, {}),
            (std::array<std::uint64_t, 2>{0x3341181C03CB675Cull, 0x8ED383AA1F4CD1E8ull}));
  inputs.runtimeVersion = 13001;
  EXPECT_EQ(runtimeIntegrityDigest(inputs, {}),
            (std::array<std::uint64_t, 2>{0x1841181C03CB675Cull, 0x8ED383AA1F4CD1E8ull}));
  inputs.runtimeVersion = 13002;
  EXPECT_NE(runtimeIntegrityDigest(inputs, {})[0], 0x3341181C03CB675Cull);
}

}  // namespace
}  // namespace agileos::client::cuda_shim
