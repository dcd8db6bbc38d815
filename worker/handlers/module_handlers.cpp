// Modules, functions and launches.
//
// A client's fatbin arrives as untrusted bytes: it is parsed here (never by the
// client), the entry for this device is chosen (SASS of exactly this
// architecture, else the newest PTX at or below it) and loaded into the
// worker's context. Parameter layouts come from the driver
// (cuFuncGetParamInfo), never from the client, and every launch's parameter
// blob must match the layout exactly.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "worker/dispatcher.h"
#include "worker/fatbin/elf_device_footprint.h"
#include "worker/fatbin/elf_image_check.h"
#include "worker/fatbin/fatbin_reader.h"
#include "worker/handlers/context_limits.h"
#include "worker/handlers/guard_handlers.h"
#include "worker/handlers/launch_attributes.h"
#include "worker/handlers/module_loading.h"
#include "worker/handlers/tensor_map_handlers.h"
#include "worker/launch_batch.h"
#include "worker/module_cache/compiled_module_cache.h"
#include "worker/module_guard.h"
#include "worker/session_teardown.h"

namespace agileos::worker {
namespace {

constexpr int kMaxNamesPerModule = 1 << 16;
constexpr std::size_t kMaxNameLength = 4096;
constexpr std::size_t kMaxKernelParams = 4096;         // 32 KiB of parameters at 8 bytes each
constexpr std::uint32_t kMaxParamBufferBytes = 32764;  // CUDA's kernel parameter limit

bool namesAreSane(const google::protobuf::RepeatedPtrField<std::string>& names) {
  if (names.size() > kMaxNamesPerModule) return false;
  return std::all_of(names.begin(), names.end(), isSaneSymbolName);
}

// Reads the parameter layout of `function` from the driver.
bool learnParameters(CallContext& ctx, CUfunction function, FunctionRecord* record) {
  auto params = std::make_shared<std::vector<ParamLayout>>();
  record->params = params;
  for (std::size_t index = 0; index < kMaxKernelParams; ++index) {
    std::size_t offset = 0, size = 0;
    const CUresult result = ctx.gpu.functionParamInfo(function, index, &offset, &size);
    if (result == CUDA_ERROR_INVALID_VALUE) return true;  // past the last parameter
    if (result != CUDA_SUCCESS) return false;
    if (offset > kMaxParamBufferBytes || size > kMaxParamBufferBytes - offset) return false;
    params->push_back({static_cast<std::uint32_t>(offset), static_cast<std::uint32_t>(size)});
    record->paramBufferSize = std::max(record->paramBufferSize, static_cast<std::uint32_t>(offset + size));
  }
  return false;
}

// The offsets of the kernel's tensor-map parameters (the guard named them by index): each must
// be a 128-byte parameter in the driver's layout, or the kernel is not resolved (fail closed).
bool tensorMapOffsetsOf(const ModuleRecord& module, const std::string& name, FunctionRecord* record) {
  for (const ptx::KernelTensorMaps& kernel : module.tensorMaps) {
    if (kernel.kernel != name) continue;
    auto offsets = std::make_shared<std::vector<std::uint32_t>>();
    for (std::uint32_t index : kernel.params) {
      if (index >= record->params->size() || (*record->params)[index].size != kTensorMapBytes) return false;
      offsets->push_back((*record->params)[index].offset);
    }
    record->tensorMapOffsets = std::move(offsets);
  }
  return true;
}

}  // namespace

bool isSaneSymbolName(const std::string& name) {
  return !name.empty() && name.size() <= kMaxNameLength && name.find('\0') == std::string::npos;
}

bool resolveOneFunction(CallContext& ctx, Token moduleToken, ModuleRecord& module, const std::string& name,
                        v1::FunctionInfo* info) {
  info->set_name(name);
  FunctionRecord record;
  record.module = moduleToken;
  int localBytes = 0;
  if (ctx.gpu.moduleGetFunction(module.module, name.c_str(), &record.function) != CUDA_SUCCESS ||
      !learnParameters(ctx, record.function, &record) ||
      ctx.gpu.functionGetAttribute(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, record.function, &localBytes) !=
          CUDA_SUCCESS ||
      localBytes < 0) {
    info->set_error(cudaErrorInvalidDeviceFunction);
    return false;
  }
  record.localBytes = static_cast<std::uint32_t>(localBytes);
  if (!tensorMapOffsetsOf(module, name, &record)) {
    info->set_error(cudaErrorInvalidDeviceFunction);
    return false;
  }
  for (const ParamLayout& param : *record.params) {
    v1::KernelParam* out = info->add_params();
    out->set_offset(param.offset);
    out->set_size(param.size);
  }
  info->set_param_buffer_size(record.paramBufferSize);
  info->set_system_scope_atomics(std::find(module.systemAtomicKernels.begin(),
                                           module.systemAtomicKernels.end(),
                                           name) != module.systemAtomicKernels.end());
  int maxThreads = 0, staticShared = 0;
  if (ctx.gpu.functionGetAttribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, record.function, &maxThreads) ==
          CUDA_SUCCESS &&
      ctx.gpu.functionGetAttribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, record.function, &staticShared) ==
          CUDA_SUCCESS &&
      maxThreads > 0 && staticShared >= 0) {
    info->set_max_threads_per_block(maxThreads);
    info->set_static_shared_bytes(static_cast<std::uint32_t>(staticShared));
  }
  const Token token = ctx.session.functions.insert(std::move(record));
  info->set_token(token);
  module.functions.push_back(token);
  return true;
}

