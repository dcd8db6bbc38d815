// Unit tests of cgroup_limits.h: /proc/self/cgroup and mountinfo parsing, path composition, the
// files each hierarchy gets, the cgroup options; and, as root where the host offers a writable
// hierarchy, a real sandbox cgroup: made with its limits, joined by a forked child, killed and
// removed, and a stale one of the same name replaced. Those skip, saying why, elsewhere.
#include "docker/sandbox/cgroup_limits.h"

#include <gtest/gtest.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "docker/sandbox/sandbox_options.h"

namespace agileos::sandbox {
namespace {

using Files = std::vector<std::pair<std::string, std::string>>;

// Ids far above any leased range (200000.. by default), distinct per test process and per use.
uid_t testId(unsigned use) { return 4000000000u + (static_cast<unsigned>(::getpid()) % 1000000u) * 4 + use; }

std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string firstWordOf(const std::string& path) {
  std::istringstream in(readText(path));
  std::string word;
  in >> word;
  return word;
}

bool lineEndsWith(const std::string& text, const std::string& suffix) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.size() >= suffix.size() && line.compare(line.size() - suffix.size(), suffix.size(), suffix) == 0)
      return true;
  }
  return false;
}

TEST(CgroupPaths, TheLauncherOwnCgroupFromProcSelfCgroup) {
  const std::string hybrid =
      "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/3adf\n2:cpu,cpuacct:/user.slice\n0::/init.scope\n";
  EXPECT_EQ(cgroupPathFor(hybrid, "memory"), "/process_api/3adf");
  EXPECT_EQ(cgroupPathFor(hybrid, "pids"), "/");
  EXPECT_EQ(cgroupPathFor(hybrid, "cpu"), "/user.slice");
  EXPECT_EQ(cgroupPathFor(hybrid, "cpuacct"), "/user.slice");
  EXPECT_EQ(cgroupPathFor(hybrid, ""), "/init.scope");
  EXPECT_EQ(cgroupPathFor(hybrid, "systemd"), std::nullopt);  // name=systemd names no controller
  EXPECT_EQ(cgroupPathFor(hybrid, "blkio"), std::nullopt);
  EXPECT_EQ(cgroupPathFor("0::/system.slice/a:b.service\n", ""), "/system.slice/a:b.service");
  EXPECT_EQ(cgroupPathFor("0::/\n", "memory"), std::nullopt);  // pure v2: no controller line
  EXPECT_EQ(cgroupPathFor("1:name=systemd:/x\n", ""), std::nullopt);
  EXPECT_EQ(cgroupPathFor("", ""), std::nullopt);
}

TEST(CgroupPaths, TheMountRootOfTheLastMountAtAPoint) {
  const std::string mountInfo =
      "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
      "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
      "36 31 0:33 /docker/abc /sys/fs/cgroup/pids ro,relatime - cgroup cgroup rw,pids\n"
      "50 23 0:40 /a\\040b /mnt/with\\040space rw - cgroup2 cgroup2 rw\n"
      "51 31 0:41 /later /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
  EXPECT_EQ(mountRootOf(mountInfo, "/sys/fs/cgroup/memory"), "/later");
  EXPECT_EQ(mountRootOf(mountInfo, "/sys/fs/cgroup/pids"), "/docker/abc");
  EXPECT_EQ(mountRootOf(mountInfo, "/sys/fs/cgroup"), "/");
  EXPECT_EQ(mountRootOf(mountInfo, "/mnt/with space"), "/a b");
  EXPECT_EQ(mountRootOf(mountInfo, "/sys/fs/cgroup/cpu"), std::nullopt);
}

TEST(CgroupPaths, RelativeToWhereTheHierarchyIsMounted) {
  EXPECT_EQ(relativeToMount("/user.slice/x", "/"), "/user.slice/x");
  EXPECT_EQ(relativeToMount("/docker/abc", "/docker/abc"), "/");
  EXPECT_EQ(relativeToMount("/docker/abc/sub", "/docker/abc"), "/sub");
  EXPECT_EQ(relativeToMount("/docker/abcdef", "/docker/abc"), std::nullopt);
  EXPECT_EQ(relativeToMount("/other", "/docker/abc"), std::nullopt);
}

TEST(CgroupPaths, ParentsAreAbsoluteAndNormalised) {
  for (const char* path : {"/", "/agileos", "/system.slice/agileos.service", "/a:b/c d"}) {
    EXPECT_TRUE(isCgroupPath(path)) << path;
  }
  for (const char* path :
       {"", "agileos", "/agileos/", "//agileos", "/a//b", "/a/./b", "/a/../b", "/..", "/a\nb"}) {
    EXPECT_FALSE(isCgroupPath(path)) << path;
  }
}

