// Control flow under the kernel memory guard (ptx/control_flow.h), on nvcc output (function
// pointers, vtables and an indexed branch: inputs/indirect_calls.cu; the kvstore link of
// module_link_test.cpp) and on hand-written cases: every indirect call is checked against
// the module's own address-taken functions and every brx.idx against its list, under the
// instruction's predicate and every policy; the result assembles; the independent checker
// accepts exactly that and flags a missing or altered check; addresses of trusted code,
// of __agileos_* functions and of kernels are refused, as are names that shadow functions.
#include "ptx/control_flow.h"

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <utility>

#include "memmgr/address_layout.h"
#include "ptx/emitted_check.h"
#include "ptx/guard.h"
#include "ptx/module_link.h"
#include "ptx/parser.h"
#include "ptx/printer.h"
#include "tests/cpu/ptx/guard_test_options.h"
#include "tests/cpu/ptx/guarded_and_clean.h"
#include "tests/cpu/ptx/ptx_corpus.h"

namespace agileos::ptx {
namespace {

using testing::assemble;
using testing::readFile;

constexpr auto npos = std::string::npos;
using testing::kAllPolicies;

// The control-flow checks on their own, with their exact texts: the frame confinement (on by
// default) is frame_confinement_test.cpp's; the corpus-wide tests run with it on.
GuardOptions options(GuardPolicy policy = GuardPolicy::kTrap) {
  GuardOptions o = testing::guardOptions(policy);
  o.confineFrameWrites = false;
  return o;
}

using testing::parsed;

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  EXPECT_NE(at, npos) << from;
  if (at != npos) text.replace(at, from.size(), to);
  return text;
}

std::string replacedAll(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

using testing::count;
using testing::guardedAndClean;

// The statement list holding the first instruction with `opcode` and its index there.
std::pair<std::vector<Statement>*, std::size_t> find(std::vector<Statement>* statements, const char* opcode) {
  for (std::size_t k = 0; k < statements->size(); ++k) {
    Statement& s = (*statements)[k];
    if (s.kind == Statement::Kind::kInstruction && s.instruction.opcode == opcode) return {statements, k};
    if (s.kind == Statement::Kind::kBlock) {
      const auto found = find(&s.block, opcode);
      if (found.first != nullptr) return found;
    }
  }
  return {nullptr, 0};
}

std::pair<std::vector<Statement>*, std::size_t> find(Module* module, const char* opcode) {
  for (TopLevel& item : module->items) {
    if (item.kind != TopLevel::Kind::kFunction || item.function.kind != Function::Kind::kEntry) continue;
    const auto found = find(&item.function.body, opcode);
    if (found.first != nullptr) return found;
  }
  return {nullptr, 0};
}

// The check block right before the first `opcode` of a kernel.
std::vector<Statement>* checkBefore(Module* module, const char* opcode) {
  const auto [statements, k] = find(module, opcode);
  if (statements == nullptr || k == 0 || (*statements)[k - 1].kind != Statement::Kind::kBlock) return nullptr;
  return &(*statements)[k - 1].block;
}

// Two functions whose addresses the kernel takes, one it never names, and a call through
// a register chosen between the two.
constexpr char kPointers[] = R"(.version 9.0
.target sm_90
.address_size 64

.func (.param .b32 func_retval0) twice(.param .b32 twice_param_0)
{
	.reg .b32 %r<3>;
	ld.param.u32 %r1, [twice_param_0];
	add.s32 %r2, %r1, %r1;
	st.param.b32 [func_retval0], %r2;
	ret;
}
.func (.param .b32 func_retval0) square(.param .b32 square_param_0)
{
	.reg .b32 %r<3>;
	ld.param.u32 %r1, [square_param_0];
	mul.lo.s32 %r2, %r1, %r1;
	st.param.b32 [func_retval0], %r2;
	ret;
}
.func (.param .b32 func_retval0) unnamed(.param .b32 unnamed_param_0)
{
	.reg .b32 %r<2>;
	ld.param.u32 %r1, [unnamed_param_0];
	st.param.b32 [func_retval0], %r1;
	ret;
}
.visible .entry k(.param .u64 k_param_0, .param .u32 k_param_1)
{
	.reg .pred %p<2>;
	.reg .b32 %r<4>;
	.reg .b64 %rd<5>;
	ld.param.u64 %rd1, [k_param_0];
	ld.param.u32 %r1, [k_param_1];
	setp.eq.s32 %p1, %r1, 0;
	mov.u64 %rd2, twice;
	mov.u64 %rd3, square;
	selp.b64 %rd4, %rd2, %rd3, %p1;
	mov.u32 %r2, 0;
	{
	.param .b32 param0;
	st.param.b32 [param0], %r1;
	.param .b32 retval0;
	prototype_0 : .callprototype (.param .b32 _) _ (.param .b32 _);
	call (retval0), %rd4, (param0), prototype_0;
	ld.param.b32 %r2, [retval0];
	}
	{
	.param .b32 param0;
	st.param.b32 [param0], %r2;
	.param .b32 retval0;
	call.uni (retval0), unnamed, (param0);
	ld.param.b32 %r3, [retval0];
	}
	st.global.u32 [%rd1], %r3;
	ret;
}
)";

constexpr char kCall[] = "call (retval0), %rd4, (param0), prototype_0;";

TEST(PtxControlFlow, AnIndirectCallMayReachOnlyTheModulesAddressTakenFunctions) {
  for (GuardPolicy policy : kAllPolicies) {
    SCOPED_TRACE(toString(policy));
    const GuardResult guarded = guardedAndClean(parsed(kPointers), options(policy));
    ASSERT_TRUE(guarded.ok);
    EXPECT_EQ(guarded.checkedControlTransfers, 1u) << "the indirect call; not the direct one";
    const std::string text = print(guarded.module);
    EXPECT_NE(
        text.find("mov.u64\t%agileos_guard_ft, square;\n"
                  "\t\t\tsetp.ne.u64\t%agileos_guard_fb, %rd4, %agileos_guard_ft;\n"
                  "\t\t\tmov.u64\t%agileos_guard_ft, twice;\n"
                  "\t\t\tsetp.ne.and.u64\t%agileos_guard_fb, %rd4, %agileos_guard_ft, %agileos_guard_fb;\n"
                  "\t\t\t@%agileos_guard_fb trap;\n"
                  "\t\t}\n"
                  "\t\tcall\t(retval0), %rd4, (param0), prototype_0;"),
        npos)
        << "a trap unless the target is one of the two, whatever the policy\n"
        << text;
    EXPECT_EQ(text.find("%agileos_guard_ft, unnamed;"), npos) << "its address is never taken\n" << text;
    EXPECT_EQ(count(text, "trap;"), 1u) << text;
  }
}

TEST(PtxControlFlow, TheCheckerFlagsAMissingOrAlteredTargetCheck) {
  const GuardOptions o = options();
  EXPECT_EQ(findUnguardedAccesses(parsed(kPointers), o, "%agileos_guard").size(), 2u)
      << "the store and the unchecked call";
  const GuardResult guarded = guardModule(parsed(kPointers), o);
  ASSERT_TRUE(guarded.ok) << guarded.error;
  const std::string& prefix = guarded.registerPrefix;
  auto unchecked = [&](const Module& m) { return findUncheckedControlFlow(m, o.trustedFunctions, prefix); };
  ASSERT_TRUE(unchecked(guarded.module).empty());

  Module removed = guarded.module;
  const auto [statements, k] = find(&removed, "call");
  ASSERT_NE(statements, nullptr);
  statements->erase(statements->begin() + static_cast<std::ptrdiff_t>(k) - 1);
  ASSERT_EQ(unchecked(removed).size(), 1u);
  EXPECT_NE(unchecked(removed)[0].find("an indirect call without the check of its target"), npos);

  // Each alteration leaves the call unchecked (and the checker says so).
  const std::vector<std::function<void(std::vector<Statement>*)>> alterations = {
      [](std::vector<Statement>* b) { b->pop_back(); },  // no trap
      [](std::vector<Statement>* b) { b->back().instruction.predicate->negated = true; },
      [](std::vector<Statement>* b) { (*b)[3].instruction.operands[1].tokens[0].text = "%rd3"; },
      [](std::vector<Statement>* b) { (*b)[4].instruction.operands[1].tokens[0].text = "k"; },  // a kernel
      [](std::vector<Statement>* b) {
        (*b)[4].instruction.operands[1].tokens[0].text = "%rd4";
        (*b)[4].instruction.operands[1].kind = Operand::Kind::kRegister;
      },
      [](std::vector<Statement>* b) { b->erase(b->begin() + 5); },  // the second comparison
      [](std::vector<Statement>* b) {  // a declaration that shadows the called register
        Statement shadow = (*b)[0];
        shadow.directive.tokens[2].text = "%rd4";
        b->insert(b->begin(), shadow);
      },
      [](std::vector<Statement>* b) {  // a label inside lets a branch skip the comparisons
        Statement label;
        label.kind = Statement::Kind::kLabel;
        label.label = "$skip";
        b->insert(b->end() - 1, label);
      },
  };
  for (std::size_t a = 0; a < alterations.size(); ++a) {
    SCOPED_TRACE(a);
    Module altered = guarded.module;
    std::vector<Statement>* block = checkBefore(&altered, "call");
    ASSERT_NE(block, nullptr);
    ASSERT_EQ(block->size(), 7u) << "2 declarations, 2 comparisons, the trap";
    alterations[a](block);
    const std::vector<std::string> found = unchecked(altered);
    ASSERT_FALSE(found.empty());
    EXPECT_NE(found.back().find("line 45: call\t(retval0), %rd4, (param0), prototype_0;"), npos)
        << found.back();
  }
  // A label between the check and the call lets a branch skip the check.
  Module labelled = guarded.module;
  const auto [calls, c] = find(&labelled, "call");
  Statement label;
  label.kind = Statement::Kind::kLabel;
  label.label = "$late";
  calls->insert(calls->begin() + static_cast<std::ptrdiff_t>(c), label);
  EXPECT_EQ(unchecked(labelled).size(), 1u);
}

TEST(PtxControlFlow, APredicatedIndirectCallIsCheckedUnderItsPredicate) {
  for (const char* predicate : {"@%p1 ", "@!%p1 "}) {
    SCOPED_TRACE(predicate);
    const std::string text = replaced(kPointers, kCall, predicate + std::string(kCall));
    const GuardResult guarded = guardedAndClean(parsed(text), options());
    ASSERT_TRUE(guarded.ok);
    const std::string printed = print(guarded.module);
    const bool negated = predicate[1] == '!';
    const std::string condition = negated ? "%agileos_guard_fn" : "%p1";
    EXPECT_NE(printed.find("and.pred\t%agileos_guard_fb, %agileos_guard_fb, " + condition + ";"), npos)
        << printed;
    EXPECT_EQ(printed.find("not.pred\t%agileos_guard_fn, %p1;") != npos, negated) << printed;

    // The check must follow the call's predicate, not another one.
    Module altered = guarded.module;
    std::vector<Statement>* block = checkBefore(&altered, "call");
    ASSERT_NE(block, nullptr);
    Instruction& fold = (*block)[block->size() - 2].instruction;
    ASSERT_EQ(fold.opcode, "and");
    fold.operands[2].tokens[0].text = "%p2";
    EXPECT_EQ(findUncheckedControlFlow(altered, {}, guarded.registerPrefix).size(), 1u);
  }
}

TEST(PtxControlFlow, AnIndirectCallThroughACallTargetsListIsChecked) {
  std::string text = replaced(kPointers, "prototype_0 : .callprototype (.param .b32 _) _ (.param .b32 _);",
                              "targets_0 : .calltargets twice, square;");
  text = replaced(text, "(param0), prototype_0;", "(param0), targets_0;");
  // The list names the functions; the kernel need not take their addresses otherwise.
  text = replaced(text, "mov.u64 %rd2, twice;\n\tmov.u64 %rd3, square;",
                  "ld.global.u64 %rd2, [%rd1];\n\tmov.u64 %rd3, %rd2;");
  const GuardResult guarded = guardedAndClean(parsed(text), options());
  ASSERT_TRUE(guarded.ok);
  EXPECT_EQ(count(print(guarded.module), "mov.u64\t%agileos_guard_ft, "), 2u) << print(guarded.module);

  // Only what the list names: a target outside it would be undefined behaviour in PTX.
  const std::string unnamed = replaced(text, "\tret;\n}\n.visible .entry k(",
                                       "\tret;\n}\n.global .u64 other[1] = {unnamed};\n.visible .entry k(");
  const GuardResult listed = guardedAndClean(parsed(unnamed), options());
  ASSERT_TRUE(listed.ok);
  const std::string printed = print(listed.module);
  EXPECT_EQ(count(printed, "mov.u64\t%agileos_guard_ft, "), 2u) << printed;
  EXPECT_EQ(printed.find("%agileos_guard_ft, unnamed;"), npos) << printed;
  Module widened = listed.module;
  std::vector<Statement>* block = checkBefore(&widened, "call");
  ASSERT_NE(block, nullptr);
  (*block)[2].instruction.operands[1].tokens[0].text = "unnamed";
  EXPECT_EQ(findUncheckedControlFlow(widened, {}, listed.registerPrefix).size(), 1u)
      << "a comparison with a function the list does not name";

  const GuardResult kernel =
      guardModule(parsed(replaced(text, ".calltargets twice,", ".calltargets k,")), options());
  EXPECT_FALSE(kernel.ok);
  EXPECT_NE(kernel.error.find("takes the address of kernel 'k' (a kernel is not a call target)"), npos)
      << kernel.error;
}

TEST(PtxControlFlow, WithoutAddressTakenFunctionsAnIndirectCallTraps) {
  // The target comes from memory; no function's address is taken anywhere.
  const std::string text = replaced(kPointers, "mov.u64 %rd2, twice;\n\tmov.u64 %rd3, square;",
                                    "ld.global.u64 %rd2, [%rd1];\n\tmov.u64 %rd3, %rd2;");
  for (const char* predicate : {"", "@%p1 ", "@!%p1 "}) {
    SCOPED_TRACE(predicate);
    const GuardResult guarded =
        guardedAndClean(parsed(replaced(text, kCall, predicate + std::string(kCall))), options());
    ASSERT_TRUE(guarded.ok);
    const std::string printed = print(guarded.module);
    EXPECT_NE(printed.find("{\n\t\t\t" + std::string(predicate) + "trap;\n\t\t}\n\t\t" + predicate + "call"),
              npos)
        << "the call can go nowhere: a trap under its predicate\n"
        << printed;
    // A trap under another predicate does not stop the call.
    Module altered = guarded.module;
    std::vector<Statement>* block = checkBefore(&altered, "call");
    ASSERT_NE(block, nullptr);
    ASSERT_EQ(block->size(), 1u);
    Instruction& trap = (*block)[0].instruction;
    trap.predicate = trap.predicate ? std::nullopt : std::optional<Predicate>(Predicate{false, "%p1"});
    EXPECT_EQ(findUncheckedControlFlow(altered, {}, guarded.registerPrefix).size(), 1u);
  }
}

TEST(PtxControlFlow, ACallTargetTheGuardCannotReadIsRefused) {
  for (const char* call :
       {"call (retval0), %rd4+8, (param0), prototype_0;", "call (retval0), (param0);",
        "call.uni.foo (retval0), %rd4, (param0), prototype_0;", "call (retval0), %rd4, (param0), (param0);",
        // A function's name with a trailing label (found by the layout fuzzer):
        // neither form, whatever the label.
        "call (retval0), square, (param0), prototype_0;", "call.uni (retval0), square, prototype_0;"}) {
    SCOPED_TRACE(call);
    const Module module = parsed(replaced(kPointers, kCall, call));
    const GuardResult guarded = guardModule(module, options());
    EXPECT_FALSE(guarded.ok);
    EXPECT_NE(guarded.error.find("line 45: a call of a form the guard does not know"), npos) << guarded.error;
    EXPECT_EQ(findUncheckedControlFlow(module, {}, "%agileos_guard").size(), 1u);
  }
}

TEST(PtxControlFlow, AKernelIsNoCallTarget) {
  for (const char* line : {"mov.u64 %rd3, k;", "add.u64 %rd3, k, 8;"}) {
    SCOPED_TRACE(line);
    const GuardResult guarded =
        guardModule(parsed(replaced(kPointers, "mov.u64 %rd3, square;", line)), options());
    EXPECT_FALSE(guarded.ok);
    EXPECT_EQ(guarded.error, "line 37: takes the address of kernel 'k' (a kernel is not a call target)");
  }
  const std::string initializer =
      replaced(kPointers, ".address_size 64\n", ".address_size 64\n.global .u64 kernels[1] = {k};\n");
  const GuardResult table = guardModule(parsed(initializer), options());
  EXPECT_FALSE(table.ok);
  EXPECT_NE(table.error.find("line 4: takes the address of kernel 'k'"), npos) << table.error;
  EXPECT_EQ(findUncheckedControlFlow(parsed(initializer), {}, "%agileos_guard").size(), 2u)
      << "the kernel in the table and the unchecked call";
}

TEST(PtxControlFlow, ReservedNamesAreRefusedEvenWithoutALink) {
  const std::string reserved = replacedAll(kPointers, "unnamed", "__agileos_m_helper");
  const GuardResult direct = guardModule(parsed(reserved), options());
  EXPECT_FALSE(direct.ok);
  EXPECT_NE(direct.error.find("a call to '__agileos_m_helper', reserved for protected-module code"), npos)
      << direct.error;
  std::string declared = replaced(kPointers, "mov.u64 %rd3, square;", "mov.u64 %rd3, __agileos_x;");
  declared =
      replaced(declared, ".visible .entry k(", ".func __agileos_x()\n{\n\tret;\n}\n.visible .entry k(");
  const GuardResult taken = guardModule(parsed(declared), options());
  EXPECT_FALSE(taken.ok);
  EXPECT_NE(taken.error.find("names '__agileos_x', reserved for protected-module code"), npos) << taken.error;
}

TEST(PtxControlFlow, ANameThatShadowsAFunctionIsRefused) {
  // `call twice, (...), prototype` through a register named `twice`: were it allowed, the
  // check's `mov.u64 t, twice` would read the register, not the function's address.
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {".reg .b64 %rd<5>;", ".reg .b64 %rd<5>, twice;"},
           {".param .u64 k_param_0,", ".param .u64 square,"},
           {"\tst.global.u32 [%rd1], %r3;\n", "\tst.global.u32 [%rd1], %r3;\nsquare:\n"},
           {".param .b32 param0;\n\tst.param.b32 [param0], %r1;",
            ".param .b32 unnamed;\n\tst.param.b32 [unnamed], %r1;"},
       }) {
    SCOPED_TRACE(to);
    const std::string text = replaced(kPointers, from, to);
    const GuardResult guarded = guardModule(parsed(text), options());
    EXPECT_FALSE(guarded.ok);
    EXPECT_NE(guarded.error.find("the name of a function"), npos) << guarded.error;
    EXPECT_FALSE(findUncheckedControlFlow(parsed(text), {}, "%agileos_guard").empty());
  }
}

