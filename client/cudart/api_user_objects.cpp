// User objects and the references graphs hold to them (cudart exports), on the session's records
// (client/session/user_objects.h): nothing reaches the worker.
#include <cuda_runtime_api.h>

#include "client/session/error_state.h"
#include "client/session/graph_node_params.h"
#include "client/session/user_objects.h"
#include "cudart_api.gen.h"  // checks the definitions against the declarations

using namespace agileos::client;
using namespace agileos::client::graph_api;

namespace {

UserObject* objectOf(cudaUserObject_t object) { return reinterpret_cast<UserObject*>(object); }

}  // namespace

extern "C" {

cudaError_t cudaUserObjectCreate(cudaUserObject_t* object_out, void* ptr, cudaHostFn_t destroy,
                                 unsigned int initialRefcount, unsigned int flags) {
  if (object_out == nullptr) return recordError(cudaErrorInvalidValue);
  UserObject* created = nullptr;
  if (cudaError_t error = createUserObject(ptr, destroy, initialRefcount, flags, &created);
      error != cudaSuccess)
    return recordError(error);
  *object_out = reinterpret_cast<cudaUserObject_t>(created);
  return cudaSuccess;
}

cudaError_t cudaUserObjectRetain(cudaUserObject_t object, unsigned int count) {
  return recordError(retainUserObject(objectOf(object), count));
}

cudaError_t cudaUserObjectRelease(cudaUserObject_t object, unsigned int count) {
  return recordError(releaseUserObject(objectOf(object), count));
}

cudaError_t cudaGraphRetainUserObject(cudaGraph_t graph, cudaUserObject_t object, unsigned int count,
                                      unsigned int flags) {
  return recordError(retainGraphUserObject(graphOf(graph), objectOf(object), count, flags));
}

cudaError_t cudaGraphReleaseUserObject(cudaGraph_t graph, cudaUserObject_t object, unsigned int count) {
  return recordError(releaseGraphUserObject(graphOf(graph), objectOf(object), count));
}

}  // extern "C"
