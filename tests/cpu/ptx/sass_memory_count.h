// The ptxas oracle of the guard's differential tests: how many instructions that can
// reach global memory ptxas actually emitted for a PTX text.
//
// The guard (ptx/guard.h) and ptxas read the same text with two different front ends. If
// they disagree about what the text says (issue 13: a newline that ends a directive for
// the guard's lexer is plain whitespace for ptxas), code reaches the GPU that the guard
// never saw. The oracle asks ptxas itself: it assembles the text the guard emitted into
// a cubin and counts, in the machine code, the instructions that access global or
// generic memory. Every such instruction must come from an access the guard checked or
// from the guard's own hit counter; one more means ptxas compiled an access the guard
// did not see.
//
// There is no nvdisasm or cuobjdump on the machines that run these tests, so the oracle
// learns the opcodes itself (calibrate()), from ptxas alone:
//   - Hopper (sm_90) SASS instructions are 16 bytes; bits 0..8 of the first 64-bit word are
//     the opcode, bits 9..11 its operand form (e.g. 0x981 LDG, 0x980 LD, 0x986 STG, 0x388
//     STS, 0x202/0x802/0xc02 MOV from a register, an immediate, a constant; a generic ST
//     is 0x985 with a memory descriptor and 0x385 without). The oracle keys on bits 0..8,
//     so that no operand form of a learned opcode escapes the count; the calibration below
//     shows that this key separates the memory instructions from everything else.
//   - For every kind of memory instruction the guard must check (ld/st global and generic,
//     .nc, .volatile, acquire/release, vectors, atom and red of several operations and
//     types, cp.async, prefetch, discard, applypriority) and for two address forms (a
//     register and a global symbol, each with an offset), it builds kernels with n = 1, 2
//     and 3 copies of the access, each beside a control kernel that is the same code with
//     the access in shared memory (or left out, where no shared form exists). Loaded values
//     are consumed, so nothing is dead.
//   - An opcode is the kind's memory opcode if, for each n, the kernel has exactly n more
//     of it than its control, and it never occurs in any control kernel (which access no
//     global or generic memory). Scaling with n removes what is emitted once per kernel
//     (the memory descriptor, padding); the controls remove address arithmetic and the
//     consumers. Calibration fails unless every kind yields exactly one opcode.
//   - One opcode serves two instructions: CCTL (0x98f) is both a prefetch/discard of an
//     address and the address-less L1 invalidation that acquire semantics emit (a control
//     has it). Opcodes are therefore learned together with one more bit: whether the first
//     source register field (bits 24..31, the base of an address) is RZ. The invalidation
//     has RZ, the prefetch a register; an opcode whose RZ form occurs in a control is not
//     counted in that form (ambiguousWithoutBase), every other form of a learned opcode is
//     (an LDG whose base ptxas folded to RZ+constant still counts).
//   - The learned set is the union. The calibration runs at -O0 and at -O3 and must learn
//     the same opcode for each kind at both. Absolute addresses ([imm]) need no form of
//     their own: ptxas refuses them outside .local.
// Counting is done at -O0 by default (countGlobalMemoryInstructions): without
// optimisation ptxas neither removes nor duplicates (unrolling) memory instructions, so
// the count is close to the PTX's, which makes the bound tight; debug (-G) PTX cannot be
// compiled otherwise anyway.
//
// What the bound can and cannot see: an access that the guard did not check but that
// ptxas compiled raises the count above (checked accesses + counter updates) unless
// ptxas removed as many other accesses, which -O0 does not do. An access ptxas compiled
// into a non-memory instruction, or a memory kind no calibration kernel covers (tensor
// copies, bulk copies, texture/surface: all refused by the guard), is not counted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ptx/ast.h"
#include "ptx/guard.h"

namespace agileos::ptx::testing {

// sassOpcodes() sets this bit above the 9-bit opcode when the instruction's first source
// register field (bits 24..31, an access's base address) is RZ.
inline constexpr std::uint32_t kSassWithoutBase = 0x1000;

struct SassCalibration {
  bool ok = false;
  std::string error;                                // why calibration failed, when !ok
  std::set<std::uint32_t> memoryOpcodes;            // 9-bit opcodes that access global/generic memory
  std::set<std::uint32_t> ambiguousWithoutBase;     // of these, the ones a control also has with RZ
  std::map<std::string, std::uint32_t> kindOpcode;  // reference kind ("ld.global reg") -> opcode
};

// The calibration: computed once per process (ptxas on one generated module, about two
// seconds) or read from the temporary directory, where a previous process left it under
// a name made of the calibration module's text and ptxas's path, size and time.
const SassCalibration& calibration();
// A fresh calibration, not cached.
SassCalibration calibrateNow();

// The 9-bit opcode of every instruction of every .text.<function> section of a cubin,
// with kSassWithoutBase where its first source register is RZ, per function name; empty
// with *error set when the bytes are not a 64-bit ELF.
std::map<std::string, std::vector<std::uint32_t>> sassOpcodes(const std::vector<std::uint8_t>& cubin,
                                                              std::string* error);

// Assembles `ptx` with ptxas for sm_90 (`options`, e.g. "-O0") into a cubin.
bool compileCubin(const std::string& ptx, const std::string& options, std::vector<std::uint8_t>* cubin,
                  std::string* log);

struct SassCount {
  bool assembled = false;
  std::string log;               // ptxas output (or the ELF error)
  std::size_t memory = 0;        // instructions with an opcode of calibration().memoryOpcodes
  std::size_t instructions = 0;  // all instructions
  std::map<std::uint32_t, std::size_t> memoryByOpcode;
};

// Assembles `ptx` (for sm_90, at -O0 unless `options` says otherwise) and counts its
// global/generic memory instructions. Requires calibration().ok.
SassCount countGlobalMemoryInstructions(const std::string& ptx, const std::string& options = "-O0");

// The most global/generic memory instructions ptxas may compile from `module`, a tree in
// which the guard checked `checkedAccesses` accesses and added `counterUpdates` hit-counter
// updates: one per access and update; two more per atomic on a generic address (ptxas
// compiles it to the atomic and, for a local address, a generic load and store; a 64-bit
// atom.add of the -G corpus shows it); one per .shared::cluster access, which ptxas
// compiles to a generic LD/ST/ATOM into the shared window and the guard, rightly, does not
// check; and, as ptxas inlines device functions into their callers (at -O0 too), one more
// copy of a function's accesses per copy of each direct call site of it. The allowance is
// read from the tree the guard checked, so an access the guard did not see gets none.
std::size_t memoryInstructionBound(const Module& module, std::size_t checkedAccesses,
                                   std::size_t counterUpdates);

// The differential check of one text the guard accepted under trap (`guarded`, from
// `parsed`, the guard's parse of `text`):
//   - raw: if ptxas assembles `text` itself, it compiles no more global/generic memory
//     instructions than memoryInstructionBound(parsed, checked accesses): more means
//     ptxas read a program from the text that the guard did not see;
//   - rewrite: the printed rewrite assembles (when ptxas took the raw text or
//     `rewriteMustAssemble`) and stays within memoryInstructionBound(rewrite, checked
//     accesses) (trap adds no counter updates, so this is the tightest bound).
// Returns one line per disagreement (empty: ptxas and the guard agree); *rawAssembled
// tells whether ptxas took the raw text.
std::vector<std::string> compareWithPtxas(const std::string& text, const Module& parsed,
                                          const GuardResult& guarded, bool rewriteMustAssemble,
                                          bool* rawAssembled);

}  // namespace agileos::ptx::testing
