// A program built the way nvcc builds by default (the CUDA runtime linked in, static cudart) on
// the whole AgileOS stack with the fake GPU: the runtime inside it finds the driver shim as
// libcuda.so.1 and reaches the worker through it alone (its private tables, the integrity
// digest, context-local storage, cuLibraryLoadData through the guard gate). Host code only; the
// fake GPU runs no kernels (tests/gpu runs every GPU program built this way on the H200). Its
// kernel is PTX only, which the fake GPU loads. Each check prints one line; exits 1 if any fails.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace {

int gFailures = 0;

void check(bool ok, const char* what) {
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", what);
  if (!ok) ++gFailures;
}

void checkError(cudaError_t got, cudaError_t want, const char* what) {
  std::printf("%s %s (got %s, want %s)\n", got == want ? "PASS" : "FAIL", what, cudaGetErrorName(got),
              cudaGetErrorName(want));
  if (got != want) ++gFailures;
}

__global__ void scale(float* data, float factor, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}

// A __managed__ variable: the linked-in runtime asks the driver for its memory at the module's load
// (cuLibraryGetManaged) and points the program's accesses there.
__managed__ int managedTable[4] = {1, 2, 3, 4};

__global__ void bumpManaged() { managedTable[threadIdx.x] += 1; }

void managedVariable() {
  bumpManaged<<<1, 1>>>();  // loads the module
  checkError(cudaDeviceSynchronize(), cudaSuccess, "a launch of a kernel with a __managed__ variable");
  // (The fake GPU does not fill the initial bytes; the GPU suite's managed_variables_static checks
  // them.)
  managedTable[0] = 42;
  int read = 0;
  checkError(cudaMemcpy(&read, managedTable, sizeof read, cudaMemcpyDefault), cudaSuccess,
             "cudaMemcpy from the variable");
  check(read == 42, "a copy reads what the host wrote: one memory");
  void* address = nullptr;
  checkError(cudaGetSymbolAddress(&address, managedTable), cudaSuccess, "cudaGetSymbolAddress");
  check(address == static_cast<void*>(managedTable), "the device's address is the host's");
  cudaPointerAttributes attributes{};
  checkError(cudaPointerGetAttributes(&attributes, managedTable), cudaSuccess, "cudaPointerGetAttributes");
  check(attributes.type == cudaMemoryTypeManaged, "managed memory");
}

// cudaMemcpyBatchAsync: the linked-in runtime calls cuMemcpyBatchAsync_v2.
void copyBatch(float* device, int n) {
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  std::vector<float> in(n), out(n, 0.0f);
  for (int i = 0; i < n; ++i) in[i] = static_cast<float>(3 * i + 1);
  void* dsts[] = {device, out.data()};
  const void* srcs[] = {in.data(), device};
  size_t sizes[] = {n * sizeof(float), n * sizeof(float)};
  cudaMemcpyAttributes attributes{};
  attributes.srcAccessOrder = cudaMemcpySrcAccessOrderDuringApiCall;
  size_t indices[] = {0};
  checkError(cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, &attributes, indices, 1, stream), cudaSuccess,
             "cudaMemcpyBatchAsync (a copy in, a copy out)");
  check(out == in, "the batch ran in order, complete on return");
  size_t late[] = {1};
  checkError(cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, &attributes, late, 1, stream), cudaErrorInvalidValue,
             "a batch whose attributes do not start at copy 0");
  cudaGetLastError();
  cudaStreamDestroy(stream);
}

void CUDART_CB countRun(void* counter) { ++*static_cast<int*>(counter); }

