#include "ptx/parser.h"

#include <gtest/gtest.h>

#include <string>

#include "ptx/printer.h"

namespace agileos::ptx {
namespace {

constexpr char kSample[] = R"(//
// comment header
.version 9.0
.target sm_90
.address_size 64

.extern .func  (.param .b32 func_retval0) vprintf
(
	.param .b64 vprintf_param_0,
	.param .b64 vprintf_param_1
)
;
.global .align 4 .b8 table[8] = {1, 2, 3, 4, 5, 6, 7, 8};
.const .align 8 .u64 where = generic(table)+4;

.visible .entry kernel(
	.param .u64 kernel_param_0,
	.param .u32 kernel_param_1
)
.maxntid 256, 1, 1
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<9>;
	.reg .b64 	%rd<9>;
	.local .align 8 .b8 	__local_depot0[16];

	ld.param.u64 	%rd1, [kernel_param_0];
	mov.u32 	%r1, %tid.x;
	setp.lt.u32 	%p1|%p2, %r1, 32;
	@!%p1 bra 	$L__BB0_2;
	{
	.reg .b32 inner;
	cvta.to.global.u64 	%rd2, %rd1;
	st.global.v2.u32 	[%rd2+-8], {%r1, %r1};
	}
$L__BB0_2:
	.loc	1 23 4
	atom.global.add.u32 	%r2, [%rd2+1024], 1;
	call.uni (retval0),
	vprintf,
	(
	param0,
	param1
	);
	ret;
}

.func _Z3fooPi(
	.param .b64 _Z3fooPi_param_0
)
{
	ret;
}
)";

TEST(PtxParser, ParsesModuleFunctionsAndStatements) {
  const ParseResult r = parse(kSample);
  ASSERT_TRUE(r.ok) << r.error;
  const Module& m = r.module;
  ASSERT_EQ(m.items.size(), 8u);
  EXPECT_EQ(m.items[0].directive.name, ".version");
  EXPECT_EQ(m.items[1].directive.tokens.size(), 2u) << ".target ends at its line";
  EXPECT_EQ(m.items[3].kind, TopLevel::Kind::kFunction);
  EXPECT_EQ(m.items[3].function.name, "vprintf");
  EXPECT_FALSE(m.items[3].function.hasBody);
  EXPECT_EQ(m.items[4].directive.name, ".global") << "a variable with an initializer";
  EXPECT_EQ(m.items[5].directive.name, ".const");

  const Function& kernel = m.items[6].function;
  EXPECT_EQ(kernel.kind, Function::Kind::kEntry);
  EXPECT_EQ(kernel.name, "kernel");
  ASSERT_TRUE(kernel.hasBody);
  EXPECT_EQ(m.items[7].function.kind, Function::Kind::kFunc);
  EXPECT_EQ(m.items[7].function.name, "_Z3fooPi");

  const std::vector<Statement>& body = kernel.body;
  EXPECT_EQ(body[0].kind, Statement::Kind::kDirective);
  EXPECT_EQ(body[0].directive.name, ".reg");
  const Instruction& ld = body[4].instruction;
  EXPECT_EQ(ld.opcode, "ld");
  EXPECT_EQ(ld.modifiers, (std::vector<std::string>{".param", ".u64"}));
  ASSERT_EQ(ld.operands.size(), 2u);
  EXPECT_EQ(ld.operands[0].kind, Operand::Kind::kRegister);
  ASSERT_EQ(ld.operands[1].kind, Operand::Kind::kAddress);
  EXPECT_EQ(ld.operands[1].address, (AddressForm{"kernel_param_0", 0}));

  EXPECT_EQ(body[5].instruction.operands[1].tokens[0].text, "%tid.x");
  EXPECT_EQ(body[6].instruction.operands[0].kind, Operand::Kind::kExpression) << "%p1|%p2";
  const Instruction& bra = body[7].instruction;
  ASSERT_TRUE(bra.predicate.has_value());
  EXPECT_TRUE(bra.predicate->negated);
  EXPECT_EQ(bra.predicate->reg, "%p1");
  EXPECT_EQ(bra.operands[0].kind, Operand::Kind::kSymbol);

  const Statement& nested = body[8];
  ASSERT_EQ(nested.kind, Statement::Kind::kBlock);
  ASSERT_EQ(nested.block.size(), 3u);
  const Instruction& st = nested.block[2].instruction;
  EXPECT_TRUE(st.hasModifier(".global"));
  EXPECT_TRUE(st.hasModifier(".v2"));
  EXPECT_EQ(st.operands[0].address, (AddressForm{"%rd2", -8}));
  EXPECT_EQ(st.operands[1].kind, Operand::Kind::kVector);
  EXPECT_EQ(st.operands[1].elements.size(), 2u);

  EXPECT_EQ(body[9].kind, Statement::Kind::kLabel);
  EXPECT_EQ(body[9].label, "$L__BB0_2");
  EXPECT_EQ(body[10].directive.name, ".loc");
  EXPECT_EQ(body[10].directive.tokens.size(), 4u);
  EXPECT_EQ(body[11].instruction.operands[1].address, (AddressForm{"%rd2", 1024}));
  const Instruction& call = body[12].instruction;
  EXPECT_EQ(call.opcode, "call");
  ASSERT_EQ(call.operands.size(), 3u);
  EXPECT_EQ(call.operands[0].kind, Operand::Kind::kList);
  EXPECT_EQ(call.operands[1].kind, Operand::Kind::kSymbol);
  EXPECT_EQ(call.operands[2].elements.size(), 2u);
  EXPECT_EQ(body[13].instruction.opcode, "ret");
  EXPECT_TRUE(body[13].instruction.operands.empty());
}

