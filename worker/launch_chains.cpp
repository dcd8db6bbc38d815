#include "worker/launch_chains.h"

namespace agileos::worker {

std::optional<LaunchChain> LaunchChainCache::checkout(CUstream stream, std::size_t length) {
  std::lock_guard lock(mutex_);
  auto found = chains_.find({stream, length});
  if (found == chains_.end() || found->second.empty()) return std::nullopt;
  LaunchChain chain = std::move(found->second.back());
  found->second.pop_back();
  if (found->second.empty()) chains_.erase(found);
  --kept_;
  return chain;
}

void LaunchChainCache::checkin(GpuBackend& gpu, CUstream stream, LaunchChain chain) {
  {
    std::lock_guard lock(mutex_);
    if (kept_ < kMaxKept) {
      chains_[{stream, chain.nodes.size()}].push_back(std::move(chain));
      ++kept_;
      return;
    }
  }
  gpu.chainDestroy(chain.handle);
}

void LaunchChainCache::dropStream(GpuBackend& gpu, CUstream stream) {
  std::vector<LaunchChain> dropped;
  {
    std::lock_guard lock(mutex_);
    for (auto it = chains_.begin(); it != chains_.end();) {
      if (it->first.first != stream) {
        ++it;
        continue;
      }
      kept_ -= it->second.size();
      for (LaunchChain& chain : it->second) dropped.push_back(std::move(chain));
      it = chains_.erase(it);
    }
  }
  for (const LaunchChain& chain : dropped) gpu.chainDestroy(chain.handle);
}

void LaunchChainCache::dropAll(GpuBackend& gpu) {
  std::map<std::pair<CUstream, std::size_t>, std::vector<LaunchChain>> dropped;
  {
    std::lock_guard lock(mutex_);
    dropped.swap(chains_);
    kept_ = 0;
  }
  for (const auto& [key, chains] : dropped) {
    for (const LaunchChain& chain : chains) gpu.chainDestroy(chain.handle);
  }
}

std::size_t LaunchChainCache::kept() const {
  std::lock_guard lock(mutex_);
  return kept_;
}

}  // namespace agileos::worker
