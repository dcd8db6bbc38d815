// The steps of loading device code that every loading path shares (registered fatbins,
// cudaLibraryLoadData images): the kernel memory guard's preparation, the compiled-module
// cache, the driver load, and the resolution of a kernel by name.
#pragma once

#include <string>
#include <vector>

#include "worker/call_context.h"
#include "worker/dispatcher.h"
#include "worker/fatbin/fatbin_reader.h"
#include "worker/module_guard.h"

namespace agileos::worker {

// Chooses the entry for this device among `entries`, prepares it for the client's guard
// setting and loads it into module->module. Refuses (and returns false) otherwise.
bool loadModuleEntries(CallContext& ctx, const std::vector<fatbin::Entry>& entries, ModuleRecord* module,
                       v1::CallReply& reply);

// Loads a prepared image, through the compiled-module cache when it is guarded PTX.
bool loadPreparedImage(CallContext& ctx, const PreparedImage& prepared, const GuardConfig& guard,
                       std::uint32_t sm, CUmodule* module, v1::CallReply& reply);

// Whether a kernel or variable name a client sent is usable: non-empty, at most 4096 bytes, no NUL.
bool isSaneSymbolName(const std::string& name);

// Resolves kernel `name` of `module` (token `moduleToken`), learns its parameter layout from
// the driver, mints a function token and adds it to module.functions. On failure info's
// error is set and false returned.
bool resolveOneFunction(CallContext& ctx, Token moduleToken, ModuleRecord& module, const std::string& name,
                        v1::FunctionInfo* info);

void registerModuleImageHandlers(HandlerRegistry& registry);

}  // namespace agileos::worker
