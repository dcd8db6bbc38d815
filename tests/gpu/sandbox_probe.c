/*
 * sandbox_probe: tries to reach the GPU without AgileOS and reports each attempt.
 *
 * Run inside agileos-sandbox, every attempt must fail, and the probe exits 0
 * only then. Run outside, on the GPU machine, the device opens succeed, which
 * shows that the failures inside are the sandbox's doing and not an accident of
 * the machine (the probe exits 1 there).
 *
 * Attempts:
 *  1. open() of the NVIDIA device nodes.
 *  2. dlopen() of the CUDA runtime by soname and by absolute paths, and of the
 *     driver library. A dlopen that returns the AgileOS shim (preloaded with
 *     soname libcudart.so.13) is not a way to the GPU and counts as blocked, and
 *     so does one that returns a library of the preloaded shim's own directory
 *     (the shim directory AgileOS mounts read-only: its libcuda.so.1 is the
 *     driver shim, issue 16); the driver by its absolute path must still fail.
 *  3. Escapes, each in a forked child so that the caller's mount namespace is
 *     never modified even when the probe runs unsandboxed: take a private copy
 *     of the mount namespace and unmount the masks over /dev and the CUDA
 *     directories, create a device node for /dev/nvidiactl, and reach the device
 *     through the root directory of PID 1 (/proc/1/root).
 *  4. The tenant's containment (issue 14): running as uid 0, reading root's
 *     /etc/shadow, reading each PATH given on the command line (the suite names
 *     the compiled-module cache, the services' socket directory and files only
 *     root may read; a unix socket given there must refuse a connection: another
 *     client's worker), and ptrace of another process.
 *
 * Usage: sandbox_probe [PATH...]
 * Output: one line per attempt, "<what>: blocked (<reason>)" or
 * "<what>: REACHED (<detail>)", then "probe: all N attempts blocked" or
 * "probe: K of N attempts reached the GPU stack".
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <link.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static int attempts = 0;
static int reached = 0;

static void report(const char* what, int wasReached, const char* detail) {
  ++attempts;
  if (wasReached) ++reached;
  printf("%s: %s (%s)\n", what, wasReached ? "REACHED" : "blocked", detail);
  fflush(stdout);
}

static void tryOpen(const char* path) {
  char what[PATH_MAX + 16];
  snprintf(what, sizeof what, "open %s", path);
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    report(what, 0, strerror(errno));
    return;
  }
  close(fd);
  report(what, 1, "opened");
}

enum PreloadMatch { kSameFile, kSameDirectory };

/* True if `path` (kSameFile), or the directory holding it (kSameDirectory), is the same file as
 * one of the LD_PRELOAD entries (or the directory holding it). Compared by device and inode, so
 * that symlinks and bind mounts cannot confuse it. */
static int matchesPreload(const char* path, enum PreloadMatch match) {
  const char* preload = getenv("LD_PRELOAD");
  char* pathCopy = strdup(path);
  if (preload == NULL || pathCopy == NULL) {
    free(pathCopy);
    return 0;
  }
  struct stat target;
  const int haveTarget = stat(match == kSameFile ? pathCopy : dirname(pathCopy), &target) == 0;
  free(pathCopy);
  char* list = strdup(preload);
  if (!haveTarget || list == NULL) {
    free(list);
    return 0;
  }
  int found = 0;
  char* save = NULL;
  for (char* entry = strtok_r(list, ": ", &save); entry != NULL && !found;
       entry = strtok_r(NULL, ": ", &save)) {
    struct stat candidate;
    found = stat(match == kSameFile ? entry : dirname(entry), &candidate) == 0 &&
            candidate.st_dev == target.st_dev && candidate.st_ino == target.st_ino;
  }
  free(list);
  return found;
}

