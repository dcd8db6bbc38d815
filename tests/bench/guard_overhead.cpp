// agileos_guard_bench: what the kernel memory guard (ptx/guard.h) costs on real kernels.
// A trusted-side tool: it uses the CUDA driver API directly, not AgileOS, and runs on the
// GPU machine (tests/bench/run_guard_bench.sh; docs/performance.md).
//
// For each kernel of guard_kernels.cu (PTX made by nvcc at build time), in one run:
//   - the module is cut down to that kernel (and the functions it calls), printed, and
//     JIT-compiled as is ("original") and after ptx::guardModule with the trap and the
//     poison policies; the cold load (parse + guard + print + JIT + cuModuleLoadData +
//     cuModuleGetFunction) and, through a CompiledModuleCache, the warm load (keyFor + find +
//     cuModuleLoadData + cuModuleGetFunction) are timed;
//   - the three variants run once on the same inputs and their outputs must be identical
//     byte for byte (and not all zero); a difference fails the run;
//   - then they run interleaved (a rotating order per round, after warm-up), each sample a
//     batch of launches between two events, at least --sample-ms of GPU time; the table
//     reports p50/p99 per launch and the ratios guarded / original.
// The protected range is the real one (memmgr/address_layout.h). The poison policy's hit
// counter and sink must lie inside it (ptx::validate), so the tool maps a small allocation
// at the start of the module range, where the worker keeps them; the counter is read back
// and must stay 0, since no kernel here makes an out-of-range access.
//
// --emit-guarded DIR needs no GPU (no driver call at all): it writes each kernel's
// original, trap and poison PTX to DIR and checks them with ptx::findUnguardedAccesses,
// for the ctest that assembles them with ptxas.
//
// Exit status: 0 every selected kernel measured and verified; 1 a failure (refused or
// mismatching kernel, CUDA error); 2 usage; 3 the time budget left kernels unmeasured.
#include <cuda.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "memmgr/address_layout.h"
#include "ptx/guard.h"
#include "ptx/parser.h"
#include "ptx/printer.h"
#include "tests/bench/guard_kernels.h"
#include "worker/module_cache/compiled_module_cache.h"
#include "worker/session_guard.h"

namespace agileos::guardbench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr double kTargetGeomean = 1.05;  // issue 4: geometric-mean overhead <= 5%
constexpr double kTargetWorst = 1.15;    // and no kernel above 15%
constexpr std::uint64_t kRedirectLimit = worker::kRedirectLimit;
// Where the poison policy's counter and sink go (a guard page, as the worker lays it out):
// the start of the protected module range.
constexpr std::uint64_t kHitCounter = memmgr::kModuleRange.begin;
constexpr std::uint64_t kScratchBytes = worker::kSinkOffset + kRedirectLimit;
constexpr int kMinSamples = 30;

enum VariantIndex : std::size_t { kOriginal, kTrap, kPoison, kVariants };
constexpr const char* kVariantNames[kVariants] = {"original", "trap", "poison"};

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

__attribute__((format(printf, 1, 2))) std::string format(const char* pattern, ...) {
  va_list arguments;
  va_start(arguments, pattern);
  va_list again;
  va_copy(again, arguments);
  const int length = std::vsnprintf(nullptr, 0, pattern, arguments);
  va_end(arguments);
  std::string text(static_cast<std::size_t>(std::max(length, 0)), '\0');
  std::vsnprintf(text.data(), text.size() + 1, pattern, again);
  va_end(again);
  return text;
}

// A kernel that fails (refused by the guard, JIT error, wrong output): its row says so and
// the run goes on with the next kernel.
struct KernelFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A CUDA error: the context may be unusable (a trap is sticky), so the run stops.
struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return;
  const char* name = nullptr;
  cuGetErrorName(result, &name);
  throw CudaError(std::string(what) + " failed: " + (name != nullptr ? name : "unknown error") + " (" +
                  std::to_string(static_cast<int>(result)) + ")");
}

// Owns a driver handle; releases it (ignoring errors: this runs during unwinding too).
template <typename Handle, CUresult (*kRelease)(Handle)>
class Owned {
 public:
  Owned() = default;
  explicit Owned(Handle handle) : handle_(handle) {}
  ~Owned() { reset(); }
  Owned(Owned&& other) noexcept : handle_(std::exchange(other.handle_, Handle{})) {}
  Owned& operator=(Owned&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, Handle{});
    }
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;

  Handle get() const { return handle_; }
  void reset() {
    if (handle_ != Handle{}) kRelease(std::exchange(handle_, Handle{}));
  }

 private:
  Handle handle_{};
};

using DeviceMemory = Owned<CUdeviceptr, cuMemFree>;
using ModuleHandle = Owned<CUmodule, cuModuleUnload>;
using EventHandle = Owned<CUevent, cuEventDestroy>;
using StreamHandle = Owned<CUstream, cuStreamDestroy>;
using LinkHandle = Owned<CUlinkState, cuLinkDestroy>;

struct Buffer {
  DeviceMemory memory;
  std::size_t bytes = 0;
};

Buffer allocate(std::size_t bytes) {
  CUdeviceptr pointer = 0;
  check(cuMemAlloc(&pointer, bytes), "cuMemAlloc");
  Buffer buffer{DeviceMemory(pointer), bytes};
  // The guard would stop (or redirect) any access to the protected range: a buffer there
  // would make the benchmark measure hits. The driver never puts one there; make sure.
  if (memmgr::touchesProtected(pointer, bytes)) {
    throw CudaError(format("cuMemAlloc returned 0x%llx, inside the protected range",
                           static_cast<unsigned long long>(pointer)));
  }
  return buffer;
}

// ------------------------------------------------------------------ deterministic inputs

std::uint64_t mix64(std::uint64_t x) {  // splitmix64's finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}
std::uint32_t hashAt(std::uint64_t i, std::uint32_t seed) {
  return static_cast<std::uint32_t>(mix64(i * 0x9e3779b97f4a7c15ull + seed) >> 32);
}

// Runs body(i) for i in [0, count) on all cores: the inputs are up to 256 MiB each.
template <typename Body>
void parallelFor(std::size_t count, const Body& body) {
  const std::size_t threads = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 16);
  const std::size_t chunk = (count + threads - 1) / threads;
  std::vector<std::thread> workers;
  for (std::size_t t = 0; t < threads; ++t) {
    const std::size_t begin = t * chunk, end = std::min(count, begin + chunk);
    if (begin >= end) break;
    workers.emplace_back([&body, begin, end] {
      for (std::size_t i = begin; i < end; ++i) body(i);
    });
  }
  for (std::thread& worker : workers) worker.join();
}

using Fill = void (*)(void* host, std::size_t bytes, std::uint32_t seed, std::uint32_t parameter);