TEST(PtxControlFlow, AnIndexedBranchStaysInsideItsList) {
  const std::string branch =
      replaced(kPointers, "\tst.global.u32 [%rd1], %r3;\n",
               "\tts: .branchtargets L0, L1, L2;\n\tbrx.idx %r3, ts;\n"
               "L0:\n\tst.global.u32 [%rd1], %r3;\nL1:\n\tst.global.u32 [%rd1+4], %r3;\nL2:\n");
  for (const char* predicate : {"", "@%p1 ", "@!%p1 "}) {
    SCOPED_TRACE(predicate);
    const std::string text = replaced(branch, "brx.idx", predicate + std::string("brx.idx"));
    for (GuardPolicy policy : kAllPolicies) {
      const GuardResult guarded = guardedAndClean(parsed(text), options(policy));
      ASSERT_TRUE(guarded.ok);
      EXPECT_EQ(guarded.checkedControlTransfers, 2u);
      const std::string printed = print(guarded.module);
      EXPECT_NE(printed.find("setp.ge.u32\t%agileos_guard_xb, %r3, 3;"), npos) << printed;
      EXPECT_NE(
          printed.find("@%agileos_guard_xb trap;\n\t}\n\t" + std::string(predicate) + "brx.idx\t%r3, ts;"),
          npos)
          << printed;
    }
    // A bound past the list's end is not a check.
    GuardResult guarded = guardModule(parsed(text), options());
    std::vector<Statement>* block = checkBefore(&guarded.module, "brx");
    ASSERT_NE(block, nullptr);
    for (Statement& s : *block) {
      if (s.kind == Statement::Kind::kInstruction && s.instruction.opcode == "setp")
        s.instruction.operands[2].tokens[0].text = "4";
    }
    EXPECT_EQ(findUncheckedControlFlow(guarded.module, {}, guarded.registerPrefix).size(), 1u);
  }
  const GuardResult missing =
      guardModule(parsed(replaced(branch, "brx.idx %r3, ts;", "brx.idx %r3, L0;")), options());
  EXPECT_FALSE(missing.ok);
  EXPECT_NE(missing.error.find("'L0' is not the label of one .branchtargets list"), npos) << missing.error;
}