TEST(CgroupPaths, Composition) {
  EXPECT_EQ(sandboxCgroupName(200001), "agileos-sandbox-200001");
  EXPECT_EQ(joinCgroupPath("/sys/fs/cgroup", "/"), "/sys/fs/cgroup");
  EXPECT_EQ(joinCgroupPath("/sys/fs/cgroup", "/agileos"), "/sys/fs/cgroup/agileos");
  EXPECT_EQ(joinCgroupPath("/sys/fs/cgroup/memory", "/process_api/3adf"),
            "/sys/fs/cgroup/memory/process_api/3adf");
  EXPECT_EQ(joinCgroupPath("/", "/agileos-sandbox-1"), "/agileos-sandbox-1");
  EXPECT_EQ(joinCgroupPath("/user.slice", "/agileos-sandbox-1"), "/user.slice/agileos-sandbox-1");
}

TEST(CgroupLimitFiles, UnifiedHoldsEveryControllerAndNoSwap) {
  const CgroupLimits limits{64ull << 20, 128, 150000, 200};
  EXPECT_EQ(cgroupLimitFiles(limits, true, "", true), (Files{{"memory.max", "67108864"},
                                                             {"memory.swap.max", "0"},
                                                             {"pids.max", "128"},
                                                             {"cpu.max", "150000 100000"},
                                                             {"cpu.weight", "200"}}));
  EXPECT_EQ(cgroupLimitFiles(limits, true, "", false), (Files{{"memory.max", "67108864"},
                                                              {"pids.max", "128"},
                                                              {"cpu.max", "150000 100000"},
                                                              {"cpu.weight", "200"}}));
  EXPECT_EQ(cgroupLimitFiles(CgroupLimits{0, 4096, 0, 0}, true, "", true), (Files{{"pids.max", "4096"}}));
  EXPECT_TRUE(cgroupLimitFiles(CgroupLimits{0, 0, 0, 0}, true, "", true).empty());
}

TEST(CgroupLimitFiles, V1HierarchiesGetTheirShareMemswAfterTheLimit) {
  const CgroupLimits limits{64ull << 20, 128, 150000, 200};
  EXPECT_EQ(cgroupLimitFiles(limits, false, "memory", true),
            (Files{{"memory.limit_in_bytes", "67108864"}, {"memory.memsw.limit_in_bytes", "67108864"}}));
  EXPECT_EQ(cgroupLimitFiles(limits, false, "memory", false), (Files{{"memory.limit_in_bytes", "67108864"}}));
  EXPECT_EQ(cgroupLimitFiles(limits, false, "pids", true), (Files{{"pids.max", "128"}}));
  EXPECT_EQ(cgroupLimitFiles(limits, false, "cpu", false),
            (Files{{"cpu.cfs_period_us", "100000"}, {"cpu.cfs_quota_us", "150000"}, {"cpu.shares", "2048"}}));
  EXPECT_EQ(cgroupLimitFiles(CgroupLimits{0, 0, 0, 1}, false, "cpu", false), (Files{{"cpu.shares", "10"}}));
}

std::optional<SandboxOptions> parse(std::vector<std::string> words, std::string* message, int* exitCode) {
  words.insert(words.begin(), {"agileos-sandbox", "--socket-dir", "/r", "--shim", "/s"});
  words.insert(words.end(), {"--", "/bin/app"});
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  return parseSandboxOptions(static_cast<int>(argv.size()), argv.data(), message, exitCode);
}

TEST(CgroupOptions, DefaultsAutoNoMemoryLimitAndPids4096) {
  std::string message;
  int exitCode = -1;
  const auto options = parse({}, &message, &exitCode);
  ASSERT_TRUE(options) << message;
  EXPECT_EQ(options->cgroup.mode, CgroupMode::kAuto);
  EXPECT_EQ(options->cgroup.limits.memoryBytes, 0u);
  EXPECT_EQ(options->cgroup.limits.pids, 4096u);
  EXPECT_EQ(options->cgroup.limits.cpuQuotaMicros, 0u);
  EXPECT_EQ(options->cgroup.limits.cpuWeight, 0u);
  EXPECT_EQ(options->cgroup.parent, "");
}

