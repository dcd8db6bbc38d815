// agileos-sandbox: starts an untrusted CUDA program under bubblewrap, as an unprivileged host uid
// of its own, with the AgileOS shim as its only way to a GPU (docs/security-model.md, "Client
// sandbox"; sandbox_plan.h lists what the program sees).
//
// Order of work, each step fail-closed (exit 125, the program never starts): parse; check that
// this is root, the shim exists and no kept path exposes the GPU stack; lease a host uid
// (uid_lease.h); list the program's library closure as that uid (library_closure.h); compile the
// seccomp filter (seccomp_filter.h); make the sandbox's cgroup and write its limits
// (cgroup_limits.h); fork, move the child into the cgroup, set the resource limits, drop to the
// leased uid and exec bubblewrap unprivileged. Inside, agileos-sandbox-exec (sandbox_exec.c) checks
// the program's credentials and reports on a pipe right before it execs the program; without that
// report the launch failed (in bubblewrap or in the checks) and the exit is 125 as well. After the
// program, whatever is left in the cgroup is killed and the cgroup removed.
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "docker/sandbox/cgroup_limits.h"
#include "docker/sandbox/library_closure.h"
#include "docker/sandbox/sandbox_options.h"
#include "docker/sandbox/sandbox_plan.h"
#include "docker/sandbox/seccomp_filter.h"
#include "docker/sandbox/uid_lease.h"

extern char** environ;

namespace agileos::sandbox {
namespace {

constexpr int kSetupFailed = 125;
constexpr const char* kShimName = "libagileos_cudart.so";
// Library shims preloaded after the runtime shim when the shim directory has them. Preloading,
// not only the soname in LD_LIBRARY_PATH, is what makes the shim win over a copy of the real
// library that a program loads by path or through its own RPATH (PyTorch's wheels carry
// libcufft.so.12 and load it so): cuFFT must run in the worker's adapter, since the real cuFFT
// in the client would need private driver tables AgileOS does not serve.
constexpr const char* kOptionalPreloadedShims[] = {"libagileos_cufft.so"};
// Paths that hold the GPU stack or the kernel's interfaces: never kept.
constexpr const char* kForbiddenPrefixes[] = {
    "/dev",        "/proc",       "/sys",           "/usr/local/cuda", "/usr/local/nvidia",
    "/opt/nvidia", "/run/nvidia", "/var/run/nvidia"};

[[noreturn]] void die(const std::string& message) {
  std::cerr << "agileos-sandbox: " << message << std::endl;
  std::exit(kSetupFailed);
}

std::string canonical(const std::string& path, const char* what) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) {
    die(std::string(what) + " " + path + ": " + std::strerror(errno));
  }
  return resolved;
}

