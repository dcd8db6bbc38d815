// The files a program needs to start: its interpreter chain (#! scripts), its ELF interpreter and
// the shared libraries the dynamic loader resolves for it, with the environment it will run in
// (LD_PRELOAD of the shim, LD_LIBRARY_PATH of the shim and --lib-path).
//
// The listing comes from the host's dynamic loader run with --list (it maps the objects and
// resolves their dependencies; it runs none of their code), started as the sandbox's
// unprivileged uid with a clean environment, so an untrusted ELF file can make it read nothing
// the sandbox could not read itself. Libraries that drive a GPU (libcuda, libnvidia-*) are never
// returned: the jail's guarantee is that no device node exists inside, and leaving the driver
// out is the second line.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace agileos::sandbox {

struct LibraryClosure {
  std::vector<std::string> files;    // absolute paths to bind read-only, in no particular order
  std::vector<std::string> omitted;  // driver libraries left out (reported on stderr)
};

// The absolute paths in a `ld.so --list` output (lines "name => /path (0x...)" and
// "/path (0x...)"); "not found" lines and the vDSO are skipped.
std::vector<std::string> parseLoaderListing(const std::string& listing);

// True for the GPU driver's own libraries (libcuda.so*, libnvidia-*, libcudadebugger*, ...).
bool isDriverLibrary(const std::string& path);

// The interpreter named on a "#!" first line of `path`, or "" if the file does not start with one.
std::string scriptInterpreter(const std::string& path);

// The whole closure of `program` (an absolute path). `environment` is what the loader sees
// (LD_PRELOAD, LD_LIBRARY_PATH). The listing runs as uid/gid. False with *error if the program
// or an interpreter does not exist, or the loader fails for a reason other than a static binary.
bool resolveLibraryClosure(const std::string& program, const std::vector<std::string>& environment, uid_t uid,
                           gid_t gid, LibraryClosure* closure, std::string* error);

}  // namespace agileos::sandbox
