#include "client/session/copy_batches.h"

#include <cstring>

namespace agileos::client {

cudaError_t checkCopyBatch(const void* dsts, const void* srcs, const size_t* sizes, size_t count,
                           const cudaMemcpyAttributes* attrs, const size_t* attrsIdxs, size_t numAttrs,
                           bool* duringCall) {
  *duringCall = false;
  if (count == 0 || dsts == nullptr || srcs == nullptr || sizes == nullptr || attrs == nullptr ||
      attrsIdxs == nullptr || numAttrs == 0 || numAttrs > count || attrsIdxs[0] != 0) {
    return cudaErrorInvalidValue;
  }
  for (size_t i = 0; i < numAttrs; ++i) {
    if (i > 0 && attrsIdxs[i] <= attrsIdxs[i - 1]) return cudaErrorInvalidValue;
    if (attrsIdxs[i] >= count) return cudaErrorInvalidValue;
    int order = 0;  // any bit pattern may come: read as an integer
    static_assert(sizeof order == sizeof attrs[i].srcAccessOrder);
    std::memcpy(&order, &attrs[i].srcAccessOrder, sizeof order);
    if (order != cudaMemcpySrcAccessOrderStream && order != cudaMemcpySrcAccessOrderDuringApiCall &&
        order != cudaMemcpySrcAccessOrderAny) {
      return cudaErrorInvalidValue;
    }
    if ((attrs[i].flags & ~static_cast<unsigned>(cudaMemcpyFlagPreferOverlapWithCompute)) != 0)
      return cudaErrorInvalidValue;
    *duringCall = *duringCall || order == cudaMemcpySrcAccessOrderDuringApiCall;
  }
  return cudaSuccess;
}

}  // namespace agileos::client