TEST(PtxControlFlow, TooManyAddressTakenFunctionsAreRefused) {
  std::string text = ".version 9.0\n.target sm_90\n.address_size 64\n";
  std::string table = ".global .u64 table[4097] = {";
  for (int k = 0; k <= 4096; ++k) {
    text += ".func f" + std::to_string(k) + "()\n{\n\tret;\n}\n";
    table += (k == 0 ? "f" : ", f") + std::to_string(k);
  }
  text += table + "};\n.visible .entry k()\n{\n\tret;\n}\n";
  const GuardResult guarded = guardModule(parsed(text), options());
  EXPECT_FALSE(guarded.ok);
  EXPECT_NE(guarded.error.find("takes the address of 4097 functions"), npos) << guarded.error;
}

// ---------------------------------------------------------------- nvcc's indirect calls

TEST(PtxControlFlow, FunctionPointersVirtualCallsAndAnIndexedBranchFromNvcc) {
  const Module module = parsed(readFile(std::string(AGILEOS_PTX_CORPUS_DIR) + "/indirect_calls.ptx"));
  for (GuardPolicy policy : kAllPolicies) {
    SCOPED_TRACE(toString(policy));
    const GuardResult guarded = guardedAndClean(module, options(policy));
    ASSERT_TRUE(guarded.ok);
    EXPECT_EQ(guarded.checkedControlTransfers, 5u) << "two pointer calls, two virtual calls, one brx.idx";
    const std::string text = print(guarded.module);
    // Six address-taken functions (two in `table`, four in the vtables), at each of four calls.
    EXPECT_EQ(count(text, "mov.u64\t%agileos_guard_ft, "), 24u) << text;
    EXPECT_EQ(count(text, "mov.u64\t%agileos_guard_ft, _ZNK6Circle4areaEf;"), 4u) << text;
    EXPECT_NE(text.find("setp.ge.u32\t%agileos_guard_xb, %r2, 3;"), npos) << text;
    EXPECT_NE(text.find("= {0, 0, _ZNK5Shape4areaEf, _ZNK5Shape9perimeterEf};"), npos)
        << "the client's own vtables stay\n"
        << text;
  }
}