TEST(PtxParser, PrintingThenParsingGivesTheSameTree) {
  const ParseResult first = parse(kSample);
  ASSERT_TRUE(first.ok) << first.error;
  const std::string printed = print(first.module);
  const ParseResult second = parse(printed);
  ASSERT_TRUE(second.ok) << second.error << "\n" << printed;
  EXPECT_EQ(first.module, second.module) << printed;
  EXPECT_EQ(print(second.module), printed) << "printing is a fixpoint";
}

// Found by the layout fuzzer's long run: "_" is PTX's sink. A variable named "_" was read back
// as the sink where the guard named it (the frame floor's mov), and "[_+16]" was taken as an
// address based on a symbol. Neither is a name: both are refused. ("_:" is no label either; it
// reads as an instruction "_", whose unknown opcode the guard refuses.)
TEST(PtxParser, TheSinkIsNoName) {
  for (const char* text :
       {".version 8.0\n.target sm_90\n.address_size 64\n.global .b8 _[4];\n",
        ".version 8.0\n.target sm_90\n.address_size 64\n.entry k() { .local .b8 _[4]; ret; }\n",
        ".version 8.0\n.target sm_90\n.address_size 64\n.func _() { ret; }\n"}) {
    EXPECT_FALSE(agileos::ptx::parse(text).ok) << text;
  }
  const auto parsed = agileos::ptx::parse(
      ".version 8.0\n.target sm_90\n.address_size 64\n.entry k() { .reg .b32 %r; ld.global.u32 %r, [_+16]; "
      "ret; }\n");
  ASSERT_TRUE(parsed.ok) << parsed.error;
  // The operand is an address, but of no simple form: the guard refuses such an access.
  bool found = false;
  for (const auto& item : parsed.module.items) {
    if (item.kind != agileos::ptx::TopLevel::Kind::kFunction) continue;
    for (const auto& statement : item.function.body) {
      if (statement.kind != agileos::ptx::Statement::Kind::kInstruction ||
          statement.instruction.opcode != "ld")
        continue;
      found = true;
      EXPECT_FALSE(statement.instruction.operands[1].address.has_value());
    }
  }
  EXPECT_TRUE(found);
}

TEST(PtxParser, AddressFormsAndTheirLimits) {
  auto addressOf = [](const std::string& operand) {
    const ParseResult r = parse(".version 9.0\n.entry k()\n{\nld.global.u8 %rs1, " + operand + ";\n}\n");
    EXPECT_TRUE(r.ok) << r.error;
    return r.module.items[1].function.body[0].instruction.operands[1];
  };
  EXPECT_EQ(addressOf("[%rd1]").address, (AddressForm{"%rd1", 0}));
  EXPECT_EQ(addressOf("[%rd1+0x10]").address, (AddressForm{"%rd1", 16}));
  EXPECT_EQ(addressOf("[%rd1-4]").address, (AddressForm{"%rd1", -4}));
  EXPECT_EQ(addressOf("[sym+8]").address, (AddressForm{"sym", 8}));
  EXPECT_EQ(addressOf("[4096]").address, (AddressForm{"", 4096}));
  EXPECT_FALSE(addressOf("[%rd1+%rd2]").address.has_value()) << "not a simple form: kept as tokens";
  EXPECT_FALSE(addressOf("[%rd1+99999999999999999999]").address.has_value()) << "overflow is not an offset";
  EXPECT_EQ(addressOf("[%rd1+99999999999999999999]").kind, Operand::Kind::kAddress);
}