bool under(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path == dir ||
         (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

// Standard library directories: a kept directory that holds one has its GPU driver libraries
// covered by empty files (the missing device nodes are the guarantee; this is the second line).
constexpr const char* kLibraryDirs[] = {"/lib",
                                        "/lib64",
                                        "/usr/lib",
                                        "/usr/lib64",
                                        "/usr/local/lib",
                                        "/lib/x86_64-linux-gnu",
                                        "/usr/lib/x86_64-linux-gnu",
                                        "/lib/aarch64-linux-gnu",
                                        "/usr/lib/aarch64-linux-gnu"};

// A kept path must not be the root, nor lie in the GPU stack or the kernel's interfaces; the
// parts of them under it are covered (plan->hidden), and so are driver libraries (*masked).
void checkKeptPath(const std::string& path, const std::string& stateDir, SandboxPlan* plan,
                   std::vector<std::string>* masked) {
  if (path == "/") die("--keep / would expose the whole host");
  if (path.rfind("/usr/local/cuda", 0) == 0) die("--keep " + path + " would expose the CUDA toolkit");
  for (const char* prefix : kForbiddenPrefixes) {
    if (under(path, prefix)) die("--keep " + path + " would expose " + prefix);
    // Covered at its real path: /usr/local/cuda is usually a link to /usr/local/cuda-13.0.
    char real[PATH_MAX];
    struct stat status {};
    if (::realpath(prefix, real) != nullptr && under(real, path) && ::stat(real, &status) == 0 &&
        S_ISDIR(status.st_mode)) {
      plan->hidden.push_back(real);
    }
  }
  if (under(path, stateDir) || under(stateDir, path)) die("--keep " + path + " would expose " + stateDir);
  // Every toolkit version beside /usr/local/cuda (cuda-12.8, cuda-13.0, ...).
  if (under("/usr/local", path)) {
    if (DIR* local = ::opendir("/usr/local")) {
      while (const dirent* entry = ::readdir(local)) {
        const std::string name = std::string("/usr/local/") + entry->d_name;
        struct stat status {};
        if (std::string(entry->d_name).rfind("cuda", 0) == 0 && ::lstat(name.c_str(), &status) == 0 &&
            S_ISDIR(status.st_mode)) {
          plan->hidden.push_back(name);  // a link to one of them points into the covered directory
        }
      }
      ::closedir(local);
    }
  }
  std::vector<std::string> scanned = {path};
  for (const char* dir : kLibraryDirs) {
    char real[PATH_MAX];
    if (::realpath(dir, real) != nullptr && under(real, path) && std::string(real) != path)
      scanned.push_back(real);
  }
  for (const std::string& dirPath : scanned) {
    DIR* dir = ::opendir(dirPath.c_str());
    if (dir == nullptr) continue;
    while (const dirent* entry = ::readdir(dir)) {
      if (isDriverLibrary(entry->d_name)) masked->push_back(dirPath + "/" + entry->d_name);
    }
    ::closedir(dir);
  }
}

// execvp's search, done here: bubblewrap needs the file's path to bind it.
std::string findProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    if (name[0] == '/') return name;
    char cwd[PATH_MAX];
    if (::getcwd(cwd, sizeof cwd) == nullptr) die("getcwd: " + std::string(std::strerror(errno)));
    return std::string(cwd) + "/" + name;
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string candidate = dirs.substr(start, end - start) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  die(name + ": not found in PATH");
}

// A memory file holding `contents`, read from its start (bubblewrap reads it to the end).
int memoryFile(const std::string& contents) {
  const int fd = ::memfd_create("agileos-sandbox-data", MFD_CLOEXEC);
  if (fd < 0) die("memfd_create: " + std::string(std::strerror(errno)));
  if (::pwrite(fd, contents.data(), contents.size(), 0) != static_cast<ssize_t>(contents.size()))
    die("memory file: " + std::string(std::strerror(errno)));
  return fd;
}

std::string selfDirectory() {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) die("readlink /proc/self/exe: " + std::string(std::strerror(errno)));
  self[n] = '\0';
  std::string dir(self);
  dir.resize(dir.rfind('/'));
  return dir;
}

// A program this launcher runs to build the sandbox: it runs as the sandbox's uid, so nobody but
// root may be able to replace it.
std::string trustedExecutable(const std::string& path, const char* what) {
  const std::string resolved = canonical(path, what);
  struct stat status {};
  if (::stat(resolved.c_str(), &status) != 0 || !S_ISREG(status.st_mode) || (status.st_mode & 022) != 0 ||
      (status.st_mode & (S_ISUID | S_ISGID)) != 0) {
    die(resolved +
        " must be a regular file, must not be writable by group or others, and must not be setuid");
  }
  return resolved;
}

std::string findBubblewrap(const std::string& configured) {
  std::string candidate = configured;
  if (candidate.empty() && ::access((selfDirectory() + "/bwrap").c_str(), X_OK) == 0) {
    candidate = selfDirectory() + "/bwrap";
  }
  if (candidate.empty()) candidate = findProgram("bwrap");
  return trustedExecutable(candidate, "--bwrap");
}

std::vector<std::string> bubblewrapEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    // The loader variables are set inside by bubblewrap (--setenv); here they would act on
    // bubblewrap itself. LD_LIBRARY_PATH stays: the caller is root, and a bundled bubblewrap
    // may need it for its own libraries (inside, --setenv replaces it).
    if ((entry.rfind("LD_", 0) == 0 && entry.rfind("LD_LIBRARY_PATH=", 0) != 0) ||
        entry.rfind("AGILEOS_SOCKET=", 0) == 0) {
      continue;
    }
    env.push_back(entry);
  }
  return env;
}

