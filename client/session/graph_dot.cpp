#include "client/session/graph_dot.h"

#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <unordered_map>

namespace agileos::client {
namespace {

const char* kindName(NodeKind kind) {
  switch (kind) {
    case NodeKind::kKernel:
      return "kernel";
    case NodeKind::kMemcpy:
      return "memcpy";
    case NodeKind::kMemset:
      return "memset";
    case NodeKind::kHost:
      return "host";
    case NodeKind::kChildGraph:
      return "graph";
    case NodeKind::kEmpty:
      return "empty";
    case NodeKind::kEventWait:
      return "wait event";
    case NodeKind::kEventRecord:
      return "record event";
    case NodeKind::kMemAlloc:
      return "mem alloc";
    case NodeKind::kConditional:
      return "conditional";
    case NodeKind::kMemFree:
      return "mem free";
  }
  return "node";
}

std::string detail(const Node& node) {
  char text[160] = "";
  if (const auto* kernel = std::get_if<KernelWork>(&node.work)) {
    std::snprintf(text, sizeof text, "\\ngrid (%u,%u,%u) block (%u,%u,%u) smem %zu", kernel->grid.x,
                  kernel->grid.y, kernel->grid.z, kernel->block.x, kernel->block.y, kernel->block.z,
                  kernel->sharedMem);
  } else if (const auto* copy = std::get_if<CopyWork>(&node.work)) {
    std::snprintf(text, sizeof text, "\\n%zu x %zu bytes", copy->width, copy->height);
  } else if (const auto* fill = std::get_if<FillWork>(&node.work)) {
    std::snprintf(text, sizeof text, "\\n%zu x %zu elements", fill->width, fill->height);
  }
  return text;
}

// Writes `graph`'s vertices and edges; vertex names are n<number> across the whole file.
void writeBody(std::ostream& out, const Graph& graph, int depth, int* next,
               std::unordered_map<const Node*, int>* names) {
  const std::string indent(static_cast<std::size_t>(depth) * 2, ' ');
  for (const auto& node : graph.nodes()) {
    const int name = (*next)++;
    (*names)[node.get()] = name;
    out << indent << "n" << name << " [label=\"" << kindName(node->kind) << detail(*node) << "\"];\n";
    if (const auto* child = std::get_if<ChildWork>(&node->work); child != nullptr && child->graph) {
      out << indent << "subgraph cluster_" << name << " {\n"
          << indent << "  label=\"graph n" << name << "\";\n";
      writeBody(out, *child->graph, depth + 1, next, names);
      out << indent << "}\n";
    }
  }
  for (const auto& node : graph.nodes()) {
    for (const Node* dependency : node->dependencies)
      out << indent << "n" << names->at(dependency) << " -> n" << names->at(node.get()) << ";\n";
  }
}

}  // namespace

cudaError_t printGraphDot(Graph* target, const char* path) {
  if (path == nullptr) return cudaErrorInvalidValue;
  std::lock_guard lock(graphMutex());
  if (!isLiveGraph(target)) return cudaErrorInvalidValue;
  const Graph& graph = *target;
  std::ofstream out(path, std::ios::trunc);
  if (!out) return cudaErrorOperatingSystem;
  out << "digraph dot {\n  node [shape=box];\n";
  int next = 0;
  std::unordered_map<const Node*, int> names;
  writeBody(out, graph, 1, &next, &names);
  out << "}\n";
  out.flush();
  return out ? cudaSuccess : cudaErrorOperatingSystem;
}

}  // namespace agileos::client