TEST(CgroupOptions, ValuesAndSizeSuffixes) {
  std::string message;
  int exitCode = -1;
  auto options = parse({"--cgroup", "require", "--max-memory", "512M", "--max-pids", "64", "--max-cpus",
                        "1.5", "--cpu-weight", "200", "--cgroup-parent", "/agileos.slice/sandboxes"},
                       &message, &exitCode);
  ASSERT_TRUE(options) << message;
  EXPECT_EQ(options->cgroup.mode, CgroupMode::kRequire);
  EXPECT_EQ(options->cgroup.limits.memoryBytes, 512ull << 20);
  EXPECT_EQ(options->cgroup.limits.pids, 64u);
  EXPECT_EQ(options->cgroup.limits.cpuQuotaMicros, 150000u);
  EXPECT_EQ(options->cgroup.limits.cpuWeight, 200u);
  EXPECT_EQ(options->cgroup.parent, "/agileos.slice/sandboxes");
  options = parse({"--cgroup", "off", "--max-memory", "4GiB", "--max-pids", "0"}, &message, &exitCode);
  ASSERT_TRUE(options) << message;
  EXPECT_EQ(options->cgroup.mode, CgroupMode::kOff);
  EXPECT_EQ(options->cgroup.limits.memoryBytes, 4ull << 30);
  EXPECT_EQ(options->cgroup.limits.pids, 0u);
  options = parse({"--max-memory", "1073741824"}, &message, &exitCode);
  ASSERT_TRUE(options) << message;
  EXPECT_EQ(options->cgroup.limits.memoryBytes, 1ull << 30);
}

TEST(CgroupOptions, RefusalsExit125) {
  const std::vector<std::vector<std::string>> refused = {
      {"--cgroup", "sometimes"},      {"--max-memory", "512"},        {"--max-memory", "lots"},
      {"--cgroup-parent", "agileos"}, {"--cgroup-parent", "/a/../b"}, {"--cgroup-parent", "/a/"},
      {"--max-cpus", "0.001"},        {"--max-cpus", "many"},         {"--cpu-weight", "10001"},
      {"--max-pids", "-1"},           {"--max-pids", "4194305"},      {"--max-memory", "-1"}};
  for (const auto& words : refused) {
    std::string message;
    int exitCode = -1;
    EXPECT_FALSE(parse(words, &message, &exitCode)) << words[0] << " " << words[1];
    EXPECT_EQ(exitCode, 125) << words[0] << " " << words[1];
    EXPECT_NE(message.find(words[0]), std::string::npos) << message;
  }
}

CgroupRequest request(CgroupMode mode, CgroupLimits limits, std::string parent = "") {
  return CgroupRequest{mode, limits, std::move(parent)};
}

TEST(SandboxCgroup, OffOrNothingRequestedMakesNothing) {
  std::string notice, error;
  auto cgroup = SandboxCgroup::create(request(CgroupMode::kOff, {64ull << 20, 16, 0, 0}), testId(0),
                                      CgroupHost{}, &notice, &error);
  ASSERT_TRUE(cgroup) << error;
  EXPECT_TRUE(cgroup->directories().empty());
  EXPECT_EQ(notice, "");
  const auto nothing =
      SandboxCgroup::create(request(CgroupMode::kRequire, {}), testId(0), CgroupHost{}, &notice, &error);
  ASSERT_TRUE(nothing) << error;
  EXPECT_TRUE(nothing->directories().empty());
  EXPECT_EQ(notice, "");
}

// A host whose /sys/fs/cgroup is no cgroup file system at all (an ordinary directory stands in).
TEST(SandboxCgroup, NoHierarchyAutoGoesOnRequireAndAConfiguredParentRefuse) {
  char dir[] = "/tmp/agileos-cgroup-none.XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  CgroupHost host;
  host.root = dir;
  std::string notice, error;
  auto cgroup = SandboxCgroup::create(request(CgroupMode::kAuto, {64ull << 20, 16, 0, 0}), testId(0), host,
                                      &notice, &error);
  ASSERT_TRUE(cgroup) << error;
  EXPECT_TRUE(cgroup->directories().empty());
  EXPECT_NE(notice.find("memory (--max-memory)"), std::string::npos) << notice;
  EXPECT_NE(notice.find("pids (--max-pids)"), std::string::npos) << notice;
  EXPECT_NE(notice.find("is a cgroup hierarchy"), std::string::npos) << notice;

  EXPECT_FALSE(
      SandboxCgroup::create(request(CgroupMode::kRequire, {0, 16, 0, 0}), testId(0), host, &notice, &error));
  EXPECT_NE(error.find("--cgroup require"), std::string::npos) << error;
  EXPECT_NE(error.find("pids (--max-pids)"), std::string::npos) << error;

  EXPECT_FALSE(SandboxCgroup::create(request(CgroupMode::kAuto, {0, 16, 0, 0}, "/agileos"), testId(0), host,
                                     &notice, &error));
  EXPECT_NE(error.find("--cgroup-parent"), std::string::npos) << error;
  ::rmdir(dir);
}