// Floats holding the integers [0, parameter): exact sums and products, see guard_kernels.cu.
void fillSmallFloats(void* host, std::size_t bytes, std::uint32_t seed, std::uint32_t parameter) {
  auto* data = static_cast<float*>(host);
  parallelFor(bytes / sizeof(float),
              [&](std::size_t i) { data[i] = static_cast<float>(hashAt(i, seed) % parameter); });
}
// Floats holding -2 .. 2 (parameter unused): GEMM, SpMV and reduction inputs.
void fillSignedFloats(void* host, std::size_t bytes, std::uint32_t seed, std::uint32_t) {
  auto* data = static_cast<float*>(host);
  parallelFor(bytes / sizeof(float), [&](std::size_t i) {
    data[i] = static_cast<float>(static_cast<int>(hashAt(i, seed) % 5u) - 2);
  });
}
// u32 below parameter (indices), or any u32 with parameter 0.
void fillIndices(void* host, std::size_t bytes, std::uint32_t seed, std::uint32_t parameter) {
  auto* data = static_cast<std::uint32_t*>(host);
  parallelFor(bytes / sizeof(std::uint32_t), [&](std::size_t i) {
    const std::uint32_t value = hashAt(i, seed);
    data[i] = parameter == 0 ? value : value % parameter;
  });
}
// CSR row starts: row r begins at r * parameter (parameter non-zeros per row).
void fillRowStarts(void* host, std::size_t bytes, std::uint32_t, std::uint32_t parameter) {
  auto* data = static_cast<std::uint32_t*>(host);
  parallelFor(bytes / sizeof(std::uint32_t),
              [&](std::size_t i) { data[i] = static_cast<std::uint32_t>(i) * parameter; });
}
void fillBytes(void* host, std::size_t bytes, std::uint32_t seed, std::uint32_t) {
  auto* data = static_cast<std::uint8_t*>(host);
  parallelFor(bytes, [&](std::size_t i) { data[i] = static_cast<std::uint8_t>(hashAt(i, seed)); });
}

// ------------------------------------------------------------------ the kernels

struct Input {
  std::size_t bytes;
  Fill fill;
  std::uint32_t seed;
  std::uint32_t parameter = 0;
};
struct In {  // the index of an input buffer (shared by the variants)
  std::size_t index;
};
struct Out {  // the index of an output buffer (one per variant, compared)
  std::size_t index;
};
struct TensorMapOver {  // a 2-D tiled map of floats over an input buffer, encoded at binding
  std::size_t index;
  std::uint64_t width, height;  // in elements; rows are `width` floats apart
  std::uint32_t tile;           // the box: tile x tile
};
using Arg = std::variant<In, Out, TensorMapOver, std::int32_t, std::uint32_t, std::uint64_t, float>;
struct Dim {
  unsigned x = 1, y = 1;
};

struct KernelSpec {
  std::string name;  // the extern "C" entry in guard_kernels.cu
  std::string character;
  std::vector<Input> inputs;
  std::vector<std::size_t> outputBytes;
  std::vector<Arg> args;
  Dim grid, block;
};

unsigned blocksFor(std::uint64_t threads) {
  return static_cast<unsigned>((threads + kThreads - 1) / kThreads);
}

// Sizes: large enough that one launch takes ~0.1-5 ms on an H200 (a sample batches launches
// up to --sample-ms), at most 256 MiB per buffer, so that a kernel needs < 1.5 GiB.
std::vector<KernelSpec> kernelSpecs() {
  constexpr std::uint64_t kMi = 1ull << 20;
  const Dim oneD{kThreads};
  std::vector<KernelSpec> specs;
  {
    const std::uint64_t n4 = 16 * kMi;
    specs.push_back({"copy_f4",
                     "streaming copy, 16-byte vectors",
                     {{n4 * 16, fillSmallFloats, 1, 1024}},
                     {n4 * 16},
                     {In{0}, Out{0}, n4},
                     {blocksFor(n4)},
                     oneD});
  }
  {
    const std::uint64_t n = 32 * kMi;
    specs.push_back({"triad",
                     "STREAM triad, scalar loads/stores",
                     {{n * 4, fillSmallFloats, 2, 1024}, {n * 4, fillSmallFloats, 3, 1024}},
                     {n * 4},
                     {Out{0}, In{0}, In{1}, 3.0f, n},
                     {blocksFor(n)},
                     oneD});
  }
  {
    const std::int32_t side = 8192;
    const std::size_t bytes = std::size_t{side} * side * 4;
    specs.push_back({"stencil5",
                     "2-D 5-point stencil, 5 loads per store",
                     {{bytes, fillSmallFloats, 4, 256}},
                     {bytes},
                     {In{0}, Out{0}, side, side},
                     {static_cast<unsigned>(side / kTileDim), static_cast<unsigned>(side / kTileRows)},
                     {kTileDim, kTileRows}});
  }
  {
    const std::uint64_t n = 32 * kMi;
    specs.push_back(
        {"gather",
         "gather through an index array (random loads)",
         {{n * 4, fillSmallFloats, 5, 1024}, {n * 4, fillIndices, 6, static_cast<std::uint32_t>(n)}},
         {n * 4},
         {In{0}, In{1}, Out{0}, n},
         {blocksFor(n)},
         oneD});
  }
  {
    const std::uint64_t n = 32 * kMi;
    const std::uint32_t bins = 4096;
    specs.push_back({"histogram",
                     "global atomics, 4096 bins",
                     {{n * 4, fillIndices, 7, 0}},
                     {bins * 4},
                     {In{0}, n, Out{0}, bins - 1},
                     {blocksFor(n)},
                     oneD});
  }
  for (const char* gemm : {"sgemm_tiled", "gemm_cp_async"}) {
    const std::int32_t n = 2048;
    const std::size_t bytes = std::size_t{n} * n * 4;
    const bool async = std::string(gemm) == "gemm_cp_async";
    specs.push_back(
        {gemm,
         async ? "GEMM, cp.async double-buffered tiles" : "SGEMM, shared-memory tiles (compute-bound)",
         {{bytes, fillSignedFloats, 8, 0}, {bytes, fillSignedFloats, 9, 0}},
         {bytes},
         {In{0}, In{1}, Out{0}, n},
         {static_cast<unsigned>(n / kGemmTile), static_cast<unsigned>(n / kGemmTile)},
         {kGemmThreads}});
  }
  {
    const std::int32_t n = 2048;
    const std::size_t bytes = std::size_t{n} * n * 4;
    const std::uint64_t warps = std::uint64_t{n / 16} * (n / 16);
    specs.push_back({"wmma_tf32",
                     "TF32 tensor-core GEMM, wmma fragments from global memory",
                     {{bytes, fillSignedFloats, 19, 0}, {bytes, fillSignedFloats, 20, 0}},
                     {bytes},
                     {In{0}, In{1}, Out{0}, n},
                     {blocksFor(warps * kWarp)},
                     oneD});
  }
  {
    // 8192 x 4096 floats (128 MiB) in 32 x 32 tiles, one tensor copy per block.
    const std::uint64_t width = 8192, height = 4096;
    const std::size_t bytes = width * height * 4;
    specs.push_back({"tma_tile",
                     "tensor-map (TMA) tile loads into shared memory, guarded stores out",
                     {{bytes, fillSignedFloats, 23, 0}},
                     {bytes},
                     {TensorMapOver{0, width, height, kTmaTile}, Out{0}, static_cast<std::int32_t>(width)},
                     {static_cast<unsigned>(width / kTmaTile), static_cast<unsigned>(height / kTmaTile)},
                     oneD});
  }
  {
    const std::uint64_t n = 64 * kMi;
    const unsigned blocks = 2048;
    specs.push_back({"reduce_block",
                     "block reduction, warp shuffles",
                     {{n * 4, fillSignedFloats, 10, 0}},
                     {blocks * 4},
                     {In{0}, n, Out{0}},
                     {blocks},
                     oneD});
  }
  {
    const std::int32_t side = 8192;
    const std::size_t bytes = std::size_t{side} * side * 4;
    specs.push_back({"transpose",
                     "transpose through a shared tile",
                     {{bytes, fillSmallFloats, 11, 1024}},
                     {bytes},
                     {In{0}, Out{0}, side, side},
                     {static_cast<unsigned>(side / kTileDim), static_cast<unsigned>(side / kTileDim)},
                     {kTileDim, kTileRows}});
  }
  {
    const std::uint32_t rows = 1 << 20, perRow = 32, columns = 1 << 20;
    const std::uint64_t nonZeros = std::uint64_t{rows} * perRow;
    specs.push_back({"spmv_csr",
                     "CSR SpMV, warp per row (indirect loads)",
                     {{(rows + 1) * 4ull, fillRowStarts, 0, perRow},
                      {nonZeros * 4, fillIndices, 12, columns},
                      {nonZeros * 4, fillSignedFloats, 13, 0},
                      {columns * 4ull, fillSmallFloats, 14, 16}},
                     {rows * 4ull},
                     {In{0}, In{1}, In{2}, In{3}, Out{0}, rows},
                     {blocksFor(std::uint64_t{rows} * kWarp)},
                     oneD});
  }
  {
    const std::uint64_t n = 32 * kMi;
    specs.push_back({"generic_ptr",
                     "generic ld/st (pointers opaque to nvcc), in a .func",
                     {{n * 4, fillSmallFloats, 15, 1024}, {n * 4, fillSmallFloats, 16, 1024}},
                     {n * 4},
                     {In{0}, In{1}, Out{0}, n, std::uint32_t{1}},
                     {blocksFor(n)},
                     oneD});
  }
  {
    const std::uint32_t n = 64 << 20, chains = 512 << 10;
    const std::int32_t steps = 32;
    specs.push_back({"pointer_chase",
                     "dependent random loads (latency-bound)",
                     {{n * 4ull, fillIndices, 17, n}},
                     {chains * 4ull},
                     {In{0}, Out{0}, chains, steps},
                     {blocksFor(chains)},
                     oneD});
  }
  {
    const std::uint64_t n = 256 * kMi;
    specs.push_back({"byte_map",
                     "1-byte loads and stores",
                     {{n, fillBytes, 18, 0}},
                     {n},
                     {In{0}, Out{0}, n},
                     {blocksFor(n)},
                     oneD});
  }
  return specs;
}

