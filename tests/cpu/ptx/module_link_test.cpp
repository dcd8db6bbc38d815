// The link of protected-module device functions into application PTX (ptx/module_link.h),
// on nvcc output built here (inputs/module_link: a queue module, a kvstore module that
// uses it, an application of kvstore, an application of nothing) and on hand-written
// cases: placeholders take the modules' bodies, the linked and guarded module assembles,
// trusted bodies carry no checks while kernels do, every rule refuses what breaks it,
// an application that uses no module is unchanged, and the link is deterministic.
#include "ptx/module_link.h"

#include <gtest/gtest.h>

#include "memmgr/address_layout.h"
#include "ptx/guard.h"
#include "ptx/parser.h"
#include "ptx/printer.h"
#include "tests/cpu/ptx/guard_test_options.h"
#include "tests/cpu/ptx/ptx_corpus.h"

namespace agileos::ptx {
namespace {

using testing::assemble;
using testing::readFile;

constexpr std::uint64_t kQueueBase = memmgr::kModuleRange.begin + 0x100000;
constexpr std::uint64_t kTable = memmgr::kModuleRange.begin + 0x200000;
constexpr auto npos = std::string::npos;

using testing::parsed;

Module input(const std::string& name) {
  return parsed(readFile(std::string(AGILEOS_PTX_MODULE_LINK_DIR) + "/" + name + ".ptx"));
}

DeviceModule queue() { return {"queue", input("queue"), {{"base", kQueueBase}}}; }
DeviceModule kvstore() { return {"kvstore", input("kvstore"), {{"slots", 1024}, {"table", kTable}}}; }

GuardOptions options(GuardPolicy policy = GuardPolicy::kTrap) { return testing::guardOptions(policy); }

// The definition of `name` (nullptr if none).
const Function* definition(const Module& module, const std::string& name) {
  for (const TopLevel& item : module.items) {
    if (item.kind == TopLevel::Kind::kFunction && item.function.name == name && item.function.hasBody)
      return &item.function;
  }
  return nullptr;
}

std::string printed(const Function& function) {
  Module m;
  m.items.push_back(TopLevel{TopLevel::Kind::kFunction, {}, function});
  return print(m);
}

TEST(PtxModuleLink, PlaceholdersTakeTheModulesBodies) {
  const Module app = input("app_kvstore");
  const LinkResult linked = linkModuleFunctions(app, {queue(), kvstore()});
  ASSERT_TRUE(linked.ok) << linked.error;
  EXPECT_EQ(linked.replacedPlaceholders, 2u);
  const std::string text = print(linked.module);
  EXPECT_EQ(text.find("-38"), npos) << "no placeholder body is left\n" << text;
  EXPECT_EQ(text.find(".extern"), npos) << text;
  EXPECT_NE(text.find("mov.b64\t%c, 0xf1000200000;"), npos) << "the client's table\n" << text;
  EXPECT_NE(text.find("mov.b64\t%c, 0x400;"), npos) << "the client's slot count\n" << text;

  // After the leading directives: the constants, then each module's code in load order.
  ASSERT_GT(linked.module.items.size(), 7u);
  EXPECT_EQ(linked.module.items[2].directive.name, ".address_size");
  EXPECT_EQ(linked.module.items[3].function.name, "__agileos_queue_const_base");
  EXPECT_EQ(linked.module.items[4].function.name, "__agileos_kvstore_const_slots");
  EXPECT_EQ(linked.module.items[5].function.name, "__agileos_kvstore_const_table");
  EXPECT_EQ(linked.module.items[6].function.name, "__agileos_queue_push");
  EXPECT_EQ(text.find("agileos_queue_l_agileos_queue_push"), npos)
      << "queue's export is not used: no copy of it\n"
      << text;

  // The bodies are the module's: get checks the pointer it is given, via a renamed helper.
  const Function* get = definition(linked.module, "agileos_kvstore_get");
  ASSERT_NE(get, nullptr);
  const std::string body = printed(*get);
  EXPECT_NE(body.find("__agileos_kvstore_const_table"), npos) << body;
  EXPECT_NE(body.find("call.uni\t(retval0), __agileos_kvstore_l__ZN"), npos) << body;
  EXPECT_NE(body.find("-14"), npos) << body;
  const Function* put = definition(linked.module, "agileos_kvstore_put");
  ASSERT_NE(put, nullptr);
  EXPECT_NE(printed(*put).find("__agileos_queue_push"), npos) << printed(*put);

  // Trusted: the constants, queue's module function, kvstore's two helpers, the placeholders.
  EXPECT_EQ(linked.trustedFunctions.size(), 8u);
  for (const std::string& name : linked.trustedFunctions) {
    EXPECT_NE(definition(linked.module, name), nullptr) << name;
    const bool placeholder = name == "agileos_kvstore_put" || name == "agileos_kvstore_get";
    EXPECT_TRUE(placeholder || name.rfind("__agileos_", 0) == 0) << name;
  }
  // The application's forward declarations stay.
  std::size_t declarations = 0;
  for (const TopLevel& item : linked.module.items) {
    declarations += item.kind == TopLevel::Kind::kFunction && item.function.name == "agileos_kvstore_put";
  }
  EXPECT_EQ(declarations, 2u);
  std::string output;
  EXPECT_EQ(assemble(text, &output), 0) << output << text;
}

TEST(PtxModuleLink, TrustedBodiesStayUncheckedWhileKernelsAreGuarded) {
  const LinkResult linked = linkModuleFunctions(input("app_kvstore"), {queue(), kvstore()});
  ASSERT_TRUE(linked.ok) << linked.error;
  for (GuardPolicy policy : {GuardPolicy::kTrap, GuardPolicy::kRemapOr, GuardPolicy::kPoison,
                             GuardPolicy::kSink, GuardPolicy::kReport}) {
    SCOPED_TRACE(toString(policy));
    GuardOptions o = options(policy);
    o.trustedFunctions = linked.trustedFunctions;
    const GuardResult guarded = guardModule(linked.module, o);
    ASSERT_TRUE(guarded.ok) << guarded.error;
    EXPECT_EQ(guarded.checkedAccesses, 3u) << "kvPut's key load; kvGet's key load and status store";
    EXPECT_TRUE(findUnguardedAccesses(guarded.module, o, guarded.registerPrefix).empty());
    std::size_t kernels = 0;
    for (std::size_t i = 0; i < guarded.module.items.size(); ++i) {
      const Function& f = guarded.module.items[i].function;
      if (guarded.module.items[i].kind != TopLevel::Kind::kFunction || !f.hasBody) continue;
      if (o.trustedFunctions.count(f.name) != 0) {
        EXPECT_EQ(f.body, linked.module.items[i].function.body) << "trusted body unchanged: " << f.name;
      } else if (f.kind == Function::Kind::kEntry) {
        EXPECT_NE(printed(f).find(guarded.registerPrefix), npos) << "kernel checked: " << f.name;
        ++kernels;
      }
    }
    EXPECT_EQ(kernels, 2u);
    // Without the list, the module code's own accesses show as unchecked: it is trusted, not guarded.
    EXPECT_FALSE(findUnguardedAccesses(guarded.module, options(policy), guarded.registerPrefix).empty());
    std::string output;
    EXPECT_EQ(assemble(print(guarded.module), &output), 0) << output;
  }
}

TEST(PtxModuleLink, AnApplicationThatUsesNoModuleIsUnchanged) {
  for (const char* name : {"app_plain", "app_kvstore"}) {
    SCOPED_TRACE(name);
    const Module app = input(name);
    // app_kvstore with no module loaded keeps its placeholders (they answer -38, ENOSYS).
    const std::vector<DeviceModule> loaded = std::string(name) == "app_plain"
                                                 ? std::vector<DeviceModule>{queue(), kvstore()}
                                                 : std::vector<DeviceModule>{};
    const LinkResult linked = linkModuleFunctions(app, loaded);
    ASSERT_TRUE(linked.ok) << linked.error;
    EXPECT_EQ(linked.module, app);
    EXPECT_EQ(print(linked.module), print(app));
    EXPECT_EQ(linked.replacedPlaceholders, 0u);
    EXPECT_TRUE(linked.trustedFunctions.empty());
  }
}

TEST(PtxModuleLink, TheLinkIsDeterministic) {
  const Module app = input("app_kvstore");
  const LinkResult first = linkModuleFunctions(app, {queue(), kvstore()});
  const LinkResult second = linkModuleFunctions(app, {queue(), kvstore()});
  ASSERT_TRUE(first.ok && second.ok) << first.error;
  EXPECT_EQ(print(first.module), print(second.module));
  EXPECT_EQ(first.trustedFunctions, second.trustedFunctions);
  // Printed and parsed again, the link gives the same tree.
  EXPECT_EQ(parsed(print(first.module)), first.module);
}

TEST(PtxModuleLink, AModulesDebugInformationIsDropped) {
  // kvstore built with -G: .file, .section .debug_* and .loc in every body.
  const std::string debug = print(input("kvstore_debug"));
  ASSERT_NE(debug.find(".section"), npos);
  ASSERT_NE(debug.find(".loc"), npos);
  const LinkResult linked = linkModuleFunctions(
      input("app_kvstore"), {queue(), {"kvstore", input("kvstore_debug"), kvstore().constants}});
  ASSERT_TRUE(linked.ok) << linked.error;
  const std::string text = print(linked.module);
  EXPECT_EQ(text.find(".section"), npos);
  EXPECT_EQ(text.find(".loc"), npos);
  EXPECT_EQ(text.find(".file"), npos);
  GuardOptions o = options();
  o.trustedFunctions = linked.trustedFunctions;
  const GuardResult guarded = guardModule(linked.module, o);
  ASSERT_TRUE(guarded.ok) << guarded.error;
  std::string output;
  EXPECT_EQ(assemble(print(guarded.module), &output), 0) << output;
}

TEST(PtxModuleLink, ADependencyMustBeLoadedBefore) {
  EXPECT_EQ(checkDeviceModule(queue(), {}), "");
  EXPECT_EQ(checkDeviceModule(kvstore(), {queue()}), "");
  const std::string alone = checkDeviceModule(kvstore(), {});
  EXPECT_NE(
      alone.find("module 'kvstore': needs __agileos_queue_push, which no module loaded before it defines"),
      npos)
      << alone;
  const LinkResult wrongOrder = linkModuleFunctions(input("app_kvstore"), {kvstore(), queue()});
  EXPECT_FALSE(wrongOrder.ok);
  EXPECT_NE(wrongOrder.error.find("needs __agileos_queue_push"), npos) << wrongOrder.error;
  EXPECT_TRUE(wrongOrder.module.items.empty()) << "nothing half linked";
}

TEST(PtxModuleLink, AConstantTheClientDoesNotDefineIsRefused) {
  DeviceModule m = kvstore();
  m.constants.erase("slots");
  const std::string error = checkDeviceModule(m, {queue()});
  EXPECT_NE(error.find("module 'kvstore': needs constant 'slots' (__agileos_kvstore_const_slots)"), npos)
      << error;
  EXPECT_FALSE(linkModuleFunctions(input("app_kvstore"), {queue(), m}).ok);
}

// ---------------------------------------------------------------- hand-written cases

constexpr char kTinyModule[] = R"(.version 8.5
.target sm_80
.address_size 64

.func (.param .b32 func_retval0) helper(
	.param .b32 helper_param_0
)
;
.visible .func (.param .b32 func_retval0) agileos_tiny_g(
	.param .b32 agileos_tiny_g_param_0
)
{
	.reg .b32 %r<3>;
	ld.param.u32 %r1, [agileos_tiny_g_param_0];
	mul.lo.s32 %r2, %r1, 3;
	st.param.b32 [func_retval0], %r2;
	ret;
}
.visible .func (.param .b32 func_retval0) agileos_tiny_f(
	.param .b64 agileos_tiny_f_param_0
)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [agileos_tiny_f_param_0];
	mov.u64 %rd2, helper;
	ld.u32 %r1, [%rd1];
	{
	.param .b32 param0;
	st.param.b32 [param0], %r1;
	.param .b32 retval0;
	call.uni (retval0), helper, (param0);
	ld.param.b32 %r2, [retval0];
	}
	{
	.param .b32 param0;
	st.param.b32 [param0], %r2;
	.param .b32 retval0;
	call.uni (retval0), agileos_tiny_g, (param0);
	ld.param.b32 %r3, [retval0];
	}
	st.param.b32 [func_retval0], %r3;
	ret;
}
.func (.param .b32 func_retval0) helper(
	.param .b32 helper_param_0
)
{
	.reg .b32 %r<3>;
	.reg .b64 %agileos_guard_a0;
	ld.param.u32 %r1, [helper_param_0];
	add.s32 %r2, %r1, 1;
	st.param.b32 [func_retval0], %r2;
	ret;
}
)";

