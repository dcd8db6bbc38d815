#include "adapters/nvrtc/nvrtc_adapter.h"

#include <nvrtc.h>
#include <spdlog/spdlog.h>

#include <cstring>

#include "adapters/nvrtc/nvrtc_operations.h"
#include "adapters/nvrtc/nvrtc_source_policy.h"
#include "worker/module_cache/compiled_module_cache.h"

namespace agileos::adapters::nvrtc {
namespace {

using worker::AdapterInvocation;
using worker::CompiledModuleCache;

constexpr std::size_t kMaxSourceBytes = 64u << 20;  // source and headers together
constexpr int kMaxListEntries = 4096;               // headers, options, name expressions

// One compilation's outputs, as the client gets them.
struct Compiled {
  nvrtcResult status = NVRTC_SUCCESS;
  std::string log;
  std::string ptx;    // as nvrtcGetPTX writes it (with its NUL), empty if none
  std::string cubin;  // empty unless a real architecture was asked for
  std::vector<std::string> loweredNames;
  std::string substitutePtx;  // the PTX a CUBIN is loaded as under the guard (never sent to the client)
};

struct Program {
  nvrtcProgram handle = nullptr;
  ~Program() {
    if (handle != nullptr) nvrtcDestroyProgram(&handle);
  }
};

std::vector<const char*> pointers(const std::vector<std::string>& strings) {
  std::vector<const char*> out;
  out.reserve(strings.size());
  for (const std::string& s : strings) out.push_back(s.c_str());
  return out;
}

// Runs NVRTC on inputs the policy has accepted.
Compiled compile(const std::string& source, const std::string& name, const std::vector<std::string>& headers,
                 const std::vector<std::string>& includeNames, const std::vector<std::string>& options,
                 const std::vector<std::string>& expressions) {
  Compiled out;
  Program program;
  auto headerPointers = pointers(headers), namePointers = pointers(includeNames);
  out.status =
      nvrtcCreateProgram(&program.handle, source.c_str(), name.c_str(), static_cast<int>(headers.size()),
                         headerPointers.data(), namePointers.data());
  if (out.status != NVRTC_SUCCESS) return out;
  for (const std::string& expression : expressions) {
    out.status = nvrtcAddNameExpression(program.handle, expression.c_str());
    if (out.status != NVRTC_SUCCESS) return out;
  }
  auto optionPointers = pointers(options);
  out.status = nvrtcCompileProgram(program.handle, static_cast<int>(options.size()), optionPointers.data());
  std::size_t size = 0;
  if (nvrtcGetProgramLogSize(program.handle, &size) == NVRTC_SUCCESS && size > 1) {
    out.log.resize(size);
    nvrtcGetProgramLog(program.handle, out.log.data());
    out.log.resize(size - 1);
  }
  if (out.status != NVRTC_SUCCESS) return out;
  if (nvrtcGetPTXSize(program.handle, &size) == NVRTC_SUCCESS && size > 1) {
    out.ptx.resize(size);
    nvrtcGetPTX(program.handle, out.ptx.data());
  }
  if (nvrtcGetCUBINSize(program.handle, &size) == NVRTC_SUCCESS && size > 0) {
    out.cubin.resize(size);
    nvrtcGetCUBIN(program.handle, out.cubin.data());
  }
  for (const std::string& expression : expressions) {
    const char* lowered = nullptr;
    nvrtcGetLoweredName(program.handle, expression.c_str(), &lowered);
    out.loweredNames.emplace_back(lowered != nullptr ? lowered : "");
  }
  return out;
}

// The cache entry: the reply's fields in a fixed order, each length-prefixed.
std::string serialize(const Compiled& compiled) {
  std::string out;
  auto put = [&](std::string_view field) {
    const std::uint64_t size = field.size();
    out.append(reinterpret_cast<const char*>(&size), sizeof size);
    out.append(field);
  };
  put(std::to_string(int(compiled.status)));
  put(compiled.log);
  put(compiled.ptx);
  put(compiled.cubin);
  put(compiled.substitutePtx);
  put(std::to_string(compiled.loweredNames.size()));
  for (const std::string& lowered : compiled.loweredNames) put(lowered);
  return out;
}

std::optional<Compiled> deserialize(std::string_view bytes) {
  std::vector<std::string> fields;
  while (!bytes.empty()) {
    std::uint64_t size = 0;
    if (bytes.size() < sizeof size) return std::nullopt;
    std::memcpy(&size, bytes.data(), sizeof size);
    bytes.remove_prefix(sizeof size);
    if (size > bytes.size()) return std::nullopt;
    fields.emplace_back(bytes.substr(0, size));
    bytes.remove_prefix(size);
  }
  if (fields.size() < 6) return std::nullopt;
  Compiled out;
  out.status = static_cast<nvrtcResult>(std::stoi(fields[0]));
  out.log = fields[1];
  out.ptx = fields[2];
  out.cubin = fields[3];
  out.substitutePtx = fields[4];
  const std::size_t count = std::stoul(fields[5]);
  if (fields.size() != 6 + count) return std::nullopt;
  out.loweredNames.assign(fields.begin() + 6, fields.end());
  return out;
}

class NvrtcAdapter final : public worker::LibraryAdapter {
 public:
  explicit NvrtcAdapter(const worker::AdapterEnvironment& environment) : cache_(environment.cache) {
    nvrtcVersion(&major_, &minor_);
  }
  const LibraryDecl& declaration() const override { return kLibrary; }

  void run(std::size_t operation, AdapterInvocation& call) override {
    const std::string_view name = kOperations[operation].name;
    if (name == "compile") return compileCall(call);
    if (name == "version") {
      call.addInteger(major_);
      call.addInteger(minor_);
      call.result.set_status(NVRTC_SUCCESS);
      return;
    }
    if (name == "supported_archs") {
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
    std::optional<Compiled> compiled;
    if (!key.empty()) {
      if (auto hit = cache_->find(key)) compiled = deserialize(*hit);
    }
    if (!compiled) {
      compiled = compile(source, name, headers, includeNames, options, expressions);
      if (compiled->status == NVRTC_SUCCESS && !compiled->cubin.empty()) {
        // The PTX the CUBIN is loaded as under the guard: NVRTC's own, else a compilation for
        // the matching virtual architecture.
        compiled->substitutePtx = compiled->ptx;
        if (compiled->substitutePtx.empty()) {
          if (auto virtualOptions = withVirtualArchitecture(options)) {
            Compiled ptxOnly = compile(source, name, headers, includeNames, *virtualOptions, expressions);
            if (ptxOnly.status == NVRTC_SUCCESS) compiled->substitutePtx = ptxOnly.ptx;
          }
        }
      }
      if (!key.empty() && compiled->status == NVRTC_SUCCESS) cache_->store(key, serialize(*compiled));
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
  }

  // A compilation the policy refused: the client sees NVRTC's own failure code and a log.
  static void refuseCompilation(AdapterInvocation& call, nvrtcResult status, const std::string& why) {
    spdlog::info("client {}: NVRTC compilation refused: {}", call.ctx.session.id(), why);
    call.result.set_status(status);
    call.addText("AgileOS: " + why + "\n");
    call.addBlob("");
    call.addBlob("");
    call.result.add_results()->mutable_texts();
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
  int major_ = 0;
  int minor_ = 0;
};

}  // namespace

std::unique_ptr<worker::LibraryAdapter> makeNvrtcAdapter(const worker::AdapterEnvironment& environment) {
  return std::make_unique<NvrtcAdapter>(environment);
}

}  // namespace agileos::adapters::nvrtc