namespace {

void resolveFunctions(CallContext& ctx, Token moduleToken, ModuleRecord& module, const v1::ModuleLoad& args,
                      v1::ModuleLoaded* loaded) {
  for (const std::string& name : args.function_names()) {
    resolveOneFunction(ctx, moduleToken, module, name, loaded->add_functions());
  }
}

void resolveVariables(CallContext& ctx, ModuleRecord& module, const v1::ModuleLoad& args,
                      v1::ModuleLoaded* loaded) {
  for (const std::string& name : args.variable_names()) {
    v1::VariableInfo* info = loaded->add_variables();
    info->set_name(name);
    CUdeviceptr dptr = 0;
    std::size_t bytes = 0;
    if (ctx.gpu.moduleGetGlobal(module.module, name.c_str(), &dptr, &bytes) != CUDA_SUCCESS) {
      info->set_error(cudaErrorInvalidSymbol);
      continue;
    }
    if (!ctx.memory.registerModuleGlobal(ctx.session.id(), dptr, bytes)) {
      info->set_error(cudaErrorInvalidSymbol);
      continue;
    }
    module.globals.push_back({dptr, bytes});
    info->set_dptr(dptr);
    info->set_size(bytes);
  }
}

// Checks the image the driver is about to load and measures the device memory it will take.
// The driver's ELF parser is closed source and gets the image as a pointer without a length, so
// every ELF image (a client's SASS, a cubin from the compiled-module cache) passes
// fatbin::checkElfImage right before it, and its footprint is read from its headers
// (fatbin::elfDeviceFootprint). Anything else is PTX text with its NUL, which only the fake
// backend loads (its compilePtx keeps PTX); the backend sizes it, and the real one refuses.
bool measureImage(CallContext& ctx, const std::string& image, std::uint64_t* footprint,
                  v1::CallReply& reply) {
  if (!std::string_view(image).starts_with(fatbin::kElfMagic))
    return succeeded(ctx, ctx.gpu.textImageFootprint(image, footprint), reply, "module footprint");
  std::string error;
  const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(image.data()),
                                            image.size());
  if (!fatbin::checkElfImage(bytes, &error))
    return refuse(reply, cudaErrorInvalidKernelImage, "ELF image refused: " + error);
  *footprint = fatbin::elfDeviceFootprint(bytes);
  return true;
}