// Hybrid hosts mount a cgroup2 hierarchy without the v1-bound controllers at /sys/fs/cgroup/unified:
// the v2 code path, for real, finding the controllers missing.
TEST(SandboxCgroup, UnifiedHierarchyWithoutTheControllersIsAGap) {
  CgroupHost host;
  host.root = "/sys/fs/cgroup/unified";
  struct statfs fs {};
  if (::statfs(host.root.c_str(), &fs) != 0 || fs.f_type != CGROUP2_SUPER_MAGIC)
    GTEST_SKIP() << host.root << " is not a cgroup2 mount (not a hybrid host)";
  if (readText(host.root + "/cgroup.controllers").find("pids") != std::string::npos)
    GTEST_SKIP() << host.root << " offers the pids controller";
  std::string notice, error;
  auto cgroup =
      SandboxCgroup::create(request(CgroupMode::kAuto, {0, 16, 0, 0}), testId(0), host, &notice, &error);
  ASSERT_TRUE(cgroup) << error;
  EXPECT_TRUE(cgroup->directories().empty());
  EXPECT_NE(notice.find("the cgroup v2 controller pids is not available"), std::string::npos) << notice;
  EXPECT_FALSE(
      SandboxCgroup::create(request(CgroupMode::kRequire, {0, 16, 0, 0}), testId(0), host, &notice, &error));
  EXPECT_NE(error.find("the cgroup v2 controller pids is not available"), std::string::npos) << error;
}

// Reads one byte from `fd` (the child's "joined" report); false at EOF.
bool awaitByte(int fd) {
  char byte = 0;
  ssize_t n;
  while ((n = ::read(fd, &byte, 1)) < 0 && errno == EINTR) {
  }
  return n == 1;
}

// A child that joins the cgroup, starts a grandchild, reports on `reportFd` and waits to be killed.
pid_t startMember(const SandboxCgroup& cgroup, int reportFd) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!cgroup.join()) ::_exit(3);
    if (::fork() == 0) {
      ::pause();
      ::_exit(0);
    }
    if (::write(reportFd, "j", 1) != 1) ::_exit(4);
    for (;;) ::pause();
  }
  return pid;
}

constexpr CgroupLimits kTestLimits{64ull << 20, 16, 50000, 0};

// The real thing where the host offers it (this CPU machine: v1 memory, pids and cpu hierarchies).
TEST(SandboxCgroup, LimitsAForkedChildAndItsChildrenThenKillsAndRemovesThem) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make cgroups";
  std::string notice, error;
  auto cgroup = SandboxCgroup::create(request(CgroupMode::kAuto, kTestLimits), testId(1), CgroupHost{},
                                      &notice, &error);
  ASSERT_TRUE(cgroup) << error;
  if (cgroup->directories().empty())
    GTEST_SKIP() << "the host offers no writable cgroup hierarchy: " << notice;
  if (!notice.empty()) std::cout << "partly: " << notice << std::endl;
  const std::vector<std::string> dirs = cgroup->directories();
  const std::vector<std::string> procPaths = cgroup->procPaths();
  for (const std::string& dir : dirs) {
    std::cout << "made " << dir << std::endl;
    EXPECT_NE(dir.find("/agileos-sandbox-" + std::to_string(testId(1))), std::string::npos) << dir;
    // Limits written, in whichever hierarchy holds them.
    const Files expected = {{"pids.max", "16"},
                            {"memory.max", "67108864"},
                            {"memory.swap.max", "0"},
                            {"memory.limit_in_bytes", "67108864"},
                            {"memory.memsw.limit_in_bytes", "67108864"},
                            {"cpu.max", "50000"},
                            {"cpu.cfs_quota_us", "50000"}};
    for (const auto& [file, value] : expected) {
      if (::access((dir + "/" + file).c_str(), F_OK) != 0) continue;
      EXPECT_EQ(firstWordOf(dir + "/" + file), value) << dir << "/" << file;
    }
    // Root's, closed to the sandbox's uid.
    struct stat status {};
    for (const char* entry : {"", "/cgroup.procs"}) {
      ASSERT_EQ(::stat((dir + entry).c_str(), &status), 0) << dir << entry;
      EXPECT_EQ(status.st_uid, 0u) << dir << entry;
      EXPECT_EQ(status.st_mode & 022, 0u) << dir << entry;
    }
  }

  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  const pid_t member = startMember(*cgroup, report[1]);
  ASSERT_GT(member, 0);
  ::close(report[1]);
  ASSERT_TRUE(awaitByte(report[0])) << "the child could not join (exit status in waitpid)";
  ::close(report[0]);
  const std::string memberCgroups = readText("/proc/" + std::to_string(member) + "/cgroup");
  for (std::size_t i = 0; i < dirs.size(); ++i) {
    EXPECT_TRUE(lineEndsWith(memberCgroups, ":" + procPaths[i]))
        << memberCgroups << "\nlacks " << procPaths[i];
    std::istringstream procs(readText(dirs[i] + "/cgroup.procs"));
    std::vector<pid_t> listed;
    for (pid_t pid; procs >> pid;) listed.push_back(pid);
    EXPECT_EQ(listed.size(), 2u) << dirs[i] << ": the child and its child";
    EXPECT_NE(std::find(listed.begin(), listed.end(), member), listed.end()) << dirs[i];
  }

  ASSERT_TRUE(cgroup->remove(&error)) << error;
  int status = 0;
  ASSERT_EQ(::waitpid(member, &status, 0), member);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
  for (const std::string& dir : dirs) EXPECT_NE(::access(dir.c_str(), F_OK), 0) << dir << " is still there";
}

