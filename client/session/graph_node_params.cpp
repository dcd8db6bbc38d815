#include "client/session/graph_node_params.h"

#include "client/session/enum_bits.h"
#include "client/session/module_registry.h"
#include "client/session/streams.h"

namespace agileos::client::graph_api {
namespace {

// The program may have put any bits in an enum field: read as bits (enum_bits.h).
bool readKind(const cudaMemcpyKind& field, cudaMemcpyKind* kind) {
  const int value = enumBits(field);
  if (value < cudaMemcpyHostToHost || value > cudaMemcpyDefault) return false;
  *kind = static_cast<cudaMemcpyKind>(value);
  return true;
}

char* elementAddress(const cudaPitchedPtr& p, const cudaPos& pos) {
  return static_cast<char*>(p.ptr) + pos.z * p.pitch * p.ysize + pos.y * p.pitch + pos.x;
}

}  // namespace

cudaError_t kernelWork(const cudaKernelNodeParams* params, KernelWork* work) {
  if (params == nullptr) return cudaErrorInvalidValue;
  if (params->func == nullptr) return cudaErrorInvalidDeviceFunction;
  if (params->kernelParams != nullptr && params->extra != nullptr) return cudaErrorInvalidValue;
  KernelLayout layout;
  if (cudaError_t error = ModuleRegistry::instance().kernel(params->func, &layout); error != cudaSuccess) {
    return error;
  }
  KernelWork built;
  if (cudaError_t error = packKernelWork(layout, params->func, params->kernelParams, params->extra, &built);
      error != cudaSuccess) {
    return error;
  }
  built.grid = params->gridDim;
  built.block = params->blockDim;
  built.sharedMem = params->sharedMemBytes;
  *work = std::move(built);
  return cudaSuccess;
}

cudaKernelNodeParams kernelParams(const KernelWork& work) {
  cudaKernelNodeParams params{};
  params.func = const_cast<void*>(work.function);
  params.gridDim = work.grid;
  params.blockDim = work.block;
  params.sharedMemBytes = static_cast<unsigned>(work.sharedMem);
  params.kernelParams = const_cast<void**>(work.parameterPointers.data());
  params.extra = nullptr;
  return params;
}

cudaError_t copyWork(const cudaMemcpy3DParms* params, CopyWork* work) {
  if (params == nullptr) return cudaErrorInvalidValue;
  if (params->srcArray != nullptr || params->dstArray != nullptr) return cudaErrorNotSupported;
  cudaMemcpyKind kind{};
  if (!readKind(params->kind, &kind)) return cudaErrorInvalidMemcpyDirection;
  const cudaExtent& extent = params->extent;  // width in bytes: both ends are linear memory
  if (params->srcPos.x > params->srcPtr.pitch || extent.width > params->srcPtr.pitch - params->srcPos.x ||
      params->dstPos.x > params->dstPtr.pitch || extent.width > params->dstPtr.pitch - params->dstPos.x) {
    return cudaErrorInvalidPitchValue;
  }
  if (extent.width == 0 || extent.height == 0 || extent.depth == 0) return cudaErrorInvalidValue;
  // Slices that follow each other without a gap form one rectangle of height * depth rows.
  const bool oneRectangle =
      extent.depth == 1 || (params->dstPtr.ysize == extent.height && params->srcPtr.ysize == extent.height &&
                            extent.depth <= SIZE_MAX / extent.height);
  if (!oneRectangle) return cudaErrorNotSupported;
  work->dst = elementAddress(params->dstPtr, params->dstPos);
  work->dstPitch = params->dstPtr.pitch;
  work->src = elementAddress(params->srcPtr, params->srcPos);
  work->srcPitch = params->srcPtr.pitch;
  work->width = extent.width;
  work->height = extent.height * extent.depth;
  work->kind = kind;
  return cudaSuccess;
}

cudaError_t copyWork1D(void* dst, const void* src, size_t count, cudaMemcpyKind kind, CopyWork* work) {
  if (!readKind(kind, &kind)) return cudaErrorInvalidMemcpyDirection;
  if (count == 0) return cudaErrorInvalidValue;
  *work = CopyWork{dst, count, src, count, count, 1, kind};
  return cudaSuccess;
}

cudaMemcpy3DParms copyParams(const CopyWork& work) {
  cudaMemcpy3DParms params{};
  params.srcPtr = cudaPitchedPtr{const_cast<void*>(work.src), work.srcPitch, work.width, work.height};
  params.dstPtr = cudaPitchedPtr{work.dst, work.dstPitch, work.width, work.height};
  params.extent = cudaExtent{work.width, work.height, 1};
  params.kind = work.kind;
  return params;
}

cudaError_t fillWork(const cudaMemsetParams* params, FillWork* work) {
  if (params == nullptr || params->dst == nullptr) return cudaErrorInvalidValue;
  const unsigned size = params->elementSize;
  if (size != 1 && size != 2 && size != 4) return cudaErrorInvalidValue;
  if (params->width == 0 || params->height == 0 || params->width > SIZE_MAX / size)
    return cudaErrorInvalidValue;
  if (params->height > 1 && params->width * size > params->pitch) return cudaErrorInvalidValue;
  const unsigned low = params->value & 0xffu;
  for (unsigned i = 1; i < size; ++i) {
    if (((params->value >> (8 * i)) & 0xffu) != low) return cudaErrorNotSupported;
  }
  *work = FillWork{reinterpret_cast<std::uint64_t>(params->dst),
                   params->height > 1 ? params->pitch : params->width * size,
                   params->value,
                   size,
                   params->width,
                   params->height};
  return cudaSuccess;
}

cudaMemsetParams fillParams(const FillWork& work) {
  cudaMemsetParams params{};
  params.dst = reinterpret_cast<void*>(work.dst);
  params.pitch = work.pitch;
  params.value = work.value;
  params.elementSize = work.elementSize;
  params.width = work.width;
  params.height = work.height;
  return params;
}

cudaError_t hostWork(const cudaHostNodeParams* params, HostWork* work) {
  if (params == nullptr || params->fn == nullptr) return cudaErrorInvalidValue;
  *work = HostWork{params->fn, params->userData};
  return cudaSuccess;
}

cudaError_t eventWork(cudaEvent_t event, EventWork* work) {
  const auto token = reinterpret_cast<std::uint64_t>(event);
  if (event == nullptr || !isLiveEvent(token)) return cudaErrorInvalidResourceHandle;
  *work = EventWork{token};
  return cudaSuccess;
}

cudaError_t dependencyList(const cudaGraphNode_t* dependencies, size_t count, std::vector<Node*>* out) {
  out->clear();
  if (count > 0 && dependencies == nullptr) return cudaErrorInvalidValue;
  for (size_t i = 0; i < count; ++i) out->push_back(nodeOf(dependencies[i]));
  return cudaSuccess;
}

void writeNodes(const std::vector<Node*>& nodes, cudaGraphNode_t* out, size_t* count) {
  if (out == nullptr) {
    *count = nodes.size();
    return;
  }
  const size_t written = std::min(nodes.size(), *count);
  for (size_t i = 0; i < *count; ++i) out[i] = i < written ? handleOf(nodes[i]) : nullptr;
  *count = written;
}

cudaError_t symbolRange(const void* symbol, size_t count, size_t offset, std::uint64_t* address) {
  if (symbol == nullptr) return cudaErrorInvalidSymbol;
  DeviceVariable variable;
  if (cudaError_t error = ModuleRegistry::instance().variable(symbol, &variable); error != cudaSuccess)
    return error;
  if (offset > variable.size || count > variable.size - offset) return cudaErrorInvalidValue;
  *address = variable.dptr + offset;
  return cudaSuccess;
}

bool copiesToSymbol(cudaMemcpyKind kind) {
  return kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice || kind == cudaMemcpyDefault;
}

bool copiesFromSymbol(cudaMemcpyKind kind) {
  return kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice || kind == cudaMemcpyDefault;
}

}  // namespace agileos::client::graph_api