static void tryDlopen(const char* name) {
  char what[PATH_MAX + 16];
  snprintf(what, sizeof what, "dlopen %s", name);
  void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    const char* error = dlerror();
    report(what, 0, error != NULL ? error : "unknown dlopen error");
    return;
  }
  struct link_map* map = NULL;
  char detail[PATH_MAX + 64];
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != NULL && map->l_name != NULL &&
      map->l_name[0] != '\0') {
    if (matchesPreload(map->l_name, kSameFile)) {
      snprintf(detail, sizeof detail, "resolved to the preloaded AgileOS shim %s", map->l_name);
      report(what, 0, detail);
    } else if (matchesPreload(map->l_name, kSameDirectory)) {
      snprintf(detail, sizeof detail, "resolved to the AgileOS shim %s, beside the preloaded one",
               map->l_name);
      report(what, 0, detail);
    } else {
      snprintf(detail, sizeof detail, "loaded %s", map->l_name);
      report(what, 1, detail);
    }
  } else {
    report(what, 1, "loaded (path unknown)");
  }
  dlclose(handle);
}

/* Runs `attempt` in a child process; its exit status 0 means "blocked", 1 "reached"; its
 * stdout line (at most one) is the detail. */
static void inChild(const char* what, int (*attempt)(char* detail, size_t size)) {
  int pipeFds[2];
  if (pipe(pipeFds) != 0) {
    report(what, 1, "cannot test: pipe failed");
    return;
  }
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    close(pipeFds[0]);
    close(pipeFds[1]);
    report(what, 1, "cannot test: fork failed");
    return;
  }
  if (pid == 0) {
    close(pipeFds[0]);
    char detail[512] = "";
    int result = attempt(detail, sizeof detail);
    ssize_t ignored = write(pipeFds[1], detail, strlen(detail));
    (void)ignored;
    _exit(result);
  }
  close(pipeFds[1]);
  char detail[512];
  ssize_t n = read(pipeFds[0], detail, sizeof detail - 1);
  detail[n > 0 ? n : 0] = '\0';
  close(pipeFds[0]);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
    report(what, 1, "cannot test: child did not exit normally");
    return;
  }
  report(what, WEXITSTATUS(status) != 0, detail[0] != '\0' ? detail : "no detail");
}

/* A private copy of the mount namespace: whatever the child unmounts stays in that copy. */
static int privateMountNamespace(char* detail, size_t size) {
  if (unshare(CLONE_NEWNS) != 0) {
    snprintf(detail, size, "unshare(CLONE_NEWNS): %s", strerror(errno));
    return 0;
  }
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
    snprintf(detail, size, "making mounts private: %s", strerror(errno));
    return 0;
  }
  return 1;
}