// Loads a prepared image. A PTX image is compiled here (compilePtx), not by cuModuleLoadData, so
// that the driver is handed a cubin whose device footprint (code, constants, global variables)
// is known, and charged to the client's quota, before it loads: a module's globals are device
// memory the driver allocates outside the memory manager (elf_device_footprint.h). A guarded PTX
// image is compiled once per (text, architecture, policy, driver) when the worker has a cache.
// Reached only through loadModuleEntries, after the gate.
bool loadPreparedImage(CallContext& ctx, const PreparedImage& prepared, const GuardConfig& guard,
                       std::uint32_t sm, ModuleRecord* module, v1::CallReply& reply) {
  std::string log;
  const std::string* image = &prepared.image;
  std::optional<std::string> compiled;
  if (!std::string_view(prepared.image).starts_with(fatbin::kElfMagic)) {
    CompiledModuleCache* cache = prepared.guarded && ctx.guard != nullptr ? ctx.guard->cache : nullptr;
    std::string key;
    if (cache != nullptr) {
      key = CompiledModuleCache::keyFor(prepared.image, sm, ptx::toString(guard.ptx.policy),
                                        ctx.gpu.device().driverVersion);
      compiled = cache->find(key);
    }
    if (!compiled) {
      compiled.emplace();
      if (!succeeded(ctx, ctx.gpu.compilePtx(prepared.image, &*compiled, &log), reply, "cuLinkComplete")) {
        reply.set_error_detail("module compilation failed: " + log.substr(0, 2048));
        return false;
      }
      if (cache != nullptr) cache->store(key, *compiled);
    }
    image = &*compiled;
  }
  std::uint64_t footprint = 0;
  if (!measureImage(ctx, *image, &footprint, reply)) return false;
  const ClientId client = ctx.session.id();
  if (!ctx.memory.addDriverCharge(client, memmgr::DriverShare::kModuleImages, footprint)) {
    return refuse(reply, cudaErrorMemoryAllocation,
                  "the module's code, constants and global variables take " + std::to_string(footprint) +
                      " bytes of device memory, more than the client's quota has left");
  }
  if (succeeded(ctx, ctx.gpu.moduleLoad(image->data(), &module->module, &log), reply, "cuModuleLoadData")) {
    module->deviceBytes = footprint;
    return true;
  }
  ctx.memory.subtractDriverCharge(client, memmgr::DriverShare::kModuleImages, footprint);
  reply.set_error_detail("module load failed: " + log.substr(0, 2048));
  return false;
}

// THE GATE (module_loading.h): decides, for one image about to be loaded for the client, whether
// and how it may load, and prepares it. Unguarded code (SASS-only, or a module the guard is not
// applied to under guard.require = protected_state) is admitted only while the client's context
// holds no protected state, and admitting it marks the client in the memory manager, atomically
// with that check, so that its context cannot gain protected state afterwards. If protected state
// appears between the preparation and the mark (another call of the client), the decision is made
// again, now seeing it.
bool admitModuleCode(CallContext& ctx, const std::vector<fatbin::Entry>& entries,
                     const std::vector<std::string_view>& relocatableObjects, std::uint32_t sm,
                     bool managedVariables, GuardConfig* guard, PreparedImage* prepared,
                     v1::CallReply& reply) {
  const ClientId client = ctx.session.id();
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::string guardError;
    if (!prepareModuleGuard(ctx, guard, &guardError))
      return refuse(reply, cudaErrorMemoryAllocation, guardError);
    guard->managedVariables = managedVariables;
    if (ctx.session.protectedModules)
      guard->deviceModules = ctx.session.protectedModules->deviceModulesForLinking();
    *prepared = prepareModuleImage(entries, sm, *guard, relocatableObjects);
    if (!prepared->ok) return refuse(reply, static_cast<cudaError_t>(prepared->error), prepared->detail);
    // Guarded code, or the client's policy is off (the operator accepted no isolation): no mark.
    // Unguarded PTX (guard.require = protected_state, no protected state yet) is not marked
    // either: protected modules attach before any code loads, so what such a context can gain
    // later is the client's own (cuFFT work areas, the guard's page), and marking it would
    // refuse cuFFT plans to every program that launched a kernel first. Code that can never
    // be guarded (SASS only) is marked: its context may not gain protected state at all.
    //
    // Guarded code with tensor copies is confined as SASS is: a tensor copy reads its map through
    // the address of a kernel parameter, and whether a kernel's own generic stores to that address
    // (or to another launch's parameters) can change what the copy engine reads there has not been
    // measured on the GPU (docs/security-model.md, "Tensor maps"). Until it is, a forged map could
    // name any address, so such code never runs beside protected state.
    const bool tensorCopies = prepared->guarded && !prepared->tensorMaps.empty();
    if (!tensorCopies && (prepared->guarded || !ctx.session.guard.setting.enabled || prepared->ptx))
      return true;
    const bool modulesHoldState =
        ctx.session.protectedModules && ctx.session.protectedModules->holdsProtectedState();
    if (!modulesHoldState && ctx.memory.admitUnguardedCode(client)) {
      if (!ctx.session.guard.unguardedCodeLogged.exchange(true)) {
        spdlog::warn(
            "client {}: code loaded that the kernel memory guard cannot fully confine ({}); its context may "
            "not gain protected state for the rest of the session",
            client, tensorCopies ? "tensor copies through kernel parameters" : "SASS only");
      }
      return true;
    }
    if (tensorCopies) {
      return refuse(
          reply, cudaErrorNoKernelImageForDevice,
          "this module's tensor copies (cp.async.bulk.tensor) are admitted only in a context without "
          "protected state, and this client's context holds some");
    }
  }
  return refuse(reply, cudaErrorNoKernelImageForDevice,
                "this module would load without the kernel memory guard, and this client's context holds "
                "protected state");
}

}  // namespace