TEST(SandboxCgroup, PidsMaxStopsForksInside) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make cgroups";
  std::string notice, error;
  auto cgroup = SandboxCgroup::create(request(CgroupMode::kAuto, {0, 5, 0, 0}), testId(2), CgroupHost{},
                                      &notice, &error);
  ASSERT_TRUE(cgroup) << error;
  if (cgroup->directories().empty()) GTEST_SKIP() << "the host offers no writable pids hierarchy: " << notice;
  const pid_t member = ::fork();
  if (member == 0) {
    if (!cgroup->join()) ::_exit(100);
    int started = 0;
    for (int i = 0; i < 20; ++i) {
      const pid_t pid = ::fork();
      if (pid == 0) {
        ::pause();
        ::_exit(0);
      }
      if (pid > 0) ++started;
    }
    ::_exit(started);  // the children are killed by remove()
  }
  ASSERT_GT(member, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(member, &status, 0), member);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 4) << "pids.max 5, the forking process included";
  ASSERT_TRUE(cgroup->remove(&error)) << error;
}

// A launcher that died leaves its cgroup, maybe with processes: the next launch of the same uid
// kills them and starts from a fresh directory.
TEST(SandboxCgroup, AStaleCgroupOfTheSameNameIsEmptiedAndReplaced) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make cgroups";
  std::string notice, error;
  const CgroupRequest pidsOnly = request(CgroupMode::kAuto, {0, 16, 0, 0});
  std::vector<std::string> dirs;
  {
    auto probe = SandboxCgroup::create(pidsOnly, testId(3), CgroupHost{}, &notice, &error);
    ASSERT_TRUE(probe) << error;
    if (probe->directories().empty())
      GTEST_SKIP() << "the host offers no writable pids hierarchy: " << notice;
    dirs = probe->directories();
  }
  // What the dead launcher left: the directory, a changed limit and a process in it.
  for (const std::string& dir : dirs) ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0) << dir;
  std::ofstream(dirs[0] + "/pids.max") << "9";
  const pid_t stale = ::fork();
  if (stale == 0) {
    for (const std::string& dir : dirs) std::ofstream(dir + "/cgroup.procs") << "0" << std::flush;
    for (;;) ::pause();
  }
  ASSERT_GT(stale, 0);
  for (int i = 0; i < 200 && !lineEndsWith(readText("/proc/" + std::to_string(stale) + "/cgroup"),
                                           dirs[0].substr(dirs[0].rfind('/')));
       ++i) {
    ::usleep(10000);
  }
  auto cgroup = SandboxCgroup::create(pidsOnly, testId(3), CgroupHost{}, &notice, &error);
  ASSERT_TRUE(cgroup) << error;
  int status = 0;
  ASSERT_EQ(::waitpid(stale, &status, 0), stale);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
  EXPECT_EQ(cgroup->directories(), dirs);
  EXPECT_EQ(firstWordOf(dirs[0] + "/pids.max"), "16");
  EXPECT_EQ(readText(dirs[0] + "/cgroup.procs"), "");
  ASSERT_TRUE(cgroup->remove(&error)) << error;
}

}  // namespace
}  // namespace agileos::sandbox