// A graph built node by node: the linked-in runtime builds it through the driver's cuGraphAdd*Node
// calls (client/cuda/api_graph_nodes.cpp) and maps its kernel back to the host stub.
void graphNodeByNode(float* device, int n) {
  std::vector<float> back(n, 1.0f);
  cudaGraph_t graph = nullptr;
  checkError(cudaGraphCreate(&graph, 0), cudaSuccess, "cudaGraphCreate");
  cudaMemsetParams fill{};
  fill.dst = device;
  fill.value = 0;
  fill.elementSize = sizeof(float);
  fill.width = n;
  fill.height = 1;
  cudaGraphNode_t memsetNode = nullptr, kernelNode = nullptr, copyNode = nullptr, hostNode = nullptr;
  checkError(cudaGraphAddMemsetNode(&memsetNode, graph, nullptr, 0, &fill), cudaSuccess,
             "cudaGraphAddMemsetNode");
  float factor = 3.0f;
  int count = n;
  void* args[] = {&device, &factor, &count};
  cudaKernelNodeParams launch{};
  launch.func = reinterpret_cast<void*>(scale);
  launch.gridDim = dim3((n + 255) / 256);
  launch.blockDim = dim3(256);
  launch.kernelParams = args;
  checkError(cudaGraphAddKernelNode(&kernelNode, graph, &memsetNode, 1, &launch), cudaSuccess,
             "cudaGraphAddKernelNode");
  checkError(cudaGraphAddMemcpyNode1D(&copyNode, graph, &kernelNode, 1, back.data(), device,
                                      n * sizeof(float), cudaMemcpyDeviceToHost),
             cudaSuccess, "cudaGraphAddMemcpyNode1D");
  int runs = 0;
  cudaHostNodeParams host{countRun, &runs};
  checkError(cudaGraphAddHostNode(&hostNode, graph, &copyNode, 1, &host), cudaSuccess,
             "cudaGraphAddHostNode");
  cudaKernelNodeParams read{};
  checkError(cudaGraphKernelNodeGetParams(kernelNode, &read), cudaSuccess, "cudaGraphKernelNodeGetParams");
  check(read.func == reinterpret_cast<void*>(scale) && read.gridDim.x == launch.gridDim.x &&
            *static_cast<float*>(read.kernelParams[1]) == 3.0f,
        "the kernel node names the host stub, with its arguments");
  size_t edges = 0;
  checkError(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &edges), cudaSuccess, "cudaGraphGetEdges");
  check(edges == 3, "three edges");
  cudaGraphExec_t exec = nullptr;
  checkError(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess, "cudaGraphInstantiate (nodes)");
  checkError(cudaGraphLaunch(exec, 0), cudaSuccess, "cudaGraphLaunch (nodes)");
  checkError(cudaDeviceSynchronize(), cudaSuccess, "cudaDeviceSynchronize");
  check(back[0] == 0.0f && back[n - 1] == 0.0f && runs == 1, "the memset, the copy and the host node ran");
  factor = 5.0f;
  checkError(cudaGraphExecKernelNodeSetParams(exec, kernelNode, &launch), cudaSuccess,
             "cudaGraphExecKernelNodeSetParams");
  cudaGraph_t clone = nullptr;
  checkError(cudaGraphClone(&clone, graph), cudaSuccess, "cudaGraphClone");
  cudaGraphExecUpdateResultInfo info{};
  checkError(cudaGraphExecUpdate(exec, clone, &info), cudaSuccess, "cudaGraphExecUpdate");
  checkError(cudaGraphLaunch(exec, 0), cudaSuccess, "cudaGraphLaunch after the update");
  checkError(cudaDeviceSynchronize(), cudaSuccess, "cudaDeviceSynchronize");
  check(runs == 2, "ran again");
  cudaGraphNode_t forged = reinterpret_cast<cudaGraphNode_t>(&runs);
  cudaGraphNode_t refused = nullptr;
  checkError(cudaGraphAddEmptyNode(&refused, graph, &forged, 1), cudaErrorInvalidValue,
             "a forged dependency");
  cudaGetLastError();
  checkError(cudaGraphExecDestroy(exec), cudaSuccess, "cudaGraphExecDestroy (nodes)");
  checkError(cudaGraphDestroy(clone), cudaSuccess, "cudaGraphDestroy (clone)");
  checkError(cudaGraphDestroy(graph), cudaSuccess, "cudaGraphDestroy (nodes)");
}

}  // namespace