std::vector<std::string_view> relocatableObjectsOf(
    const google::protobuf::RepeatedPtrField<std::string>& objects) {
  return std::vector<std::string_view>(objects.begin(), objects.end());
}

std::uint32_t deviceSm(const CallContext& ctx) {
  const DeviceDescription& device = ctx.gpu.device();
  return static_cast<std::uint32_t>(device.computeMajor * 10 + device.computeMinor);
}

bool loadModuleEntries(CallContext& ctx, const std::vector<fatbin::Entry>& entries, ModuleRecord* module,
                       v1::CallReply& reply, bool managedVariables,
                       const std::vector<std::string_view>& relocatableObjects) {
  const std::uint32_t sm = deviceSm(ctx);
  GuardConfig guard;
  PreparedImage prepared;
  if (!admitModuleCode(ctx, entries, relocatableObjects, sm, managedVariables, &guard, &prepared, reply))
    return false;
  // A rewritten variable whose memory nobody binds would leave its kernels a null pointer.
  if (!prepared.managedVariables.empty() && !managedVariables) {
    return refuse(reply, cudaErrorNotSupported,
                  "__managed__ variables are supported in modules the runtime registers with them "
                  "(__cudaRegisterManagedVar) and in images whose client binds them at the load "
                  "(ModuleLoadImage.bind_managed_variables)");
  }
  if (ctx.output != nullptr && DeviceOutputCapture::imageMayPrint(prepared.image)) ctx.output->expectOutput();
  if (!loadPreparedImage(ctx, prepared, guard, sm, module, reply)) return false;
  module->tensorMaps = prepared.tensorMaps;
  module->systemAtomicKernels = systemAtomicKernels(entries, sm, relocatableObjects);
  if (!resolveManagedVariables(ctx, prepared.managedVariables, module, reply)) {
    ctx.gpu.moduleUnload(module->module);
    ctx.memory.subtractDriverCharge(ctx.session.id(), memmgr::DriverShare::kModuleImages,
                                    module->deviceBytes);
    module->module = nullptr;
    return false;
  }
  SPDLOG_DEBUG("client {}: loaded module (sm_{} {}{})", ctx.session.id(), prepared.smArch,
               prepared.ptx ? "PTX" : "SASS", prepared.guarded ? ", guarded" : "");
  if (prepared.linkedFunctions != 0) {
    spdlog::info("client {}: linked {} protected module function(s) into a module", ctx.session.id(),
                 prepared.linkedFunctions);
  }
  return true;
}

