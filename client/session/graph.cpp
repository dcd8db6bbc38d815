#include "client/session/graph.h"

#include <cuda.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

namespace agileos::client {
namespace {

// Never destroyed: graphs may be destroyed from static destructors of the program.
std::unordered_set<const Graph*>& liveGraphs() {
  static auto* graphs = new std::unordered_set<const Graph*>();
  return *graphs;
}
std::unordered_set<const Node*>& liveNodes() {
  static auto* nodes = new std::unordered_set<const Node*>();
  return *nodes;
}

bool contains(const std::vector<Node*>& nodes, const Node* node) {
  return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

}  // namespace

std::mutex& graphMutex() {
  static auto* mutex = new std::mutex();
  return *mutex;
}

bool isLiveGraph(const Graph* graph) { return graph != nullptr && liveGraphs().contains(graph); }
bool isLiveNode(const Node* node) { return node != nullptr && liveNodes().contains(node); }

Graph::Graph() { liveGraphs().insert(this); }

Graph::~Graph() {
  for (const auto& node : nodes_) liveNodes().erase(node.get());
  liveGraphs().erase(this);
}

cudaError_t Graph::add(NodeKind kind, NodeWork work, std::span<Node* const> dependencies, Node** node) {
  for (std::size_t i = 0; i < dependencies.size(); ++i) {
    if (!owns(dependencies[i])) return cudaErrorInvalidValue;
    for (std::size_t j = 0; j < i; ++j) {
      if (dependencies[j] == dependencies[i]) return cudaErrorInvalidValue;
    }
  }
  auto created = std::make_unique<Node>();
  created->owner = this;
  created->kind = kind;
  created->work = std::move(work);
  if (auto* child = std::get_if<ChildWork>(&created->work); child != nullptr && child->graph) {
    child->graph->markChild();
  }
  if (auto* conditional = std::get_if<ConditionalWork>(&created->work)) {
    for (const auto& body : conditional->bodies) body->markChild();
  }
  created->dependencies.assign(dependencies.begin(), dependencies.end());
  for (Node* dependency : dependencies) dependency->dependents.push_back(created.get());
  liveNodes().insert(created.get());
  if (node != nullptr) *node = created.get();
  nodes_.push_back(std::move(created));
  return cudaSuccess;
}

cudaError_t Graph::addEdges(std::span<Node* const> from, std::span<Node* const> to) {
  if (from.size() != to.size()) return cudaErrorInvalidValue;
  for (std::size_t i = 0; i < from.size(); ++i) {
    if (!owns(from[i]) || !owns(to[i]) || from[i] == to[i] || contains(to[i]->dependencies, from[i])) {
      return cudaErrorInvalidValue;
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (from[j] == from[i] && to[j] == to[i]) return cudaErrorInvalidValue;
    }
  }
  for (std::size_t i = 0; i < from.size(); ++i) {
    to[i]->dependencies.push_back(from[i]);
    from[i]->dependents.push_back(to[i]);
  }
  return cudaSuccess;
}

cudaError_t Graph::removeEdges(std::span<Node* const> from, std::span<Node* const> to) {
  if (from.size() != to.size()) return cudaErrorInvalidValue;
  for (std::size_t i = 0; i < from.size(); ++i) {
    if (!owns(from[i]) || !owns(to[i]) || !contains(to[i]->dependencies, from[i]))
      return cudaErrorInvalidValue;
  }
  for (std::size_t i = 0; i < from.size(); ++i) {
    std::erase(to[i]->dependencies, from[i]);
    std::erase(from[i]->dependents, to[i]);
  }
  return cudaSuccess;
}

void Graph::remove(Node* node) {
  for (Node* dependency : node->dependencies) std::erase(dependency->dependents, node);
  for (Node* dependent : node->dependents) std::erase(dependent->dependencies, node);
  liveNodes().erase(node);
  std::erase_if(nodes_, [&](const std::unique_ptr<Node>& owned) { return owned.get() == node; });
}

bool Graph::owns(const Node* node) const { return isLiveNode(node) && node->owner == this; }

std::vector<Node*> Graph::roots() const {
  std::vector<Node*> out;
  for (const auto& node : nodes_) {
    if (node->dependencies.empty()) out.push_back(node.get());
  }
  return out;
}

std::vector<Node*> Graph::leaves() const {
  std::vector<Node*> out;
  for (const auto& node : nodes_) {
    if (node->dependents.empty()) out.push_back(node.get());
  }
  return out;
}

bool Graph::hasMemoryNodes() const {
  return std::any_of(nodes_.begin(), nodes_.end(), [](const std::unique_ptr<Node>& node) {
    return node->kind == NodeKind::kMemAlloc || node->kind == NodeKind::kMemFree;
  });
}

bool Graph::hasConditionalNodes() const {
  return std::any_of(nodes_.begin(), nodes_.end(),
                     [](const std::unique_ptr<Node>& node) { return node->kind == NodeKind::kConditional; });
}

NodeWork copyWork(const NodeWork& work) {
  if (const auto* conditional = std::get_if<ConditionalWork>(&work)) {
    // A graph with conditional nodes is never cloned (callers refuse it): only an executable
    // node's work is copied, which has no bodies of its own.
    ConditionalWork copy;
    copy.handle = conditional->handle;
    copy.type = conditional->type;
    copy.flattened = conditional->flattened;
    return copy;
  }
  if (const auto* child = std::get_if<ChildWork>(&work)) {
    ChildWork copy;
    if (child->graph) {
      copy.graph = child->graph->clone();
      copy.graph->markChild();
    }
    return copy;
  }
  if (const auto* kernel = std::get_if<KernelWork>(&work)) {
    KernelWork copy = *kernel;
    // The parameter pointers point into the copy's own buffer.
    for (std::size_t i = 0; i < copy.parameterPointers.size(); ++i) {
      copy.parameterPointers[i] = copy.params.data() + copy.layout.params[i].first;
    }
    return copy;
  }
  return std::visit(
      [](const auto& alternative) -> NodeWork {
        using T = std::decay_t<decltype(alternative)>;
        if constexpr (std::is_same_v<T, ChildWork> || std::is_same_v<T, KernelWork> ||
                      std::is_same_v<T, ConditionalWork>) {
          return EmptyWork{};  // handled above
        } else {
          return alternative;
        }
      },
      work);
}

std::unique_ptr<Graph> Graph::clone(std::vector<std::pair<const Node*, Node*>>* mapping) const {
  auto copy = std::make_unique<Graph>();
  std::unordered_map<const Node*, Node*> copies;
  for (const auto& node : nodes_) {
    auto created = std::make_unique<Node>();
    created->owner = copy.get();
    created->kind = node->kind;
    created->work = copyWork(node->work);
    created->enabled = node->enabled;
    created->clonedFrom = node.get();
    copies[node.get()] = created.get();
    liveNodes().insert(created.get());
    copy->nodes_.push_back(std::move(created));
  }
  for (const auto& node : nodes_) {
    Node* created = copies[node.get()];
    for (const Node* dependency : node->dependencies) created->dependencies.push_back(copies[dependency]);
    for (const Node* dependent : node->dependents) created->dependents.push_back(copies[dependent]);
    if (mapping != nullptr) mapping->emplace_back(node.get(), created);
  }
  copy->userObjects.addAll(userObjects);
  return copy;
}

bool Graph::topologicalOrder(std::vector<const Node*>* order) const {
  std::unordered_map<const Node*, std::size_t> waiting;
  std::vector<const Node*> ready;
  for (const auto& node : nodes_) {
    waiting[node.get()] = node->dependencies.size();
  }
  // Kahn's algorithm over the nodes in the order they were added, so that a graph built in
  // program order replays in program order.
  std::unordered_map<const Node*, std::size_t> position;
  for (std::size_t i = 0; i < nodes_.size(); ++i) position[nodes_[i].get()] = i;
  auto later = [&](const Node* a, const Node* b) { return position[a] > position[b]; };
  for (const auto& node : nodes_) {
    if (node->dependencies.empty()) ready.push_back(node.get());
  }
  std::make_heap(ready.begin(), ready.end(), later);
  order->clear();
  while (!ready.empty()) {
    std::pop_heap(ready.begin(), ready.end(), later);
    const Node* node = ready.back();
    ready.pop_back();
    order->push_back(node);
    for (const Node* dependent : node->dependents) {
      if (--waiting[dependent] == 0) {
        ready.push_back(dependent);
        std::push_heap(ready.begin(), ready.end(), later);
      }
    }
  }
  return order->size() == nodes_.size();
}

cudaError_t packKernelWork(const KernelLayout& layout, const void* function, void* const* args,
                           void* const* extra, KernelWork* work) {
  work->layout = layout;
  work->function = function;
  work->params.assign(layout.bufferSize, '\0');
  if (extra != nullptr) {
    // CU_LAUNCH_PARAM_BUFFER_POINTER, pointer, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END.
    const void* buffer = nullptr;
    const std::size_t* size = nullptr;
    // At most a few dozen entries are read: a list that does not end is refused, not walked forever.
    constexpr std::size_t kMaxEntries = 64;
    std::size_t i = 0;
    for (; i < kMaxEntries && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
        buffer = extra[i + 1];
      } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
        size = static_cast<const std::size_t*>(extra[i + 1]);
      } else {
        return cudaErrorInvalidValue;
      }
    }
    if (i >= kMaxEntries) return cudaErrorInvalidValue;
    if (args != nullptr ||
        (layout.bufferSize > 0 && (buffer == nullptr || size == nullptr || *size < layout.bufferSize))) {
      return cudaErrorInvalidValue;
    }
    if (layout.bufferSize > 0) std::memcpy(work->params.data(), buffer, layout.bufferSize);
  } else {
    if (!layout.params.empty() && args == nullptr) return cudaErrorInvalidValue;
    for (std::size_t i = 0; i < layout.params.size(); ++i) {
      const auto [offset, size] = layout.params[i];
      std::memcpy(work->params.data() + offset, args[i], size);
    }
  }
  work->parameterPointers.clear();
  for (const auto& [offset, size] : layout.params)
    work->parameterPointers.push_back(work->params.data() + offset);
  return cudaSuccess;
}

}  // namespace agileos::client
