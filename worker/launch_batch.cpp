#include "worker/launch_batch.h"

#include <bit>
#include <optional>

#include "worker/call_context.h"

namespace agileos::worker {
namespace {

// A held launch, resolved for the driver: its parameter pointers point into the held block.
struct Resolved {
  CUfunction function = nullptr;
  LaunchConfig config;
  const std::string* params = nullptr;  // the held block
  std::vector<void*> pointers;
};

// What a chain node holds once it carries `launch` (a copy of its parameters: made only for a node
// that is created or updated, never to compare).
ChainNodeState stateOf(const Resolved& launch) {
  ChainNodeState state;
  state.function = launch.function;
  state.grid[0] = launch.config.gridX;
  state.grid[1] = launch.config.gridY;
  state.grid[2] = launch.config.gridZ;
  state.block[0] = launch.config.blockX;
  state.block[1] = launch.config.blockY;
  state.block[2] = launch.config.blockZ;
  state.sharedMemBytes = launch.config.sharedMemBytes;
  state.params = *launch.params;
  return state;
}

// Whether `node` already carries `launch`, so that the node needs no update.
bool carries(const ChainNodeState& node, const Resolved& launch) {
  const LaunchConfig& c = launch.config;
  return node.function == launch.function && node.grid[0] == c.gridX && node.grid[1] == c.gridY &&
         node.grid[2] == c.gridZ && node.block[0] == c.blockX && node.block[1] == c.blockY &&
         node.block[2] == c.blockZ && node.sharedMemBytes == c.sharedMemBytes &&
         node.params == *launch.params;
}

ChainedLaunch chainedOf(Resolved& launch) { return {launch.function, launch.config, launch.pointers.data()}; }

class Submitter {
 public:
  Submitter(CallContext& ctx, CUstream stream, std::string* what) : ctx_(ctx), stream_(stream), what_(what) {}

  void plain(Resolved& launch) {
    note(ctx_.gpu.launchKernel(launch.function, launch.config, stream_, launch.pointers.data()),
         "cuLaunchKernel");
  }

  // One chain of launches.size() nodes: a kept one re-parameterised where it differs, or a new one.
  void chain(std::span<Resolved> launches) {
    std::optional<LaunchChain> kept = ctx_.session.launchChains.checkout(stream_, launches.size());
    if (!kept && !ctx_.session.launchChains.room()) return plainAll(launches);
    if (!kept) {
      std::vector<ChainedLaunch> nodes;
      nodes.reserve(launches.size());
      for (Resolved& launch : launches) nodes.push_back(chainedOf(launch));
      LaunchChain created;
      if (ctx_.gpu.chainCreate(nodes, &created.handle) != CUDA_SUCCESS) return refused(launches);
      for (const Resolved& launch : launches) created.nodes.push_back(stateOf(launch));
      kept = std::move(created);
    } else {
      for (std::size_t i = 0; i < launches.size(); ++i) {
        if (carries(kept->nodes[i], launches[i])) continue;
        if (ctx_.gpu.chainSetNode(kept->handle, i, chainedOf(launches[i])) != CUDA_SUCCESS) {
          ctx_.gpu.chainDestroy(kept->handle);  // its nodes are no longer known
          return refused(launches);
        }
        kept->nodes[i] = stateOf(launches[i]);
      }
    }
    if (ctx_.gpu.chainLaunch(kept->handle, stream_) != CUDA_SUCCESS) {
      // Nothing of it was queued: the launches go one by one, each with the driver's own verdict.
      ctx_.gpu.chainDestroy(kept->handle);
      return refused(launches);
    }
    ctx_.session.launchChains.checkin(ctx_.gpu, stream_, std::move(*kept));
  }

  CUresult result() const { return first_; }

 private:
  void plainAll(std::span<Resolved> launches) {
    for (Resolved& launch : launches) plain(launch);
  }
  void refused(std::span<Resolved> launches) {
    ctx_.session.launchChains.noteRefusal();
    plainAll(launches);
  }
  void note(CUresult result, const char* what) {
    if (result == CUDA_SUCCESS || first_ != CUDA_SUCCESS) return;
    first_ = result;
    *what_ = what;
  }

  CallContext& ctx_;
  CUstream stream_;
  std::string* what_;
  CUresult first_ = CUDA_SUCCESS;
};

}  // namespace

void LaunchBatch::hold(Token function, std::uint64_t streamToken, const LaunchConfig& config,
                       std::string_view params) {
  Held held{function, streamToken, config, std::string(params)};
  held.config.attributes = {};
  held_.push_back(std::move(held));
}

CUresult LaunchBatch::flush(CallContext& ctx, std::string* what) {
  if (held_.empty()) return CUDA_SUCCESS;
  CUresult refused = CUDA_SUCCESS;
  CUstream stream = nullptr;
  const std::uint64_t streamToken = held_.front().stream;
  if (streamToken > 1) {
    auto record = ctx.session.streams.find(streamToken);
    if (!record)
      refused = CUDA_ERROR_INVALID_HANDLE;
    else
      stream = record->stream;
  }
  std::vector<Resolved> resolved;
  resolved.reserve(held_.size());
  if (refused == CUDA_SUCCESS) {
    for (Held& held : held_) {
      auto function = ctx.session.functions.find(held.function);
      if (!function || function->paramBufferSize != held.params.size()) {
        refused = CUDA_ERROR_INVALID_HANDLE;  // its module was unloaded meanwhile
        continue;
      }
      Resolved& launch = resolved.emplace_back();
      launch.function = function->function;
      launch.config = held.config;
      launch.params = &held.params;
      for (const ParamLayout& param : *function->params)
        launch.pointers.push_back(held.params.data() + param.offset);
    }
  }
  std::string submitted;
  Submitter submit(ctx, stream, &submitted);
  std::span<Resolved> rest(resolved);
  while (!rest.empty()) {
    if (rest.size() == 1 && !(ctx.shared != nullptr && ctx.shared->loneLaunchChains)) {
      submit.plain(rest.front());
      break;
    }
    // Chains of power-of-two lengths: few distinct lengths, so kept chains are found again.
    const std::size_t length = std::bit_floor(std::min(rest.size(), kMaxHeld));
    submit.chain(rest.first(length));
    rest = rest.subspan(length);
  }
  held_.clear();
  // A launch refused above (its stream or module gone) is what is reported, before any failure of
  // the driver: the client learns first of what it did itself.
  if (refused != CUDA_SUCCESS) {
    *what = "a held launch's stream or function (destroyed since)";
    return refused;
  }
  *what = std::move(submitted);
  return submit.result();
}

}  // namespace agileos::worker