namespace {

void moduleLoad(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const auto& args = request.module_load();
  if (!namesAreSane(args.function_names()) || !namesAreSane(args.variable_names())) {
    refuse(reply, cudaErrorInvalidValue, "too many or malformed symbol names");
    return;
  }
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(args.fatbin().data());
  fatbin::ParseResult parsed = fatbin::parse(std::span<const std::uint8_t>(bytes, args.fatbin().size()), {},
                                             fatbin::PayloadDecoding::kOnDemand);
  if (!parsed.ok) {
    refuse(reply, cudaErrorInvalidKernelImage, "fatbin refused: " + parsed.error);
    return;
  }
  if (ctx.session.modules.full() || ctx.session.functions.full()) {
    refuse(reply, cudaErrorMemoryAllocation, "the client holds the most modules or functions a client may");
    return;
  }
  if (!namesAreSane(args.managed_variable_names())) {
    refuse(reply, cudaErrorInvalidValue, "too many or malformed symbol names");
    return;
  }
  ModuleRecord module;
  if (!loadModuleEntries(ctx, parsed.entries, &module, reply, args.managed_variable_names_size() > 0,
                         relocatableObjectsOf(args.relocatable_objects())))
    return;
  // The token is minted first so functions can name their module; the record is
  // completed below and stored under the same token.
  const Token moduleToken = ctx.session.modules.insert(module);
  v1::ModuleLoaded* loaded = reply.mutable_module_loaded();
  resolveFunctions(ctx, moduleToken, module, args, loaded);
  resolveVariables(ctx, module, args, loaded);
  for (const std::string& name : args.managed_variable_names()) {
    v1::VariableInfo* info = loaded->add_managed_variables();
    info->set_name(name);
    const std::optional<ManagedVariableBinding> variable =
        module.managed ? module.managed->find(name) : std::nullopt;
    if (variable) {
      info->set_size(variable->bytes);
    } else {
      info->set_error(cudaErrorInvalidSymbol);
    }
  }
  ctx.session.modules.replace(moduleToken, std::move(module));
  loaded->set_module(moduleToken);
}

void moduleUnload(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const Token token = request.module_unload().module();
  if (!ctx.session.modules.find(token)) {
    refuse(reply, cudaErrorInvalidResourceHandle, "unknown module handle");
    return;
  }
  // Synchronize first: if that fails the module stays in the table, and the
  // session's release unloads it later.
  if (!succeeded(ctx, ctx.gpu.synchronizeContext(), reply, "cuCtxSynchronize")) return;
  auto module = ctx.session.modules.erase(token);
  if (module) unloadModule(ctx.gpu, ctx.memory, ctx.session, *module);
}

// A launch's shape and attributes in the driver's form; `attributes` holds what config.attributes
// points at. False, with the refusal in the reply, when an attribute is not admitted.
bool launchConfigOf(CallContext& ctx, const v1::Dim3& grid, const v1::Dim3& block,
                    std::uint32_t sharedMemBytes,
                    const google::protobuf::RepeatedPtrField<v1::LaunchAttribute>& wire,
                    std::vector<CUlaunchAttribute>* attributes, LaunchConfig* config, v1::CallReply& reply) {
  // Most launches carry no attribute: they build no window check (a std::function) on this path.
  attributes->clear();
  if (!wire.empty()) {
    std::string reason;
    if (!readLaunchAttributes(wire, attributes, &reason, [&ctx](std::uint64_t base, std::uint64_t* bytes) {
          return confineAccessWindow(ctx, base, bytes);
        })) {
      refuse(reply, cudaErrorInvalidValue, reason);
      return false;
    }
  }
  config->gridX = grid.x();
  config->gridY = grid.y();
  config->gridZ = grid.z();
  config->blockX = block.x();
  config->blockY = block.y();
  config->blockZ = block.z();
  config->sharedMemBytes = sharedMemBytes;
  config->attributes = *attributes;
  return true;
}

void launchKernel(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const auto& args = request.launch_kernel();
  FunctionRecord function;
  if (!resolveFunction(ctx, args.function(), &function, reply)) return;
  if (args.params().size() != function.paramBufferSize) {
    refuse(reply, cudaErrorInvalidValue, "kernel parameter block does not match the kernel's layout");
    return;
  }
  CUstream stream = nullptr;
  if (!resolveStream(ctx, args.stream(), &stream, reply)) return;
  // The driver copies each parameter from these pointers at launch; they point into
  // the request, which outlives the call.
  // Kernels with few parameters (nearly all) need no allocation here.
  constexpr std::size_t kInlinePointers = 64;
  std::array<void*, kInlinePointers> inlinePointers;
  std::vector<void*> manyPointers;
  void** pointers = inlinePointers.data();
  if (function.params->size() > kInlinePointers) {
    manyPointers.resize(function.params->size());
    pointers = manyPointers.data();
  }
  auto* base = const_cast<char*>(args.params().data());
  std::size_t count = 0;
  for (const ParamLayout& param : *function.params) pointers[count++] = base + param.offset;
  std::vector<CUlaunchAttribute> attributes;
  LaunchConfig config;
  if (!launchConfigOf(ctx, args.grid(), args.block(), args.shared_mem_bytes(), args.attributes(), &attributes,
                      &config, reply)) {
    return;
  }
  if (args.cooperative() && !attributes.empty()) {
    CUlaunchAttribute cooperative{};
    cooperative.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    cooperative.value.cooperative = 1;
    attributes.push_back(cooperative);
    config.attributes = attributes;
  }
  if (function.tensorMapOffsets && !checkTensorMapArguments(ctx, function, args.params(), reply)) return;
  // Last of the checks: it may raise (and charge) the context's stack, which stays raised.
  if (!coverLocalMemory(ctx, function, reply)) return;
  ctx.session.guard.launched.store(true, std::memory_order_relaxed);
  // A plain launch the client does not wait for, with more such calls queued behind it (or
  // launches held before it), is held to go to the GPU with the launches that follow
  // (worker/launch_batch.h); anything else goes now, after those held.
  LaunchBatch* held = ctx.shared != nullptr ? ctx.shared->launches : nullptr;
  if (held != nullptr && !ctx.shared->replyAwaited && !args.cooperative() && config.attributes.empty() &&
      (ctx.shared->unawaitedQueued || !held->empty() || ctx.shared->loneLaunchChains) &&
      ctx.session.launchChains.chaining()) {
    if (!held->accepts(args.stream())) flushHeldLaunches(ctx);  // a batch holds one stream's launches
    held->hold(args.function(), args.stream(), config, args.params());
    return;
  }
  flushHeldLaunches(ctx);
  if (args.cooperative() && config.attributes.empty()) {
    succeeded(ctx, ctx.gpu.launchCooperativeKernel(function.function, config, stream, pointers), reply,
              "cuLaunchCooperativeKernel");
    return;
  }
  succeeded(ctx, ctx.gpu.launchKernel(function.function, config, stream, pointers), reply,
            config.attributes.empty() ? "cuLaunchKernel" : "cuLaunchKernelEx");
}

void funcGetAttributes(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  FunctionRecord function;
  if (!resolveFunction(ctx, request.func_get_attributes().function(), &function, reply)) return;
  auto get = [&](CUfunction_attribute attribute) {
    int value = 0;
    ctx.gpu.functionGetAttribute(attribute, function.function, &value);
    return value;
  };
  v1::FuncAttributes* out = reply.mutable_func_attributes();
  out->set_shared_size_bytes(static_cast<std::uint64_t>(get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)));
  out->set_const_size_bytes(static_cast<std::uint64_t>(get(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)));
  out->set_local_size_bytes(static_cast<std::uint64_t>(get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)));
  out->set_max_threads_per_block(get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
  out->set_num_regs(get(CU_FUNC_ATTRIBUTE_NUM_REGS));
  out->set_ptx_version(get(CU_FUNC_ATTRIBUTE_PTX_VERSION));
  out->set_binary_version(get(CU_FUNC_ATTRIBUTE_BINARY_VERSION));
  out->set_cache_mode_ca(get(CU_FUNC_ATTRIBUTE_CACHE_MODE_CA));
  out->set_max_dynamic_shared_size_bytes(get(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES));
  out->set_preferred_shmem_carveout(get(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT));
  out->set_cluster_dim_must_be_set(get(CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET));
  out->set_required_cluster_width(get(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH));
  out->set_required_cluster_height(get(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT));
  out->set_required_cluster_depth(get(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH));
  out->set_non_portable_cluster_size_allowed(get(CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED));
  out->set_cluster_scheduling_policy_preference(get(CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE));
}