// Its own `helper` (another signature) and `agileos_tiny_h`, which tiny does not export.
constexpr char kTinyApp[] = R"(.version 8.0
.target sm_90
.address_size 64

.func (.param .b32 func_retval0) agileos_tiny_f(
	.param .b64 p
)
;
.func (.param .b32 func_retval0) agileos_tiny_f(
	.param .b64 p
)
{
	.reg .b32 %r<2>;
	mov.b32 %r1, -38;
	st.param.b32 [func_retval0], %r1;
	ret;
}
.func (.param .b64 func_retval0) helper(
	.param .b64 helper_param_0
)
{
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [helper_param_0];
	ld.global.u64 %rd2, [%rd1];
	st.param.b64 [func_retval0], %rd2;
	ret;
}
.func (.param .b32 func_retval0) agileos_tiny_h()
{
	.reg .b32 %r<2>;
	mov.b32 %r1, 5;
	st.param.b32 [func_retval0], %r1;
	ret;
}
.visible .entry k(
	.param .u64 k_param_0
)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [k_param_0];
	cvta.to.global.u64 %rd2, %rd1;
	{
	.param .b64 param0;
	st.param.b64 [param0], %rd1;
	.param .b32 retval0;
	call.uni (retval0), agileos_tiny_f, (param0);
	ld.param.b32 %r1, [retval0];
	}
	{
	.param .b64 param0;
	st.param.b64 [param0], %rd2;
	.param .b64 retval0;
	call.uni (retval0), helper, (param0);
	ld.param.b64 %rd3, [retval0];
	}
	{
	.param .b32 retval0;
	call.uni (retval0), agileos_tiny_h, ();
	ld.param.b32 %r2, [retval0];
	}
	add.s32 %r3, %r1, %r2;
	st.global.u32 [%rd2], %r3;
	ret;
}
)";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  EXPECT_NE(at, npos) << from;
  if (at != npos) text.replace(at, from.size(), to);
  return text;
}

