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

}  // namespace
}  // namespace agileos::ptx