// The attributes a client may set (cudaFuncAttribute and CUfunction_attribute share numbering).
bool isSettableAttribute(int attribute) {
  switch (attribute) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      return true;
    default:
      return false;
  }
}

void funcSetAttribute(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const auto& args = request.func_set_attribute();
  FunctionRecord function;
  if (!resolveFunction(ctx, args.function(), &function, reply)) return;
  if (!isSettableAttribute(args.attribute())) {
    refuse(reply, cudaErrorInvalidValue, "attribute cannot be set");
    return;
  }
  succeeded(ctx,
            ctx.gpu.functionSetAttribute(function.function,
                                         static_cast<CUfunction_attribute>(args.attribute()), args.value()),
            reply, "cuFuncSetAttribute");
}

void funcSetCacheConfig(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const auto& args = request.func_set_cache_config();
  FunctionRecord function;
  if (!resolveFunction(ctx, args.function(), &function, reply)) return;
  if (args.config() < CU_FUNC_CACHE_PREFER_NONE || args.config() > CU_FUNC_CACHE_PREFER_EQUAL) {
    refuse(reply, cudaErrorInvalidValue, "unknown cache configuration");
    return;
  }
  succeeded(ctx, ctx.gpu.functionSetCacheConfig(function.function, static_cast<CUfunc_cache>(args.config())),
            reply, "cuFuncSetCacheConfig");
}

