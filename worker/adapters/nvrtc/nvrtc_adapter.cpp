#include "worker/adapters/nvrtc/nvrtc_adapter.h"

#include <nvrtc.h>
#include <spdlog/spdlog.h>

#include "proto/adapters/nvrtc_operations.h"
#include "worker/adapters/nvrtc/nvrtc_compiler_process.h"
#include "worker/adapters/nvrtc/nvrtc_source_policy.h"
#include "worker/adapters/nvrtc/nvrtc_wire.h"
#include "worker/module_cache/compiled_module_cache.h"

namespace agileos::adapters::nvrtc {
namespace {

using worker::AdapterInvocation;
using worker::CompiledModuleCache;

constexpr std::size_t kMaxSourceBytes = 64u << 20;  // source and headers together
constexpr int kMaxListEntries = 4096;               // headers, options, name expressions

class NvrtcAdapter final : public worker::LibraryAdapter {
 public:
  explicit NvrtcAdapter(const worker::AdapterEnvironment& environment)
      : cache_(environment.cache), compiler_(compilerSettingsFromEnvironment(&settingsWarnings_)) {
    nvrtcVersion(&major_, &minor_);
    if (!settingsWarnings_.empty()) spdlog::warn("NVRTC adapter: {}", settingsWarnings_);
    spdlog::debug("NVRTC adapter: compilations run in {} (CPU {} s, {} MiB)", compiler_.executable,
                  compiler_.cpuSeconds, compiler_.memoryMb);
  }
  const LibraryDecl& declaration() const override { return kLibrary; }

  void run(std::size_t operation, AdapterInvocation& call) override {
    const std::string_view name = kOperations[operation].name;
    if (name == names::kCompile) return compileCall(call);
    if (name == names::kVersion) {
      call.addInteger(major_);
      call.addInteger(minor_);
      call.result.set_status(NVRTC_SUCCESS);
      return;
    }
    if (name == names::kSupportedArchs) {
      int count = 0;
      nvrtcGetNumSupportedArchs(&count);
      std::vector<int> archs(static_cast<std::size_t>(std::max(count, 0)));
      if (count > 0) nvrtcGetSupportedArchs(archs.data());
      auto* list = call.result.add_results()->mutable_integers();
      for (int arch : archs) list->add_values(arch);
      call.result.set_status(NVRTC_SUCCESS);
      return;
    }
    call.refuse(NVRTC_ERROR_INTERNAL_ERROR, cudaErrorNotSupported, "nvrtc operation not implemented");
  }