// ---------------------------------------------------------------- trusted code, linked

Module linkInput(const std::string& name) {
  return parsed(readFile(std::string(AGILEOS_PTX_MODULE_LINK_DIR) + "/" + name + ".ptx"));
}

LinkResult kvstoreLink() {
  const DeviceModule queue{"queue", linkInput("queue"), {{"base", memmgr::kModuleRange.begin + 0x100000}}};
  const DeviceModule kvstore{
      "kvstore", linkInput("kvstore"), {{"slots", 1024}, {"table", memmgr::kModuleRange.begin + 0x200000}}};
  LinkResult linked = linkModuleFunctions(linkInput("app_kvstore"), {queue, kvstore});
  EXPECT_TRUE(linked.ok) << linked.error;
  return linked;
}

GuardOptions trusting(const LinkResult& linked) {
  GuardOptions o = options();
  o.trustedFunctions = linked.trustedFunctions;
  return o;
}

// The linked application with `lines` added to kernel kvPut (before its first `ret;`), and
// `declarations` at module level.
Module withKernelLines(const LinkResult& linked, const std::string& lines,
                       const std::string& declarations = "") {
  std::string text = print(linked.module);
  const std::size_t kernel = text.find(".entry _Z5kvPutPKyi(");
  EXPECT_NE(kernel, npos);
  text.insert(text.find("\tret;", kernel), "\t.reg .b64 %cf<2>;\n\t" + lines + "\n");
  if (!declarations.empty()) text.insert(text.find(".func"), declarations + "\n");
  return parsed(text);
}