// ------------------------------------------------------------------ PTX handling

// The module cut down to one kernel: every other .entry goes, and every .func it does not
// (transitively) call. Top-level directives (version, target, globals) stay.
ptx::Module moduleForEntry(const ptx::Module& module, const std::string& entry) {
  std::set<std::string> functionNames;
  for (const ptx::TopLevel& item : module.items)
    if (item.kind == ptx::TopLevel::Kind::kFunction) functionNames.insert(item.function.name);

  const auto collectCalls = [&](const std::vector<ptx::Statement>& body, std::set<std::string>* found) {
    const auto walk = [&](const auto& self, const std::vector<ptx::Statement>& statements) -> void {
      for (const ptx::Statement& statement : statements) {
        if (statement.kind == ptx::Statement::Kind::kBlock) self(self, statement.block);
        if (statement.kind != ptx::Statement::Kind::kInstruction) continue;
        for (const ptx::Operand& operand : statement.instruction.operands)
          for (const ptx::Token& token : operand.tokens)
            if (functionNames.count(token.text) != 0) found->insert(token.text);
      }
    };
    walk(walk, body);
  };

  std::set<std::string> needed{entry};
  for (bool grew = true; grew;) {
    grew = false;
    for (const ptx::TopLevel& item : module.items) {
      if (item.kind != ptx::TopLevel::Kind::kFunction || needed.count(item.function.name) == 0) continue;
      std::set<std::string> calls;
      collectCalls(item.function.body, &calls);
      for (const std::string& call : calls) grew |= needed.insert(call).second;
    }
  }
  ptx::Module cut;
  for (const ptx::TopLevel& item : module.items)
    if (item.kind != ptx::TopLevel::Kind::kFunction || needed.count(item.function.name) != 0)
      cut.items.push_back(item);
  return cut;
}

std::vector<std::string> entryNames(const ptx::Module& module) {
  std::vector<std::string> names;
  for (const ptx::TopLevel& item : module.items)
    if (item.kind == ptx::TopLevel::Kind::kFunction && item.function.kind == ptx::Function::Kind::kEntry &&
        item.function.hasBody)
      names.push_back(item.function.name);
  return names;
}

// Exactly the worker's options (worker/session_guard.h), with this tool's scratch as the
// guard page.
ptx::GuardOptions guardOptions(ptx::GuardPolicy policy) {
  return worker::guardOptionsFor(policy, policy == ptx::GuardPolicy::kTrap ? 0 : kHitCounter);
}

struct Guarded {
  std::string text;
  std::size_t checkedAccesses = 0;
};

// parse + guard + print of one kernel's printed module, and the independent check that
// every access is guarded (a finding is a failure: the numbers would not be the guard's).
Guarded guardText(const std::string& original, ptx::GuardPolicy policy, double* rewriteSeconds) {
  const auto start = Clock::now();
  const ptx::ParseResult parsed = ptx::parse(original);
  if (!parsed.ok) throw KernelFailure("the printed PTX does not parse: " + parsed.error);
  const ptx::GuardOptions options = guardOptions(policy);
  const ptx::GuardResult guarded = ptx::guardModule(parsed.module, options);
  if (!guarded.ok)
    throw KernelFailure(std::string("the guard (") + ptx::toString(policy) +
                        ") refuses it: " + guarded.error);
  Guarded result{ptx::print(guarded.module), guarded.checkedAccesses};
  if (rewriteSeconds != nullptr) *rewriteSeconds = secondsSince(start);
  const std::vector<std::string> unguarded =
      ptx::findUnguardedAccesses(guarded.module, options, guarded.registerPrefix);
  if (!unguarded.empty()) {
    throw KernelFailure(std::string("findUnguardedAccesses (") + ptx::toString(policy) +
                        "): " + std::to_string(unguarded.size()) + " unguarded, first: " + unguarded.front());
  }
  return result;
}

std::optional<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

// ------------------------------------------------------------------ options

struct Options {
  std::string ptxPath;  // default: guard_kernels.ptx next to the executable
  std::string outPath;
  std::string emitDir;
  std::string filterText;
  std::optional<std::regex> filter;
  int samples = 100;
  double sampleMs = 2.0;
  double budgetS = 240;
  double kernelBudgetS = 30;
  bool list = false;
  std::string commandLine;
};

