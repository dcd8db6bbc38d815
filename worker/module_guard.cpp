#include "worker/module_guard.h"

#include <driver_types.h>
#include <spdlog/spdlog.h>

#include "ptx/emitted_check.h"
#include "ptx/graph_conditionals.h"
#include "ptx/guard.h"
#include "ptx/managed_variables.h"
#include "ptx/object_merge.h"
#include "ptx/parser.h"
#include "ptx/printer.h"
#include "ptx/separate_compilation.h"
#include "ptx/system_atomics.h"
#include "worker/fatbin/relocatable_objects.h"

namespace agileos::worker {

std::optional<std::pair<bool, ptx::GuardPolicy>> parseGuardSetting(const std::string& text) {
  if (text == "off") return std::pair{false, ptx::GuardPolicy::kTrap};
  if (auto policy = ptx::parseGuardPolicy(text)) return std::pair{true, *policy};
  return std::nullopt;
}

const char* policyName(const GuardConfig& config) {
  return config.enabled ? ptx::toString(config.ptx.policy) : "off";
}

std::vector<std::string> systemAtomicKernels(const std::vector<fatbin::Entry>& entries, std::uint32_t sm,
                                             const std::vector<std::string_view>& relocatableObjects) {
  std::string text, decodeError;
  if (const fatbin::Entry* entry = fatbin::selectForDevice(entries, sm, fatbin::SelectionPolicy::kPtxOnly)) {
    if (!fatbin::decodedPayload(*entry, &text, &decodeError)) return {};
  } else if (!relocatableObjects.empty()) {
    // A separately compiled image's linked SASS has no PTX; its objects have, and the linked
    // program is their union: scanned as one text, so a device function of one object that uses
    // the atomics marks the kernels of every object (a kernel may call it across objects).
    for (const std::vector<fatbin::Entry>& object : fatbin::relocatableStandIn(relocatableObjects).objects) {
      const fatbin::Entry* ptxEntry = fatbin::selectForDevice(object, sm, fatbin::SelectionPolicy::kPtxOnly);
      std::string payload;
      if (ptxEntry == nullptr || !fatbin::decodedPayload(*ptxEntry, &payload, &decodeError)) continue;
      text += payload;
      text += '\n';
    }
  }
  std::optional<std::vector<std::string>> kernels = ptx::kernelsWithSystemAtomics(text);
  return kernels ? std::move(*kernels) : std::vector<std::string>{};
}

PreparedImage prepareModuleImage(const std::vector<fatbin::Entry>& entries, std::uint32_t sm,
                                 const GuardConfig& config) {
  PreparedImage prepared;
  const bool guard = config.enabled;
  const bool link = !config.deviceModules.empty();
  const bool managed = config.managedVariables;
  const fatbin::Entry* entry = fatbin::selectForDevice(
      entries, sm,
      guard || link || managed ? fatbin::SelectionPolicy::kPtxOnly : fatbin::SelectionPolicy::kPreferSass);
  if (entry == nullptr && managed) {
    // The SASS would reach the driver's own managed allocation of each variable, in the worker's
    // process, which the client's host code cannot see: refuse rather than run it with two copies.
    prepared.error = cudaErrorNoKernelImageForDevice;
    prepared.detail =
        "this module has __managed__ variables, which AgileOS places in memory shared with the "
        "program by rewriting the module's PTX, and it offers no PTX for compute_" +
        std::to_string(sm) + " or lower: recompile with PTX (e.g. -gencode arch=compute_" +
        std::to_string(sm) + ",code=compute_" + std::to_string(sm) + ")";
    return prepared;
  }
  if (entry == nullptr && link) {
    // Module functions are linked into PTX; SASS could call only the placeholders, so refuse
    // rather than load code whose module calls would all fail.
    prepared.error = cudaErrorNoKernelImageForDevice;
    prepared.detail =
        "this client uses protected modules, whose functions are linked into PTX, and this "
        "module offers no PTX for compute_" +
        std::to_string(sm) + " or lower";
    return prepared;
  }
  if (entry == nullptr && guard) {
    // No PTX to guard: only SASS can be left, and only where the setting allows it.
    const fatbin::Entry* sass = fatbin::selectForDevice(entries, sm, fatbin::SelectionPolicy::kPreferSass);
    if (sass != nullptr && config.protectedState) {
      // Whatever sass_only says: code the guard cannot rewrite never runs beside protected state.
      prepared.error = cudaErrorNoKernelImageForDevice;
      prepared.detail =
          "this client's context holds protected state, and the module offers only SASS (sm_" +
          std::to_string(sass->smArch) +
          "), which the kernel memory guard cannot rewrite (guard.sass_only = allow admits SASS-only "
          "code only into a context without protected state): recompile with PTX for compute_" +
          std::to_string(sm) + " or lower";
      return prepared;
    }
    if (sass != nullptr && !config.allowSassOnly) {
      prepared.error = cudaErrorNoKernelImageForDevice;
      prepared.detail = "the kernel memory guard needs PTX, and this module offers only SASS (sm_" +
                        std::to_string(sass->smArch) + "): recompile with PTX for compute_" +
                        std::to_string(sm) + " or lower";
      return prepared;
    }
    if (sass != nullptr) {
      spdlog::warn(
          "a module offers only SASS (sm_{}): loaded WITHOUT the memory guard, as this worker allows "
          "in a context without protected state (which it may not gain while the module is loaded)",
          sass->smArch);
    }
    entry = sass;
  }
  if (entry == nullptr) {
    prepared.error = cudaErrorNoKernelImageForDevice;
    prepared.detail =
        "fatbin has neither SASS for sm_" + std::to_string(sm) + " nor PTX for an architecture <= it";
    return prepared;
  }
  prepared.smArch = entry->smArch;
  prepared.ptx = entry->kind == fatbin::EntryKind::kPtx;
  // Only the selected entry is decompressed (its bounds were checked with every other's).
  std::string payload, decodeError;
  if (!fatbin::decodedPayload(*entry, &payload, &decodeError)) {
    prepared.error = cudaErrorInvalidKernelImage;
    prepared.detail =
        "the fatbin's entry for sm_" + std::to_string(entry->smArch) + " is refused: " + decodeError;
    return prepared;
  }
  // A module that sets conditional graphs' conditions gets AgileOS's cudaGraphSetConditional, which
  // only its PTX can take (ptx/graph_conditionals.h): the driver would link its own into SASS, code
  // no check sees, storing through a handle the program chose. The name in the SASS is its
  // relocation (or a function of the program's own of that name: then the PTX path costs a JIT).
  const bool conditionals = payload.find(ptx::kGraphSetConditional) != std::string::npos;
  if (conditionals && !prepared.ptx) {
    const fatbin::Entry* ptxEntry = fatbin::selectForDevice(entries, sm, fatbin::SelectionPolicy::kPtxOnly);
    if (ptxEntry == nullptr) {
      prepared.error = cudaErrorNoKernelImageForDevice;
      prepared.detail =
          "this module sets conditional graph conditions (cudaGraphSetConditional), which AgileOS defines in "
          "the module's PTX, and it offers no PTX for compute_" +
          std::to_string(sm) + " or lower: recompile with PTX (e.g. -gencode arch=compute_" +
          std::to_string(sm) + ",code=compute_" + std::to_string(sm) + ")";
      return prepared;
    }
    entry = ptxEntry;
    prepared.smArch = entry->smArch;
    prepared.ptx = true;
    if (!fatbin::decodedPayload(*entry, &payload, &decodeError)) {
      prepared.error = cudaErrorInvalidKernelImage;
      prepared.detail =
          "the fatbin's entry for compute_" + std::to_string(entry->smArch) + " is refused: " + decodeError;
      return prepared;
    }
  }
  // PTX older than separate compilation takes is parsed and printed raised (separate_compilation.h).
  const bool legacy = prepared.ptx && ptx::needsVersionRaise(payload);
  if ((!guard && !link && !managed && !conditionals && !legacy) || !prepared.ptx) {
    prepared.image = std::move(payload);
    if (prepared.ptx) prepared.image.push_back('\0');  // the driver reads PTX as a C string
    prepared.ok = true;
    return prepared;
  }
  ptx::ParseResult parsed = ptx::parse(payload);
  if (!parsed.ok) {
    prepared.error = cudaErrorInvalidPtx;
    prepared.detail = "the module's PTX cannot be parsed for the guard: " + parsed.error;
    return prepared;
  }
  // Before every rewrite, so that the guard and the check of its output read the text compiled.
  ptx::raiseVersionForSeparateCompilation(&parsed.module);
  // Managed variables first, so that the link and the guard see (and check) the rewritten code.
  ptx::ManagedRewriteResult managedRewrite = ptx::rewriteManagedVariables(parsed.module);
  if (!managedRewrite.ok) {
    prepared.error = cudaErrorInvalidPtx;
    prepared.detail = "the module cannot be loaded: " + managedRewrite.error;
    return prepared;
  }
  prepared.managedVariables = std::move(managedRewrite.variables);
  ptx::GraphConditionalsResult conditionalsDefined = ptx::defineGraphConditionals(managedRewrite.module);
  if (!conditionalsDefined.ok) {
    prepared.error = cudaErrorInvalidPtx;
    prepared.detail = "the module cannot be loaded: " + conditionalsDefined.error;
    return prepared;
  }
  ptx::Module linkedModule;
  const ptx::Module* toGuard = &conditionalsDefined.module;
  ptx::GuardOptions options = config.ptx;
  if (link) {
    ptx::LinkResult linked = ptx::linkModuleFunctions(conditionalsDefined.module, config.deviceModules);
    if (!linked.ok) {
      prepared.error = cudaErrorInvalidPtx;
      prepared.detail = "protected module functions cannot be linked: " + linked.error;
      return prepared;
    }
    prepared.linkedFunctions = linked.replacedPlaceholders;
    linkedModule = std::move(linked.module);
    toGuard = &linkedModule;
    options.trustedFunctions = std::move(linked.trustedFunctions);
  }
  if (!guard) {
    prepared.image = ptx::print(*toGuard);
    prepared.image.push_back('\0');
    prepared.ok = true;
    return prepared;
  }
  const ptx::GuardResult guarded = ptx::guardModule(*toGuard, options);
  if (!guarded.ok) {
    prepared.error = cudaErrorInvalidPtx;
    prepared.detail = "the kernel memory guard refuses the module: " + guarded.error;
    return prepared;
  }
  emitGuardedImage(guarded, options, &prepared);
  return prepared;
}

namespace {

// The program a stand-in offers for compute_`sm`: one object's PTX entries as they are, or the
// PTX of several objects merged into one module (ptx/object_merge.h). False with *why otherwise.
bool relocatableProgram(const fatbin::RelocatableStandIn& standIn, std::uint32_t sm,
                        std::vector<fatbin::Entry>* program, std::string* why) {
  const std::string forDevice = " for compute_" + std::to_string(sm) + " or lower";
  if (standIn.objects.size() == 1) {
    if (fatbin::selectForDevice(standIn.objects[0], sm, fatbin::SelectionPolicy::kPtxOnly) == nullptr) {
      *why = "its relocatable object has no PTX" + forDevice;
      return false;
    }
    *program = standIn.objects[0];
    return true;
  }
  std::vector<ptx::Module> modules;
  const fatbin::Entry* first = nullptr;
  for (std::size_t i = 0; i < standIn.objects.size(); ++i) {
    const fatbin::Entry* entry =
        fatbin::selectForDevice(standIn.objects[i], sm, fatbin::SelectionPolicy::kPtxOnly);
    if (entry == nullptr) {
      *why = "its relocatable object " + std::to_string(i) + " has no PTX" + forDevice;
      return false;
    }
    if (first == nullptr) first = entry;
    if (entry->smArch != first->smArch || entry->variant != first->variant) {
      *why = "its relocatable objects' PTX targets different architectures";
      return false;
    }
    std::string text, error;
    if (!fatbin::decodedPayload(*entry, &text, &error)) {
      *why = "its relocatable object " + std::to_string(i) + "'s PTX is refused: " + error;
      return false;
    }
    ptx::ParseResult parsed = ptx::parse(text);
    if (!parsed.ok) {
      *why = "its relocatable object " + std::to_string(i) + "'s PTX cannot be parsed: " + parsed.error;
      return false;
    }
    modules.push_back(std::move(parsed.module));
  }
  ptx::MergeResult merged = ptx::mergeObjects(modules);
  if (!merged.ok) {
    *why = "its " + std::to_string(modules.size()) +
           " relocatable objects cannot be merged into one module: " + merged.error;
    return false;
  }
  fatbin::Entry entry;
  entry.kind = fatbin::EntryKind::kPtx;
  entry.smArch = first->smArch;
  entry.variant = first->variant;
  entry.payload = ptx::print(merged.module);
  program->assign(1, std::move(entry));
  return true;
}

}  // namespace

PreparedImage prepareModuleImage(const std::vector<fatbin::Entry>& entries, std::uint32_t sm,
                                 const GuardConfig& config,
                                 const std::vector<std::string_view>& relocatableObjects) {
  PreparedImage linked = prepareModuleImage(entries, sm, config);
  if (linked.ok || linked.error != cudaErrorNoKernelImageForDevice || relocatableObjects.empty() ||
      fatbin::selectForDevice(entries, sm, fatbin::SelectionPolicy::kPtxOnly) != nullptr) {
    return linked;
  }
  // Parsed only now: where the linked image loads (nearly always), the objects go unread.
  const fatbin::RelocatableStandIn standIn = fatbin::relocatableStandIn(relocatableObjects);
  std::vector<fatbin::Entry> program;
  std::string why = standIn.unavailable;
  if (standIn.objects.empty() || !relocatableProgram(standIn, sm, &program, &why)) {
    linked.detail +=
        "; the image was separately compiled (-rdc), and its relocatable PTX cannot stand in: " + why;
    return linked;
  }
  PreparedImage fromObjects = prepareModuleImage(program, sm, config);
  if (fromObjects.ok) {
    spdlog::debug(
        "a separately compiled image loads from the PTX of its {} relocatable object(s) (its linked SASS: "
        "{})",
        standIn.objects.size(), linked.detail);
  } else {
    fromObjects.detail =
        "the image's linked SASS cannot load (" + linked.detail +
        "), and its relocatable objects' PTX, tried instead, is refused: " + fromObjects.detail;
  }
  return fromObjects;
}

bool emitGuardedImage(const ptx::GuardResult& guarded, const ptx::GuardOptions& options,
                      PreparedImage* prepared) {
  std::string text = ptx::print(guarded.module);
  text.push_back('\0');  // the driver reads PTX as a C string
  // The text as the driver will read it, checked on its own (before any JIT and before the
  // compiled-module cache, whose key is over this text, is consulted).
  if (std::string refused = ptx::checkEmittedText(text, guarded.module, options, guarded.registerPrefix);
      !refused.empty()) {
    spdlog::error("the kernel memory guard's output failed its check before the JIT: {}", refused);
    prepared->ok = false;
    prepared->error = cudaErrorInvalidPtx;
    prepared->detail = "the guarded module fails the check before compilation: " + refused;
    prepared->image.clear();
    return false;
  }
  prepared->image = std::move(text);
  prepared->guarded = true;
  prepared->checkedAccesses = guarded.checkedAccesses;
  prepared->tensorMaps = guarded.tensorMaps;
  prepared->ok = true;
  return true;
}

}  // namespace agileos::worker