TEST(PtxControlFlow, ThePlaceholderTableOfAPublicHeaderHoldsZeros) {
  const LinkResult linked = kvstoreLink();
  const std::string before = print(linked.module);
  ASSERT_NE(before.find("agileos_kvstore_placeholders[2] = {agileos_kvstore_put, agileos_kvstore_get};"),
            npos)
      << before;
  const GuardOptions o = trusting(linked);
  EXPECT_EQ(findUncheckedControlFlow(linked.module, o.trustedFunctions, "%agileos_guard").size(), 2u)
      << "two trusted addresses in memory the client can read";
  const GuardResult guarded = guardedAndClean(linked.module, o);
  ASSERT_TRUE(guarded.ok);
  EXPECT_NE(print(guarded.module).find("agileos_kvstore_placeholders[2] = {0, 0};"), npos)
      << print(guarded.module);
  EXPECT_EQ(guarded.checkedControlTransfers, 0u);
}

TEST(PtxControlFlow, TakingTheAddressOfTrustedCodeIsRefused) {
  const LinkResult linked = kvstoreLink();
  const GuardOptions o = trusting(linked);
  // The placeholder table, which the guard would set to 0.
  const std::size_t baseline =
      findUncheckedControlFlow(linked.module, o.trustedFunctions, "%agileos_guard").size();
  ASSERT_EQ(baseline, 2u);
  for (const char* line : {"mov.u64 %cf0, agileos_kvstore_get;", "cvta.global.u64 %cf0, agileos_kvstore_get;",
                           "add.u64 %cf0, agileos_kvstore_get, 64;", "mov.u64 %cf0, agileos_kvstore_put+64;",
                           "st.global.u64 [%cf1], agileos_kvstore_put;"}) {
    SCOPED_TRACE(line);
    const Module attack = withKernelLines(linked, line);
    const GuardResult guarded = guardModule(attack, o);
    EXPECT_FALSE(guarded.ok);
    EXPECT_EQ(guarded.error.rfind("line ", 0), 0u) << guarded.error;
    EXPECT_NE(guarded.error.find("trusted protected-module code, which only a direct call may enter"), npos)
        << guarded.error;
    EXPECT_EQ(findUncheckedControlFlow(attack, o.trustedFunctions, "%agileos_guard").size(), baseline + 1);
  }
  // The link's own names of module code: not even a direct call.
  for (const char* line :
       {"mov.u64 %cf0, __agileos_queue_push;",
        "{\n\t.param .b64 retval0;\n\tcall.uni (retval0), __agileos_kvstore_const_table, ();\n\t}"}) {
    SCOPED_TRACE(line);
    const Module attack = withKernelLines(linked, line);
    const GuardResult guarded = guardModule(attack, o);
    EXPECT_FALSE(guarded.ok);
    EXPECT_NE(guarded.error.find("reserved for protected-module code"), npos) << guarded.error;
    EXPECT_EQ(findUncheckedControlFlow(attack, o.trustedFunctions, "%agileos_guard").size(), baseline + 1);
  }
  const Module vtable = withKernelLines(linked, "", ".global .u64 stash[2] = {0, __agileos_queue_push};");
  const GuardResult guarded = guardModule(vtable, o);
  EXPECT_FALSE(guarded.ok);
  EXPECT_NE(guarded.error.find("names '__agileos_queue_push', reserved"), npos) << guarded.error;
}

