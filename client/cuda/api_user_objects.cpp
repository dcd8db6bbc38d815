// User objects and the references graphs hold to them, and cuGraphDebugDotPrint (libcuda.so.1
// exports), on the session's records (client/session/user_objects.h, graph_dot.h), which the
// runtime shim's are too (a CUuserObject and a cudaUserObject_t are the same handle): nothing
// reaches the worker.
#include <cuda.h>

#include "client/cuda/driver_call.h"
#include "client/session/graph.h"
#include "client/session/graph_dot.h"
#include "client/session/user_objects.h"
#include "cuda_api.gen.h"  // checks every definition against cuda.h's declaration

using namespace agileos::client;
using namespace agileos::client::cuda_shim;

namespace {

UserObject* objectOf(CUuserObject object) { return reinterpret_cast<UserObject*>(object); }

}  // namespace

extern "C" {

CUresult cuUserObjectCreate(CUuserObject* object_out, void* ptr, CUhostFn destroy,
                            unsigned int initialRefcount, unsigned int flags) {
  if (object_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  UserObject* created = nullptr;
  if (cudaError_t error = createUserObject(ptr, destroy, initialRefcount, flags, &created);
      error != cudaSuccess)
    return toDriverResult(error);
  *object_out = reinterpret_cast<CUuserObject>(created);
  return CUDA_SUCCESS;
}

CUresult cuUserObjectRetain(CUuserObject object, unsigned int count) {
  return toDriverResult(retainUserObject(objectOf(object), count));
}

CUresult cuUserObjectRelease(CUuserObject object, unsigned int count) {
  return toDriverResult(releaseUserObject(objectOf(object), count));
}

// CU_GRAPH_USER_OBJECT_MOVE and cudaGraphUserObjectMove are one flag.
static_assert(static_cast<unsigned>(CU_GRAPH_USER_OBJECT_MOVE) ==
              static_cast<unsigned>(cudaGraphUserObjectMove));

CUresult cuGraphRetainUserObject(CUgraph graph, CUuserObject object, unsigned int count, unsigned int flags) {
  return toDriverResult(
      retainGraphUserObject(reinterpret_cast<Graph*>(graph), objectOf(object), count, flags));
}

CUresult cuGraphReleaseUserObject(CUgraph graph, CUuserObject object, unsigned int count) {
  return toDriverResult(releaseGraphUserObject(reinterpret_cast<Graph*>(graph), objectOf(object), count));
}

CUresult cuGraphDebugDotPrint(CUgraph graph, const char* path, unsigned int flags) {
  (void)flags;  // the detail is the same whatever they ask (graph_dot.h)
  return toDriverResult(printGraphDot(reinterpret_cast<Graph*>(graph), path));
}

}  // extern "C"
