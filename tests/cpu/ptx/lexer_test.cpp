#include "ptx/lexer.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace agileos::ptx {
namespace {

std::vector<std::string> texts(const LexResult& result) {
  std::vector<std::string> out;
  for (const Token& t : result.tokens) out.push_back(t.text);
  return out;
}

TEST(PtxLexer, SplitsAnInstructionIntoItsTokens) {
  const LexResult r = tokenize("@!%p1 ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd2+-16]; // comment");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(texts(r), (std::vector<std::string>{"@", "!",   "%p1", "ld.global.v4.f32",
                                                "{", "%f1", ",",   "%f2",
                                                ",", "%f3", ",",   "%f4",
                                                "}", ",",   "[",   "%rd2",
                                                "+", "-",   "16",  "]",
                                                ";"}));
  EXPECT_EQ(r.tokens[3].kind, TokenKind::kIdentifier);
  EXPECT_TRUE(r.tokens[3].spaceBefore);
  EXPECT_FALSE(r.tokens[2].spaceBefore);
}

TEST(PtxLexer, ClassifiesNumbersDirectivesStringsAndSpecialRegisters) {
  const LexResult r = tokenize(
      ".reg .b32 %r<44>;\nmov.f32 %f1, 0f3F800000;\n.file 1 \"a b/c.cu\"\nmov.u32 %r1, %tid.x;"
      " add.u64 %rd1, %rd1, 0x10U; .b8 1.5e-3");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.tokens[0].kind, TokenKind::kDirective);
  EXPECT_EQ(r.tokens[1].text, ".b32");
  EXPECT_EQ(r.tokens[3].text, "<");
  EXPECT_EQ(r.tokens[4].kind, TokenKind::kNumber);
  EXPECT_TRUE(r.tokens[7].newlineBefore);
  EXPECT_EQ(r.tokens[7].line, 2u);
  EXPECT_EQ(r.tokens[10].text, "0f3F800000");
  EXPECT_EQ(r.tokens[10].kind, TokenKind::kNumber);
  EXPECT_EQ(r.tokens[14].kind, TokenKind::kString);
  EXPECT_EQ(r.tokens[14].text, "\"a b/c.cu\"");
  bool sawTid = false, sawHex = false, sawFloat = false;
  for (const Token& t : r.tokens) {
    sawTid |= t.text == "%tid.x" && t.kind == TokenKind::kIdentifier;
    sawHex |= t.text == "0x10U" && t.kind == TokenKind::kNumber;
    sawFloat |= t.text == "1.5e-3" && t.kind == TokenKind::kNumber;
  }
  EXPECT_TRUE(sawTid);
  EXPECT_TRUE(sawHex);
  EXPECT_TRUE(sawFloat);
}

// A string ends at its closing quote for every reader: control characters, non-ASCII and a
// backslash that escapes nothing printable are refused; escapes and comment markers are kept in
// a normalized form that holds neither, nor an inner quote, so that printed it reads the same to
// every consumer.
TEST(PtxLexer, StringsHoldNoControlCharacterAndPrintWithoutEscapesOrCommentMarkers) {
  for (const char* text : {".file 1 \"a\tb\"", ".file 1 \"a\rb\"", ".file 1 \"a\nb\"", ".file 1 \"\xc3\xa9\"",
                           ".file 1 \"unterminated", ".file 1 \"a\\", ".file 1 \"a\\\n\"", ".file 1 \"a\\\"",
                           ".pragma \"x\\\";"}) {
    const LexResult r = tokenize(text);
    EXPECT_FALSE(r.ok) << text;
    EXPECT_EQ(r.error.rfind("line ", 0), 0u) << r.error;
  }
  const LexResult fine = tokenize(".file 1 \"/usr/include/a b-c_d.e+f:g**h.cu\"");
  ASSERT_TRUE(fine.ok) << fine.error;
  EXPECT_EQ(fine.tokens[2].text, "\"/usr/include/a b-c_d.e+f:g**h.cu\"");
  const std::pair<const char*, const char*> normalized[] = {
      {"\"C:/VC/\\INCLUDE\\crtdefs.h\"", "\"C:/VC/_INCLUDE/crtdefs.h\""},
      {"\"v4.0//include\\crt/device_runtime.h\"", "\"v4.0/_include/crt/device_runtime.h\""},
      {"\"a\\\"b\" ld.global.u32 %r1, [%rd1]; \"\"", "\"a/'b\""},
      {"\"a/*b*/c\"", "\"a/_b*_c\""},
      {"\"a\\\\b\"", "\"a/_b\""},
  };
  for (const auto& [input, expected] : normalized) {
    const LexResult r = tokenize(std::string(".file 1 ") + input);
    ASSERT_TRUE(r.ok) << input << ": " << r.error;
    EXPECT_EQ(r.tokens[2].text, expected) << input;
    // The normalized text lexes to itself: the printed form is read the same way again.
    const LexResult again = tokenize(std::string(".file 1 ") + r.tokens[2].text);
    ASSERT_TRUE(again.ok) << again.error;
    EXPECT_EQ(again.tokens[2].text, r.tokens[2].text);
  }
}

TEST(PtxLexer, DoubleColonsBelongToOpcodesAndModifiersButALabelColonDoesNot) {
  const LexResult r =
      tokenize("L1: st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%r1], %r2; .shared::cta");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(texts(r),
            (std::vector<std::string>{"L1", ":", "st.async.shared::cluster.mbarrier::complete_tx::bytes.u32",
                                      "[", "%r1", "]", ",", "%r2", ";", ".shared::cta"}));
}

TEST(PtxLexer, BlockCommentsCountLinesAndAreDropped) {
  const LexResult r = tokenize("a /* one\ntwo\n */ b");
  ASSERT_TRUE(r.ok);
  ASSERT_EQ(r.tokens.size(), 2u);
  EXPECT_EQ(r.tokens[1].line, 3u);
  EXPECT_TRUE(r.tokens[1].newlineBefore);
}

TEST(PtxLexer, RefusesWhatItCannotClassify) {
  for (const char* bad :
       {"ld \"unterminated", "a /* never closed", "mov.u32 %r1, #4;", "x \x01 y", "\"no end\nx\""}) {
    const LexResult r = tokenize(bad);
    EXPECT_FALSE(r.ok) << bad;
    EXPECT_FALSE(r.error.empty());
  }
}

}  // namespace
}  // namespace agileos::ptx