constexpr const char* kUsage =
    "usage: agileos_guard_bench [--ptx FILE] [--out FILE] [--samples N] [--filter REGEX]\n"
    "                           [--budget-s S] [--kernel-budget-s S] [--sample-ms MS]\n"
    "       agileos_guard_bench --emit-guarded DIR [--ptx FILE] [--filter REGEX]\n"
    "       agileos_guard_bench --list\n"
    "  --ptx FILE           the kernels' PTX (default: guard_kernels.ptx next to this program)\n"
    "  --out FILE           also write the Markdown table to FILE\n"
    "  --samples N          timed samples per variant and kernel (default 100, >= 30 advised)\n"
    "  --filter REGEX       only the kernels whose name matches (ECMAScript, searched)\n"
    "  --budget-s S         no kernel is started after S seconds (default 240)\n"
    "  --kernel-budget-s S  sampling of one kernel stops after S seconds (default 30)\n"
    "  --sample-ms MS       GPU time per sample: launches are batched to reach it (default 2)\n"
    "  --emit-guarded DIR   no GPU: write KERNEL.ptx, KERNEL.trap.ptx, KERNEL.poison.ptx to DIR\n"
    "  --list               print the kernels and their character\n";

std::string executableDirectory() {
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  return error ? "." : self.parent_path().string();
}

std::optional<Options> parseOptions(int argc, char** argv) {
  Options options;
  options.ptxPath = executableDirectory() + "/guard_kernels.ptx";
  options.commandLine = "agileos_guard_bench";
  for (int i = 1; i < argc; ++i) options.commandLine += std::string(" ") + argv[i];
  const auto number = [](const char* text, double* value) {
    char* end = nullptr;
    *value = std::strtod(text, &end);
    return end != text && *end == '\0' && std::isfinite(*value) && *value > 0;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--list") {
      options.list = true;
      continue;
    }
    if (flag == "-h" || flag == "--help") {
      std::cout << kUsage;
      std::exit(0);
    }
    if (i + 1 >= argc) {
      std::cerr << "agileos_guard_bench: " << flag
                << (flag.rfind("--", 0) == 0 ? " needs a value\n" : ": unknown\n") << kUsage;
      return std::nullopt;
    }
    const char* value = argv[++i];
    double numeric = 0;
    if (flag == "--ptx") {
      options.ptxPath = value;
    } else if (flag == "--out") {
      options.outPath = value;
    } else if (flag == "--emit-guarded") {
      options.emitDir = value;
    } else if (flag == "--filter") {
      try {
        options.filter.emplace(value);
        options.filterText = value;
      } catch (const std::regex_error& error) {
        std::cerr << "agileos_guard_bench: bad --filter: " << error.what() << "\n";
        return std::nullopt;
      }
    } else if (flag == "--samples" && number(value, &numeric) && numeric >= 3 && numeric <= 100000) {
      options.samples = static_cast<int>(numeric);
    } else if (flag == "--sample-ms" && number(value, &numeric)) {
      options.sampleMs = numeric;
    } else if (flag == "--budget-s" && number(value, &numeric)) {
      options.budgetS = numeric;
    } else if (flag == "--kernel-budget-s" && number(value, &numeric)) {
      options.kernelBudgetS = numeric;
    } else {
      std::cerr << "agileos_guard_bench: bad option " << flag << " " << value << "\n" << kUsage;
      return std::nullopt;
    }
  }
  return options;
}

// ------------------------------------------------------------------ --emit-guarded

int emitGuarded(const Options& options, const ptx::Module& module, const std::vector<KernelSpec>& specs) {
  std::error_code error;
  fs::create_directories(options.emitDir, error);
  if (error) {
    std::cerr << "agileos_guard_bench: cannot create " << options.emitDir << ": " << error.message() << "\n";
    return 1;
  }
  int failures = 0;
  for (const KernelSpec& spec : specs) {
    const std::string base = options.emitDir + "/" + spec.name;
    const std::string original = ptx::print(moduleForEntry(module, spec.name));
    try {
      const Guarded trap = guardText(original, ptx::GuardPolicy::kTrap, nullptr);
      const Guarded poison = guardText(original, ptx::GuardPolicy::kPoison, nullptr);
      if (!writeFile(base + ".ptx", original) || !writeFile(base + ".trap.ptx", trap.text) ||
          !writeFile(base + ".poison.ptx", poison.text)) {
        throw KernelFailure("cannot write " + base + ".*.ptx");
      }
      std::cout << spec.name << ": " << trap.checkedAccesses << " accesses guarded (trap), "
                << poison.checkedAccesses << " (poison); " << original.size() << " -> " << trap.text.size()
                << " / " << poison.text.size() << " bytes of PTX\n";
    } catch (const KernelFailure& failure) {
      std::cerr << spec.name << ": FAILED: " << failure.what() << "\n";
      ++failures;
    }
  }
  return failures == 0 ? 0 : 1;
}

// ------------------------------------------------------------------ the GPU side

struct Gpu {
  CUdevice device = 0;
  CUcontext context = nullptr;
  StreamHandle stream;
  std::string name;
  std::uint32_t smArch = 0;
  int driverVersion = 0;
  int multiprocessors = 0;
  ~Gpu() {
    stream.reset();
    if (context != nullptr) cuDevicePrimaryCtxRelease(device);
  }
};

void openGpu(Gpu* gpu) {
  // The driver's own JIT cache (~/.nv/ComputeCache) would make a repeated "cold" load warm.
  ::setenv("CUDA_CACHE_DISABLE", "1", 1);
  check(cuInit(0), "cuInit");
  check(cuDeviceGet(&gpu->device, 0), "cuDeviceGet");
  check(cuDevicePrimaryCtxRetain(&gpu->context, gpu->device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(gpu->context), "cuCtxSetCurrent");
  CUstream stream = nullptr;
  check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  gpu->stream = StreamHandle(stream);
  char name[256] = {};
  check(cuDeviceGetName(name, sizeof name, gpu->device), "cuDeviceGetName");
  gpu->name = name;
  int major = 0, minor = 0;
  check(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, gpu->device),
        "cuDeviceGetAttribute");
  check(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, gpu->device),
        "cuDeviceGetAttribute");
  check(cuDeviceGetAttribute(&gpu->multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, gpu->device),
        "cuDeviceGetAttribute");
  gpu->smArch = static_cast<std::uint32_t>(major * 10 + minor);
  check(cuDriverGetVersion(&gpu->driverVersion), "cuDriverGetVersion");
  if (gpu->smArch < 90) throw CudaError(format("the PTX targets sm_90; this GPU is sm_%u", gpu->smArch));
}

