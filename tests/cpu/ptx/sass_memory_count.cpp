#include "tests/cpu/ptx/sass_memory_count.h"

#include <elf.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "ptx/memory_access.h"
#include "ptx/printer.h"

#ifndef AGILEOS_PTXAS
#define AGILEOS_PTXAS "ptxas"
#endif

namespace agileos::ptx::testing {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kInstructionBytes = 16;  // Volta and later, Hopper included
// Bits 0..8 are the opcode, bits 9..11 the operand form (register, immediate, constant,
// uniform or descriptor operands): a generic store is 0x985 with a memory descriptor and
// 0x385 without one (ptxas emits the latter for .shared::cluster), both ST.
constexpr std::uint32_t kOpcodeMask = 0x1FF;
constexpr unsigned kRaShift = 24;  // the first source register (an address's base)
constexpr std::uint64_t kRZ = 0xFF;

// One reference kind: the access (with {k} for the copy's register index, {a} for its
// address, {o} for its offset) and its control (the same access in shared memory, with
// {s} for a shared address; empty: the control leaves it out).
struct Kind {
  const char* name;
  const char* access;
  const char* control;
};

// What the guard checks (ptx/memory_access.h) and the corpus uses. Loaded values go to
// %r{k}, %rd{k} or %f{k}, which the kernel sums; the other operands are set up before.
constexpr Kind kKinds[] = {
    {"ld.global", "ld.global.u32 %r{k}, [{a}];", "ld.shared.u32 %r{k}, [{s}];"},
    {"ld generic", "ld.u32 %r{k}, [{a}];", "ld.shared.u32 %r{k}, [{s}];"},
    {"ld.global.nc", "ld.global.nc.u32 %r{k}, [{a}];", "ld.shared.u32 %r{k}, [{s}];"},
    {"ld.volatile.global", "ld.volatile.global.u32 %r{k}, [{a}];", "ld.volatile.shared.u32 %r{k}, [{s}];"},
    {"ld.acquire.gpu", "ld.acquire.gpu.global.u32 %r{k}, [{a}];", "ld.acquire.gpu.shared.u32 %r{k}, [{s}];"},
    {"ld.global.v4", "ld.global.v4.u32 {%r{k}, %r9, %r10, %r11}, [{a}];",
     "ld.shared.v4.u32 {%r{k}, %r9, %r10, %r11}, [{s}];"},
    {"ld.global.u64", "ld.global.u64 %rd{k}, [{a}];", "ld.shared.u64 %rd{k}, [{s}];"},
    {"ldu.global", "ldu.global.u32 %r{k}, [{a}];", "ld.shared.u32 %r{k}, [{s}];"},
    {"st.global", "st.global.u32 [{a}], %r{k};", "st.shared.u32 [{s}], %r{k};"},
    {"st generic", "st.u32 [{a}], %r{k};", "st.shared.u32 [{s}], %r{k};"},
    {"st.global.b8", "st.global.b8 [{a}], %rs1;", "st.shared.b8 [{s}], %rs1;"},
    {"st.global.v2.u64", "st.global.v2.u64 [{a}], {%rd5, %rd6};", "st.shared.v2.u64 [{s}], {%rd5, %rd6};"},
    {"st.release.gpu", "st.release.gpu.global.u32 [{a}], %r{k};", "st.release.gpu.shared.u32 [{s}], %r{k};"},
    {"st.volatile", "st.volatile.u32 [{a}], %r{k};", "st.volatile.shared.u32 [{s}], %r{k};"},
    {"atom.global.add", "atom.global.add.u32 %r{k}, [{a}], 1;", "atom.shared.add.u32 %r{k}, [{s}], 1;"},
    {"atom.add generic", "atom.add.u32 %r{k}, [{a}], 1;", "atom.shared.add.u32 %r{k}, [{s}], 1;"},
    {"atom.add.release.gpu generic", "atom.add.release.gpu.u32 %r{k}, [{a}], 1;",
     "atom.shared.add.release.gpu.u32 %r{k}, [{s}], 1;"},
    {"atom.global.max", "atom.global.max.s32 %r{k}, [{a}], 1;", "atom.shared.max.s32 %r{k}, [{s}], 1;"},
    {"atom.global.inc", "atom.global.inc.u32 %r{k}, [{a}], 7;", "atom.shared.inc.u32 %r{k}, [{s}], 7;"},
    {"atom.global.cas.b32", "atom.global.cas.b32 %r{k}, [{a}], 1, 2;",
     "atom.shared.cas.b32 %r{k}, [{s}], 1, 2;"},
    {"atom.global.cas.b64", "atom.global.cas.b64 %rd{k}, [{a}], %rd5, %rd6;",
     "atom.shared.cas.b64 %rd{k}, [{s}], %rd5, %rd6;"},
    {"atom.global.exch.b64", "atom.global.exch.b64 %rd{k}, [{a}], %rd5;",
     "atom.shared.exch.b64 %rd{k}, [{s}], %rd5;"},
    {"atom.global.add.f32", "atom.global.add.f32 %f{k}, [{a}], %f9;",
     "atom.shared.add.f32 %f{k}, [{s}], %f9;"},
    {"red.global.add.u32", "red.global.add.u32 [{a}], 1;", "red.shared.add.u32 [{s}], 1;"},
    {"red.global.add.u64", "red.global.add.u64 [{a}], 1;", "red.shared.add.u64 [{s}], 1;"},
    {"red.add generic", "red.add.u32 [{a}], 1;", "red.shared.add.u32 [{s}], 1;"},
    {"red.global.add.f32", "red.global.add.f32 [{a}], %f9;", "red.shared.add.f32 [{s}], %f9;"},
    {"red.global.add.f64", "red.global.add.f64 [{a}], 0d3FF0000000000000;", ""},
    {"cp.async.ca", "cp.async.ca.shared.global [s+{o}], [{a}], 4;", ""},
    {"cp.async.cg", "cp.async.cg.shared.global [s+{o}], [{a}], 16;", ""},
    {"prefetch.global.L2", "prefetch.global.L2 [{a}];", ""},
    {"prefetch.L1 generic", "prefetch.L1 [{a}];", ""},
    {"discard.global.L2", "discard.global.L2 [{a}], 128;", ""},
    {"applypriority.global.L2", "applypriority.global.L2::evict_normal [{a}], 128;", ""},
};

// Address forms: a register (the kernel's global pointer) and a global symbol, with the
// copy's offset; the control uses the same form in shared memory.
struct Form {
  const char* name;
  const char* address;
  const char* shared;
};
constexpr Form kForms[] = {{"reg", "%rd2+{o}", "%rd7+{o}"}, {"sym", "g+{o}", "s+{o}"}};
constexpr int kMaxCopies = 3;

std::string replaceAll(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

std::string kernel(const std::string& name, const std::string& line, const Form& form, int copies) {
  std::string body;
  for (int k = 1; k <= copies; ++k) {
    const std::string offset = std::to_string(256 * k);
    std::string access = replaceAll(line, "{a}", form.address);
    access = replaceAll(access, "{s}", form.shared);
    access = replaceAll(access, "{o}", offset);
    body += replaceAll(access, "{k}", std::to_string(k)) + "\n";
  }
  std::ostringstream out;
  out << ".visible .entry " << name << "(.param .u64 p)\n{\n"
      << ".reg .b16 %rs<4>;\n.reg .b32 %r<16>;\n.reg .b64 %rd<16>;\n.reg .f32 %f<16>;\n"
      << "ld.param.u64 %rd1, [p];\ncvta.to.global.u64 %rd2, %rd1;\ncvt.u32.u64 %r0, %rd1;\n"
      << "mov.u64 %rd5, %rd1;\nmov.u64 %rd6, %rd2;\nmov.u64 %rd7, s;\ncvt.rn.f32.u32 %f9, %r0;\n"
      << "cvt.u16.u32 %rs1, %r0;\n";
  for (const char* r : {"%r1", "%r2", "%r3", "%r9", "%r10", "%r11"}) out << "mov.u32 " << r << ", %r0;\n";
  for (const char* r : {"%rd3", "%rd4"}) out << "mov.u64 " << r << ", %rd1;\n";
  for (const char* f : {"%f1", "%f2", "%f3"}) out << "mov.f32 " << f << ", %f9;\n";
  out << body;
  // Everything a copy may have loaded is consumed, so no access is dead.
  for (const char* r : {"%r1", "%r2", "%r3", "%r9", "%r10", "%r11"})
    out << "add.u32 %r0, %r0, " << r << ";\n";
  for (const char* r : {"%rd1", "%rd2", "%rd3"})
    out << "cvt.u32.u64 %r12, " << r << ";\nadd.u32 %r0, %r0, %r12;\n";
  for (const char* f : {"%f1", "%f2", "%f3"})
    out << "cvt.rzi.u32.f32 %r12, " << f << ";\nadd.u32 %r0, %r0, %r12;\n";
  out << "cp.async.commit_group;\ncp.async.wait_all;\nst.shared.u32 [s], %r0;\nret;\n}\n";
  return out.str();
}

std::string kernelName(bool access, std::size_t kind, std::size_t form, int copies) {
  return std::string(access ? "k" : "c") + std::to_string(kind) + "_" + std::to_string(form) + "_" +
         std::to_string(copies);
}

std::string calibrationModule() {
  std::string text =
      ".version 8.3\n.target sm_90\n.address_size 64\n.shared .align 16 .b8 s[4096];\n"
      ".global .align 16 .b8 g[4096];\n";
  for (std::size_t k = 0; k < std::size(kKinds); ++k) {
    for (std::size_t f = 0; f < std::size(kForms); ++f) {
      for (int n = 1; n <= kMaxCopies; ++n) {
        text += kernel(kernelName(true, k, f, n), kKinds[k].access, kForms[f], n);
        text += kernel(kernelName(false, k, f, n), kKinds[k].control, kForms[f], n);
      }
    }
  }
  return text;
}

// One optimisation level's calibration, merged into *result: a kind learned before must
// get the same opcode again.
bool calibrateAt(const std::string& level, SassCalibration* result) {
  std::vector<std::uint8_t> cubin;
  std::string log;
  if (!compileCubin(calibrationModule(), level, &cubin, &log)) {
    result->error = "ptxas " + level + " refused the calibration module: " + log;
    return false;
  }
  std::string error;
  const auto functions = sassOpcodes(cubin, &error);
  if (!error.empty()) {
    result->error = error;
    return false;
  }
  std::map<std::string, std::map<std::uint32_t, int>> counts;  // per kernel, per key
  std::set<std::uint32_t> inControls;                          // keys
  for (const auto& [name, opcodes] : functions) {
    for (std::uint32_t op : opcodes) {
      ++counts[name][op];
      if (name[0] == 'c') inControls.insert(op);
    }
  }
  for (std::size_t k = 0; k < std::size(kKinds); ++k) {
    for (std::size_t f = 0; f < std::size(kForms); ++f) {
      const std::string kind = std::string(kKinds[k].name) + " " + kForms[f].name;
      std::set<std::uint32_t> candidates;
      for (int n = 1; n <= kMaxCopies; ++n) {
        const std::string a = kernelName(true, k, f, n), c = kernelName(false, k, f, n);
        if (counts.count(a) == 0 || counts.count(c) == 0) {
          result->error = "the cubin lacks kernel " + a + " or " + c;
          return false;
        }
        std::set<std::uint32_t> scaling;
        for (const auto& [op, count] : counts[a]) {
          const auto control = counts[c].find(op);
          const int inControl = control == counts[c].end() ? 0 : control->second;
          if (count - inControl == n && inControls.count(op) == 0) scaling.insert(op);
        }
        if (n == 1) {
          candidates = scaling;
        } else {
          std::set<std::uint32_t> both;
          for (std::uint32_t op : candidates) {
            if (scaling.count(op) != 0) both.insert(op);
          }
          candidates = both;
        }
      }
      if (candidates.size() != 1) {
        std::ostringstream why;
        why << "calibration kind '" << kind << "' gives " << candidates.size() << " opcodes at " << level
            << " (";
        for (std::uint32_t op : candidates) why << " 0x" << std::hex << op;
        why << " ), not one";
        result->error = why.str();
        return false;
      }
      const std::uint32_t opcode = *candidates.begin();
      if ((opcode & kSassWithoutBase) != 0) {
        result->error = "calibration kind '" + kind + "' is learned only without an address register";
        return false;
      }
      const auto known = result->kindOpcode.find(kind);
      if (known != result->kindOpcode.end() && known->second != opcode) {
        result->error = "calibration kind '" + kind + "' gives another opcode at " + level;
        return false;
      }
      result->kindOpcode[kind] = opcode;
      result->memoryOpcodes.insert(opcode);
    }
  }
  for (std::uint32_t opcode : result->memoryOpcodes) {
    if (inControls.count(opcode | kSassWithoutBase) != 0) result->ambiguousWithoutBase.insert(opcode);
  }
  return true;
}

// At -O0 (how countGlobalMemoryInstructions compiles) and at -O3 (ptxas's default).
SassCalibration calibrate() {
  SassCalibration result;
  result.ok = calibrateAt("-O0", &result) && calibrateAt("-O3", &result);
  return result;
}

template <typename T>
bool readAt(const std::vector<std::uint8_t>& bytes, std::uint64_t offset, T* out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(out, bytes.data() + offset, sizeof(T));
  return true;
}

}  // namespace

namespace {

// Every test process (ctest runs each test alone) would calibrate again: the result is kept
// in the temporary directory under a name made of the calibration module and ptxas's
// identity (path, size, modification time), so any change calibrates afresh.
fs::path cachePath() {
  std::uint64_t h = 0xCBF29CE484222325ull;
  auto mix = [&h](const std::string& text) {
    for (const char c : text) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
  };
  mix(calibrationModule());
  mix(AGILEOS_PTXAS);
  std::error_code error;
  const fs::path ptxas(AGILEOS_PTXAS);
  if (fs::exists(ptxas, error)) {
    mix(std::to_string(fs::file_size(ptxas, error)));
    mix(std::to_string(fs::last_write_time(ptxas, error).time_since_epoch().count()));
  }
  std::ostringstream name;
  name << "agileos-sass-calibration-" << std::hex << h << ".txt";
  return fs::temp_directory_path() / name.str();
}

bool readCache(const fs::path& path, SassCalibration* out) {
  std::ifstream in(path);
  std::string tag, kind;
  std::uint32_t opcode = 0;
  SassCalibration c;
  while (in >> tag >> std::hex >> opcode) {
    if (tag == "kind" && std::getline(in >> std::ws, kind) && !kind.empty()) {
      c.kindOpcode[kind] = opcode;
      c.memoryOpcodes.insert(opcode);
    } else if (tag == "ambiguous") {
      c.ambiguousWithoutBase.insert(opcode);
    } else {
      return false;
    }
  }
  // Every kind and form, or the file is not one this code wrote.
  if (c.kindOpcode.size() != std::size(kKinds) * std::size(kForms)) return false;
  c.ok = true;
  *out = std::move(c);
  return true;
}

void writeCache(const fs::path& path, const SassCalibration& c) {
  const fs::path partial = path.string() + "." + std::to_string(::getpid());
  {
    std::ofstream out(partial);
    out << std::hex;
    for (const auto& [kind, opcode] : c.kindOpcode) out << "kind " << opcode << " " << kind << "\n";
    for (const std::uint32_t opcode : c.ambiguousWithoutBase) out << "ambiguous " << opcode << "\n";
  }
  std::error_code ignored;
  fs::rename(partial, path, ignored);  // atomic: a parallel reader sees all of it or nothing
  fs::remove(partial, ignored);
}

SassCalibration cachedCalibration() {
  const fs::path path = cachePath();
  SassCalibration c;
  if (readCache(path, &c)) return c;
  c = calibrate();
  if (c.ok) writeCache(path, c);
  return c;
}

}  // namespace

SassCalibration calibrateNow() { return calibrate(); }

const SassCalibration& calibration() {
  static const SassCalibration kCalibration = cachedCalibration();
  return kCalibration;
}

std::map<std::string, std::vector<std::uint32_t>> sassOpcodes(const std::vector<std::uint8_t>& cubin,
                                                              std::string* error) {
  std::map<std::string, std::vector<std::uint32_t>> functions;
  Elf64_Ehdr header;
  if (!readAt(cubin, 0, &header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_shentsize != sizeof(Elf64_Shdr)) {
    *error = "not a 64-bit ELF cubin";
    return {};
  }
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  for (std::size_t i = 0; i < sections.size(); ++i) {
    if (!readAt(cubin, header.e_shoff + i * sizeof(Elf64_Shdr), &sections[i])) {
      *error = "a section header lies outside the cubin";
      return {};
    }
  }
  if (header.e_shstrndx >= sections.size()) {
    *error = "no section name table";
    return {};
  }
  const Elf64_Shdr& names = sections[header.e_shstrndx];
  for (const Elf64_Shdr& section : sections) {
    if (section.sh_name >= names.sh_size || names.sh_offset + names.sh_size > cubin.size()) continue;
    const char* begin = reinterpret_cast<const char*>(cubin.data() + names.sh_offset + section.sh_name);
    const std::string name(begin, strnlen(begin, names.sh_size - section.sh_name));
    if (name.rfind(".text.", 0) != 0 || section.sh_type != SHT_PROGBITS) continue;
    if (section.sh_offset + section.sh_size > cubin.size() || section.sh_size % kInstructionBytes != 0) {
      *error = "section " + name + " is not a whole number of 16-byte instructions inside the cubin";
      return {};
    }
    std::vector<std::uint32_t>& opcodes = functions[name.substr(6)];
    for (std::uint64_t at = section.sh_offset; at < section.sh_offset + section.sh_size;
         at += kInstructionBytes) {
      std::uint64_t word = 0;
      readAt(cubin, at, &word);
      const bool withoutBase = ((word >> kRaShift) & kRZ) == kRZ;
      opcodes.push_back(static_cast<std::uint32_t>(word & kOpcodeMask) |
                        (withoutBase ? kSassWithoutBase : 0));
    }
  }
  return functions;
}

bool compileCubin(const std::string& ptx, const std::string& options, std::vector<std::uint8_t>* cubin,
                  std::string* log) {
  static std::atomic<unsigned> counter{0};
  const fs::path dir = fs::temp_directory_path() /
                       ("agileos-sass-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::error_code ignored;
  fs::create_directories(dir, ignored);
  const fs::path input = dir / "input.ptx", output = dir / "output.cubin", messages = dir / "ptxas.log";
  std::ofstream(input, std::ios::binary) << ptx;
  // ptxas spawned directly, its output into a file, and waited for through EINTR: the
  // fuzzer's SIGALRM timer interrupts reads from a pipe, and ptxas writing into a pipe
  // closed early dies of SIGPIPE.
  std::vector<std::string> args = {AGILEOS_PTXAS, "-arch=sm_90"};
  std::istringstream words(options);
  for (std::string word; words >> word;) args.push_back(word);
  args.insert(args.end(), {input.string(), "-o", output.string()});
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, messages.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = -1;
  const int spawned = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  int status = -1;
  if (spawned != 0) {
    *log += "could not run " + args[0] + ": " + std::strerror(spawned) + "\n";
  } else {
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    std::ifstream in(messages, std::ios::binary);
    log->append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (WIFSIGNALED(status)) *log += "ptxas killed by signal " + std::to_string(WTERMSIG(status)) + "\n";
  }
  const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (ok) {
    std::ifstream in(output, std::ios::binary);
    cubin->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  fs::remove_all(dir, ignored);
  return ok;
}

SassCount countGlobalMemoryInstructions(const std::string& ptx, const std::string& options) {
  SassCount count;
  std::vector<std::uint8_t> cubin;
  if (!compileCubin(ptx, options, &cubin, &count.log)) return count;
  std::string error;
  const auto functions = sassOpcodes(cubin, &error);
  if (!error.empty()) {
    count.log += error;
    return count;
  }
  count.assembled = true;
  const SassCalibration& c = calibration();
  for (const auto& [name, opcodes] : functions) {
    for (std::uint32_t key : opcodes) {
      ++count.instructions;
      const std::uint32_t opcode = key & kOpcodeMask;
      if (c.memoryOpcodes.count(opcode) == 0) continue;
      if ((key & kSassWithoutBase) != 0 && c.ambiguousWithoutBase.count(opcode) != 0) continue;
      ++count.memory;
      ++count.memoryByOpcode[opcode];
    }
  }
  return count;
}

namespace {

// What ptxas may compile into generic instructions beyond the guard's accesses: an atomic on
// a generic address (the atomic, and for a local address a generic load and store: two
// more) and an access to .shared::cluster (a generic load, store or atomic into the
// shared window: one, as the guard does not count it).
void countAllowance(const std::vector<Statement>& statements, std::size_t* count) {
  for (const Statement& s : statements) {
    if (s.kind == Statement::Kind::kBlock) countAllowance(s.block, count);
    if (s.kind != Statement::Kind::kInstruction) continue;
    const Instruction& instruction = s.instruction;
    const bool atomic = instruction.opcode == "atom" || instruction.opcode == "red";
    const bool cluster = instruction.hasModifier(".shared::cluster");
    for (const MemoryAccess& access : classifyMemory(instruction).accesses) {
      if (atomic && access.space == StateSpace::kGeneric) *count += 2;
      if (cluster && access.space == StateSpace::kShared) *count += 1;
      // A wmma fragment access (one checked access over its whole span) compiles to one load or
      // store per element a thread holds at most: per 32-bit fragment register, one per 8- or
      // 16-bit element packed in it (the elements of one register may come from different rows).
      if (access.extent && access.mayReachGlobal()) {
        const Operand& fragment = instruction.operands[access.addressOperand == 0 ? 1 : 0];
        std::uint32_t element = 0;
        for (const std::string& m : instruction.modifiers) {
          if (const std::uint32_t b = typeBytes(m); b != 0) element = b;
        }
        const std::size_t perRegister = element != 0 && element < 4 ? 4 / element : 1;
        const std::size_t registers = fragment.kind == Operand::Kind::kVector ? fragment.elements.size() : 1;
        *count += registers * perRegister - 1;
      }
    }
  }
}

// Accesses that may reach global memory (what the guard checks), and their allowance.
void countAccesses(const std::vector<Statement>& statements, std::size_t* count) {
  for (const Statement& s : statements) {
    if (s.kind == Statement::Kind::kBlock) countAccesses(s.block, count);
    if (s.kind != Statement::Kind::kInstruction) continue;
    for (const MemoryAccess& access : classifyMemory(s.instruction).accesses) {
      if (access.mayReachGlobal()) ++*count;
    }
  }
  countAllowance(statements, count);
}

// The direct callees of a body, one entry per call site.
void collectCalls(const std::vector<Statement>& statements, std::vector<std::string>* callees) {
  for (const Statement& s : statements) {
    if (s.kind == Statement::Kind::kBlock) collectCalls(s.block, callees);
    if (s.kind != Statement::Kind::kInstruction || s.instruction.opcode != "call") continue;
    for (const Operand& operand : s.instruction.operands) {
      if (operand.kind == Operand::Kind::kSymbol) {
        callees->push_back(operand.tokens[0].text);
        break;
      }
    }
  }
}

// ptxas inlines device functions (at -O0 too: a 5-store function called from two kernels
// compiles to 10 stores), and the count is per module: each direct call site may hold a copy
// of its callee's accesses (and its callees'). Copies of f = sum over the call sites of f of
// the copies of the caller (a kernel or an uncalled function: 1). A call within a cycle
// (recursion) is counted as one more copy: ptxas cannot inline a recursion away.
std::size_t inlinedCopiesAllowance(const Module& module) {
  std::map<std::string, std::size_t> accesses;
  std::map<std::string, std::vector<std::string>> callers;  // callee -> one caller per call site
  std::set<std::string> functions;
  for (const TopLevel& item : module.items) {
    if (item.kind != TopLevel::Kind::kFunction || !item.function.hasBody) continue;
    const Function& f = item.function;
    functions.insert(f.name);
    countAccesses(f.body, &accesses[f.name]);
    std::vector<std::string> callees;
    collectCalls(f.body, &callees);
    for (const std::string& callee : callees) callers[callee].push_back(f.name);
  }
  std::map<std::string, std::size_t> copies;
  std::set<std::string> active;
  std::function<std::size_t(const std::string&)> copiesOf = [&](const std::string& name) -> std::size_t {
    if (const auto it = copies.find(name); it != copies.end()) return it->second;
    if (!active.insert(name).second) return 1;  // a cycle: one more copy
    std::size_t n = callers[name].empty() ? 1 : 0;
    for (const std::string& caller : callers[name]) n += copiesOf(caller);
    active.erase(name);
    copies[name] = n;
    return n;
  };
  std::size_t extra = 0;
  for (const std::string& name : functions) {
    const std::size_t n = copiesOf(name);
    // One copy is the function's own body, which the checked accesses already count. The
    // slack where ptxas did not inline a callee could hide an access in its callers; it
    // only arises in modules with direct calls.
    extra += accesses[name] * (n - 1);
  }
  return extra;
}

}  // namespace

std::size_t memoryInstructionBound(const Module& module, std::size_t checkedAccesses,
                                   std::size_t counterUpdates) {
  std::size_t allowance = 0;
  for (const TopLevel& item : module.items) {
    if (item.kind == TopLevel::Kind::kFunction) countAllowance(item.function.body, &allowance);
  }
  return checkedAccesses + counterUpdates + allowance + inlinedCopiesAllowance(module);
}

std::vector<std::string> compareWithPtxas(const std::string& text, const Module& parsed,
                                          const GuardResult& guarded, bool rewriteMustAssemble,
                                          bool* rawAssembled) {
  std::vector<std::string> problems;
  const SassCount raw = countGlobalMemoryInstructions(text);
  *rawAssembled = raw.assembled;
  const std::size_t rawBound = memoryInstructionBound(parsed, guarded.checkedAccesses, 0);
  if (raw.assembled && raw.memory > rawBound) {
    problems.push_back("ptxas compiles " + std::to_string(raw.memory) +
                       " global/generic memory instructions from the text, the guard checked " +
                       std::to_string(guarded.checkedAccesses) + " accesses in it (bound " +
                       std::to_string(rawBound) + ")");
  }
  const SassCount rewrite = countGlobalMemoryInstructions(print(guarded.module));
  const std::size_t bound = memoryInstructionBound(guarded.module, guarded.checkedAccesses, 0);
  if (!rewrite.assembled) {
    if (raw.assembled || rewriteMustAssemble)
      problems.push_back("ptxas refuses the printed rewrite: " + rewrite.log.substr(0, 300));
  } else if (rewrite.memory > bound) {
    problems.push_back("the printed rewrite has " + std::to_string(rewrite.memory) +
                       " global/generic memory instructions, the guard accounts for " +
                       std::to_string(bound));
  }
  return problems;
}

}  // namespace agileos::ptx::testing
