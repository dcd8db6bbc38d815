// User objects and the references graphs hold (client/session/user_objects.h): counts, moves,
// clones, and a destructor that runs exactly once, off the releasing thread, after the last
// reference goes.
#include "client/session/user_objects.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "client/session/graph.h"

namespace agileos::client {
namespace {

struct Resource {
  std::atomic<int> destroyed{0};
  std::atomic<std::thread::id> destroyedOn{};
};

void destroyResource(void* pointer) {
  auto* resource = static_cast<Resource*>(pointer);
  resource->destroyedOn = std::this_thread::get_id();
  ++resource->destroyed;
}

// The destructor runs on a thread of its own: wait for it (bounded), then a little longer to see
// that it does not run twice.
bool destroyedOnce(const Resource& resource) {
  for (int i = 0; i < 2000 && resource.destroyed.load() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return resource.destroyed.load() == 1;
}

TEST(UserObjects, TheDestructorRunsOnceOffTheReleasingThreadAfterTheLastReference) {
  Resource resource;
  UserObject* object = nullptr;
  ASSERT_EQ(createUserObject(&resource, destroyResource, 2, cudaUserObjectNoDestructorSync, &object),
            cudaSuccess);
  EXPECT_EQ(retainUserObject(object, 3), cudaSuccess);  // 5
  EXPECT_EQ(releaseUserObject(object, 6), cudaErrorInvalidValue) << "more than it holds";
  EXPECT_EQ(releaseUserObject(object, 4), cudaSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(resource.destroyed.load(), 0) << "one reference left";
  EXPECT_EQ(releaseUserObject(object, 1), cudaSuccess);
  EXPECT_TRUE(destroyedOnce(resource));
  EXPECT_NE(resource.destroyedOn.load(), std::this_thread::get_id());
  EXPECT_EQ(releaseUserObject(object, 1), cudaErrorInvalidValue) << "a destroyed object is no handle";
  EXPECT_EQ(retainUserObject(object, 1), cudaErrorInvalidValue);
}

TEST(UserObjects, CreationChecksItsArguments) {
  Resource resource;
  UserObject* object = nullptr;
  EXPECT_EQ(createUserObject(&resource, destroyResource, 1, 0, &object), cudaErrorInvalidValue)
      << "cudaUserObjectNoDestructorSync is required";
  EXPECT_EQ(createUserObject(&resource, destroyResource, 0, cudaUserObjectNoDestructorSync, &object),
            cudaErrorInvalidValue);
  EXPECT_EQ(createUserObject(&resource, nullptr, 1, cudaUserObjectNoDestructorSync, &object),
            cudaErrorInvalidValue);
  EXPECT_EQ(retainUserObject(reinterpret_cast<UserObject*>(&resource), 1), cudaErrorInvalidValue) << "forged";
  EXPECT_EQ(resource.destroyed.load(), 0);
}

TEST(UserObjects, GraphsAndTheirClonesHoldReferencesUntilDestroyed) {
  Resource resource;
  UserObject* object = nullptr;
  ASSERT_EQ(createUserObject(&resource, destroyResource, 1, cudaUserObjectNoDestructorSync, &object),
            cudaSuccess);
  std::unique_ptr<Graph> graph, clone;
  {
    std::lock_guard lock(graphMutex());
    graph = std::make_unique<Graph>();
    ASSERT_EQ(graph->userObjects.add(object, 2, false), cudaSuccess);  // 3
    ASSERT_EQ(graph->userObjects.add(object, 1, true), cudaSuccess);   // the caller's moved: still 3
    EXPECT_EQ(graph->userObjects.add(object, 4, true), cudaErrorInvalidValue) << "more than the object has";
    EXPECT_EQ(graph->userObjects.remove(object, 4), cudaErrorInvalidValue) << "the graph holds 3";
    clone = graph->clone();  // 6
  }
  {
    std::lock_guard lock(graphMutex());
    graph.reset();  // 3
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(resource.destroyed.load(), 0) << "the clone still holds it";
  {
    std::lock_guard lock(graphMutex());
    EXPECT_EQ(clone->userObjects.remove(object, 1), cudaSuccess);
    clone.reset();
  }
  EXPECT_TRUE(destroyedOnce(resource));
}

}  // namespace
}  // namespace agileos::client
