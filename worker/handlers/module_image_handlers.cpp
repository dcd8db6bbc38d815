// Device code loaded at run time (cudaLibraryLoadData and its kernels): an image with no
// registered names, which may be a fatbin, PTX text or an ELF cubin. Whatever it is, it
// reaches the driver only through loadModuleEntries, the one gate (module_loading.h), so the
// kernel memory guard, the refusal of SASS-only code beside protected state and the sass_only
// policy apply exactly as to registered fatbins.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <span>

#include "ptx/parser.h"
#include "ptx/printer.h"
#include "ptx/separate_compilation.h"
#include "worker/dispatcher.h"
#include "worker/fatbin/relocatable_objects.h"
#include "worker/handlers/module_loading.h"
#include "worker/module_cache/compiled_module_cache.h"

namespace agileos::worker {
namespace {

constexpr std::size_t kMaxImageBytes = 512u << 20;
constexpr std::uint32_t kFatbinMagic = 0xBA55ED50;

bool startsWith(const std::string& bytes, std::string_view prefix) {
  return bytes.size() >= prefix.size() && std::memcmp(bytes.data(), prefix.data(), prefix.size()) == 0;
}

// The architecture of a PTX text's `.target sm_NN[a|f]` directive; false if it has none.
bool ptxTarget(std::string_view ptx, std::uint32_t* sm, fatbin::ArchVariant* variant) {
  const auto at = ptx.find(".target");
  if (at == std::string_view::npos) return false;
  auto pos = ptx.find("sm_", at);
  const auto lineEnd = ptx.find('\n', at);
  if (pos == std::string_view::npos || (lineEnd != std::string_view::npos && pos > lineEnd)) return false;
  pos += 3;
  std::uint32_t value = 0;
  std::size_t digits = 0;
  while (pos < ptx.size() && ptx[pos] >= '0' && ptx[pos] <= '9' && digits < 4) {
    value = value * 10 + static_cast<std::uint32_t>(ptx[pos++] - '0');
    ++digits;
  }
  if (digits == 0) return false;
  *sm = value;
  *variant = fatbin::ArchVariant::kGeneric;
  if (pos < ptx.size() && ptx[pos] == 'a') *variant = fatbin::ArchVariant::kArchSpecific;
  if (pos < ptx.size() && ptx[pos] == 'f') *variant = fatbin::ArchVariant::kFamilySpecific;
  return true;
}

fatbin::Entry ptxEntry(std::string text, std::uint32_t sm, fatbin::ArchVariant variant) {
  fatbin::Entry entry;
  entry.kind = fatbin::EntryKind::kPtx;
  entry.smArch = sm;
  entry.variant = variant;
  entry.payload = std::move(text);
  return entry;
}

// The entries an image offers. An ELF image is SASS for this device as far as the worker can
// tell; one the NVRTC adapter produced comes with its PTX (ImageSubstitutes).
bool imageEntries(CallContext& ctx, const std::string& image, std::vector<fatbin::Entry>* entries,
                  v1::CallReply& reply) {
  std::uint32_t magic = 0;
  if (image.size() >= sizeof magic) std::memcpy(&magic, image.data(), sizeof magic);
  if (magic == kFatbinMagic) {
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(image.data());
    fatbin::ParseResult parsed = fatbin::parse(std::span<const std::uint8_t>(bytes, image.size()), {},
                                               fatbin::PayloadDecoding::kOnDemand);
    if (!parsed.ok) return refuse(reply, cudaErrorInvalidKernelImage, "fatbin refused: " + parsed.error);
    *entries = std::move(parsed.entries);
    return true;
  }
  if (startsWith(image,
                 "\x7f"
                 "ELF")) {
    fatbin::Entry elf;
    elf.kind = fatbin::EntryKind::kElf;
    elf.smArch = deviceSm(ctx);
    elf.payload = image;
    entries->push_back(std::move(elf));
    if (auto ptx = ctx.session.imageSubstitutes.find(CompiledModuleCache::keyOf({"image", image}))) {
      std::uint32_t sm = 0;
      fatbin::ArchVariant variant{};
      if (ptxTarget(*ptx, &sm, &variant)) entries->push_back(ptxEntry(std::move(*ptx), sm, variant));
    }
    return true;
  }
  // PTX text: up to its first NUL.
  std::string text = image.substr(0, image.find('\0'));
  std::uint32_t sm = 0;
  fatbin::ArchVariant variant{};
  if (text.find(".version") == std::string::npos || !ptxTarget(text, &sm, &variant)) {
    return refuse(reply, cudaErrorInvalidKernelImage,
                  "image is neither a fatbin, an ELF cubin nor PTX with a .target");
  }
  entries->push_back(ptxEntry(std::move(text), sm, variant));
  return true;
}

// Whether the PTX this image would load from declares __managed__ variables. Only then does a
// client's promise to bind them (ModuleLoadImage.bind_managed_variables) send the image down the
// PTX path of the rewrite; any other image loads as it did (SASS preferred: the math libraries'
// SASS-only fatbins, and JIT compiles avoided). A false positive (".managed" in a comment) costs a
// JIT compile, never a wrong binding: the rewrite parses the code and binds what it declares.
bool ptxDeclaresManagedVariables(CallContext& ctx, const std::vector<fatbin::Entry>& entries) {
  const fatbin::Entry* ptx =
      fatbin::selectForDevice(entries, deviceSm(ctx), fatbin::SelectionPolicy::kPtxOnly);
  if (ptx == nullptr) return false;
  std::string text, error;
  if (!fatbin::decodedPayload(*ptx, &text, &error)) return false;  // the load reports the payload
  return text.find(".managed") != std::string::npos;
}

// A separately compiled image's managed variables are in its relocatable objects' PTX (its linked
// image has none): where that image has no PTX, whether any object's PTX declares one. The objects
// are parsed only then.
bool objectsDeclareManagedVariables(CallContext& ctx, const std::vector<fatbin::Entry>& entries,
                                    const std::vector<std::string_view>& relocatableObjects) {
  if (relocatableObjects.empty() ||
      fatbin::selectForDevice(entries, deviceSm(ctx), fatbin::SelectionPolicy::kPtxOnly) != nullptr)
    return false;
  const fatbin::RelocatableStandIn standIn = fatbin::relocatableStandIn(relocatableObjects);
  for (const std::vector<fatbin::Entry>& object : standIn.objects)
    if (ptxDeclaresManagedVariables(ctx, object)) return true;
  return false;
}

void moduleLoadImage(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const std::string& image = request.module_load_image().image();
  if (image.empty() || image.size() > kMaxImageBytes) {
    refuse(reply, cudaErrorInvalidValue, "image is empty or larger than 512 MiB");
    return;
  }
  std::vector<fatbin::Entry> entries;
  if (!imageEntries(ctx, image, &entries, reply)) return;
  if (ctx.session.modules.full()) {
    refuse(reply, cudaErrorMemoryAllocation, "the client holds the most modules a client may");
    return;
  }
  ModuleRecord module;
  const std::vector<std::string_view> relocatableObjects =
      relocatableObjectsOf(request.module_load_image().relocatable_objects());
  const bool bindManaged = request.module_load_image().bind_managed_variables() &&
                           (ptxDeclaresManagedVariables(ctx, entries) ||
                            objectsDeclareManagedVariables(ctx, entries, relocatableObjects));
  if (!loadModuleEntries(ctx, entries, &module, reply, bindManaged, relocatableObjects)) return;
  v1::ModuleLoaded* loaded = reply.mutable_module_loaded();
  if (module.managed) {
    for (const ManagedVariableBinding& variable : module.managed->all()) {
      v1::VariableInfo* info = loaded->add_managed_variables();
      info->set_name(variable.name);
      info->set_size(variable.bytes);
    }
  }
  loaded->set_module(ctx.session.modules.insert(std::move(module)));
}

// JitLog (client_api.proto): the JIT's logs for a PTX text that parses, compiled from the parsed
// module printed again (the JIT never reads text the front end did not), the code discarded. A
// text that does not compile is no refusal: its logs say why, as the program's JIT would.
void jitLog(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const std::string& bytes = request.jit_log().ptx();
  if (bytes.empty() || bytes.size() > kMaxImageBytes) {
    refuse(reply, cudaErrorInvalidValue, "PTX text is empty or larger than 512 MiB");
    return;
  }
  ptx::ParseResult parsed = ptx::parse(std::string_view(bytes.c_str()));
  if (!parsed.ok) {
    refuse(reply, cudaErrorInvalidPtx, "the PTX does not parse: " + parsed.error);
    return;
  }
  ptx::raiseVersionForSeparateCompilation(&parsed.module);  // compiled as a load would compile it
  std::string text = ptx::print(parsed.module);
  text.push_back('\0');
  std::string info, error;
  ctx.gpu.jitLogs(text, request.jit_log().verbose(), &info, &error);
  v1::JitLogResult* result = reply.mutable_jit_log_result();
  result->set_info_log(info);
  result->set_error_log(error);
}

// Runs alone within its client (Exclusivity::kInvalidates): it adds to the module's record,
// which a concurrent unload or lookup must not see half-updated.
void moduleGetFunction(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const auto& args = request.module_get_function();
  if (!isSaneSymbolName(args.name())) {
    refuse(reply, cudaErrorInvalidValue, "malformed kernel name");
    return;
  }
  auto module = ctx.session.modules.find(args.module());
  if (!module) {
    refuse(reply, cudaErrorInvalidResourceHandle, "unknown module handle");
    return;
  }
  v1::FunctionInfo* info = reply.mutable_function_info();
  if (!resolveOneFunction(ctx, args.module(), *module, args.name(), info)) {
    refuse(reply, cudaErrorSymbolNotFound, "no kernel named " + args.name().substr(0, 256));
    return;
  }
  ctx.session.modules.replace(args.module(), std::move(*module));
}

// Runs alone within its client (Exclusivity::kInvalidates), like moduleGetFunction. The range is
// registered as the client's module global (MemoryManager::registerModuleGlobal refuses one that
// touches the protected or user ranges) once per variable, and forgotten when the module unloads.
void moduleGetGlobal(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const auto& args = request.module_get_global();
  if (!isSaneSymbolName(args.name())) {
    refuse(reply, cudaErrorInvalidValue, "malformed variable name");
    return;
  }
  auto module = ctx.session.modules.find(args.module());
  if (!module) {
    refuse(reply, cudaErrorInvalidResourceHandle, "unknown module handle");
    return;
  }
  CUdeviceptr dptr = 0;
  std::size_t bytes = 0;
  if (ctx.gpu.moduleGetGlobal(module->module, args.name().c_str(), &dptr, &bytes) != CUDA_SUCCESS) {
    refuse(reply, cudaErrorSymbolNotFound, "no variable named " + args.name().substr(0, 256));
    return;
  }
  const bool registered = std::any_of(module->globals.begin(), module->globals.end(),
                                      [dptr](const GlobalRange& global) { return global.base == dptr; });
  if (!registered) {
    if (!ctx.memory.registerModuleGlobal(ctx.session.id(), dptr, bytes)) {
      refuse(reply, cudaErrorInvalidSymbol, "the variable's range cannot be given to this client");
      return;
    }
    module->globals.push_back({dptr, bytes});
    ctx.session.modules.replace(args.module(), std::move(*module));
  }
  v1::VariableInfo* info = reply.mutable_variable_info();
  info->set_name(args.name());
  info->set_dptr(dptr);
  info->set_size(bytes);
}

}  // namespace

void registerModuleImageHandlers(HandlerRegistry& registry) {
  using Op = v1::CallRequest::OpCase;
  registry.add(Op::kModuleLoadImage, moduleLoadImage);
  registry.add(Op::kJitLog, jitLog);
  registry.add(Op::kModuleGetFunction, moduleGetFunction, Exclusivity::kInvalidates);
  registry.add(Op::kModuleGetGlobal, moduleGetGlobal, Exclusivity::kInvalidates);
}

}  // namespace agileos::worker
