// Unit tests of agileos-sandbox's parts that need no root: the bubblewrap argument list, the
// loader-listing parser, the driver-library rule, #! parsing and the seccomp filter's contents.
// tests/cpu/sandbox/sandbox_test.sh runs the launcher for real.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "docker/sandbox/library_closure.h"
#include "docker/sandbox/sandbox_options.h"
#include "docker/sandbox/sandbox_plan.h"
#include "docker/sandbox/seccomp_filter.h"

namespace agileos::sandbox {
namespace {

using ::testing::Test;

std::ptrdiff_t indexOf(const std::vector<std::string>& args, const std::string& value) {
  const auto it = std::find(args.begin(), args.end(), value);
  return it == args.end() ? -1 : it - args.begin();
}

// The index of the first "FLAG a b" triple, or -1.
std::ptrdiff_t indexOfTriple(const std::vector<std::string>& args, const std::string& flag,
                             const std::string& a, const std::string& b) {
  for (std::size_t i = 0; i + 2 < args.size(); ++i) {
    if (args[i] == flag && args[i + 1] == a && args[i + 2] == b) return static_cast<std::ptrdiff_t>(i);
  }
  return -1;
}

SandboxPlan samplePlan() {
  SandboxPlan plan;
  plan.bwrap = "/usr/bin/bwrap";
  plan.execHelper = "/opt/agileos/bin/agileos-sandbox-exec";
  plan.programPath = "/work/app";
  plan.programSource = "/work/app.real";
  plan.programArgs = {"--size", "4"};
  plan.closureFiles = {"/lib/x86_64-linux-gnu/libc.so.6"};
  plan.readOnlyDirs = {"/opt/agileos/shim", "/run/agileos"};
  plan.writableDirs = {"/srv/out"};
  plan.hidden = {"/usr/local/cuda-13.0"};
  plan.maskedFiles = {{7, "/usr/lib/x86_64-linux-gnu/libcuda.so.1"}};
  plan.environment = {{"LD_PRELOAD", "/opt/agileos/shim/libagileos_cudart.so"}};
  plan.seccompFd = 5;
  plan.startedFd = 6;
  return plan;
}

TEST(SandboxPlan, UnprivilegedUserNamespaceAndEveryOtherNamespace) {
  const auto args = bubblewrapArguments(samplePlan());
  EXPECT_EQ(args[0], "/usr/bin/bwrap");
  for (const char* flag : {"--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-uts",
                           "--unshare-net", "--disable-userns", "--die-with-parent", "--new-session"}) {
    EXPECT_GE(indexOf(args, flag), 0) << flag;
  }
  EXPECT_GE(indexOfTriple(args, "--uid", "1000", "--gid"), 0);
}

TEST(SandboxPlan, SharedNetworkKeepsTheHostNetworkNamespaceOnly) {
  SandboxPlan plan = samplePlan();
  plan.shareNetwork = true;
  const auto args = bubblewrapArguments(plan);
  EXPECT_EQ(indexOf(args, "--unshare-net"), -1);
  EXPECT_GE(indexOf(args, "--unshare-pid"), 0);
}

TEST(SandboxPlan, TheHelperStartsTheProgramWithItsArguments) {
  const auto args = bubblewrapArguments(samplePlan());
  const auto separator = indexOf(args, "--");
  ASSERT_GE(separator, 0);
  const std::vector<std::string> command(args.begin() + separator + 1, args.end());
  EXPECT_EQ(command, (std::vector<std::string>{kExecHelperInside, "6", "/work/app", "--size", "4"}));
  EXPECT_GE(indexOfTriple(args, "--ro-bind", "/opt/agileos/bin/agileos-sandbox-exec", kExecHelperInside), 0);
  EXPECT_GE(indexOfTriple(args, "--ro-bind", "/work/app.real", "/work/app"), 0);
  EXPECT_GE(indexOfTriple(args, "--seccomp", "5", "--"), 0);
}

TEST(SandboxPlan, ALinkedProgramIsAlsoBoundAtItsRealPathBeforeTheKeptDirectories) {
  SandboxPlan plan = samplePlan();
  plan.readOnlyDirs.push_back("/work");  // the link /work/app lies in a kept directory
  const auto args = bubblewrapArguments(plan);
  const auto real = indexOfTriple(args, "--ro-bind", "/work/app.real", "/work/app.real");
  const auto kept = indexOfTriple(args, "--ro-bind", "/work", "/work");
  ASSERT_GE(real, 0);
  ASSERT_GE(kept, 0);
  EXPECT_LT(real, kept);
  plan.programSource = plan.programPath;  // not a link: bound once
  const auto once = bubblewrapArguments(plan);
  EXPECT_EQ(std::count(once.begin(), once.end(), std::string("/work/app")), 3);  // bind src, dest, argv
}

TEST(SandboxPlan, BindsInOrderAndTheRootEndsReadOnly) {
  const auto args = bubblewrapArguments(samplePlan());
  const auto tmp = indexOfTriple(args, "--tmpfs", "/tmp", "--perms");
  const auto library =
      indexOfTriple(args, "--ro-bind", "/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6");
  const auto shim = indexOfTriple(args, "--ro-bind", "/opt/agileos/shim", "/opt/agileos/shim");
  const auto writable = indexOfTriple(args, "--bind", "/srv/out", "/srv/out");
  const auto hidden = indexOfTriple(args, "--tmpfs", "/usr/local/cuda-13.0", "--remount-ro");
  const auto masked = indexOfTriple(args, "--ro-bind-data", "7", "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
  const auto readOnlyRoot = indexOfTriple(args, "--remount-ro", "/", "--setenv");
  for (const auto index : {tmp, library, shim, writable, hidden, masked, readOnlyRoot}) ASSERT_GE(index, 0);
  // /tmp first, so a kept path under /tmp is bound over it; hides and masks after every bind.
  EXPECT_LT(tmp, library);
  EXPECT_LT(shim, hidden);
  EXPECT_LT(writable, hidden);
  EXPECT_LT(hidden, masked);
  EXPECT_LT(masked, readOnlyRoot);
}

TEST(SandboxPlan, NamedLibrariesAreBoundAtTheirNamesBeforeTheKeptDirectories) {
  SandboxPlan plan = samplePlan();
  plan.namedFiles = {{"/usr/lib/x86_64-linux-gnu/libzstd.so.1.5.4", "/lib/x86_64-linux-gnu/libzstd.so.1"}};
  const auto args = bubblewrapArguments(plan);
  const auto named = indexOfTriple(args, "--ro-bind", "/usr/lib/x86_64-linux-gnu/libzstd.so.1.5.4",
                                   "/lib/x86_64-linux-gnu/libzstd.so.1");
  const auto shim = indexOfTriple(args, "--ro-bind", "/opt/agileos/shim", "/opt/agileos/shim");
  ASSERT_GE(named, 0);
  EXPECT_LT(named, shim);
}

TEST(SandboxPlan, TheInsideUserIsNamedAfterEveryBind) {
  SandboxPlan plan = samplePlan();
  plan.readOnlyDirs.push_back("/etc");  // a kept /etc does not bring the host's accounts back
  plan.identityFiles = {{8, "/etc/passwd"}, {9, "/etc/group"}};
  const auto args = bubblewrapArguments(plan);
  const auto keptEtc = indexOfTriple(args, "--ro-bind", "/etc", "/etc");
  const auto passwd = indexOfTriple(args, "--ro-bind-data", "8", "/etc/passwd");
  const auto group = indexOfTriple(args, "--ro-bind-data", "9", "/etc/group");
  const auto readOnlyRoot = indexOfTriple(args, "--remount-ro", "/", "--setenv");
  for (const auto index : {keptEtc, passwd, group, readOnlyRoot}) ASSERT_GE(index, 0);
  EXPECT_LT(keptEtc, passwd);
  EXPECT_LT(group, readOnlyRoot);
}

TEST(SandboxPlan, AccountFilesNameTheInsideIdsAndNobodyElse) {
  EXPECT_EQ(passwdFile(1000, 1001),
            "agileos:x:1000:1001:AgileOS client:/tmp:/usr/sbin/nologin\n"
            "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
  EXPECT_EQ(groupFile(1001), "agileos:x:1001:\nnogroup:x:65534:\n");
}

TEST(SandboxPlan, ProcDriverIsCoveredWhenTheHostHasIt) {
  SandboxPlan plan = samplePlan();
  EXPECT_EQ(indexOfTriple(bubblewrapArguments(plan), "--tmpfs", "/proc/driver", "--remount-ro"), -1);
  plan.coverProcDriver = true;
  EXPECT_GE(indexOfTriple(bubblewrapArguments(plan), "--tmpfs", "/proc/driver", "--remount-ro"), 0);
}

TEST(LoaderListing, AbsolutePathsOnly) {
  const std::string listing =
      "\tlinux-vdso.so.1 (0x00007ffd)\n"
      "\tlibagileos_cudart.so => /opt/shim/libagileos_cudart.so (0x00007f10)\n"
      "\tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007f20)\n"
      "\tlibmissing.so => not found\n"
      "\t/lib64/ld-linux-x86-64.so.2 (0x00007f30)\n"
      "\tlibodd.so => /opt/dir with space/libodd.so (0x00007f40)\n";
  EXPECT_EQ(parseLoaderListing(listing),
            (std::vector<std::string>{"/opt/shim/libagileos_cudart.so", "/lib/x86_64-linux-gnu/libm.so.6",
                                      "/lib64/ld-linux-x86-64.so.2", "/opt/dir with space/libodd.so"}));
  EXPECT_TRUE(parseLoaderListing("\tnot a dynamic executable\n").empty());
}

TEST(DriverLibraries, TheDriverAndTheRealRuntimesButNotTheShimOrMathLibraries) {
  for (const char* path : {"/usr/lib/x86_64-linux-gnu/libcuda.so.1", "libcuda.so", "/x/libnvidia-ml.so.1",
                           "/x/libnvidia-ptxjitcompiler.so.580", "/x/libcudart.so.13", "/x/libnvrtc.so.13",
                           "/x/libcufft.so.12", "/x/libcudadebugger.so.1", "/x/libnvcuvid.so.1"}) {
    EXPECT_TRUE(isDriverLibrary(path)) << path;
  }
  for (const char* path : {"/shim/libagileos_cudart.so", "/x/libcublas.so.13", "/x/libc.so.6",
                           "/x/libcudnn.so.9", "/x/libcurand.so.10", "/x/libcuda_helper_not.txt/x"}) {
    EXPECT_FALSE(isDriverLibrary(path)) << path;
  }
}

TEST(ScriptInterpreter, FirstWordOfTheShebangLine) {
  char path[] = "/tmp/agileos-sandbox-script.XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << "#!/usr/bin/env python3 -u\nprint(1)\n";
  EXPECT_EQ(scriptInterpreter(path), "/usr/bin/env");
  std::ofstream(path) << "\x7f"
                         "ELF...";
  EXPECT_EQ(scriptInterpreter(path), "");
  std::remove(path);
  EXPECT_EQ(scriptInterpreter("/nonexistent/agileos"), "");
}

TEST(SeccompFilter, RefusesWhatTheIssueNames) {
  const auto& refused = refusedSystemCalls();
  for (const char* name :
       {"ptrace", "mount", "keyctl", "bpf", "perf_event_open", "userfaultfd", "kexec_load", "kexec_file_load",
        "init_module", "finit_module", "delete_module", "unshare", "setns"}) {
    EXPECT_NE(std::find(refused.begin(), refused.end(), name), refused.end()) << name;
  }
}

TEST(SeccompFilter, CompilesToAClassicBpfProgram) {
  std::string error;
  const int fd = compileSeccompFilter(&error);
  ASSERT_GE(fd, 0) << error;
  struct stat status {};
  ASSERT_EQ(::fstat(fd, &status), 0);
  ::close(fd);
  // struct sock_filter is 8 bytes; the program holds at least one instruction per refused call.
  EXPECT_EQ(status.st_size % 8, 0);
  EXPECT_GT(status.st_size, static_cast<off_t>(8 * refusedSystemCalls().size()));
}

TEST(SandboxOptions, ProgramAfterTheSeparatorAndRefusalsExit125) {
  std::string message;
  int exitCode = -1;
  std::vector<std::string> words = {"agileos-sandbox", "--socket-dir", "/run/a", "--shim", "/s",
                                    "--keep",          "/k1",          "--keep", "/k2",    "--",
                                    "/bin/app",        "--keep",       "x"};
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  const auto options = parseSandboxOptions(static_cast<int>(argv.size()), argv.data(), &message, &exitCode);
  ASSERT_TRUE(options) << message;
  EXPECT_EQ(options->keep, (std::vector<std::string>{"/k1", "/k2"}));
  EXPECT_EQ(options->program, (std::vector<std::string>{"/bin/app", "--keep", "x"}));
  EXPECT_EQ(options->insideUid, 1000u);

  std::vector<std::string> zero = {
      "agileos-sandbox", "--socket-dir", "/r", "--shim", "/s", "--inside-uid", "0", "--", "/bin/app"};
  argv.clear();
  for (auto& w : zero) argv.push_back(w.data());
  EXPECT_FALSE(parseSandboxOptions(static_cast<int>(argv.size()), argv.data(), &message, &exitCode));
  EXPECT_EQ(exitCode, 125);
  EXPECT_NE(message.find("inside-uid"), std::string::npos);
}

}  // namespace
}  // namespace agileos::sandbox