void occupancyMaxActiveBlocks(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const auto& args = request.occupancy_max_active_blocks();
  FunctionRecord function;
  if (!resolveFunction(ctx, args.function(), &function, reply)) return;
  if (args.block_size() <= 0) {
    refuse(reply, cudaErrorInvalidValue, "block size must be positive");
    return;
  }
  int blocks = 0;
  if (!succeeded(ctx,
                 ctx.gpu.occupancyMaxActiveBlocks(&blocks, function.function, args.block_size(),
                                                  args.dynamic_smem_bytes(), args.flags()),
                 reply, "cuOccupancyMaxActiveBlocksPerMultiprocessor")) {
    return;
  }
  reply.mutable_block_count()->set_num_blocks(blocks);
}

void occupancyClusters(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const auto& args = request.occupancy_clusters();
  FunctionRecord function;
  if (!resolveFunction(ctx, args.function(), &function, reply)) return;
  std::vector<CUlaunchAttribute> attributes;
  LaunchConfig config;
  if (!launchConfigOf(ctx, args.grid(), args.block(), args.shared_mem_bytes(), args.attributes(), &attributes,
                      &config, reply)) {
    return;
  }
  int value = 0;
  if (!succeeded(
          ctx, ctx.gpu.occupancyClusters(&value, function.function, config, args.potential_size()), reply,
          args.potential_size() ? "cuOccupancyMaxPotentialClusterSize" : "cuOccupancyMaxActiveClusters")) {
    return;
  }
  reply.mutable_block_count()->set_num_blocks(value);
}

}  // namespace

void registerModuleHandlers(HandlerRegistry& registry) {
  using Op = v1::CallRequest::OpCase;
  registry.add(Op::kModuleLoad, moduleLoad);
  registry.add(Op::kModuleUnload, moduleUnload, Exclusivity::kInvalidates);
  registry.add(Op::kLaunchKernel, launchKernel);
  registry.add(Op::kFuncGetAttributes, funcGetAttributes);
  registry.add(Op::kFuncSetAttribute, funcSetAttribute);
  registry.add(Op::kFuncSetCacheConfig, funcSetCacheConfig);
  registry.add(Op::kOccupancyMaxActiveBlocks, occupancyMaxActiveBlocks);
  registry.add(Op::kOccupancyClusters, occupancyClusters);
}

}  // namespace agileos::worker