TEST(PtxParser, MalformedInputIsAnErrorWithALine) {
  const char* cases[] = {
      ".version 9.0\n.entry k()\n{\nret;\n",                          // block not closed
      ".version 9.0\n.entry k()\n{\nld.global.u32 %r1, [%rd1;\n}\n",  // bracket not closed
      ".version 9.0\n.entry k()\n{\nadd.s32 %r1, , %r2;\n}\n",        // empty operand
      ".version 9.0\nmov.u32 %r1, 1;\n",                              // instruction at module level
      ".version 9.0\n.entry k()\n{\nadd.s32 %r1, %r2, %r3\n}\n",      // missing ';'
      ".version 9.0\n.entry ()\n{\n}\n",                              // no name
      ".version 9.0\n.entry k())\n{\n}\n",                            // unbalanced header
      ".version 9.0\n.global .b8 x[4] = {1, 2;\n",                    // initializer not closed
      ".version 9.0\n.entry k()\n{\n@1 bra L;\n}\n",                  // guard that is not a register
  };
  for (const char* text : cases) {
    const ParseResult r = parse(text);
    EXPECT_FALSE(r.ok) << text;
    EXPECT_EQ(r.error.rfind("line ", 0), 0u) << r.error;
  }
}

TEST(PtxParser, DeepNestingIsRefusedNotRecursedInto) {
  std::string deep = ".version 9.0\n.entry k()\n{\n";
  for (int i = 0; i < 100000; ++i) deep += "{\n";
  const ParseResult blocks = parse(deep);
  EXPECT_FALSE(blocks.ok);
  std::string brackets = ".version 9.0\n.entry k()\n{\nld.u8 %r1, ";
  for (int i = 0; i < 100000; ++i) brackets += "[";
  EXPECT_FALSE(parse(brackets).ok);
}

// Layout is not structure: the module on one line, or with a line break between every two
// tokens, reads as the same tree, as it does for ptxas (a line break is whitespace there).
TEST(PtxParser, LineBreaksAreWhitespaceSoLayoutDoesNotChangeTheTree) {
  const ParseResult original = parse(kSample);
  ASSERT_TRUE(original.ok) << original.error;
  // The sample has comments, which end at a line break: its printed form has none.
  const std::string printed = print(original.module);
  std::string flat, tokenPerLine;
  for (char c : printed) flat += c == '\n' ? ' ' : c;
  const ParseResult flatParsed = parse(flat);
  ASSERT_TRUE(flatParsed.ok) << flatParsed.error << "\n" << flat;
  EXPECT_EQ(flatParsed.module, original.module);
  for (char c : printed) tokenPerLine += (c == ' ' || c == '\t') ? '\n' : c;
  const ParseResult spread = parse(tokenPerLine);
  ASSERT_TRUE(spread.ok) << spread.error << "\n" << tokenPerLine;
  EXPECT_EQ(spread.module, original.module);
}

// What ptxas reads after a directive that ends "at the end of its line" in a line-based
// reading must be a statement of the tree, so that the guard sees it.
TEST(PtxParser, NothingHidesBehindALineDirective) {
  const std::string store = "st.global.u32 [%rd1], %r1;";
  const std::string prologue = ".visible .entry k(.param .u64 p) { .reg .b64 %rd<3>; .reg .b32 %r<2>; ";
  const std::string cases[] = {
      ".version 9.0 .target sm_90 .address_size 64 " + prologue + store + " ret; }",
      ".version 9.0 .target sm_90 .address_size 64 " + prologue + ".loc 1 2 3 " + store + " ret; }",
      ".version 9.0 .target sm_90 .address_size 64 " + prologue +
          ".loc 1 2 3, function_name $L__info_string0, inlined_at 1 4 5 " + store + " ret; }",
      ".version 9.0 .target sm_90 .address_size 64 .file 1 \"a.cu\" " + prologue + store + " ret; }",
      ".version 9.0 .target sm_90 .address_size 64 .file 1 \"a.cu\", 0, 12 " + prologue + store + " ret; }",
      ".version 9.0 .target sm_90 .address_size 64 " + prologue + ".pragma \"nounroll\"; " + store +
          " ret; }",
  };
  for (const std::string& text : cases) {
    const ParseResult r = parse(text);
    ASSERT_TRUE(r.ok) << r.error << "\n" << text;
    const Function& k = r.module.items.back().function;
    bool sawStore = false;
    for (const Statement& statement : k.body) {
      sawStore |= statement.kind == Statement::Kind::kInstruction && statement.instruction.opcode == "st";
    }
    EXPECT_TRUE(sawStore) << text;
  }
}