TEST(PtxControlFlow, AnIndirectCallNextToTrustedCodeReachesOnlyTheClientsFunctions) {
  const LinkResult linked = kvstoreLink();
  const GuardOptions o = trusting(linked);
  // The issue's attack: a vtable with a placeholder's address, and a call through the
  // table. The placeholder becomes 0; the table of callable functions is the client's own.
  const Module attack =
      withKernelLines(linked,
                      "mov.u64 %cf0, stash;\n\tld.global.u64 %cf1, [%cf0+8];\n\t{\n"
                      "\t.param .b64 param0;\n\tst.param.b64 [param0], %cf1;\n"
                      "\tproto : .callprototype _ (.param .b64 _);\n\tcall %cf1, (param0), proto;\n\t}",
                      ".func mine(.param .b64 x)\n{\n\tret;\n}\n"
                      ".global .u64 stash[3] = {mine, agileos_kvstore_get, agileos_kvstore_put};");
  const GuardResult guarded = guardedAndClean(attack, o);
  ASSERT_TRUE(guarded.ok);
  const std::string text = print(guarded.module);
  EXPECT_NE(text.find("stash[3] = {mine, 0, 0};"), npos) << text;
  EXPECT_EQ(count(text, "mov.u64\t%agileos_guard_ft, "), 1u) << text;
  EXPECT_NE(text.find("mov.u64\t%agileos_guard_ft, mine;"), npos) << text;
  // Trusted bodies are neither rewritten nor checked: their own direct calls stay.
  for (std::size_t i = 0; i < guarded.module.items.size(); ++i) {
    const Function& f = guarded.module.items[i].function;
    if (guarded.module.items[i].kind == TopLevel::Kind::kFunction && o.trustedFunctions.count(f.name) != 0) {
      EXPECT_EQ(f.body, attack.items[i].function.body) << f.name;
    }
  }
}

}  // namespace
}  // namespace agileos::ptx