// Device memory at kHitCounter (and the sink after it): where the poison policy's counter
// and quarantine must be. Reserved at that fixed address as the worker does; if the driver
// gives another address, nothing is mapped there and `mapped` stays false (the addresses
// are then only numbers in the code, which is all the timing needs, but a hit would fault).
class ProtectedScratch {
 public:
  void map(const Gpu& gpu) {
    CUmemAllocationProp properties{};
    properties.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    properties.location.id = gpu.device;
    std::size_t granularity = 0;
    check(cuMemGetAllocationGranularity(&granularity, &properties, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
          "cuMemGetAllocationGranularity");
    size_ = (kScratchBytes + granularity - 1) / granularity * granularity;
    CUdeviceptr got = 0;
    // The whole module range, as the worker reserves it: the driver grants a fixed address
    // for a reservation this large, not for a small one (measured on the H200).
    const CUresult reserved = cuMemAddressReserve(&got, reservedBytes_, 0, kHitCounter, 0);
    if (reserved != CUDA_SUCCESS || got != kHitCounter) {
      if (reserved == CUDA_SUCCESS) cuMemAddressFree(got, reservedBytes_);
      note_ = format("counter and sink NOT mapped (cannot reserve 0x%llx: error %d, got 0x%llx)",
                     static_cast<unsigned long long>(kHitCounter), static_cast<int>(reserved),
                     static_cast<unsigned long long>(got));
      return;
    }
    base_ = got;
    check(cuMemCreate(&handle_, size_, &properties, 0), "cuMemCreate");
    created_ = true;
    check(cuMemMap(base_, size_, 0, handle_, 0), "cuMemMap");
    mapped_ = true;
    CUmemAccessDesc access{};
    access.location = properties.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    check(cuMemSetAccess(base_, size_, &access, 1), "cuMemSetAccess");
    check(cuMemsetD8(base_, 0, size_), "cuMemsetD8");
    check(cuCtxSynchronize(), "cuCtxSynchronize");  // the memset is asynchronous for device memory
    note_ = format("counter and sink mapped at 0x%llx (%zu bytes)", static_cast<unsigned long long>(base_),
                   size_);
  }
  ~ProtectedScratch() {
    if (mapped_) cuMemUnmap(base_, size_);
    if (created_) cuMemRelease(handle_);
    if (base_ != 0) cuMemAddressFree(base_, reservedBytes_);
  }
  bool mapped() const { return mapped_; }
  static constexpr std::size_t reservedBytes_ = memmgr::kModuleRange.size;
  const std::string& note() const { return note_; }
  // Asynchronous: the caller synchronises before its next launch.
  void resetHits() const {
    if (mapped_) check(cuMemsetD8(kHitCounter, 0, sizeof(std::uint64_t)), "cuMemsetD8 (hit counter)");
  }
  std::uint64_t hits() const {
    std::uint64_t hits = 0;
    if (mapped_) check(cuMemcpyDtoH(&hits, kHitCounter, sizeof hits), "cuMemcpyDtoH (hit counter)");
    return hits;
  }

 private:
  CUdeviceptr base_ = 0;
  std::size_t size_ = 0;
  CUmemGenericAllocationHandle handle_ = 0;
  bool created_ = false, mapped_ = false;
  std::string note_;
};

std::string jitCompile(const std::string& text, const std::string& name) {
  char errorLog[8192] = {};
  CUjit_option jitOptions[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {errorLog, reinterpret_cast<void*>(static_cast<std::uintptr_t>(sizeof errorLog))};
  CUlinkState state = nullptr;
  check(cuLinkCreate(2, jitOptions, values, &state), "cuLinkCreate");
  LinkHandle link(state);
  // The driver reads PTX as a C string: pass the terminating NUL too.
  CUresult result = cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>(text.c_str()), text.size() + 1,
                                  name.c_str(), 0, nullptr, nullptr);
  void* cubin = nullptr;
  std::size_t bytes = 0;
  if (result == CUDA_SUCCESS) result = cuLinkComplete(state, &cubin, &bytes);
  // A JIT error is this module's (the guard's output did not assemble), not the context's.
  if (result == CUDA_SUCCESS)
    return std::string(static_cast<const char*>(cubin), bytes);  // before cuLinkDestroy
  const char* errorName = nullptr;
  cuGetErrorName(result, &errorName);
  throw KernelFailure(std::string("JIT failed (") + (errorName != nullptr ? errorName : "?") +
                      "): " + errorLog);
}

struct Loaded {
  ModuleHandle module;
  CUfunction function = nullptr;
};

Loaded loadCubin(const std::string& cubin, const std::string& name) {
  CUmodule module = nullptr;
  check(cuModuleLoadData(&module, cubin.data()), "cuModuleLoadData");
  Loaded loaded{ModuleHandle(module)};
  // With lazy loading (the default) the kernel is loaded here, not in cuModuleLoadData.
  check(cuModuleGetFunction(&loaded.function, module, name.c_str()), "cuModuleGetFunction");
  return loaded;
}

struct Variant {
  std::string text;
  std::size_t checkedAccesses = 0;
  double rewriteS = 0, coldLoadS = 0, warmLoadS = 0;
  int registers = 0, localBytes = 0;
  Loaded loaded;
  std::vector<Buffer> outputs;
  std::vector<std::uint64_t> parameterStorage;
  std::vector<std::unique_ptr<CUtensorMap>> tensorMaps;  // parameters passed by value, 128 bytes each
  std::vector<void*> parameters;
  std::vector<double> perLaunchMs;
};

struct Row {
  enum class Status { kMeasured, kFailed, kNotRun };
  Status status = Status::kNotRun;
  std::string name, character, note;
  int registers[kVariants] = {}, localBytes[kVariants] = {};
  double p50[kVariants] = {}, p99[kVariants] = {};
  double coldLoadS[kVariants] = {}, rewriteS[kVariants] = {}, warmLoadS = 0;
  std::size_t checkedAccesses = 0, ptxBytes[kVariants] = {};
  int samples = 0, batch = 0;
  double shortestSampleMs = 0;
  double ratio(std::size_t v) const { return p50[v] / p50[kOriginal]; }
};

struct Context {
  const Options& options;
  Gpu& gpu;
  worker::CompiledModuleCache& cache;
  const ProtectedScratch& scratch;
  Clock::time_point deadline;  // of the whole run
};

// JIT-compiles and loads one variant, timing the cold load and (guarded) the warm one.
void prepareVariant(Context& context, const KernelSpec& spec, const std::string& original,
                    std::optional<ptx::GuardPolicy> policy, Variant* variant) {
  if (policy) {
    Guarded guarded = guardText(original, *policy, &variant->rewriteS);
    variant->text = std::move(guarded.text);
    variant->checkedAccesses = guarded.checkedAccesses;
  } else {
    variant->text = original;
  }
  // The cold load is the rewrite plus JIT and load; guardText's findUnguardedAccesses is a
  // check of this benchmark, not a cost of the worker, so it is left out.
  const auto jitStart = Clock::now();
  const std::string cubin = jitCompile(variant->text, spec.name);
  variant->loaded = loadCubin(cubin, spec.name);
  variant->coldLoadS = variant->rewriteS + secondsSince(jitStart);
  if (policy) {
    const char* policyName = ptx::toString(*policy);
    context.cache.store(worker::CompiledModuleCache::keyFor(variant->text, context.gpu.smArch, policyName,
                                                            context.gpu.driverVersion),
                        cubin);
    const auto warmStart = Clock::now();
    const std::string key = worker::CompiledModuleCache::keyFor(variant->text, context.gpu.smArch, policyName,
                                                                context.gpu.driverVersion);
    const std::optional<std::string> cached = context.cache.find(key);
    if (!cached) throw KernelFailure("the module cache does not return the cubin just stored");
    Loaded warm = loadCubin(*cached, spec.name);
    variant->warmLoadS = secondsSince(warmStart);
  }
  check(cuFuncGetAttribute(&variant->registers, CU_FUNC_ATTRIBUTE_NUM_REGS, variant->loaded.function),
        "cuFuncGetAttribute");
  check(
      cuFuncGetAttribute(&variant->localBytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, variant->loaded.function),
      "cuFuncGetAttribute");
}

// Kernel parameters: each argument in an 8-byte slot (cuLaunchKernel reads each at its
// declared size, so a 4-byte value in the slot's low bytes is right on little-endian x86).
// A tensor map is encoded here with the driver (the tool is trusted and runs natively) and passed
// by value.
void bindParameters(const KernelSpec& spec, const std::vector<Buffer>& inputs, Variant* variant) {
  variant->parameterStorage.assign(spec.args.size(), 0);
  variant->tensorMaps.clear();
  variant->parameters.clear();
  for (std::size_t i = 0; i < spec.args.size(); ++i) {
    std::uint64_t& slot = variant->parameterStorage[i];
    void* parameter = &slot;
    std::visit(
        [&](const auto& arg) {
          using T = std::decay_t<decltype(arg)>;
          if constexpr (std::is_same_v<T, In>) {
            slot = inputs.at(arg.index).memory.get();
          } else if constexpr (std::is_same_v<T, Out>) {
            slot = variant->outputs.at(arg.index).memory.get();
          } else if constexpr (std::is_same_v<T, TensorMapOver>) {
            auto map = std::make_unique<CUtensorMap>();
            const cuuint64_t dims[2] = {arg.width, arg.height};
            const cuuint64_t strides[1] = {arg.width * sizeof(float)};
            const cuuint32_t box[2] = {arg.tile, arg.tile};
            const cuuint32_t elementStrides[2] = {1, 1};
            check(cuTensorMapEncodeTiled(map.get(), CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2,
                                         reinterpret_cast<void*>(inputs.at(arg.index).memory.get()), dims,
                                         strides, box, elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                         CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                         CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                  "cuTensorMapEncodeTiled");
            parameter = map.get();
            variant->tensorMaps.push_back(std::move(map));
          } else {
            std::memcpy(&slot, &arg, sizeof arg);
          }
        },
        spec.args[i]);
    variant->parameters.push_back(parameter);
  }
}

void launch(const KernelSpec& spec, Variant& variant, CUstream stream) {
  check(cuLaunchKernel(variant.loaded.function, spec.grid.x, spec.grid.y, 1, spec.block.x, spec.block.y, 1, 0,
                       stream, variant.parameters.data(), nullptr),
        "cuLaunchKernel");
}

// One launch of each variant from zeroed outputs; the guarded outputs must equal the
// original's byte for byte, and the original must have written something.
void verify(const KernelSpec& spec, Variant (&variants)[kVariants], CUstream stream) {
  for (Variant& variant : variants)
    for (Buffer& output : variant.outputs)
      check(cuMemsetD8Async(output.memory.get(), 0, output.bytes, stream), "cuMemsetD8Async");
  for (Variant& variant : variants) launch(spec, variant, stream);
  check(cuStreamSynchronize(stream), "cuStreamSynchronize (verification launch)");
  for (std::size_t o = 0; o < spec.outputBytes.size(); ++o) {
    const std::size_t bytes = spec.outputBytes[o];
    std::vector<std::uint8_t> expected(bytes), actual(bytes);
    check(cuMemcpyDtoH(expected.data(), variants[kOriginal].outputs[o].memory.get(), bytes), "cuMemcpyDtoH");
    if (std::all_of(expected.begin(), expected.end(), [](std::uint8_t b) { return b == 0; }))
      throw KernelFailure(format("output %zu of the original kernel is all zero: the kernel did not run", o));
    for (std::size_t v = kTrap; v < kVariants; ++v) {
      check(cuMemcpyDtoH(actual.data(), variants[v].outputs[o].memory.get(), bytes), "cuMemcpyDtoH");
      if (std::memcmp(expected.data(), actual.data(), bytes) == 0) continue;
      std::size_t differing = 0, first = bytes;
      for (std::size_t i = 0; i < bytes; ++i) {
        if (expected[i] == actual[i]) continue;
        ++differing;
        first = std::min(first, i);
      }
      throw KernelFailure(
          format("MISMATCH: %s output %zu differs from the original in %zu of %zu bytes, first at byte %zu",
                 kVariantNames[v], o, differing, bytes, first));
    }
  }
}

double percentile(std::vector<double> values, double p) {  // nearest rank
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
  return values[std::clamp<std::size_t>(rank, 1, values.size()) - 1];
}

Row measure(Context& context, const KernelSpec& spec, const ptx::Module& module) {
  Row row{Row::Status::kFailed, spec.name, spec.character};
  const auto kernelStart = Clock::now();
  const auto kernelDeadline = std::min(
      context.deadline, kernelStart + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(context.options.kernelBudgetS)));
  const CUstream stream = context.gpu.stream.get();

  // Its own module per kernel, so that loads and register counts are per kernel.
  const std::string original = ptx::print(moduleForEntry(module, spec.name));
  Variant variants[kVariants];
  prepareVariant(context, spec, original, std::nullopt, &variants[kOriginal]);
  prepareVariant(context, spec, original, ptx::GuardPolicy::kTrap, &variants[kTrap]);
  prepareVariant(context, spec, original, ptx::GuardPolicy::kPoison, &variants[kPoison]);
  for (std::size_t v = 0; v < kVariants; ++v) {
    row.registers[v] = variants[v].registers;
    row.localBytes[v] = variants[v].localBytes;
    row.coldLoadS[v] = variants[v].coldLoadS;
    row.rewriteS[v] = variants[v].rewriteS;
    row.ptxBytes[v] = variants[v].text.size();
  }
  row.warmLoadS = variants[kTrap].warmLoadS;
  row.checkedAccesses = variants[kTrap].checkedAccesses;

  context.scratch.resetHits();  // so that one kernel's hits do not fail the next
  std::vector<Buffer> inputs;
  for (const Input& input : spec.inputs) {
    auto host = std::make_unique_for_overwrite<std::uint8_t[]>(input.bytes);
    input.fill(host.get(), input.bytes, input.seed, input.parameter);
    inputs.push_back(allocate(input.bytes));
    check(cuMemcpyHtoD(inputs.back().memory.get(), host.get(), input.bytes), "cuMemcpyHtoD");
  }
  // A pageable cuMemcpyHtoD may return before its DMA has landed (and the memset is
  // asynchronous), and the legacy stream they run on does not order the kernels' stream.
  check(cuCtxSynchronize(), "cuCtxSynchronize (inputs)");
  for (Variant& variant : variants) {
    for (std::size_t bytes : spec.outputBytes) variant.outputs.push_back(allocate(bytes));
    bindParameters(spec, inputs, &variant);
  }

  verify(spec, variants, stream);

  // Warm-up, then the batch: enough launches that a sample is >= --sample-ms of GPU time.
  EventHandle start, stop;
  {
    CUevent a = nullptr, b = nullptr;
    check(cuEventCreate(&a, CU_EVENT_DEFAULT), "cuEventCreate");
    start = EventHandle(a);
    check(cuEventCreate(&b, CU_EVENT_DEFAULT), "cuEventCreate");
    stop = EventHandle(b);
  }
  const auto timeBatch = [&](Variant& variant, int launches) {
    check(cuEventRecord(start.get(), stream), "cuEventRecord");
    for (int i = 0; i < launches; ++i) launch(spec, variant, stream);
    check(cuEventRecord(stop.get(), stream), "cuEventRecord");
    check(cuEventSynchronize(stop.get()), "cuEventSynchronize");
    float ms = 0;
    check(cuEventElapsedTime(&ms, start.get(), stop.get()), "cuEventElapsedTime");
    return static_cast<double>(ms);
  };
  for (Variant& variant : variants) timeBatch(variant, 2);
  // Grows the batch until the original's batch takes --sample-ms (the guarded ones take longer).
  constexpr int kMaxBatch = 100000;
  row.batch = 1;
  for (double ms = timeBatch(variants[kOriginal], 1); ms < context.options.sampleMs && row.batch < kMaxBatch;
       ms = timeBatch(variants[kOriginal], row.batch)) {
    const double scale = std::clamp(1.1 * context.options.sampleMs / std::max(ms, 1e-3), 1.1, 100.0);
    row.batch = std::min(kMaxBatch, static_cast<int>(std::ceil(row.batch * scale)));
  }

  row.shortestSampleMs = 1e300;
  for (int s = 0; s < context.options.samples; ++s) {
    if (Clock::now() >= kernelDeadline) break;
    for (std::size_t k = 0; k < kVariants; ++k) {  // the order rotates, so no variant is always first
      Variant& variant = variants[(static_cast<std::size_t>(s) + k) % kVariants];
      const double ms = timeBatch(variant, row.batch);
      row.shortestSampleMs = std::min(row.shortestSampleMs, ms);
      variant.perLaunchMs.push_back(ms / row.batch);
    }
    row.samples = s + 1;
  }
  if (row.samples == 0) {
    row.status = Row::Status::kNotRun;
    row.note = "the time budget ran out before the first sample";
    return row;
  }
  for (std::size_t v = 0; v < kVariants; ++v) {
    row.p50[v] = percentile(variants[v].perLaunchMs, 50);
    row.p99[v] = percentile(variants[v].perLaunchMs, 99);
  }
  if (const std::uint64_t hits = context.scratch.hits(); hits != 0)
    throw KernelFailure(
        format("the poison policy counted %llu hits; these kernels make no out-of-range access",
               static_cast<unsigned long long>(hits)));
  if (row.samples < context.options.samples)
    row.note = format("%d of %d samples (time budget)", row.samples, context.options.samples);
  if (row.shortestSampleMs < 1.0)
    row.note += (row.note.empty() ? "" : "; ") + std::string("a sample under 1 ms");
  row.status = Row::Status::kMeasured;
  return row;
}

// ------------------------------------------------------------------ the report

std::string milliseconds(double seconds) { return format(seconds < 0.01 ? "%.2f" : "%.1f", seconds * 1e3); }
std::string micros(double ms) { return format(ms < 1 ? "%.1f µs" : "%.3f ms", ms < 1 ? ms * 1e3 : ms); }
std::string percent(double ratio) { return format("%+.1f%%", (ratio - 1) * 100); }

struct Summary {
  int measured = 0;
  double geomean = 1, worst = 0;
  std::string worstName;
};

Summary summarise(const std::vector<Row>& rows, std::size_t v) {
  Summary summary;
  double logSum = 0;
  for (const Row& row : rows) {
    if (row.status != Row::Status::kMeasured) continue;
    ++summary.measured;
    logSum += std::log(row.ratio(v));
    if (row.ratio(v) > summary.worst) {
      summary.worst = row.ratio(v);
      summary.worstName = row.name;
    }
  }
  if (summary.measured > 0) summary.geomean = std::exp(logSum / summary.measured);
  return summary;
}

std::string report(const Options& options, const Gpu& gpu, const ProtectedScratch& scratch,
                   const std::vector<Row>& rows, double elapsedS) {
  std::ostringstream out;
  char date[64] = {};
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
  out << "## Kernel memory guard overhead (" << date << ")\n\n";
  out << format("GPU: %s (sm_%u, %d SMs), CUDA driver %d.%d; `%s`.\n", gpu.name.c_str(), gpu.smArch,
                gpu.multiprocessors, gpu.driverVersion / 1000, gpu.driverVersion % 1000 / 10,
                options.commandLine.c_str());
  out << format(
      "Per kernel: original vs guarded (trap; poison with a %llu KiB redirect limit), protected range "
      "[0x%llx, 0x%llx); %s. Times are per launch (a sample is a batch of launches of ≥ %.1f ms between two "
      "events; %d samples per variant, interleaved; nearest-rank percentiles, so with fewer than 100 samples "
      "p99 "
      "is the largest). Ratios are guarded / original.\n\n",
      static_cast<unsigned long long>(kRedirectLimit / 1024),
      static_cast<unsigned long long>(memmgr::kIoAperture.begin),
      static_cast<unsigned long long>(memmgr::kModuleRange.end()), scratch.note().c_str(), options.sampleMs,
      options.samples);
  if (options.samples < kMinSamples)
    out << format("**Only %d samples per variant (fewer than %d): a quick run, not a result.**\n\n",
                  options.samples, kMinSamples);
  out << "| kernel | character | regs before → after | p50 orig | p50 trap | ratio trap | p99 ratio | ratio "
         "poison "
         "| cold load orig / guarded | warm load |\n";
  out << "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const Row& row : rows) {
    out << "| `" << row.name << "` | " << row.character << " | ";
    if (row.status != Row::Status::kMeasured) {
      out << (row.status == Row::Status::kFailed ? "**FAILED**: " : "not run: ") << row.note
          << " | | | | | | | |\n";
      continue;
    }
    std::string registers = format("%d → %d", row.registers[kOriginal], row.registers[kTrap]);
    if (row.registers[kPoison] != row.registers[kTrap])
      registers += format(" (poison %d)", row.registers[kPoison]);
    out << registers << " | " << micros(row.p50[kOriginal]) << " | " << micros(row.p50[kTrap]) << " | "
        << format("%.3f", row.ratio(kTrap)) << " | " << format("%.3f", row.p99[kTrap] / row.p99[kOriginal])
        << " | " << format("%.3f", row.ratio(kPoison)) << " | " << milliseconds(row.coldLoadS[kOriginal])
        << " / " << milliseconds(row.coldLoadS[kTrap]) << " ms | " << milliseconds(row.warmLoadS)
        << " ms |\n";
  }

