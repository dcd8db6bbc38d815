#include "tests/cpu/worker/support/test_fatbins.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

#ifndef AGILEOS_WORKER_TEST_FATBIN_DIR
#error "AGILEOS_WORKER_TEST_FATBIN_DIR must name the directory of the built test fatbins"
#endif

namespace agileos::worker::testing {

std::string readTestFatbin(TestFatbin which) {
  const char* name = which == TestFatbin::kDefaultArch              ? "default_arch.fatbin"
                     : which == TestFatbin::kSm90                   ? "sm90.fatbin"
                     : which == TestFatbin::kSm90SassOnly           ? "sm90_sass_only.fatbin"
                     : which == TestFatbin::kManagedSm90            ? "managed_sm90.fatbin"
                     : which == TestFatbin::kManagedSassOnly        ? "managed_sass_only.fatbin"
                     : which == TestFatbin::kConditionalSm90        ? "conditional_sm90.fatbin"
                     : which == TestFatbin::kConditionalSassOnly    ? "conditional_sass_only.fatbin"
                     : which == TestFatbin::kSm90RdcObject          ? "sm90_rdc_object.fatbin"
                     : which == TestFatbin::kManagedRdcObject       ? "managed_rdc_object.fatbin"
                     : which == TestFatbin::kConditionalRdcObject   ? "conditional_rdc_object.fatbin"
                     : which == TestFatbin::kSm90RdcSassObject      ? "sm90_rdc_sass_object.fatbin"
                     : which == TestFatbin::kSystemAtomicsSm90      ? "system_atomics_sm90.fatbin"
                     : which == TestFatbin::kSystemAtomicsSassOnly  ? "system_atomics_sass_only.fatbin"
                     : which == TestFatbin::kSystemAtomicsRdcObject ? "system_atomics_rdc_object.fatbin"
                                                                    : "compute100_ptx.fatbin";
  const std::string path = std::string(AGILEOS_WORKER_TEST_FATBIN_DIR) + "/" + name;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "missing test fatbin %s (built by the worker_test_fatbins target)\n", path.c_str());
    std::abort();
  }
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace agileos::worker::testing