static int unmountMasks(char* detail, size_t size) {
  if (!privateMountNamespace(detail, size)) return 0;
  static const char* const masks[] = {"/dev", "/usr/local/cuda", "/usr/local/nvidia"};
  char removed[256] = "";
  for (size_t i = 0; i < sizeof masks / sizeof masks[0]; ++i) {
    if (umount2(masks[i], MNT_DETACH) == 0) {
      strncat(removed, masks[i], sizeof removed - strlen(removed) - 2);
      strncat(removed, " ", sizeof removed - strlen(removed) - 1);
    }
  }
  int fd = open("/dev/nvidiactl", O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    close(fd);
    snprintf(detail, size, "unmounted [%s], then opened /dev/nvidiactl", removed);
    return 1;
  }
  void* handle = dlopen("/usr/local/cuda/lib64/libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
  if (handle != NULL) {
    snprintf(detail, size, "unmounted [%s], then loaded the real libcudart", removed);
    return 1;
  }
  snprintf(
      detail, size, "%s",
      removed[0] != '\0' ? "unmounted some masks, still no device or library" : "no mask could be unmounted");
  return 0;
}

static int createDeviceNode(char* detail, size_t size) {
  if (!privateMountNamespace(detail, size)) return 0;
  /* A fresh tmpfs of our own, so the node is never created on a real filesystem. */
  char dir[] = "/tmp/agileos-probe-XXXXXX";
  if (mkdtemp(dir) == NULL) {
    snprintf(detail, size, "mkdtemp: %s", strerror(errno));
    return 0;
  }
  if (mount("probe", dir, "tmpfs", 0, "size=64k") != 0) {
    snprintf(detail, size, "mount tmpfs: %s", strerror(errno));
    rmdir(dir);
    return 0;
  }
  char node[sizeof dir + 16];
  snprintf(node, sizeof node, "%s/nvidiactl", dir);
  int result = 0;
  if (mknod(node, S_IFCHR | 0600, makedev(195, 255)) != 0) {
    snprintf(detail, size, "mknod: %s", strerror(errno));
  } else {
    int fd = open(node, O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
      close(fd);
      snprintf(detail, size, "mknod c 195 255 and open succeeded");
      result = 1;
    } else {
      snprintf(detail, size, "node created, open: %s", strerror(errno));
    }
  }
  umount2(dir, MNT_DETACH);
  rmdir(dir);
  return result;
}

/* A unix socket that must refuse this process: connect. */
static void tryConnect(const char* path) {
  char what[PATH_MAX + 16];
  snprintf(what, sizeof what, "connect %s", path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un address;
  memset(&address, 0, sizeof address);
  address.sun_family = AF_UNIX;
  snprintf(address.sun_path, sizeof address.sun_path, "%s", path);
  if (fd >= 0 && connect(fd, (struct sockaddr*)&address, sizeof address) == 0) {
    close(fd);
    report(what, 1, "connected");
    return;
  }
  report(what, 0, strerror(errno));
  if (fd >= 0) close(fd);
}

/* A file or directory that must stay unreadable: open (files) or opendir (directories); a
 * unix socket must refuse a connection. */
static void tryRead(const char* path) {
  struct stat status;
  if (stat(path, &status) == 0 && S_ISSOCK(status.st_mode)) {
    tryConnect(path);
    return;
  }
  char what[PATH_MAX + 16];
  snprintf(what, sizeof what, "read %s", path);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    report(what, 0, strerror(errno));
    return;
  }
  char byte;
  ssize_t n = read(fd, &byte, 1);
  int error = errno;
  close(fd);
  if (n < 0 && error == EISDIR) {
    DIR* dir = opendir(path);
    if (dir == NULL) {
      report(what, 0, strerror(errno));
      return;
    }
    closedir(dir);
    report(what, 1, "directory listed");
    return;
  }
  report(what, n >= 0, n >= 0 ? "read" : strerror(error));
}

static int ptraceParent(char* detail, size_t size) {
  /* PTRACE_SEIZE stops nothing; the child's exit detaches it again. */
  if (ptrace(PTRACE_SEIZE, getppid(), NULL, NULL) == 0) {
    snprintf(detail, size, "seized pid %d", (int)getppid());
    return 1;
  }
  snprintf(detail, size, "ptrace: %s", strerror(errno));
  return 0;
}

int main(int argc, char** argv) {
  report("run as uid 0", getuid() == 0, getuid() == 0 ? "uid 0" : "unprivileged uid");
  tryRead("/etc/shadow");
  for (int i = 1; i < argc; ++i) tryRead(argv[i]);
  inChild("ptrace the parent process", ptraceParent);
  tryOpen("/dev/nvidia0");
  tryOpen("/dev/nvidiactl");
  tryOpen("/dev/nvidia-uvm");
  tryOpen("/proc/1/root/dev/nvidiactl");
  tryDlopen("libcudart.so.13");
  tryDlopen("/usr/local/cuda/lib64/libcudart.so.13");
  tryDlopen("/usr/local/cuda/targets/x86_64-linux/lib/libcudart.so.13");
  tryDlopen("libcuda.so.1");
  tryDlopen("/usr/local/nvidia/lib64/libcuda.so.1");
  inChild("unmount the sandbox masks", unmountMasks);
  inChild("mknod an NVIDIA device node", createDeviceNode);

  if (reached == 0) {
    printf("probe: all %d attempts blocked\n", attempts);
    return 0;
  }
  printf("probe: %d of %d attempts reached the GPU stack\n", reached, attempts);
  return 1;
}