 private:
  void compileCall(AdapterInvocation& call) {
    const std::string& source = call.text(0);
    const std::string& name = call.text(1);
    const std::vector<std::string> headers = call.texts(2), includeNames = call.texts(3);
    const std::vector<std::string> options = call.texts(4), expressions = call.texts(5);
    std::size_t bytes = source.size();
    for (const std::string& header : headers) bytes += header.size();
    if (headers.size() != includeNames.size()) {
      call.refuse(NVRTC_ERROR_INVALID_INPUT, cudaErrorInvalidValue,
                  "headers and include names differ in number");
      return;
    }
    if (bytes > kMaxSourceBytes || headers.size() > kMaxListEntries || options.size() > kMaxListEntries ||
        expressions.size() > kMaxListEntries) {
      call.refuse(NVRTC_ERROR_INVALID_INPUT, cudaErrorInvalidValue, "program too large");
      return;
    }
    auto hasNul = [](const std::string& s) { return s.find('\0') != std::string::npos; };
    bool nul = hasNul(source) || hasNul(name);
    for (const auto* list : {&headers, &includeNames, &options, &expressions}) {
      for (const std::string& s : *list) nul = nul || hasNul(s);
    }
    if (nul) {
      call.refuse(NVRTC_ERROR_INVALID_INPUT, cudaErrorInvalidValue, "a string contains NUL");
      return;
    }
    for (const std::string& option : options) {
      if (auto why = refuseOption(option)) return refuseCompilation(call, NVRTC_ERROR_INVALID_OPTION, *why);
    }
    if (auto why = refuseSource(source, includeNames))
      return refuseCompilation(call, NVRTC_ERROR_COMPILATION, *why);
    for (const std::string& header : headers) {
      if (auto why = refuseSource(header, includeNames)) {
        return refuseCompilation(call, NVRTC_ERROR_COMPILATION, *why);
      }
    }

    const std::string key =
        cache_ != nullptr ? keyFor(source, name, headers, includeNames, options, expressions) : std::string();
    std::optional<CompileResult> compiled;
    if (!key.empty()) {
      if (auto hit = cache_->find(key)) compiled = decodeResult(*hit);
    }
    if (!compiled) {
      // The source policy above is the first line; the guarantee is the jail: NVRTC runs in
      // agileos-nvrtc-compiler, which can open no file of this machine (nvrtc_compiler_process.h).
      CompilerOutcome outcome =
          runCompiler(compiler_, CompileRequest{source, name, headers, includeNames, options, expressions});
      if (!outcome.result) {
        spdlog::warn("client {}: NVRTC compilation failed in the compiler process: {}: {}",
                     call.ctx.session.id(), outcome.failure, outcome.diagnostics);
        return refuseCompilation(call, outcome.failureStatus, outcome.failure);
      }
      compiled = std::move(outcome.result);
      if (!key.empty() && compiled->status == NVRTC_SUCCESS) cache_->store(key, encodeResult(*compiled));
    }
    if (!compiled->cubin.empty() && !compiled->substitutePtx.empty()) {
      std::string ptx = compiled->substitutePtx.substr(0, compiled->substitutePtx.find('\0'));
      call.ctx.session.imageSubstitutes.add(CompiledModuleCache::keyOf({"image", compiled->cubin}),
                                            std::move(ptx));
    }
    call.result.set_status(compiled->status);
    call.addText(std::move(compiled->log));
    call.addBlob(std::move(compiled->ptx));
    call.addBlob(std::move(compiled->cubin));
    auto* lowered = call.result.add_results()->mutable_texts();
    for (std::string& name : compiled->loweredNames) lowered->add_values(std::move(name));
    call.addBlob(std::move(compiled->ltoir));
  }

  // A compilation the policy refused: the client sees NVRTC's own failure code and a log.
  static void refuseCompilation(AdapterInvocation& call, nvrtcResult status, const std::string& why) {
    spdlog::info("client {}: NVRTC compilation refused: {}", call.ctx.session.id(), why);
    call.result.set_status(status);
    call.addText("AgileOS: " + why + "\n");
    call.addBlob("");
    call.addBlob("");
    call.result.add_results()->mutable_texts();
    call.addBlob("");
  }

  std::string keyFor(const std::string& source, const std::string& name,
                     const std::vector<std::string>& headers, const std::vector<std::string>& includeNames,
                     const std::vector<std::string>& options,
                     const std::vector<std::string>& expressions) const {
    auto joined = [](const std::vector<std::string>& list) {
      std::string out;
      for (const std::string& s : list) {
        const std::uint64_t size = s.size();
        out.append(reinterpret_cast<const char*>(&size), sizeof size);
        out.append(s);
      }
      return out;
    };
    return CompiledModuleCache::keyOf({"agileos nvrtc v1", std::to_string(major_ * 1000 + minor_), source,
                                       name, joined(headers), joined(includeNames), joined(options),
                                       joined(expressions)});
  }

  CompiledModuleCache* cache_;
  std::string settingsWarnings_;  // before compiler_: filled while compiler_ is initialized
  CompilerSettings compiler_;
  int major_ = 0;
  int minor_ = 0;
};

}  // namespace

std::unique_ptr<worker::LibraryAdapter> makeNvrtcAdapter(const worker::AdapterEnvironment& environment) {
  return std::make_unique<NvrtcAdapter>(environment);
}

}  // namespace agileos::adapters::nvrtc