// Texture and surface objects: the linked-in runtime creates them with cuTexObjectCreate and
// cuSurfObjectCreate and answers its object queries with cuTexObjectGetResourceDesc,
// cuTexObjectGetTextureDesc and cuSurfObjectGetResourceDesc (the GPU suite's textures_2d_static
// and surfaces_static found them missing on the H100).
void objectQueries() {
  const cudaChannelFormatDesc channel = cudaCreateChannelDesc<float>();
  cudaArray_t array = nullptr;
  checkError(cudaMallocArray(&array, &channel, 64, 48, cudaArraySurfaceLoadStore), cudaSuccess,
             "cudaMallocArray");
  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeArray;
  resource.res.array.array = array;
  cudaTextureDesc texture{};
  texture.addressMode[0] = cudaAddressModeClamp;
  texture.addressMode[1] = cudaAddressModeWrap;
  texture.filterMode = cudaFilterModeLinear;
  texture.readMode = cudaReadModeElementType;
  texture.normalizedCoords = 1;
  cudaTextureObject_t tex = 0;
  checkError(cudaCreateTextureObject(&tex, &resource, &texture, nullptr), cudaSuccess,
             "cudaCreateTextureObject");
  cudaResourceDesc resourceBack{};
  checkError(cudaGetTextureObjectResourceDesc(&resourceBack, tex), cudaSuccess,
             "cudaGetTextureObjectResourceDesc");
  check(resourceBack.resType == cudaResourceTypeArray && resourceBack.res.array.array == array,
        "the texture's resource: the array");
  cudaTextureDesc textureBack{};
  checkError(cudaGetTextureObjectTextureDesc(&textureBack, tex), cudaSuccess,
             "cudaGetTextureObjectTextureDesc");
  check(textureBack.addressMode[1] == cudaAddressModeWrap && textureBack.filterMode == cudaFilterModeLinear &&
            textureBack.normalizedCoords == 1,
        "the texture's description as created");
  cudaSurfaceObject_t surface = 0;
  checkError(cudaCreateSurfaceObject(&surface, &resource), cudaSuccess, "cudaCreateSurfaceObject");
  resourceBack = cudaResourceDesc{};
  checkError(cudaGetSurfaceObjectResourceDesc(&resourceBack, surface), cudaSuccess,
             "cudaGetSurfaceObjectResourceDesc");
  check(resourceBack.resType == cudaResourceTypeArray && resourceBack.res.array.array == array,
        "the surface's resource: the array");
  checkError(cudaDestroyTextureObject(tex), cudaSuccess, "cudaDestroyTextureObject");
  check(cudaGetTextureObjectResourceDesc(&resourceBack, tex) != cudaSuccess,
        "a destroyed texture has no description");
  cudaGetLastError();
  checkError(cudaDestroySurfaceObject(surface), cudaSuccess, "cudaDestroySurfaceObject");
  checkError(cudaFreeArray(array), cudaSuccess, "cudaFreeArray");
}

