#include "docker/sandbox/sandbox_options.h"

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdlib>

namespace agileos::sandbox {

std::optional<SandboxOptions> parseSandboxOptions(int argc, char** argv, std::string* message,
                                                  int* exitCode) {
  SandboxOptions options;
  CLI::App app{
      "agileos-sandbox: run an untrusted CUDA program whose only way to a GPU is AgileOS.\n"
      "The program runs under bubblewrap as an unprivileged host uid of its own (a user namespace maps it\n"
      "to --inside-uid), with no capabilities, no_new_privs, a seccomp filter, resource limits, private\n"
      "mount/PID/IPC/UTS/network namespaces and a root file system that holds only the program, its\n"
      "libraries, the shim, the daemon's socket directory and what --keep names. Exit status: the\n"
      "program's (128+N for signal N); 125 if the sandbox could not be set up (the program never ran).",
      "agileos-sandbox"};
  app.add_option("--socket-dir", options.socketDir, "the daemon's runtime directory (read-only inside)")
      ->required();
  app.add_option("--shim", options.shimDir, "directory holding libagileos_cudart.so")->required();
  app.add_option("--lib-path", options.libPaths, "libraries the shim needs (repeatable)");
  app.add_option("--keep", options.keep, "a file or directory visible read-only inside (repeatable)");
  app.add_option("--library", options.libraries,
                 "a shared library the program loads at run time, bound with its own dependencies "
                 "(repeatable; GPU driver libraries are refused)");
  app.add_option("--keep-rw", options.keepWritable, "the same, writable (repeatable)");
  app.add_option("--hide", options.hide, "a directory covered by an empty tmpfs, even under a kept path");
  app.add_flag("--share-net", options.shareNetwork, "keep the host's network namespace");
  app.add_option("--bwrap", options.bwrap,
                 "the bubblewrap binary (default: next to agileos-sandbox, then PATH)");
  app.add_option("--state-dir", options.stateDir, "where uid leases are kept (root only)")
      ->capture_default_str();
  app.add_option("--uid-base", options.uidBase, "first host uid/gid handed to sandboxes")
      ->capture_default_str();
  app.add_option("--uid-count", options.uidCount, "how many host uids sandboxes may use")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 24));
  app.add_option("--inside-uid", options.insideUid, "the program's uid inside (not 0)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 65534u));
  app.add_option("--inside-gid", options.insideGid, "the program's gid inside (not 0)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 65534u));
  app.add_option("--max-open-files", options.maxOpenFiles, "RLIMIT_NOFILE")->capture_default_str();
  app.add_option("--max-processes", options.maxProcesses, "RLIMIT_NPROC (the sandbox's own uid)")
      ->capture_default_str();
  app.add_option("--max-file-bytes", options.maxFileBytes, "RLIMIT_FSIZE")->capture_default_str();
  std::string cgroupMode = "auto";
  app.add_option("--cgroup", cgroupMode,
                 "cgroup limits: auto (where the host offers them), require (or exit 125), off")
      ->check(CLI::IsMember({"auto", "require", "off"}))
      ->capture_default_str();
  app.add_option("--max-memory", options.cgroup.limits.memoryBytes,
                 "cgroup memory limit in bytes (K, M, G suffixes: powers of 1024), swap included; 0: none")
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            char* end = nullptr;
            const unsigned long long bytes = std::strtoull(value.c_str(), &end, 10);
            if (value.empty() || *end != '\0' || value[0] == '-') return "not a number of bytes: " + value;
            return bytes == 0 || bytes >= (1ull << 20) ? "" : "at least 1M, or 0 for no limit";
          },
          "0 or >= 1M"))
      ->default_str("0");
  app.add_option("--max-pids", options.cgroup.limits.pids,
                 "cgroup pids.max: processes and threads of the whole sandbox; 0: none")
      ->capture_default_str()
      ->check(CLI::Range(0ull, 4194304ull));  // PID_MAX_LIMIT
  double maxCpus = 0;
  app.add_option("--max-cpus", maxCpus, "cgroup CPU bandwidth in CPUs (e.g. 1.5); 0: none")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            char* end = nullptr;
            const double cpus = std::strtod(value.c_str(), &end);
            if (value.empty() || *end != '\0') return "not a number of CPUs: " + value;
            return cpus == 0 || (cpus >= 0.01 && cpus <= 1e6) ? "" : "0, or 0.01 to 1000000";
          },
          "0 or 0.01..1000000"))
      ->default_str("0");
  app.add_option("--cpu-weight", options.cgroup.limits.cpuWeight,
                 "cgroup cpu.weight 1..10000 (v1: cpu.shares weight*1024/100); 0: none")
      ->check(CLI::Range(0u, 10000u))
      ->default_str("0");
  app.add_option("--cgroup-parent", options.cgroup.parent,
                 "the cgroup (a path below the hierarchy's mount point) to create the sandbox's in; default: "
                 "the launcher's own")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            return isCgroupPath(value) ? "" : "an absolute cgroup path without . or .. components";
          },
          "CGROUP"));
  app.add_option("program", options.program, "PROGRAM [ARGS...] (after --)")->required();
  app.positionals_at_end();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    *exitCode = error.get_exit_code() == 0 ? 0 : 125;
    *message = error.get_exit_code() == 0 ? app.help() : std::string("agileos-sandbox: ") + error.what();
    return std::nullopt;
  }
  options.cgroup.mode = cgroupMode == "off"       ? CgroupMode::kOff
                        : cgroupMode == "require" ? CgroupMode::kRequire
                                                  : CgroupMode::kAuto;
  options.cgroup.limits.cpuQuotaMicros =
      static_cast<unsigned long long>(std::llround(maxCpus * static_cast<double>(kCpuPeriodMicros)));
  return options;
}

}  // namespace agileos::sandbox
