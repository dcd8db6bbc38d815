#include "docker/sandbox/sandbox_options.h"

#include <CLI/CLI.hpp>

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
  app.add_option("program", options.program, "PROGRAM [ARGS...] (after --)")->required();
  app.positionals_at_end();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    *exitCode = error.get_exit_code() == 0 ? 0 : 125;
    *message = error.get_exit_code() == 0 ? app.help() : std::string("agileos-sandbox: ") + error.what();
    return std::nullopt;
  }
  return options;
}

}  // namespace agileos::sandbox