// The error of linking `app` with tiny (module text `module`), "" if it links.
std::string linkError(const std::string& app, const std::string& module) {
  const LinkResult r = linkModuleFunctions(parsed(app), {DeviceModule{"tiny", parsed(module), {}}});
  if (!r.ok) {
    EXPECT_TRUE(r.module.items.empty()) << "nothing half linked";
  }
  return r.error;
}

TEST(PtxModuleLink, HelpersAreRenamedSoApplicationNamesCannotCaptureThem) {
  const Module app = parsed(kTinyApp);
  const LinkResult linked = linkModuleFunctions(app, {DeviceModule{"tiny", parsed(kTinyModule), {}}});
  ASSERT_TRUE(linked.ok) << linked.error;
  EXPECT_EQ(linked.replacedPlaceholders, 1u);
  const std::string text = print(linked.module);
  EXPECT_EQ(text.find(".version 8.5"), 0u) << "the newest version of all\n" << text;
  EXPECT_EQ(linked.trustedFunctions,
            (std::set<std::string>{"__agileos_tiny_l_helper", "__agileos_tiny_l_agileos_tiny_g",
                                   "agileos_tiny_f"}));
  const Function* f = definition(linked.module, "agileos_tiny_f");
  ASSERT_NE(f, nullptr);
  const std::string body = printed(*f);
  EXPECT_NE(body.find("mov.u64\t%rd2, __agileos_tiny_l_helper;"), npos) << body;
  EXPECT_NE(body.find("call.uni\t(retval0), __agileos_tiny_l_helper, (param0);"), npos) << body;
  EXPECT_NE(body.find("call.uni\t(retval0), __agileos_tiny_l_agileos_tiny_g, (param0);"), npos) << body;
  EXPECT_NE(body.find("agileos_tiny_f(.param .b64 agileos_tiny_f_param_0)"), npos)
      << "the placeholder's parameter takes the module's name\n"
      << body;
  EXPECT_EQ(text.find(".visible .func (.param .b32 func_retval0) __agileos_tiny_l_agileos_tiny_g"), npos)
      << "an export's local copy has no linkage\n"
      << text;
  // The application's own helper and agileos_tiny_h are the application's, unchanged.
  EXPECT_EQ(*definition(linked.module, "helper"), *definition(app, "helper"));
  EXPECT_EQ(*definition(linked.module, "agileos_tiny_h"), *definition(app, "agileos_tiny_h"));

  GuardOptions o = options();
  o.trustedFunctions = linked.trustedFunctions;
  const GuardResult guarded = guardModule(linked.module, o);
  ASSERT_TRUE(guarded.ok) << guarded.error;
  EXPECT_EQ(guarded.checkedAccesses, 2u) << "the application's helper and kernel; not the module's ld";
  EXPECT_EQ(guarded.registerPrefix, "%agileos_guard__") << "fresh for the module's code too";
  EXPECT_TRUE(findUnguardedAccesses(guarded.module, o, guarded.registerPrefix).empty());
  std::string output;
  EXPECT_EQ(assemble(print(guarded.module), &output), 0) << output << print(guarded.module);
}

