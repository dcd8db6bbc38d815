#include "worker/adapters/nvrtc/compiler/nvrtc_compile.h"

#include "worker/adapters/nvrtc/nvrtc_source_policy.h"

namespace agileos::adapters::nvrtc {
namespace {

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

CompileResult compileOnce(const CompileRequest& request, const std::vector<std::string>& options) {
  CompileResult out;
  Program program;
  auto headerPointers = pointers(request.headers), namePointers = pointers(request.includeNames);
  out.status = nvrtcCreateProgram(&program.handle, request.source.c_str(), request.name.c_str(),
                                  static_cast<int>(request.headers.size()), headerPointers.data(),
                                  namePointers.data());
  if (out.status != NVRTC_SUCCESS) return out;
  for (const std::string& expression : request.expressions) {
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
  if (nvrtcGetLTOIRSize(program.handle, &size) == NVRTC_SUCCESS && size > 0) {
    out.ltoir.resize(size);
    nvrtcGetLTOIR(program.handle, out.ltoir.data());
  }
  for (const std::string& expression : request.expressions) {
    const char* lowered = nullptr;
    nvrtcGetLoweredName(program.handle, expression.c_str(), &lowered);
    out.loweredNames.emplace_back(lowered != nullptr ? lowered : "");
  }
  return out;
}

}  // namespace

CompileResult compileRequest(const CompileRequest& request) {
  CompileResult compiled = compileOnce(request, request.options);
  if (compiled.status == NVRTC_SUCCESS && !compiled.cubin.empty()) {
    compiled.substitutePtx = compiled.ptx;
    if (compiled.substitutePtx.empty()) {
      if (auto virtualOptions = withVirtualArchitecture(request.options)) {
        CompileResult ptxOnly = compileOnce(request, *virtualOptions);
        if (ptxOnly.status == NVRTC_SUCCESS) compiled.substitutePtx = ptxOnly.ptx;
      }
    }
  }
  return compiled;
}

}  // namespace agileos::adapters::nvrtc
