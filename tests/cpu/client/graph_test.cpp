// The client's graph records (client/session/graph.h): edges, order, clones, handles, and the
// packing of a kernel node's parameters, including the hostile forms a program can pass.
#include "client/session/graph.h"

#include <cuda.h>
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>

namespace agileos::client {
namespace {

class GraphTest : public ::testing::Test {
 protected:
  // Every Graph operation runs under the graph mutex, as the shims call them.
  std::lock_guard<std::mutex> lock_{graphMutex()};
  Graph graph_;

  Node* add(std::vector<Node*> dependencies = {}) {
    Node* node = nullptr;
    EXPECT_EQ(graph_.add(NodeKind::kEmpty, EmptyWork{}, dependencies, &node), cudaSuccess);
    return node;
  }
  std::vector<const Node*> order() {
    std::vector<const Node*> out;
    EXPECT_TRUE(graph_.topologicalOrder(&out));
    return out;
  }
};

TEST_F(GraphTest, OrderRespectsEdgesAndKeepsInsertionOrderAmongReadyNodes) {
  Node* a = add();
  Node* b = add();
  Node* c = add({b});
  Node* d = add({a, c});
  EXPECT_EQ(order(), (std::vector<const Node*>{a, b, c, d}));
  ASSERT_EQ(graph_.addEdges(std::vector<Node*>{d}, std::vector<Node*>{b}), cudaSuccess);  // a cycle
  std::vector<const Node*> cyclic;
  EXPECT_FALSE(graph_.topologicalOrder(&cyclic));
  ASSERT_EQ(graph_.removeEdges(std::vector<Node*>{d}, std::vector<Node*>{b}), cudaSuccess);
  EXPECT_EQ(order().size(), 4u);
  EXPECT_EQ(graph_.roots(), (std::vector<Node*>{a, b}));
  EXPECT_EQ(graph_.leaves(), (std::vector<Node*>{d}));
}

TEST_F(GraphTest, DependenciesMustBeNodesOfThisGraphWithoutRepeats) {
  Node* a = add();
  Graph other;
  Node* foreign = nullptr;
  ASSERT_EQ(other.add(NodeKind::kEmpty, EmptyWork{}, {}, &foreign), cudaSuccess);
  Node* node = nullptr;
  EXPECT_EQ(graph_.add(NodeKind::kEmpty, EmptyWork{}, std::vector<Node*>{foreign}, &node),
            cudaErrorInvalidValue);
  EXPECT_EQ(graph_.add(NodeKind::kEmpty, EmptyWork{}, std::vector<Node*>{a, a}, &node),
            cudaErrorInvalidValue);
  Node* forged = reinterpret_cast<Node*>(0x1000);
  EXPECT_EQ(graph_.add(NodeKind::kEmpty, EmptyWork{}, std::vector<Node*>{forged}, &node),
            cudaErrorInvalidValue);
  EXPECT_EQ(graph_.nodes().size(), 1u) << "a refused node is not added";
  // Edges: all or nothing, no self edge, no repeat.
  Node* b = add();
  EXPECT_EQ(graph_.addEdges(std::vector<Node*>{a, b}, std::vector<Node*>{b, b}), cudaErrorInvalidValue);
  EXPECT_TRUE(b->dependencies.empty());
  ASSERT_EQ(graph_.addEdges(std::vector<Node*>{a}, std::vector<Node*>{b}), cudaSuccess);
  EXPECT_EQ(graph_.addEdges(std::vector<Node*>{a}, std::vector<Node*>{b}), cudaErrorInvalidValue);
  EXPECT_EQ(graph_.removeEdges(std::vector<Node*>{b}, std::vector<Node*>{a}), cudaErrorInvalidValue);
}

TEST_F(GraphTest, HandlesGoStaleWithTheirGraphAndNodes) {
  Node* a = add();
  Node* b = add({a});
  EXPECT_TRUE(isLiveNode(a));
  graph_.remove(a);
  EXPECT_FALSE(isLiveNode(a));
  EXPECT_TRUE(b->dependencies.empty());
  Node* inChild = nullptr;
  {
    auto temporary = std::make_unique<Graph>();
    ASSERT_EQ(temporary->add(NodeKind::kEmpty, EmptyWork{}, {}, &inChild), cudaSuccess);
    EXPECT_TRUE(isLiveGraph(temporary.get()));
    EXPECT_TRUE(isLiveNode(inChild));
  }
  EXPECT_FALSE(isLiveNode(inChild));
}

TEST_F(GraphTest, CloneIsDeepAndRemembersWhereEachNodeCameFrom) {
  Node* a = add();
  ChildWork child;
  child.graph = std::make_unique<Graph>();
  Node* inner = nullptr;
  ASSERT_EQ(child.graph->add(NodeKind::kEmpty, EmptyWork{}, {}, &inner), cudaSuccess);
  Node* childNode = nullptr;
  ASSERT_EQ(graph_.add(NodeKind::kChildGraph, std::move(child), std::vector<Node*>{a}, &childNode),
            cudaSuccess);
  EXPECT_TRUE(std::get<ChildWork>(childNode->work).graph->isChild());
  std::vector<std::pair<const Node*, Node*>> mapping;
  std::unique_ptr<Graph> copy = graph_.clone(&mapping);
  ASSERT_EQ(copy->nodes().size(), 2u);
  ASSERT_EQ(mapping.size(), 2u);
  Node* copiedChild = copy->nodes()[1].get();
  EXPECT_EQ(copiedChild->clonedFrom, childNode);
  EXPECT_EQ(copiedChild->dependencies, (std::vector<Node*>{copy->nodes()[0].get()}));
  const Graph* innerCopy = std::get<ChildWork>(copiedChild->work).graph.get();
  EXPECT_NE(innerCopy, std::get<ChildWork>(childNode->work).graph.get()) << "the child graph is copied";
  EXPECT_TRUE(isLiveNode(innerCopy->nodes()[0].get()));
}

TEST(KernelWorkTest, PacksArgumentsAtTheWorkersOffsets) {
  KernelLayout layout;
  layout.params = {{0, 4}, {8, 8}};
  layout.bufferSize = 16;
  std::uint32_t first = 0x11223344;
  std::uint64_t second = 0x5566778899aabbccull;
  void* args[] = {&first, &second};
  KernelWork work;
  ASSERT_EQ(packKernelWork(layout, nullptr, args, nullptr, &work), cudaSuccess);
  std::uint32_t readFirst = 0;
  std::uint64_t readSecond = 0;
  std::memcpy(&readFirst, work.params.data(), 4);
  std::memcpy(&readSecond, work.params.data() + 8, 8);
  EXPECT_EQ(readFirst, first);
  EXPECT_EQ(readSecond, second);
  ASSERT_EQ(work.parameterPointers.size(), 2u);
  EXPECT_EQ(work.parameterPointers[1], work.params.data() + 8);
  // A copy's parameter pointers point into the copy's own buffer.
  NodeWork copied = copyWork(NodeWork{work});
  const auto& copy = std::get<KernelWork>(copied);
  EXPECT_EQ(copy.parameterPointers[1], copy.params.data() + 8);
}

TEST(KernelWorkTest, RefusesHostileParameterForms) {
  KernelLayout layout;
  layout.params = {{0, 8}};
  layout.bufferSize = 8;
  KernelWork work;
  EXPECT_EQ(packKernelWork(layout, nullptr, nullptr, nullptr, &work), cudaErrorInvalidValue)
      << "no arguments";
  char buffer[8] = {};
  std::size_t small = 4;
  void* tooSmall[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &small,
                      CU_LAUNCH_PARAM_END};
  EXPECT_EQ(packKernelWork(layout, nullptr, nullptr, tooSmall, &work), cudaErrorInvalidValue);
  void* unknownKey[] = {reinterpret_cast<void*>(7), buffer, CU_LAUNCH_PARAM_END};
  EXPECT_EQ(packKernelWork(layout, nullptr, nullptr, unknownKey, &work), cudaErrorInvalidValue);
  // A list that never ends is not walked past its bound.
  std::vector<void*> endless(200, CU_LAUNCH_PARAM_BUFFER_POINTER);
  for (std::size_t i = 1; i < endless.size(); i += 2) endless[i] = buffer;
  EXPECT_EQ(packKernelWork(layout, nullptr, nullptr, endless.data(), &work), cudaErrorInvalidValue);
  std::size_t size = 8;
  void* good[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                  CU_LAUNCH_PARAM_END};
  EXPECT_EQ(packKernelWork(layout, nullptr, nullptr, good, &work), cudaSuccess);
}

}  // namespace
}  // namespace agileos::client