TEST(PtxModuleLink, ModuleVariablesAndKernelsAreRefused) {
  for (const char* item : {".global .align 8 .u64 state;", ".shared .align 4 .b8 buffer[16];",
                           ".const .u32 limit = 4;", ".visible .global .u32 counter;"}) {
    SCOPED_TRACE(item);
    const std::string module =
        replaced(kTinyModule, ".address_size 64\n", ".address_size 64\n" + std::string(item) + "\n");
    const std::string error = linkError(kTinyApp, module);
    EXPECT_NE(error.find("module 'tiny': a variable at module scope"), npos) << error;
  }
  const std::string kernel = std::string(kTinyModule) + ".visible .entry tiny_kernel()\n{\n\tret;\n}\n";
  const std::string error = linkError(kTinyApp, kernel);
  EXPECT_NE(error.find("module 'tiny': '.entry tiny_kernel'"), npos) << error;
}

TEST(PtxModuleLink, VisibleFunctionsMustBeNamedForTheModule) {
  for (const char* name : {"tiny_g", "agileos_other_g", "__agileos_other_g", "__agileos_tiny_l_g",
                           "__agileos_tiny_const_g", "agileos_tiny_"}) {
    SCOPED_TRACE(name);
    std::string module = replaced(kTinyModule, ") agileos_tiny_g(", std::string(") ") + name + "(");
    module = replaced(module, "call.uni (retval0), agileos_tiny_g,",
                      std::string("call.uni (retval0), ") + name + ",");
    const std::string error = linkError(kTinyApp, module);
    EXPECT_NE(error.find(std::string("module 'tiny': visible function '") + name + "'"), npos) << error;
  }
  EXPECT_EQ(linkError(kTinyApp, replaced(kTinyModule, ".func (.param .b32 func_retval0) agileos_tiny_g(",
                                         ".func (.param .b32 func_retval0) __agileos_tiny_g(")),
            "")
      << "__agileos_tiny_* is for other modules";
}

