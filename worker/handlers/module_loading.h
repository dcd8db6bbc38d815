// The steps of loading device code that every loading path shares: the kernel memory guard's
// preparation, the compiled-module cache, the driver load, and the resolution of a kernel by
// name.
//
// ONE GATE. Every path that brings client device code into the context goes through
// loadModuleEntries, and through nothing else: registered fatbins (ModuleLoad),
// cudaLibraryLoad* images (ModuleLoadImage: fatbins, PTX text, ELF cubins), NVRTC output (an
// ELF the client loads like any image, with the PTX it was compiled from offered beside it),
// and the driver API's cuModuleLoad*, cuLibraryLoad* and cuLink* when they come: a new loader
// turns its input into fatbin::Entry values and calls loadModuleEntries; it never calls the
// driver's module loading itself (the function that does is private to module_handlers.cpp).
// loadModuleEntries decides, in one place (admitModuleCode):
//   - whether the guard applies (prepareModuleGuard: guard.require, the client's policy);
//   - that code the guard cannot rewrite (an image without PTX for this device, whatever
//     guard.sass_only says) never loads into a context that holds protected state
//     (contextHoldsProtectedState in guard_handlers.h): cudaErrorNoKernelImageForDevice with the
//     reason. guard.sass_only = allow only ever means "allowed in a context with no protected
//     state";
//   - that once unguarded code is loaded for a client (SASS-only, or a module loaded while its
//     context held no protected state under guard.require = protected_state), the client is
//     marked in the memory manager (MemoryManager::admitUnguardedCode, atomic with the check),
//     and every later step that would give its context protected state is refused there: protected
//     allocations of kState (module state, the test canary, cuFFT work areas), I/O placements
//     (map_io), exports (DMA registrations, shared protected memory). The guard's own page is not
//     protected state and stays allowed. Under policy `off` (no isolation, by the operator's
//     choice) nothing is marked;
//   - that guarded text passes ptx::checkEmittedText before any JIT and before the cache is
//     consulted (prepareModuleImage).
// Then, right before the driver loads any image, an ELF image (SASS, a cubin from the cache) must
// pass fatbin::checkElfImage (worker/fatbin/elf_image_check.h): cudaErrorInvalidKernelImage if not.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "worker/call_context.h"
#include "worker/dispatcher.h"
#include "worker/fatbin/fatbin_reader.h"
#include "worker/module_guard.h"

namespace agileos::worker {

// The gate, then the load: chooses the entry for this device among `entries`, prepares it for
// the client's guard setting and loads it into module->module (through the compiled-module cache
// when it is guarded PTX). Refuses (and returns false) otherwise.
// `managedVariables`: the client registered __managed__ variables for the module (ModuleLoad):
// its PTX is loaded with them rewritten and module->managed filled
// (worker/host_memory/managed_variables.h). A module with managed variables is refused otherwise.
// `relocatableObjects`: a separately compiled image's objects, whose PTX is used only where its
// linked entries cannot load (prepareModuleImage with relocatable objects, worker/module_guard.h).
bool loadModuleEntries(CallContext& ctx, const std::vector<fatbin::Entry>& entries, ModuleRecord* module,
                       v1::CallReply& reply, bool managedVariables = false,
                       const std::vector<std::string_view>& relocatableObjects = {});

// The relocatable objects a load request offers (ModuleLoad.relocatable_objects,
// ModuleLoadImage.relocatable_objects), as views of the request's bytes.
std::vector<std::string_view> relocatableObjectsOf(
    const google::protobuf::RepeatedPtrField<std::string>& objects);

// The compute capability of the worker's device as a fatbin names it (90 for sm_90).
std::uint32_t deviceSm(const CallContext& ctx);

// Whether a kernel or variable name a client sent is usable: non-empty, at most 4096 bytes, no NUL.
bool isSaneSymbolName(const std::string& name);

// Resolves kernel `name` of `module` (token `moduleToken`), learns its parameter layout from
// the driver, mints a function token and adds it to module.functions. On failure info's
// error is set and false returned.
bool resolveOneFunction(CallContext& ctx, Token moduleToken, ModuleRecord& module, const std::string& name,
                        v1::FunctionInfo* info);

void registerModuleImageHandlers(HandlerRegistry& registry);

}  // namespace agileos::worker
