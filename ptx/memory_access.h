// Which memory a PTX instruction touches, and how much of it: the facts the kernel
// memory guard needs about every instruction before it decides what to check.
//
// classifyMemory() sorts an instruction into one of three verdicts:
//   - kNone: it reads and writes no memory through an address (arithmetic, control flow,
//     cvta/isspacep, which only compute addresses, fences, barriers without an address);
//   - kAccess: it accesses memory through the listed address operands, each with its
//     state space (generic included: a generic address may point anywhere) and the full
//     width of the access in bytes (element size x vector length, or the copy size);
//   - kUnsupported: it can reach memory in a way the guard cannot bound soundly (tensor
//     copies whose map is not a tensor-map operand of the forms below, tensormap.* that
//     builds or changes a map, multimem, sub-byte matrix fragments, a texture or
//     surface instruction whose object is not a register or a symbol, an unknown memory
//     opcode); the reason says why. Texture and surface instructions on object handles are
//     kNone: they name no address (classifyTextureOrSurface in memory_access.cpp).
//     The guard refuses such a module rather than load it unchecked.
//   Tensor copies (cp.async.bulk.tensor, cp.reduce.async.bulk.tensor,
//   cp.async.bulk.prefetch.tensor, prefetch.tensormap) are kAccess: their shared-memory
//   operands as shared accesses, and their tensor map as an access with `tensorMap` set. Global
//   memory is reached only through the map, whose bounds are the map's: ptx/tensor_maps.h makes
//   the map a kernel parameter, which the worker compares with the maps it issued at launch.
//
// Opcodes the classifier does not know are kNone only if they are on its list of
// opcodes known not to access memory; anything else is kUnsupported (fail closed, so a
// new PTX memory instruction cannot slip past the guard unnoticed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptx/ast.h"

namespace agileos::ptx {

enum class StateSpace : std::uint8_t {
  kGeneric,  // no space qualifier: the address may be global, shared, local, ...
  kGlobal,
  kShared,  // .shared, .shared::cta, .shared::cluster
  kLocal,
  kParam,
  kConst,
};

const char* toString(StateSpace space);

struct MemoryAccess {
  std::size_t addressOperand = 0;  // index into Instruction::operands (an Operand::Kind::kAddress)
  StateSpace space = StateSpace::kGeneric;
  std::uint32_t bytes = 0;  // full width of the access from the address
  // Set when the width is a run-time operand (bulk copies): its operand index.
  std::optional<std::size_t> sizeOperand;
  bool reads = false;
  bool writes = false;
  // Matrix loads and stores (wmma): the rows (or columns) of the fragment lie a stride apart,
  // so the access spans stride * bytesPerStride + constantBytes bytes from the address, the
  // stride being the run-time value (.u32, in elements) of `strideOperand`; without a register
  // stride the span is constantBytes (the stride folded in). `bytes` is then 0.
  struct Extent {
    std::optional<std::size_t> strideOperand;
    std::uint64_t bytesPerStride = 0;
    std::uint64_t constantBytes = 0;
  };
  std::optional<Extent> extent;
  // The operand names a CUtensorMap (space kParam: ptx/tensor_maps.h admits only a kernel
  // parameter's address). The copy reaches global memory through the map's bounds, not through
  // this address, so the memory guard does not check it; the tensor-map pass does.
  bool tensorMap = false;

  // True if this access can reach global memory, i.e. must be guarded.
  bool mayReachGlobal() const {
    return !tensorMap && (space == StateSpace::kGeneric || space == StateSpace::kGlobal);
  }
};

struct MemoryClassification {
  enum class Verdict : std::uint8_t { kNone, kAccess, kUnsupported };
  Verdict verdict = Verdict::kNone;
  std::vector<MemoryAccess> accesses;  // kAccess
  std::string reason;                  // kUnsupported
};

MemoryClassification classifyMemory(const Instruction& instruction);

// Bytes of one element of a PTX type modifier (".u32" -> 4, ".f16x2" -> 4, ".b128" -> 16), or 0.
std::uint32_t typeBytes(const std::string& modifier);

}  // namespace agileos::ptx