void setLimit(int resource, rlim_t value, const char* name) {
  rlimit current{};
  ::getrlimit(resource, &current);
  const rlim_t bounded = current.rlim_max == RLIM_INFINITY ? value : std::min(value, current.rlim_max);
  const rlimit limit{bounded, bounded};
  if (::setrlimit(resource, &limit) != 0) {
    ::dprintf(STDERR_FILENO, "agileos-sandbox: setrlimit %s: %s\n", name, std::strerror(errno));
    ::_exit(kSetupFailed);
  }
}

pid_t child = -1;
void forwardSignal(int signal) {
  if (child > 0) ::kill(child, signal);
}

int run(const SandboxOptions& options) {
  if (::geteuid() != 0) die("must run as root (it takes a host uid of its own for the program)");
  SandboxPlan plan;
  const std::string shimDir = canonical(options.shimDir, "--shim");
  if (::access((shimDir + "/" + kShimName).c_str(), R_OK) != 0)
    die(shimDir + "/" + kShimName + " does not exist");
  const std::string socketDir = canonical(options.socketDir, "--socket-dir");
  plan.bwrap = findBubblewrap(options.bwrap);
  plan.execHelper = trustedExecutable(selfDirectory() + "/agileos-sandbox-exec", "the helper");
  plan.readOnlyDirs = {shimDir};
  std::string libraryPath = shimDir;
  for (const std::string& dir : options.libPaths) {
    plan.readOnlyDirs.push_back(canonical(dir, "--lib-path"));
    libraryPath += ":" + plan.readOnlyDirs.back();
  }
  plan.readOnlyDirs.push_back(socketDir);
  std::vector<std::string> masked;
  for (const std::string& path : options.keep) {
    plan.readOnlyDirs.push_back(canonical(path, "--keep"));
    checkKeptPath(plan.readOnlyDirs.back(), options.stateDir, &plan, &masked);
  }
  for (const std::string& path : options.keepWritable) {
    plan.writableDirs.push_back(canonical(path, "--keep-rw"));
    checkKeptPath(plan.writableDirs.back(), options.stateDir, &plan, &masked);
  }
  for (const std::string& path : options.hide) {
    if (path.empty() || path[0] != '/') die("--hide " + path + " is not an absolute path");
    plan.hidden.push_back(path);
  }
  plan.programPath = findProgram(options.program[0]);
  plan.programSource = canonical(plan.programPath, "PROGRAM");
  plan.programArgs.assign(options.program.begin() + 1, options.program.end());
  std::string preload = shimDir + "/" + kShimName;
  for (const char* name : kOptionalPreloadedShims) {
    if (::access((shimDir + "/" + name).c_str(), R_OK) == 0) preload += ":" + shimDir + "/" + name;
  }
  plan.environment = {{"LD_PRELOAD", preload},
                      {"LD_LIBRARY_PATH", libraryPath},
                      {"AGILEOS_SOCKET", socketDir + "/agileosd.sock"},
                      {"HOME", "/tmp"},
                      {"USER", kInsideUserName},
                      {"LOGNAME", kInsideUserName}};
  plan.shareNetwork = options.shareNetwork;
  plan.insideUid = options.insideUid;
  plan.insideGid = options.insideGid;
  struct stat procDriver {};
  plan.coverProcDriver = ::stat("/proc/driver", &procDriver) == 0;
  // Two kept paths (or a prefix and the /usr/local scan) may name the same directory: cover it once.
  std::sort(plan.hidden.begin(), plan.hidden.end());
  plan.hidden.erase(std::unique(plan.hidden.begin(), plan.hidden.end()), plan.hidden.end());

  std::string error;
  std::optional<UidLease> lease =
      UidLease::acquire(options.stateDir, options.uidBase, options.uidCount, &error);
  if (!lease) die(error);
  const uid_t hostId = lease->id();

  LibraryClosure closure;
  const std::vector<std::string> loaderEnvironment = {"LD_PRELOAD=" + preload,
                                                      "LD_LIBRARY_PATH=" + libraryPath};
  if (!resolveLibraryClosure(plan.programSource, loaderEnvironment, hostId, hostId, &closure, &error))
    die(error);
  const auto inBoundDirectory = [&plan](const std::string& file) {
    return std::any_of(plan.readOnlyDirs.begin(), plan.readOnlyDirs.end(),
                       [&file](const std::string& dir) { return under(file, dir); });
  };
  for (const std::string& file : closure.files) {
    if (!inBoundDirectory(file) && file != plan.programSource) plan.closureFiles.push_back(file);
  }
  // Libraries the program will dlopen: the loader's listing of each, as the sandbox's uid, like
  // the program's own. A driver library is refused outright (the listing leaves out the ones a
  // library depends on, as for the program).
  for (const std::string& requested : options.libraries) {
    // The name is a bind target inside: absolute, no "." or ".." parts, nowhere in /dev, /proc, /sys.
    if (requested.empty() || requested[0] != '/' || requested.find("/./") != std::string::npos ||
        requested.find("/../") != std::string::npos || requested.ends_with("/.") ||
        requested.ends_with("/..") || under(requested, "/dev") || under(requested, "/proc") ||
        under(requested, "/sys")) {
      die("--library " + requested + " is not a plain absolute path outside /dev, /proc and /sys");
    }
    const std::string library = canonical(requested, "--library");
    if (isDriverLibrary(library) || isDriverLibrary(requested))
      die("--library " + requested + " is a GPU driver or runtime library");
    struct stat status {};
    if (::stat(library.c_str(), &status) != 0 || !S_ISREG(status.st_mode) || under(library, "/dev") ||
        under(library, "/proc") || under(library, "/sys")) {
      die("--library " + library + " is not a regular file");
    }
    LibraryClosure libraryClosure;
    // Listed by the name it is opened by: its $ORIGIN is that name's directory at run time too.
    if (!resolveLibraryClosure(requested, loaderEnvironment, hostId, hostId, &libraryClosure, &error))
      die("--library " + requested + ": " + error);
    for (const std::string& file : libraryClosure.files) {
      if (!inBoundDirectory(file)) plan.closureFiles.push_back(file);
    }
    if (!inBoundDirectory(requested)) plan.namedFiles.emplace_back(library, requested);
  }
  std::sort(plan.closureFiles.begin(), plan.closureFiles.end());
  plan.closureFiles.erase(std::unique(plan.closureFiles.begin(), plan.closureFiles.end()),
                          plan.closureFiles.end());
  // The shim directory's own libcuda.so.1 is the driver shim: bound with its directory, not left
  // out. Any other driver library stays reported (in a kept directory it is masked, not bound).
  for (const std::string& file : closure.omitted) {
    if (under(file, shimDir)) continue;
    std::cerr << "agileos-sandbox: left out the GPU library " << file << " (the program links it)"
              << std::endl;
  }
  if (::access("/etc/ld.so.cache", R_OK) == 0) plan.closureFiles.push_back("/etc/ld.so.cache");

  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof cwd) != nullptr) {
    for (const auto* dirs : {&plan.readOnlyDirs, &plan.writableDirs}) {
      for (const std::string& dir : *dirs) {
        if (under(cwd, dir)) plan.workingDirectory = cwd;
      }
    }
  }

  // Each masked library gets an empty file: bubblewrap reads (and closes) one descriptor per use.
  const int empty = ::memfd_create("agileos-sandbox-empty", MFD_CLOEXEC);
  if (empty < 0) die("memfd_create: " + std::string(std::strerror(errno)));
  for (const std::string& file : masked) {
    const int fd = ::dup(empty);
    if (fd < 0) die("dup: " + std::string(std::strerror(errno)));
    plan.maskedFiles.emplace_back(fd, file);
  }
  ::close(empty);
  for (const auto& [file, contents] : {std::pair{"/etc/passwd", passwdFile(plan.insideUid, plan.insideGid)},
                                       std::pair{"/etc/group", groupFile(plan.insideGid)}}) {
    plan.identityFiles.emplace_back(memoryFile(contents), file);
  }

  plan.seccompFd = compileSeccompFilter(&error);
  if (plan.seccompFd < 0) die("seccomp filter: " + error);
  int startedPipe[2];
  if (::pipe2(startedPipe, O_CLOEXEC) != 0) die("pipe: " + std::string(std::strerror(errno)));
  plan.startedFd = startedPipe[1];

  const std::vector<std::string> args = bubblewrapArguments(plan);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::vector<std::string> environment = bubblewrapEnvironment();
  std::vector<char*> envp;
  for (const std::string& e : environment) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  // Signals that would end this launcher are passed on to bubblewrap (which ends the program).
  struct sigaction forward {};
  forward.sa_handler = forwardSignal;
  for (const int signal : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) ::sigaction(signal, &forward, nullptr);

  // Last before the fork: nothing between here and the wait below can leave the cgroup behind.
  std::string notice;
  std::optional<SandboxCgroup> cgroup =
      SandboxCgroup::create(options.cgroup, hostId, CgroupHost{}, &notice, &error);
  if (!cgroup) die(error);
  if (!notice.empty()) std::cerr << "agileos-sandbox: " << notice << std::endl;

  child = ::fork();
  if (child < 0) {
    const std::string reason = std::strerror(errno);
    std::string ignored;
    cgroup->remove(&ignored);
    die("fork: " + reason);
  }
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    // First, as root: bubblewrap and everything it starts are inside, and cannot move out.
    if (!cgroup->join()) {
      ::dprintf(STDERR_FILENO, "agileos-sandbox: cannot move into the sandbox's cgroup: %s\n",
                std::strerror(errno));
      ::_exit(kSetupFailed);
    }
    setLimit(RLIMIT_NOFILE, options.maxOpenFiles, "RLIMIT_NOFILE");
    setLimit(RLIMIT_NPROC, options.maxProcesses, "RLIMIT_NPROC");
    setLimit(RLIMIT_FSIZE, options.maxFileBytes, "RLIMIT_FSIZE");
    setLimit(RLIMIT_CORE, 0, "RLIMIT_CORE");
    // The two descriptors bubblewrap reads must survive exec.
    for (const int fd : {plan.seccompFd, plan.startedFd}) ::fcntl(fd, F_SETFD, 0);
    for (const auto& [fd, file] : plan.maskedFiles) ::fcntl(fd, F_SETFD, 0);
    for (const auto& [fd, file] : plan.identityFiles) ::fcntl(fd, F_SETFD, 0);
    if (::setgroups(0, nullptr) != 0 || ::setresgid(hostId, hostId, hostId) != 0 ||
        ::setresuid(hostId, hostId, hostId) != 0 || ::getuid() != hostId || ::geteuid() != hostId) {
      ::dprintf(STDERR_FILENO, "agileos-sandbox: cannot drop to uid %u: %s\n", hostId, std::strerror(errno));
      ::_exit(kSetupFailed);
    }
    ::execve(argv[0], argv.data(), envp.data());
    ::dprintf(STDERR_FILENO, "agileos-sandbox: exec %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(kSetupFailed);
  }
  ::close(startedPipe[1]);
  ::close(plan.seccompFd);
  for (const auto& [fd, file] : plan.maskedFiles) ::close(fd);
  for (const auto& [fd, file] : plan.identityFiles) ::close(fd);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  // The helper writes before it execs the program, and bubblewrap exits after the program: the
  // line is in the pipe by now if it was ever written. Not blocking: bubblewrap's process in the
  // namespace, which holds a copy of the write end, may take a moment longer to go.
  std::string report;
  char buffer[64];
  ::fcntl(startedPipe[0], F_SETFL, O_NONBLOCK);
  for (ssize_t n; (n = ::read(startedPipe[0], buffer, sizeof buffer)) > 0;) {
    report.append(buffer, static_cast<std::size_t>(n));
  }
  // What outlived bubblewrap (nothing should: its PID namespace ends with it) is killed here.
  if (std::string failed; !cgroup->remove(&failed)) std::cerr << "agileos-sandbox: " << failed << std::endl;
  if (report != "started\n") {
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == kSetupFailed)) {
      std::cerr << "agileos-sandbox: bubblewrap could not set up the sandbox (see its message above); "
                   "the program did not run"
                << std::endl;
    }
    return kSetupFailed;
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace
}  // namespace agileos::sandbox

int main(int argc, char** argv) {
  std::string message;
  int exitCode = 0;
  const auto options = agileos::sandbox::parseSandboxOptions(argc, argv, &message, &exitCode);
  if (!options) {
    (exitCode == 0 ? std::cout : std::cerr) << message << std::endl;
    return exitCode;
  }
  return agileos::sandbox::run(*options);
}