TEST(PtxModuleLink, SignaturesMustMatchExactly) {
  for (const char* param : {".param .b32 p", ".param .u64 p", ".param .align 8 .b8 p[8]"}) {
    SCOPED_TRACE(param);
    std::string app = kTinyApp;
    for (int k = 0; k < 2; ++k) app = replaced(app, ".param .b64 p\n", std::string(param) + "\n");
    const std::string error = linkError(app, kTinyModule);
    EXPECT_NE(
        error.find(
            "application: 'agileos_tiny_f' (exported by module 'tiny') is (.param .b32 _) agileos_tiny_f("),
        npos)
        << error;
    EXPECT_NE(error.find("but the module's is (.param .b32 _) agileos_tiny_f(.param .b64 _)"), npos) << error;
  }
  const std::string noReturn =
      linkError(replaced(kTinyApp, ".func (.param .b32 func_retval0) agileos_tiny_f(\n\t.param .b64 p\n)\n{",
                         ".func agileos_tiny_f(\n\t.param .b64 p\n)\n{"),
                kTinyModule);
  EXPECT_NE(noReturn.find("is () agileos_tiny_f(.param .b64 _)"), npos) << noReturn;
}

TEST(PtxModuleLink, TheApplicationMayNotUseReservedNames) {
  const std::string variable = linkError(
      replaced(kTinyApp, ".address_size 64\n", ".address_size 64\n.global .u32 __agileos_x;\n"), kTinyModule);
  EXPECT_NE(variable.find("application: '__agileos_x' (line 4) is reserved for protected modules"), npos)
      << variable;
  const std::string function =
      linkError(replaced(kTinyApp, "agileos_tiny_h", "__agileos_tiny_l_helper"), kTinyModule);
  EXPECT_NE(function.find("'__agileos_tiny_l_helper'"), npos) << function;
  EXPECT_NE(function.find("is reserved for protected modules"), npos) << function;
  // Even with no module loaded.
  const LinkResult alone =
      linkModuleFunctions(parsed(replaced(kTinyApp, "agileos_tiny_h", "__agileos_h")), {});
  EXPECT_FALSE(alone.ok);
}

