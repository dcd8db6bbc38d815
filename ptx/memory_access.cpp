#include "ptx/memory_access.h"

#include <cstdio>
#include <iterator>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "ptx/parser.h"

namespace agileos::ptx {
namespace {

using Verdict = MemoryClassification::Verdict;

// Opcodes that never access memory through an address operand. Anything not here and not
// classified below is refused (fail closed).
constexpr std::string_view kNoMemoryOpcodes[] = {"abs",
                                                 "activemask",
                                                 "add",
                                                 "addc",
                                                 "and",
                                                 "bar",
                                                 "barrier",
                                                 "bfe",
                                                 "bfi",
                                                 "bfind",
                                                 "bmsk",
                                                 "bra",
                                                 "brev",
                                                 "brkpt",
                                                 "brx",
                                                 "call",
                                                 "clz",
                                                 "cnot",
                                                 "copysign",
                                                 "cos",
                                                 "cvt",
                                                 "cvta",
                                                 "div",
                                                 "dp2a",
                                                 "dp4a",
                                                 "elect",
                                                 "ex2",
                                                 "exit",
                                                 "fence",
                                                 "fma",
                                                 "fns",
                                                 "getctarank",
                                                 "isspacep",
                                                 "lg2",
                                                 "lop3",
                                                 "mad",
                                                 "mad24",
                                                 "madc",
                                                 "match",
                                                 "max",
                                                 "membar",
                                                 "min",
                                                 "mma",
                                                 "mov",
                                                 "mul",
                                                 "mul24",
                                                 "nanosleep",
                                                 "neg",
                                                 "not",
                                                 "or",
                                                 "pmevent",
                                                 "popc",
                                                 "prmt",
                                                 "rcp",
                                                 "redux",
                                                 "rem",
                                                 "ret",
                                                 "rsqrt",
                                                 "sad",
                                                 "selp",
                                                 "set",
                                                 "setp",
                                                 "shf",
                                                 "shfl",
                                                 "shl",
                                                 "shr",
                                                 "sin",
                                                 "slct",
                                                 "sqrt",
                                                 "sub",
                                                 "subc",
                                                 "tanh",
                                                 "testp",
                                                 "trap",
                                                 "vabsdiff",
                                                 "vabsdiff2",
                                                 "vabsdiff4",
                                                 "vadd",
                                                 "vadd2",
                                                 "vadd4",
                                                 "vavrg2",
                                                 "vavrg4",
                                                 "vmad",
                                                 "vmax",
                                                 "vmax2",
                                                 "vmax4",
                                                 "vmin",
                                                 "vmin2",
                                                 "vmin4",
                                                 "vote",
                                                 "vset",
                                                 "vset2",
                                                 "vset4",
                                                 "vshl",
                                                 "vshr",
                                                 "vsub",
                                                 "vsub2",
                                                 "vsub4",
                                                 "xor",
                                                 "createpolicy",
                                                 "griddepcontrol",
                                                 "setmaxnreg",
                                                 "mapa",
                                                 "movmatrix",
                                                 "szext"};

bool knownNotToAccessMemory(const std::string& opcode) {
  // A hash set: every instruction of every module is looked up here, several times per load.
  static const std::unordered_set<std::string_view> known(std::begin(kNoMemoryOpcodes),
                                                          std::end(kNoMemoryOpcodes));
  return known.count(opcode) != 0;
}

bool startsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// The state space a modifier names (".shared::cta" names shared), if it names one.
std::optional<StateSpace> spaceNamedBy(const std::string& modifier) {
  const std::string_view m = modifier;
  if (m == ".global") return StateSpace::kGlobal;
  if (m == ".shared" || startsWith(m, ".shared::")) return StateSpace::kShared;
  if (m == ".local") return StateSpace::kLocal;
  if (m == ".param" || startsWith(m, ".param::")) return StateSpace::kParam;
  if (m == ".const") return StateSpace::kConst;
  return std::nullopt;
}

// The state space among the modifiers (kGeneric if none names one); *ambiguous when two differ.
StateSpace spaceOf(const Instruction& instruction, bool* ambiguous) {
  std::optional<StateSpace> found;
  *ambiguous = false;
  for (const std::string& m : instruction.modifiers) {
    const std::optional<StateSpace> space = spaceNamedBy(m);
    if (!space) continue;
    if (found && *found != *space) *ambiguous = true;
    found = space;
  }
  return found.value_or(StateSpace::kGeneric);
}

bool namesClusterSharedMemory(const Instruction& instruction) {
  for (const std::string& m : instruction.modifiers) {
    if (std::string_view(m) == ".shared::cluster") return true;
  }
  return false;
}

std::uint32_t vectorLength(const Instruction& instruction) {
  for (const std::string& modifier : instruction.modifiers) {
    const std::string_view m = modifier;
    if (m == ".v2") return 2;
    if (m == ".v4") return 4;
    if (m == ".v8") return 8;
  }
  return 1;
}

// The element type's size: the last type modifier (".global.v4.f32" -> 4).
std::uint32_t elementBytes(const Instruction& instruction) {
  std::uint32_t bytes = 0;
  for (const std::string& m : instruction.modifiers) {
    if (const std::uint32_t b = typeBytes(m); b != 0) bytes = b;
  }
  return bytes;
}

MemoryClassification unsupported(std::string reason) {
  MemoryClassification c;
  c.verdict = Verdict::kUnsupported;
  c.reason = std::move(reason);
  return c;
}

// One access through operand `index`, which must be an address operand.
MemoryClassification oneAccess(const Instruction& instruction, std::size_t index, StateSpace space,
                               std::uint32_t bytes, bool reads, bool writes) {
  if (index >= instruction.operands.size() || instruction.operands[index].kind != Operand::Kind::kAddress) {
    return unsupported("'" + instruction.opcode + "' without an address operand where one was expected");
  }
  if (bytes == 0) return unsupported("'" + instruction.opcode + "' of unknown width");
  MemoryClassification c;
  c.verdict = Verdict::kAccess;
  c.accesses.push_back(MemoryAccess{index, space, bytes, std::nullopt, reads, writes});
  return c;
}

}  // namespace

const char* toString(StateSpace space) {
  switch (space) {
    case StateSpace::kGeneric:
      return "generic";
    case StateSpace::kGlobal:
      return "global";
    case StateSpace::kShared:
      return "shared";
    case StateSpace::kLocal:
      return "local";
    case StateSpace::kParam:
      return "param";
    case StateSpace::kConst:
      return "const";
  }
  return "unknown";
}

std::uint32_t typeBytes(const std::string& modifier) {
  static const std::unordered_map<std::string_view, std::uint32_t> kBytes = {
      {".b8", 1},   {".u8", 1},  {".s8", 1},  {".e4m3", 1}, {".e5m2", 1},   {".b16", 2},
      {".u16", 2},  {".s16", 2}, {".f16", 2}, {".bf16", 2}, {".e4m3x2", 2}, {".e5m2x2", 2},
      {".b32", 4},  {".u32", 4}, {".s32", 4}, {".f32", 4},  {".f16x2", 4},  {".bf16x2", 4},
      {".tf32", 4}, {".b64", 8}, {".u64", 8}, {".s64", 8},  {".f64", 8},    {".b128", 16}};
  const auto it = kBytes.find(modifier);
  return it == kBytes.end() ? 0 : it->second;
}

namespace {

// Distributed shared memory through a computed address: ptxas compiles ld/st/atom/red/mbarrier on
// .shared::cluster into generic accesses (found by the SASS oracle of the layout tests), so an
// address outside the cluster's shared window is not confined to shared memory, and the guard
// cannot bound it without the window's base. Only a shared variable's own name (plus an offset)
// is taken; anything else is refused until the guard can check it.
bool clusterSharedThroughComputedAddress(const Instruction& instruction) {
  if (!namesClusterSharedMemory(instruction)) return false;
  for (const Operand& operand : instruction.operands) {
    if (operand.kind != Operand::Kind::kAddress) continue;
    if (!operand.address || operand.address->base.empty() || operand.address->base[0] == '%') return true;
  }
  return false;
}

// The tensor map operand of a tensor copy: read in place, 128 bytes (ptx/tensor_maps.h proves it
// is a kernel parameter's address).
MemoryAccess tensorMapAccess(std::size_t operand) {
  MemoryAccess access{operand, StateSpace::kParam, 128, std::nullopt, true, false};
  access.tensorMap = true;
  return access;
}

MemoryClassification tensorMapOnly(std::size_t operand) {
  MemoryClassification c;
  c.verdict = Verdict::kAccess;
  c.accesses.push_back(tensorMapAccess(operand));
  return c;
}

// prefetch, prefetchu, applypriority, discard.
MemoryClassification classifyCacheOperation(const Instruction& instruction, StateSpace space) {
  const std::string_view o = instruction.opcode;
  if (instruction.hasModifier(".tensormap")) {
    // prefetch.tensormap [a]: only the generic form nvcc emits for a __grid_constant__ map;
    // a map in .const or .global memory (or named by a .param address) is refused.
    if (o != "prefetch" || space != StateSpace::kGeneric || instruction.operands.size() != 1 ||
        instruction.operands[0].kind != Operand::Kind::kAddress) {
      return unsupported("'" + instruction.opcode +
                         ".tensormap' other than a generic prefetch of a kernel parameter's tensor map");
    }
    return tensorMapOnly(0);
  }
  // A prefetch or cache-policy change reads no data, but names an address: checked like a
  // one-byte access, so it cannot probe protected ranges. discard destroys a line's contents and
  // applypriority changes a line's eviction: their width is the L2 line (128 bytes), given as a
  // modifier.
  const std::uint32_t bytes = o == "discard" || o == "applypriority" ? 128 : 1;
  return oneAccess(instruction, 0, space, bytes, o != "discard", o == "discard");
}

// cp.async.bulk.tensor.Nd.dst.src... [dstMem], [tensorMap, {coords}], [mbar]... (global to shared),
// cp{.reduce}.async.bulk.tensor.Nd.global.shared::cta... [tensorMap, {coords}], [srcMem]... (shared
// to global), cp.async.bulk.prefetch.tensor.Nd.L2.global... [tensorMap, {coords}]...: global memory
// only through the map (the address operand with a comma); every other address is shared memory,
// by the instruction's shared state space (the copy engine addresses the cluster's shared window
// with it, as for cp.async.bulk; its width is the box's).
MemoryClassification classifyTensorCopy(const Instruction& instruction) {
  bool global = false;
  std::size_t shared = 0;
  for (const std::string& m : instruction.modifiers) {
    const std::optional<StateSpace> named = spaceNamedBy(m);
    if (!named) continue;
    if (*named == StateSpace::kGlobal) {
      global = true;
    } else if (*named == StateSpace::kShared) {
      ++shared;
    } else {
      return unsupported("a tensor copy naming the state space " + m);
    }
  }
  const bool prefetch = instruction.hasModifier(".prefetch");
  if (!global || shared != (prefetch ? 0u : 1u))
    return unsupported("a tensor copy without exactly global memory and shared memory");
  MemoryClassification c;
  c.verdict = Verdict::kAccess;
  std::size_t maps = 0;
  bool mapFirst = false;
  for (std::size_t index = 0; index < instruction.operands.size(); ++index) {
    const Operand& operand = instruction.operands[index];
    if (operand.kind != Operand::Kind::kAddress) continue;
    if (!operand.elements.empty()) {
      if (maps++ == 0) mapFirst = c.accesses.empty();
      c.accesses.push_back(tensorMapAccess(index));
      continue;
    }
    if (prefetch) return unsupported("a tensor prefetch with a second address");
    // Written by a load (its destination comes first), read by a store or reduction.
    c.accesses.push_back(MemoryAccess{index, StateSpace::kShared, 0, std::nullopt, mapFirst, !mapFirst});
  }
  if (maps != 1) return unsupported("a tensor copy without exactly one [tensorMap, {coordinates}] operand");
  return c;
}

// cp.async.bulk.dst.src... [dstMem], [srcMem], size, ...: both addresses over `size` bytes.
MemoryClassification classifyBulkCopy(const Instruction& instruction) {
  MemoryClassification c;
  c.verdict = Verdict::kAccess;
  for (std::size_t index : {std::size_t{0}, std::size_t{1}}) {
    if (index >= instruction.operands.size() || instruction.operands[index].kind != Operand::Kind::kAddress) {
      return unsupported("cp.async.bulk without its two addresses");
    }
  }
  // The spaces come in order: destination first, then source (".shared::cluster.global").
  std::vector<StateSpace> spaces;
  for (const std::string& m : instruction.modifiers) {
    const std::optional<StateSpace> named = spaceNamedBy(m);
    if (named == StateSpace::kGlobal || named == StateSpace::kShared) spaces.push_back(*named);
  }
  if (spaces.size() != 2) return unsupported("cp.async.bulk without a destination and a source space");
  c.accesses.push_back(MemoryAccess{0, spaces[0], 0, std::size_t{2}, false, true});
  c.accesses.push_back(MemoryAccess{1, spaces[1], 0, std::size_t{2}, true, false});
  return c;
}

// cp.async.ca|cg.shared{::cta}.global [dst], [src], cp-size{, src-size}{, cache-policy}
MemoryClassification classifySmallAsyncCopy(const Instruction& instruction) {
  if (instruction.operands.size() < 3 || instruction.operands[2].kind != Operand::Kind::kImmediate) {
    return unsupported("cp.async without an immediate copy size");
  }
  const std::string& sizeText = instruction.operands[2].tokens[0].text;
  const std::uint32_t bytes = sizeText == "4" ? 4 : sizeText == "8" ? 8 : sizeText == "16" ? 16 : 0;
  if (bytes == 0) return unsupported("cp.async with a copy size of " + sizeText);
  MemoryClassification c = oneAccess(instruction, 1, StateSpace::kGlobal, bytes, true, false);
  if (c.verdict == Verdict::kAccess)
    c.accesses.push_back(MemoryAccess{0, StateSpace::kShared, bytes, std::nullopt, false, true});
  return c;
}

// cp.async..., cp.reduce.async...
MemoryClassification classifyCopy(const Instruction& instruction, StateSpace space) {
  const bool reduce = !instruction.modifiers.empty() && instruction.modifiers[0] == ".reduce";
  if (instruction.modifiers.empty() || (instruction.modifiers[0] != ".async" && !reduce) ||
      (reduce && !instruction.hasModifier(".async"))) {
    return unsupported("unknown copy instruction 'cp" +
                       (instruction.modifiers.empty() ? std::string() : instruction.modifiers[0]) + "'");
  }
  if (instruction.hasModifier(".commit_group") || instruction.hasModifier(".wait_group") ||
      instruction.hasModifier(".wait_all")) {
    return {};
  }
  if (instruction.hasModifier(".tensor")) {
    if (!instruction.hasModifier(".bulk")) return unsupported("a tensor copy that is not a bulk copy");
    return classifyTensorCopy(instruction);
  }
  if (instruction.hasModifier(".mbarrier") && !instruction.hasModifier(".bulk")) {
    // cp.async.mbarrier.arrive{.noinc}{.shared{::cta}}.b64 [addr]: an 8-byte barrier object.
    return oneAccess(instruction, 0, space, 8, true, true);
  }
  if (instruction.hasModifier(".bulk") && instruction.hasModifier(".prefetch")) {
    // cp.async.bulk.prefetch.L2.global [srcMem], size
    MemoryClassification c = oneAccess(instruction, 0, StateSpace::kGlobal, 1, true, false);
    if (c.verdict == Verdict::kAccess) c.accesses[0].sizeOperand = 1;
    return c;
  }
  if (instruction.hasModifier(".bulk")) return classifyBulkCopy(instruction);
  return classifySmallAsyncCopy(instruction);
}

// Every mbarrier operation names an 8-byte barrier object; in generic form it may be anywhere.
MemoryClassification classifyBarrier(const Instruction& instruction, StateSpace space) {
  for (std::size_t index = 0; index < instruction.operands.size(); ++index) {
    if (instruction.operands[index].kind == Operand::Kind::kAddress) {
      return oneAccess(instruction, index, space, 8, true, true);
    }
  }
  return {};
}

// wmma.load.{a,b,c}.sync.aligned.layout.shape{.ss}.type r, [p]{, stride} and
// wmma.store.d.sync.aligned.layout.shape{.ss}.type [p], r{, stride}: a fragment of `rows` rows
// (columns, for .col) of `cols` elements each, `stride` elements apart (default: packed, stride =
// cols). The span from p is ((rows - 1) * stride + cols) * element bytes.
MemoryClassification classifyMatrixAccess(const Instruction& instruction, StateSpace space) {
  const bool load = instruction.hasModifier(".load");
  unsigned m = 0, n = 0, k = 0;
  bool row = false, col = false;
  char fragment = 0;
  for (const std::string& modifier : instruction.modifiers) {
    if (std::sscanf(modifier.c_str(), ".m%un%uk%u", &m, &n, &k) == 3) continue;
    if (modifier == ".row") row = true;
    if (modifier == ".col") col = true;
    if (modifier.size() == 2 && modifier[0] == '.' &&
        std::string_view("abcd").find(modifier[1]) != std::string::npos)
      fragment = modifier[1];
  }
  const std::uint32_t element = elementBytes(instruction);
  for (const char* subByte : {".s4", ".u4", ".b1"}) {
    if (instruction.hasModifier(subByte))
      return unsupported("'wmma' of a sub-byte fragment (" + std::string(subByte) + ")");
  }
  if (m == 0 || n == 0 || k == 0 || m > 64 || n > 64 || k > 256 || row == col || element == 0 ||
      (load ? fragment == 'd' || fragment == 0 : fragment != 'd')) {
    return unsupported("'wmma' of a shape, layout, fragment or type the guard does not know");
  }
  // The matrix in memory: A is m x k, B is k x n, C and D are m x n (rows x columns).
  const unsigned height = fragment == 'a' ? m : fragment == 'b' ? k : m;
  const unsigned width = fragment == 'a' ? k : n;
  const std::uint64_t rows = row ? height : width;  // lines a stride apart
  const std::uint64_t cols = row ? width : height;  // elements of one line
  const std::size_t address = load ? 1 : 0;
  MemoryClassification c = oneAccess(instruction, address, space, 1, load, !load);
  if (c.verdict != Verdict::kAccess) return c;
  MemoryAccess::Extent extent;
  if (instruction.operands.size() > 3) return unsupported("'wmma' with more operands than its forms have");
  if (instruction.operands.size() == 3) {
    const Operand& stride = instruction.operands[2];
    if (stride.kind == Operand::Kind::kRegister) {
      extent.strideOperand = 2;
      extent.bytesPerStride = (rows - 1) * element;
      extent.constantBytes = cols * element;
    } else if (const std::optional<std::uint64_t> value = immediateValue(stride);
               stride.kind == Operand::Kind::kImmediate && value && *value <= 0xFFFFFFFFull) {
      extent.constantBytes = ((rows - 1) * *value + cols) * element;
    } else {
      return unsupported("'wmma' with a stride that is neither a register nor a 32-bit immediate");
    }
  } else {
    extent.constantBytes = rows * cols * element;
  }
  c.accesses[0].bytes = 0;
  c.accesses[0].extent = extent;
  return c;
}

// Texture and surface instructions (tex, tld4, txq, suld, sust, sured, suq) name memory only
// through an object handle: a 64-bit value the hardware reads as an index into the context's
// texture and surface descriptor tables, whatever the kernel computed it from. The memory a
// handle reaches is therefore what the descriptors of the context describe, not what the
// instruction's operands say; the worker creates every descriptor a client can name from a
// resource it validated (docs/security-model.md, "Texture and surface objects"). Admitted only
// in the form with the handle first in the address operand, as a register or a symbol (a
// parameter or a .texref/.surfref/.samplerref variable); there is no generic address to check.
MemoryClassification classifyTextureOrSurface(const Instruction& instruction) {
  const Operand* address = nullptr;
  for (const Operand& operand : instruction.operands) {
    if (operand.kind == Operand::Kind::kAddress) {
      if (address != nullptr) return unsupported("'" + instruction.opcode + "' with two address operands");
      address = &operand;
    }
  }
  if (address == nullptr) return unsupported("'" + instruction.opcode + "' without an object operand");
  const Operand* handle = address->elements.empty() ? nullptr : &address->elements.front();
  // txq and suq take the object alone: [%rd1] or [name].
  const bool simpleHandle = address->elements.empty() && address->address.has_value() &&
                            !address->address->base.empty() && address->address->offset == 0;
  if (!simpleHandle && (handle == nullptr || (handle->kind != Operand::Kind::kRegister &&
                                              handle->kind != Operand::Kind::kSymbol))) {
    return unsupported("'" + instruction.opcode + "' whose object is neither a register nor a symbol");
  }
  return {};  // reaches only what the context's descriptors describe
}

// Matrix, texture and surface instructions: what the guard lets through without a check, and
// what it cannot bound.
MemoryClassification classifyMatrixOrTexture(const Instruction& instruction, StateSpace space) {
  const std::string_view o = instruction.opcode;
  if (o == "ldmatrix" || o == "stmatrix") {
    if (space != StateSpace::kShared)
      return unsupported("'" + instruction.opcode + "' outside shared memory");
    return {};  // shared memory only: cannot reach global memory
  }
  if (o == "wmma" && !instruction.hasModifier(".load") && !instruction.hasModifier(".store")) return {};
  if (o == "wmma") return classifyMatrixAccess(instruction, space);
  // wgmma.mma_async reads its matrices from registers or through matrix descriptors, whose
  // start-address field is an offset into the CTA's shared memory (14 bits of 16-byte units):
  // a descriptor cannot name global memory, so the instruction reaches no global memory.
  if (o == "wgmma") return {};
  if (o == "tcgen05") return unsupported("'tcgen05' accesses tensor memory through descriptors");
  if (o == "istypep") return {};  // tests a handle's kind; touches no memory
  return classifyTextureOrSurface(instruction);
}

bool isMatrixOrTexture(std::string_view o) {
  return o == "ldmatrix" || o == "stmatrix" || o == "wmma" || o == "wgmma" || o == "tcgen05" || o == "tex" ||
         o == "tld4" || o == "txq" || o == "suld" || o == "sust" || o == "sured" || o == "suq" ||
         o == "istypep";
}

}  // namespace

MemoryClassification classifyMemory(const Instruction& instruction) {
  const std::string& op = instruction.opcode;
  // Comparisons through a view: its operator== checks the length before the bytes (the
  // guard classifies every instruction of every module, several times).
  const std::string_view o = op;
  bool ambiguous = false;
  const StateSpace space = spaceOf(instruction, &ambiguous);
  if (o == "tensormap")
    return unsupported("'" + op + (instruction.modifiers.empty() ? std::string() : instruction.modifiers[0]) +
                       "' builds or changes a tensor map in the kernel (maps come only from the API)");
  // Only copies name two spaces (destination and source); elsewhere it is malformed.
  if (ambiguous && o != "cp") return unsupported("'" + op + "' names two state spaces");
  const std::uint32_t width = elementBytes(instruction) * vectorLength(instruction);

  if ((o == "ld" || o == "ldu" || o == "st" || o == "atom" || o == "red" || o == "mbarrier") &&
      clusterSharedThroughComputedAddress(instruction)) {
    return unsupported("'" + op +
                       ".shared::cluster' through a computed address (ptxas makes it a generic access, "
                       "which the guard cannot bound yet)");
  }
  if (o == "ld" || o == "ldu") return oneAccess(instruction, 1, space, width, true, false);
  if (o == "st") return oneAccess(instruction, 0, space, width, false, true);
  // atom{.space}.op.type d, [a], b{, c}: reads and writes [a].
  if (o == "atom") return oneAccess(instruction, 1, space, width, true, true);
  if (o == "red") return oneAccess(instruction, 0, space, width, true, true);
  if (o == "prefetch" || o == "prefetchu" || o == "applypriority" || o == "discard")
    return classifyCacheOperation(instruction, space);
  if (o == "cp") return classifyCopy(instruction, space);
  if (o == "mbarrier") return classifyBarrier(instruction, space);
  if (o == "multimem") return unsupported("multimem accesses memory of several GPUs through one address");
  if (isMatrixOrTexture(o)) return classifyMatrixOrTexture(instruction, space);
  if (o == "alloca" || o == "stacksave" || o == "stackrestore") return {};  // the thread's own stack
  if (knownNotToAccessMemory(op)) return {};
  return unsupported("unknown opcode '" + op + "'");
}

}  // namespace agileos::ptx