// Every directive is read by its grammar; tokens a grammar does not place are an error,
// never carried through to the printed text.
TEST(PtxParser, DirectivesOutsideTheirGrammarAreRefused) {
  const std::string head = ".version 9.0\n.target sm_90\n.address_size 64\n";
  const std::string body = ".visible .entry k(.param .u64 p)\n{\n.reg .b64 %rd<3>;\n";
  const std::string cases[] = {
      ".version 9.0 st.global.u32 [%rd1], %r1;",                           // an instruction at module level
      ".version 9 .target sm_90",                                          // no minor version
      ".version 9.0.1 .target sm_90",                                      // not MAJOR.MINOR
      head + ".target sm_90 st",                                           // a target list with a stray word
      head + ".address_size 48",                                           // not 32 or 64
      head + ".file 1 \"a.cu\" 7",                                         // a stray number
      head + ".file \"a.cu\"",                                             // no index
      head + ".section .debug_info { .b8 1 st.global.u32 [%rd1], %r1; }",  // code in a section
      head + ".section .debug_info { .b8 1; }",                            // not section data
      head + ".section .debug_info { .b32 .b8 }",                          // no value
      head + ".section .text { .b8 1 }",                                   // not a debug section
      head + ".section .debug_info { .b32 .entry }",                       // not a section value
      head + ".alias a, b;",                                               // unsupported module directive
      head + ".global .u32 x = { ld.global.u32 %r1, [%rd1] };",            // code in an initializer
      head + ".global .u32 x = \"s\";",                                    // a string initializer
      head + ".global .u32 x.y;",                                          // a dotted name
      head + ".global .u32 x st.global.u32 [%rd1], %r1;",                  // stray tokens after a name
      head + ".visible .entry k(.param .u64 p) .maxntid 1, 2, 3, 4 { ret; }",  // too many values
      head + ".visible .entry k(.param .u64 p) .bogus 1 { ret; }",             // unknown directive
      head + ".visible .entry k(.param .u64 p st.global) { ret; }",            // junk in parameters
      head + body + ".loc 1 2 { st.global.u32 [%rd1], %r1; }\n}",              // .loc short
      head + body + ".loc 1 2 3 4\n}",                                         // .loc long
      head + body + ".pragma nounroll;\n}",                                    // not a string
      head + body + ".maxntid 1;\n}",                                          // not a body directive
      head + body + ".callprototype _ (.param .b32 _);\n}",                    // not after a label
      head + body + "p: .callprototype _ (.param .b32 _) st.global.u32 [%rd1], %r1;\n}",
      head + body + "p: .branchtargets L1, .b8;\n}",
      head + body + "mov.u32 %r1, { st.global.u32 [%rd1], %r1; };\n}",  // ';' in an operand
      head + body + "mov.u32 %r1, .global;\n}",                         // a directive operand
      head + body + "mov.u32 %r1, \"x\";\n}",                           // a string operand
      head + body + "%r1 %r2;\n}",                                      // a register as opcode
  };
  for (const std::string& text : cases) {
    const ParseResult r = parse(text);
    EXPECT_FALSE(r.ok) << text;
    EXPECT_EQ(r.error.rfind("line ", 0), 0u) << r.error;
  }
}

// What nvcc writes for function pointers, virtual calls and switch tables parses, and the
// printed text keeps every statement.
TEST(PtxParser, CallPrototypesTargetListsAndEmptyStatements) {
  const ParseResult r = parse(
      ".version 9.0 .target sm_90 .address_size 64\n"
      ".global .align 8 .u64 table[2] = {f, f};\n"
      ".global .attribute(.managed) .align 4 .u32 m;\n"
      ".extern .shared .align 16 .b8 dyn[];\n"
      ".func (.param .b32 r) f(.param .b32 a) { ret; }\n"
      ".visible .entry k(.param .u64 .ptr .global .align 8 p, .param .align 16 .b8 s[16]) .maxntid 256, 1, 1 "
      ".minnctapersm 2\n{\n.reg .b64 %rd<4>; .reg .b32 %r<4>; ;;\n"
      "proto: .callprototype (.param .b32 _) _ (.param .b32 _);\n"
      "targets: .branchtargets L1, L2;\n"
      "brx.idx %r1, targets;\nL1: ret;\nL2: ret;\n}\n");
  ASSERT_TRUE(r.ok) << r.error;
  const Function& k = r.module.items.back().function;
  ASSERT_EQ(k.body.size(), 11u) << "empty statements are dropped";
  EXPECT_EQ(k.body[2].label, "proto");
  EXPECT_EQ(k.body[3].directive.name, ".callprototype");
  EXPECT_EQ(k.body[5].directive.name, ".branchtargets");
  const std::string printed = print(r.module);
  const ParseResult again = parse(printed);
  ASSERT_TRUE(again.ok) << again.error << "\n" << printed;
  EXPECT_EQ(again.module, r.module) << printed;
}

}  // namespace
}  // namespace agileos::ptx
