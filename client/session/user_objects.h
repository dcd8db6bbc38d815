// User objects (cudaUserObjectCreate / cuUserObjectCreate and the graph references to them;
// untrusted side, shared by the runtime and the driver shims). A user object is the program's: a
// pointer and a destructor that runs once, when the last reference goes. Nothing of it reaches the
// worker: the references a graph holds keep the program's resources alive for as long as the graph
// (or an executable graph made from it) may run, which is the client's own business.
//
// As natively, the destructor does not run inside the call that drops the last reference: it runs
// on a thread of its own, so that it may take locks the releasing thread holds. It must not call
// CUDA (the CUDA documentation forbids it).
#pragma once

#include <cuda_runtime_api.h>

#include <map>

namespace agileos::client {

struct UserObject;  // a handle is its address, checked against the live objects before use

// flags must be cudaUserObjectNoDestructorSync (the only one CUDA defines and requires);
// initialReferences at least 1.
cudaError_t createUserObject(void* pointer, cudaHostFn_t destroy, unsigned initialReferences, unsigned flags,
                             UserObject** object);
// cudaErrorInvalidValue for an object that is not live, a count of 0, or one that would overflow
// (retain) or is more than the object holds (release).
cudaError_t retainUserObject(UserObject* object, unsigned count);
cudaError_t releaseUserObject(UserObject* object, unsigned count);

class Graph;  // client/session/graph.h

// cudaGraphRetainUserObject and cudaGraphReleaseUserObject (and the driver's cu* forms, the same
// handles) on a live graph: cudaErrorInvalidValue for a graph that is not, or flags other than 0
// and cudaGraphUserObjectMove. Take graphMutex().
cudaError_t retainGraphUserObject(Graph* graph, UserObject* object, unsigned count, unsigned flags);
cudaError_t releaseGraphUserObject(Graph* graph, UserObject* object, unsigned count);

// The references one graph or executable graph holds, by object. Copying retains each reference
// again (a clone, or an executable graph instantiated from the graph, holds its own); destruction
// releases them.
class UserObjectReferences {
 public:
  UserObjectReferences() = default;
  UserObjectReferences(const UserObjectReferences& other);
  UserObjectReferences& operator=(const UserObjectReferences&) = delete;
  ~UserObjectReferences();

  // cudaGraphRetainUserObject: `count` more references; with `move`, the caller's are taken over
  // (none is added to the object's count).
  cudaError_t add(UserObject* object, unsigned count, bool move);
  // cudaGraphReleaseUserObject: at most as many as this holds.
  cudaError_t remove(UserObject* object, unsigned count);
  // Adds every reference `other` holds (retaining each), for an executable graph whose child
  // graphs are inlined.
  void addAll(const UserObjectReferences& other);

 private:
  std::map<UserObject*, unsigned> held_;
};

}  // namespace agileos::client