int main() {
  int count = 0;
  checkError(cudaGetDeviceCount(&count), cudaSuccess, "cudaGetDeviceCount");
  check(count == 1, "one device");
  cudaDeviceProp prop{};
  checkError(cudaGetDeviceProperties(&prop, 0), cudaSuccess, "cudaGetDeviceProperties");
  check(std::strlen(prop.name) > 0 && prop.multiProcessorCount > 0, "the worker's device description");
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  check(runtime >= 13000 && driver >= 13000, "runtime and driver versions");

  const int n = 1000;
  std::vector<float> host(n), back(n, 0.0f);
  for (int i = 0; i < n; ++i) host[i] = static_cast<float>(i) * 0.5f;
  float* device = nullptr;
  checkError(cudaMalloc(&device, n * sizeof(float)), cudaSuccess, "cudaMalloc");
  checkError(cudaMemcpy(device, host.data(), n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess,
             "cudaMemcpy host to device");
  checkError(cudaMemcpy(back.data(), device, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess,
             "cudaMemcpy device to host");
  check(back == host, "the data came back");

  scale<<<(n + 255) / 256, 256>>>(device, 2.0f, n);  // loads the module through cuLibraryLoadData
  checkError(cudaGetLastError(), cudaSuccess, "a launch (the module went through the worker's gate)");
  checkError(cudaDeviceSynchronize(), cudaSuccess, "cudaDeviceSynchronize");

  cudaStream_t stream = nullptr;
  checkError(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess,
             "cudaStreamCreateWithFlags");
  checkError(cudaMemsetAsync(device, 0, n * sizeof(float), stream), cudaSuccess, "cudaMemsetAsync");
  checkError(cudaStreamSynchronize(stream), cudaSuccess, "cudaStreamSynchronize");

  // Stream capture through the driver API the linked-in runtime calls (cuStreamBeginCapture_v2,
  // cuGraphInstantiateWithFlags, cuGraphLaunch): the captured memset and copy run only when the
  // graph is launched.
  checkError(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess,
             "cudaStreamBeginCapture");
  checkError(cudaMemsetAsync(device, 0x3f, n * sizeof(float), stream), cudaSuccess, "a captured memset");
  checkError(cudaMemcpyAsync(back.data(), device, n * sizeof(float), cudaMemcpyDeviceToHost, stream),
             cudaSuccess, "a captured copy");
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  checkError(cudaStreamIsCapturing(stream, &status), cudaSuccess, "cudaStreamIsCapturing");
  check(status == cudaStreamCaptureStatusActive, "the stream captures");
  cudaGraph_t graph = nullptr;
  checkError(cudaStreamEndCapture(stream, &graph), cudaSuccess, "cudaStreamEndCapture");
  check(back == host, "nothing captured ran during the capture");
  cudaGraphExec_t exec = nullptr;
  checkError(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess, "cudaGraphInstantiate");
  checkError(cudaGraphLaunch(exec, stream), cudaSuccess, "cudaGraphLaunch");
  checkError(cudaStreamSynchronize(stream), cudaSuccess, "cudaStreamSynchronize after the launch");
  unsigned word = 0;
  std::memcpy(&word, back.data(), sizeof word);
  check(word == 0x3f3f3f3fu, "the graph's memset and copy ran");
  checkError(cudaGraphExecDestroy(exec), cudaSuccess, "cudaGraphExecDestroy");
  checkError(cudaGraphDestroy(graph), cudaSuccess, "cudaGraphDestroy");
  checkError(cudaStreamDestroy(stream), cudaSuccess, "cudaStreamDestroy");
  graphNodeByNode(device, n);
  copyBatch(device, n);
  managedVariable();

  cudaPointerAttributes attributes{};
  checkError(cudaPointerGetAttributes(&attributes, device + 10), cudaSuccess, "cudaPointerGetAttributes");
  check(attributes.type == cudaMemoryTypeDevice, "device memory");

  // Managed and registered memory through the driver API the linked-in runtime calls
  // (cuMemAllocManaged, cuMemPrefetchAsync_v2, cuMemAdvise_v2, cuMemHostRegister_v2, ...).
  float* managed = nullptr;
  checkError(cudaMallocManaged(&managed, n * sizeof(float)), cudaSuccess, "cudaMallocManaged");
  for (int i = 0; i < n; ++i) managed[i] = static_cast<float>(i);
  cudaMemLocation onDevice{cudaMemLocationTypeDevice, 0};
  checkError(cudaMemPrefetchAsync(managed, n * sizeof(float), onDevice, 0, nullptr), cudaSuccess,
             "cudaMemPrefetchAsync");
  checkError(cudaMemAdvise(managed, n * sizeof(float), cudaMemAdviseSetReadMostly, onDevice), cudaSuccess,
             "cudaMemAdvise");
  checkError(cudaMemcpy(device, managed, n * sizeof(float), cudaMemcpyDefault), cudaSuccess,
             "cudaMemcpy from managed memory");
  checkError(cudaMemcpy(back.data(), device, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess,
             "and back");
  check(back[n - 1] == static_cast<float>(n - 1), "managed memory's bytes reached the device");
  checkError(cudaPointerGetAttributes(&attributes, managed), cudaSuccess, "attributes of managed memory");
  check(attributes.type == cudaMemoryTypeManaged && attributes.devicePointer == managed,
        "managed memory, one address");
  checkError(cudaFree(managed), cudaSuccess, "cudaFree of managed memory");
  std::vector<float> registered(50000, 2.5f);
  checkError(cudaHostRegister(registered.data(), registered.size() * sizeof(float), cudaHostRegisterMapped),
             cudaSuccess, "cudaHostRegister");
  void* mapped = nullptr;
  checkError(cudaHostGetDevicePointer(&mapped, registered.data(), 0), cudaSuccess,
             "cudaHostGetDevicePointer");
  checkError(cudaHostUnregister(registered.data()), cudaSuccess, "cudaHostUnregister");
  check(registered[49999] == 2.5f, "registered memory intact");

  checkError(cudaFree(reinterpret_cast<void*>(0x10)), cudaErrorInvalidValue, "cudaFree of a forged pointer");
  cudaGetLastError();

  // The runtime keeps its per-context state in the driver's context-local storage: after a reset
  // it must find that state gone and make it afresh, or the next call fails.
  checkError(cudaDeviceReset(), cudaSuccess, "cudaDeviceReset");
  float* again = nullptr;
  checkError(cudaMalloc(&again, 4096), cudaSuccess, "cudaMalloc after the reset");
  checkError(cudaFree(again), cudaSuccess, "cudaFree");
  scale<<<1, 32>>>(again, 1.0f, 0);
  checkError(cudaGetLastError(), cudaSuccess, "a launch after the reset (the module is loaded again)");

  objectQueries();
  std::printf("%d failure(s)\n", gFailures);
  return gFailures == 0 ? 0 : 1;
}