  const Summary trap = summarise(rows, kTrap), poison = summarise(rows, kPoison);
  const int selected = static_cast<int>(rows.size());
  out << "\n";
  if (trap.measured == 0) {
    out << "No kernel was measured.\n";
  } else {
    const bool geomeanMet = trap.geomean <= kTargetGeomean, worstMet = trap.worst <= kTargetWorst;
    out << format(
        "- trap: geometric-mean overhead %s (target ≤ +5%%: %s); worst `%s` %s (target ≤ +15%%: %s)\n",
        percent(trap.geomean).c_str(), geomeanMet ? "met" : "**NOT met**", trap.worstName.c_str(),
        percent(trap.worst).c_str(), worstMet ? "met" : "**NOT met**");
    out << format("- poison: geometric-mean overhead %s; worst `%s` %s\n", percent(poison.geomean).c_str(),
                  poison.worstName.c_str(), percent(poison.worst).c_str());
    if (trap.measured < selected)
      out << format("- only %d of %d kernels measured: the targets are judged on those alone\n",
                    trap.measured, selected);
  }

  out << "\nDetails (rewrite = parse + guard + print, part of the cold load; the worker's warm path pays it "
         "too, "
         "since the cache key is over the rewritten text):\n\n";
  out << "| kernel | samples × launches | shortest sample | accesses guarded | PTX bytes orig → trap / "
         "poison | "
         "local bytes orig / trap / poison | rewrite trap | cold load poison | note |\n";
  out << "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n";
  for (const Row& row : rows) {
    if (row.status != Row::Status::kMeasured) continue;
    out << "| `" << row.name << "` | " << row.samples << " × " << row.batch << " | "
        << format("%.2f ms", row.shortestSampleMs) << " | " << row.checkedAccesses << " | "
        << format("%zu → %zu / %zu", row.ptxBytes[kOriginal], row.ptxBytes[kTrap], row.ptxBytes[kPoison])
        << " | "
        << format("%d / %d / %d", row.localBytes[kOriginal], row.localBytes[kTrap], row.localBytes[kPoison])
        << " | " << milliseconds(row.rewriteS[kTrap]) << " ms | " << milliseconds(row.coldLoadS[kPoison])
        << " ms | " << row.note << " |\n";
  }
  out << format("\nFinished in %.1f s.\n", elapsedS);
  return out.str();
}

