#include "docker/sandbox/sandbox_plan.h"

namespace agileos::sandbox {

std::string passwdFile(uid_t uid, gid_t gid) {
  return std::string(kInsideUserName) + ":x:" + std::to_string(uid) + ":" + std::to_string(gid) +
         ":AgileOS "
         "client:/tmp:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
}

std::string groupFile(gid_t gid) {
  return std::string(kInsideUserName) + ":x:" + std::to_string(gid) + ":\nnogroup:x:65534:\n";
}

std::vector<std::string> bubblewrapArguments(const SandboxPlan& plan) {
  std::vector<std::string> args = {plan.bwrap};
  auto add = [&args](std::initializer_list<std::string> more) { args.insert(args.end(), more); };
  // Namespaces. bubblewrap is started unprivileged (main.cpp drops to the leased host uid first),
  // so the user namespace is always created and maps insideUid to that host uid alone: nothing
  // inside is root of anything, and root-owned files stay root-owned.
  add({"--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"});
  if (!plan.shareNetwork) add({"--unshare-net"});
  add({"--uid", std::to_string(plan.insideUid), "--gid", std::to_string(plan.insideGid)});
  add({"--disable-userns", "--die-with-parent", "--new-session", "--hostname", "agileos"});
  add({"--proc", "/proc", "--dev", "/dev"});
  if (plan.coverProcDriver) add({"--tmpfs", "/proc/driver", "--remount-ro", "/proc/driver"});
  add({"--perms", "1777", "--tmpfs", "/tmp", "--perms", "1777", "--tmpfs", "/dev/shm"});
  add({"--ro-bind", plan.execHelper, kExecHelperInside});
  add({"--ro-bind", plan.programSource, plan.programPath});
  // And at its own path: when the program is started by a link inside a kept directory (a
  // virtual environment's bin/python3 -> /usr/bin/python3.12), the kept directory covers the bind
  // above with the link, which must then resolve.
  if (plan.programSource != plan.programPath) add({"--ro-bind", plan.programSource, plan.programSource});
  for (const std::string& file : plan.closureFiles) add({"--ro-bind", file, file});
  for (const auto& [file, path] : plan.namedFiles) add({"--ro-bind", file, path});
  for (const std::string& dir : plan.readOnlyDirs) add({"--ro-bind", dir, dir});
  for (const std::string& dir : plan.writableDirs) add({"--bind", dir, dir});
  for (const std::string& dir : plan.hidden) add({"--tmpfs", dir, "--remount-ro", dir});
  for (const auto& [fd, file] : plan.maskedFiles) add({"--ro-bind-data", std::to_string(fd), file});
  for (const auto& [fd, file] : plan.identityFiles) add({"--ro-bind-data", std::to_string(fd), file});
  // The root tmpfs itself last: nothing can be created beside what was bound.
  add({"--remount-ro", "/"});
  for (const auto& [name, value] : plan.environment) add({"--setenv", name, value});
  add({"--chdir", plan.workingDirectory});
  if (plan.seccompFd >= 0) add({"--seccomp", std::to_string(plan.seccompFd)});
  add({"--", kExecHelperInside, std::to_string(plan.startedFd), plan.programPath});
  args.insert(args.end(), plan.programArgs.begin(), plan.programArgs.end());
  return args;
}

}  // namespace agileos::sandbox