TEST(PtxModuleLink, AModuleForANewerTargetIsRefused) {
  for (const char* target : {"sm_100", "sm_90a"}) {
    SCOPED_TRACE(target);
    const std::string error =
        linkError(kTinyApp, replaced(kTinyModule, ".target sm_80", std::string(".target ") + target));
    EXPECT_NE(
        error.find(std::string("module 'tiny' targets ") + target + ", newer than the application's sm_90"),
        npos)
        << error;
  }
  EXPECT_EQ(linkError(kTinyApp, replaced(kTinyModule, ".target sm_80", ".target sm_90")), "");
  EXPECT_NE(linkError(kTinyApp, replaced(kTinyModule, ".address_size 64", ".address_size 32")), "");
}

TEST(PtxModuleLink, AnApplicationDeclaringAnExportExternOrAsAKernelIsRefused) {
  std::string app = kTinyApp;
  const std::size_t definition =
      app.find(".func (.param .b32 func_retval0) agileos_tiny_f(", app.find(";\n.func"));
  const std::size_t end = app.find(".func (.param .b64 func_retval0) helper(");
  app.erase(definition, end - definition);
  app = replaced(app, ".func (.param .b32 func_retval0) agileos_tiny_f(",
                 ".extern .func (.param .b32 func_retval0) agileos_tiny_f(");
  const std::string error = linkError(app, kTinyModule);
  EXPECT_NE(error.find("'agileos_tiny_f' (exported by module 'tiny') is declared .extern"), npos) << error;
  EXPECT_NE(error.find("public header"), npos) << error;
  const std::string kernel =
      linkError(replaced(kTinyApp, ".entry k(", ".entry agileos_tiny_g("), kTinyModule);
  EXPECT_NE(kernel.find("'agileos_tiny_g' (exported by module 'tiny') is a .entry"), npos) << kernel;
}

TEST(PtxModuleLink, ModuleNamesAndDeclarationsAreChecked) {
  const Module tiny = parsed(kTinyModule);
  EXPECT_NE(checkDeviceModule({"Tiny", tiny, {}}, {}), "");
  EXPECT_NE(checkDeviceModule({"tiny", tiny, {}}, {{"tiny", tiny, {}}}), "");
  EXPECT_NE(checkDeviceModule({"tiny_x", parsed(".version 8.0\n.target sm_80\n.address_size 64\n"), {}},
                              {{"tiny", tiny, {}}})
                .find("overlap"),
            npos)
      << "agileos_tiny_x_f would belong to both";
  const std::string external = checkDeviceModule(
      {"tiny",
       parsed(std::string(kTinyModule) +
              ".extern .func (.param .b32 func_retval0) vprintf(.param .b64 a, .param .b64 b);\n"),
       {}},
      {});
  EXPECT_NE(external.find("needs vprintf, which no module loaded before it defines"), npos) << external;
  const std::string badConstant =
      checkDeviceModule({"tiny",
                         parsed(std::string(kTinyModule) +
                                ".extern .func (.param .b32 func_retval0) __agileos_tiny_const_n();\n"),
                         {{"n", 1}}},
                        {});
  EXPECT_NE(badConstant.find("declares constant __agileos_tiny_const_n as (.param .b32 _)"), npos)
      << badConstant;
}

}  // namespace
}  // namespace agileos::ptx