// A private directory for the module cache, removed at exit.
class TemporaryDirectory {
 public:
  TemporaryDirectory() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/agileos-guard-bench.XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("mkdtemp: " + std::string(std::strerror(errno)));
    path_ = pattern;
  }
  ~TemporaryDirectory() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

int runBenchmark(const Options& options, const ptx::Module& module, const std::vector<KernelSpec>& specs) {
  const auto started = Clock::now();
  const auto deadline =
      started + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.budgetS));
  Gpu gpu;
  ProtectedScratch scratch;
  std::vector<Row> rows;
  bool failed = false, incomplete = false;
  std::string stopReason;
  try {
    openGpu(&gpu);
    scratch.map(gpu);
  } catch (const CudaError& error) {
    std::cerr << "agileos_guard_bench: " << error.what() << "\n";
    return 1;
  }
  std::cerr << "GPU: " << gpu.name << " (sm_" << gpu.smArch << "); " << scratch.note() << "\n";

  TemporaryDirectory temporary;
  std::string cacheError;
  // A key of this run's own, as a daemon makes one at start: only this run's entries verify.
  std::string cacheKey(worker::CompiledModuleCache::kKeyBytes, '\0');
  if (::getentropy(cacheKey.data(), cacheKey.size()) != 0) {
    std::cerr << "agileos_guard_bench: getentropy: " << std::strerror(errno) << "\n";
    return 1;
  }
  const auto cache =
      worker::CompiledModuleCache::open(temporary.path() + "/cache", 1ull << 30, cacheKey, &cacheError);
  if (!cache) {
    std::cerr << "agileos_guard_bench: " << cacheError << "\n";
    return 1;
  }
  Context context{options, gpu, *cache, scratch, deadline};

  for (const KernelSpec& spec : specs) {
    if (!stopReason.empty() || Clock::now() >= deadline) {
      Row row{Row::Status::kNotRun, spec.name, spec.character};
      row.note =
          stopReason.empty() ? format("the time budget of %g s is spent", options.budgetS) : stopReason;
      incomplete = true;
      rows.push_back(row);
      continue;
    }
    std::cerr << spec.name << " ..." << std::flush;
    try {
      rows.push_back(measure(context, spec, module));
      const Row& row = rows.back();
      if (row.status == Row::Status::kMeasured) {
        std::cerr << format(" trap %.3f, poison %.3f (%d samples x %d launches)\n", row.ratio(kTrap),
                            row.ratio(kPoison), row.samples, row.batch);
      } else {
        incomplete = true;
        std::cerr << " NOT MEASURED: " << row.note << "\n";
      }
    } catch (const KernelFailure& failure) {
      rows.push_back(Row{Row::Status::kFailed, spec.name, spec.character, failure.what()});
      failed = true;
      std::cerr << " FAILED: " << failure.what() << "\n";
    } catch (const CudaError& error) {
      rows.push_back(Row{Row::Status::kFailed, spec.name, spec.character, error.what()});
      failed = true;
      stopReason = "not started after a CUDA error in `" + spec.name + "`";
      std::cerr << " FAILED: " << error.what() << "\n";
    }
  }

  const std::string table = report(options, gpu, scratch, rows, secondsSince(started));
  std::cout << table << std::flush;
  if (!options.outPath.empty() && !writeFile(options.outPath, table)) {
    std::cerr << "agileos_guard_bench: cannot write " << options.outPath << "\n";
    failed = true;
  }
  return failed ? 1 : incomplete ? 3 : 0;
}

int run(int argc, char** argv) {
  const std::optional<Options> parsed = parseOptions(argc, argv);
  if (!parsed) return 2;
  const Options& options = *parsed;

  std::vector<KernelSpec> specs = kernelSpecs();
  if (options.list) {
    for (const KernelSpec& spec : specs) std::cout << spec.name << "\t" << spec.character << "\n";
    return 0;
  }
  const std::optional<std::string> text = readFile(options.ptxPath);
  if (!text) {
    std::cerr << "agileos_guard_bench: cannot read " << options.ptxPath << "\n";
    return 1;
  }
  const ptx::ParseResult module = ptx::parse(*text);
  if (!module.ok) {
    std::cerr << "agileos_guard_bench: " << options.ptxPath << " does not parse: " << module.error << "\n";
    return 1;
  }
  // The PTX and the list above must name the same kernels: a kernel added to one only
  // would silently go unmeasured (or fail to load).
  const std::vector<std::string> entries = entryNames(module.module);
  bool consistent = true;
  for (const KernelSpec& spec : specs) {
    if (std::find(entries.begin(), entries.end(), spec.name) == entries.end()) {
      std::cerr << "agileos_guard_bench: " << options.ptxPath << " has no kernel " << spec.name << "\n";
      consistent = false;
    }
  }
  for (const std::string& entry : entries) {
    if (std::none_of(specs.begin(), specs.end(),
                     [&](const KernelSpec& spec) { return spec.name == entry; })) {
      std::cerr << "agileos_guard_bench: kernel " << entry << " of the PTX is not in kernelSpecs()\n";
      consistent = false;
    }
  }
  if (!consistent) return 1;

  if (options.filter) {
    std::erase_if(specs,
                  [&](const KernelSpec& spec) { return !std::regex_search(spec.name, *options.filter); });
    if (specs.empty()) {
      std::cerr << "agileos_guard_bench: no kernel matches \"" << options.filterText << "\"\n";
      return 2;
    }
  }
  if (!options.emitDir.empty()) return emitGuarded(options, module.module, specs);
  return runBenchmark(options, module.module, specs);
}

}  // namespace
}  // namespace agileos::guardbench

int main(int argc, char** argv) {
  try {
    return agileos::guardbench::run(argc, argv);
  } catch (const std::exception& error) {  // e.g. bad_alloc, mkdtemp
    std::cerr << "agileos_guard_bench: " << error.what() << "\n";
    return 1;
  }
}
