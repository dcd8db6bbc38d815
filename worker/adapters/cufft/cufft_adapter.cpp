#include "worker/adapters/cufft/cufft_adapter.h"

#include <cufft.h>
#include <cufftXt.h>
#include <library_types.h>
#include <spdlog/spdlog.h>

#include <climits>
#include <mutex>
#include <utility>

#include "proto/adapters/cufft_operations.h"
#include "worker/adapters/cufft/plan_extent.h"
#include "worker/handlers/guard_handlers.h"

namespace agileos::adapters::cufft {
namespace {

using worker::AdapterInvocation;

// A client's protected work areas: a destroyed plan's area is kept (the largest one only) for
// the client's next plan, since mapping protected memory costs far more than making a plan.
// The areas hold only this client's intermediate data, so reuse within the client is harmless.
class WorkAreaPool final : public worker::LibraryObject {
 public:
  WorkAreaPool(memmgr::MemoryManager& memory, memmgr::ClientId client)
      : LibraryObject(kLibrary.name), memory_(memory), client_(client) {}
  ~WorkAreaPool() override {
    if (spare_ != 0) memory_.freeProtected(client_, spare_);
  }
  // An area of at least `bytes`: the spare if it is large enough, else a new one.
  CUresult take(std::uint64_t bytes, memmgr::DevicePtr* area, std::uint64_t* size) {
    {
      std::lock_guard lock(mutex_);
      if (spare_ != 0 && spareBytes_ >= bytes) {
        *area = std::exchange(spare_, 0);
        *size = std::exchange(spareBytes_, 0);
        return CUDA_SUCCESS;
      }
    }
    *size = bytes;
    return memory_.allocateProtected(client_, bytes, area);
  }
  // Takes back an area no plan uses any more (the caller synchronized).
  void give(memmgr::DevicePtr area, std::uint64_t bytes) {
    memmgr::DevicePtr release = area;
    {
      std::lock_guard lock(mutex_);
      if (bytes > spareBytes_) {
        release = std::exchange(spare_, area);
        spareBytes_ = bytes;
      }
    }
    if (release != 0) memory_.freeProtected(client_, release);
  }

 private:
  memmgr::MemoryManager& memory_;
  memmgr::ClientId client_;
  std::mutex mutex_;
  memmgr::DevicePtr spare_ = 0;
  std::uint64_t spareBytes_ = 0;
};

class Plan final : public worker::LibraryObject {
 public:
  Plan(worker::GpuBackend& gpu, std::shared_ptr<WorkAreaPool> pool, memmgr::ClientId client,
       cufftHandle handle)
      : LibraryObject(kLibrary.name), gpu_(gpu), pool_(std::move(pool)), client_(client), handle_(handle) {}
  ~Plan() override {
    // The caller synchronized (destroy waits like cufftDestroy; teardown synchronizes first).
    gpu_.bindContext();
    const cufftResult destroyed = cufftDestroy(handle_);
    if (destroyed != CUFFT_SUCCESS) {
      spdlog::warn("client {}: cufftDestroy returned {}", client_, int(destroyed));
    }
    if (ownWorkArea != 0) pool_->give(ownWorkArea, ownWorkAreaBytes);
  }

  cufftHandle handle() const { return handle_; }

  // Serializes the calls that configure the plan and its executions (cufftSetStream then
  // cufftExec must not interleave with another thread's pair).
  std::mutex mutex;
  bool made = false;
  PlanShape shape;
  PlanExtent extent;
  std::uint64_t workSize = 0;
  bool autoAllocate = true;
  memmgr::DevicePtr ownWorkArea = 0;  // protected, when autoAllocate
  std::uint64_t ownWorkAreaBytes = 0;
  memmgr::DevicePtr userWorkArea = 0;  // the client's, when !autoAllocate; checked at each exec
  std::uint64_t stream = 0;            // stream token; resolved at each exec
  // The last work-area allocation's result: CUDA_ERROR_NOT_PERMITTED when the client runs code
  // loaded without the kernel memory guard (its context may not gain protected state).
  CUresult lastAllocation = CUDA_SUCCESS;

  // What cuFFT was last told, so that an execution repeats neither call when nothing changed.
  cufftResult applyWorkArea(void* area) {
    if (workAreaApplied_ && appliedWorkArea_ == area) return CUFFT_SUCCESS;
    const cufftResult result = cufftSetWorkArea(handle_, area);
    workAreaApplied_ = result == CUFFT_SUCCESS;
    appliedWorkArea_ = area;
    return result;
  }
  cufftResult applyStream(CUstream stream) {
    if (streamApplied_ && appliedStream_ == stream) return CUFFT_SUCCESS;
    const cufftResult result = cufftSetStream(handle_, reinterpret_cast<cudaStream_t>(stream));
    streamApplied_ = result == CUFFT_SUCCESS;
    appliedStream_ = stream;
    return result;
  }

  // Gives the plan a protected work area of workSize bytes if it has none large enough.
  cufftResult ensureOwnWorkArea() {
    if (workSize == 0 || ownWorkAreaBytes >= workSize) return CUFFT_SUCCESS;
    memmgr::DevicePtr area = 0;
    std::uint64_t bytes = 0;
    lastAllocation = pool_->take(workSize, &area, &bytes);
    if (lastAllocation != CUDA_SUCCESS) return CUFFT_ALLOC_FAILED;
    if (ownWorkArea != 0) pool_->give(ownWorkArea, ownWorkAreaBytes);
    ownWorkArea = area;
    ownWorkAreaBytes = bytes;
    return applyWorkArea(reinterpret_cast<void*>(ownWorkArea));
  }

 private:
  worker::GpuBackend& gpu_;
  std::shared_ptr<WorkAreaPool> pool_;
  memmgr::ClientId client_;
  cufftHandle handle_;
  bool workAreaApplied_ = false;
  void* appliedWorkArea_ = nullptr;
  bool streamApplied_ = false;
  CUstream appliedStream_ = nullptr;
};

bool fitsInt(long long value) { return value >= INT_MIN && value <= INT_MAX; }

// A plan shape as the client sent it, checked: variant, rank, sizes and layouts. The int
// variants' values must fit in int; extents are computed with checked arithmetic.
struct RequestedShape {
  ShapeVariant variant = ShapeVariant::kOne;
  PlanShape shape;
  bool inembedGiven = false;
  bool onembedGiven = false;
};

bool readShape(AdapterInvocation& call, int first, RequestedShape* out) {
  const long long variant = call.integer(first);
  if (variant < int(ShapeVariant::kOne) || variant > int(ShapeVariant::kTyped)) {
    return call.refuse(CUFFT_INVALID_VALUE, cudaErrorInvalidValue, "unknown plan shape variant");
  }
  out->variant = static_cast<ShapeVariant>(variant);
  PlanShape& shape = out->shape;
  shape.n = call.integers(first + 1);
  if (shape.n.empty() || shape.n.size() > 3) {
    return call.refuse(CUFFT_INVALID_SIZE, cudaErrorInvalidValue, "a plan has rank 1, 2 or 3");
  }
  const long long type = call.integer(first + 8);
  if (out->variant == ShapeVariant::kTyped) {
    // A typed plan of half or bfloat16 precision (cufft_operations.h: typedTransform).
    const long long precision = type >> 8;
    if (type < 0 || precision < int(Precision::kHalf) || precision > int(Precision::kBFloat16) ||
        !isKnownPrecision(static_cast<cufftType>(transformOf(type)), static_cast<Precision>(precision))) {
      return call.refuse(CUFFT_INVALID_TYPE, cudaErrorInvalidValue, "unknown typed transform");
    }
    shape.type = static_cast<cufftType>(transformOf(type));
    shape.precision = static_cast<Precision>(precision);
  } else {
    if (!isKnownType(type))
      return call.refuse(CUFFT_INVALID_TYPE, cudaErrorInvalidValue, "unknown cufftType");
    shape.type = static_cast<cufftType>(type);
  }
  shape.batch = call.integer(first + 9);
  out->inembedGiven = call.present(first + 2);
  out->onembedGiven = call.present(first + 5);
  if (out->inembedGiven) shape.input.embed = call.integers(first + 2);
  if (out->onembedGiven) shape.output.embed = call.integers(first + 5);
  shape.input.stride = call.integer(first + 3);
  shape.input.dist = call.integer(first + 4);
  shape.output.stride = call.integer(first + 6);
  shape.output.dist = call.integer(first + 7);
  const bool advanced = out->variant == ShapeVariant::kMany || out->variant == ShapeVariant::kMany64 ||
                        out->variant == ShapeVariant::kTyped;
  if (!advanced) {
    // 1d/2d/3d: the rank is the variant's, the layout basic, the batch 1 except for 1d.
    if (shape.n.size() != static_cast<std::size_t>(variant)) {
      return call.refuse(CUFFT_INVALID_SIZE, cudaErrorInvalidValue, "sizes do not match the plan's rank");
    }
    if (out->variant != ShapeVariant::kOne) shape.batch = 1;
    shape.input = {};
    shape.output = {};
    out->inembedGiven = out->onembedGiven = false;
  }
  if ((out->inembedGiven && shape.input.embed.size() != shape.n.size()) ||
      (out->onembedGiven && shape.output.embed.size() != shape.n.size())) {
    return call.refuse(CUFFT_INVALID_VALUE, cudaErrorInvalidValue,
                       "an embed has fewer entries than the rank");
  }
  if (out->variant != ShapeVariant::kMany64 && out->variant != ShapeVariant::kTyped) {
    bool fits = fitsInt(shape.batch) && fitsInt(shape.input.stride) && fitsInt(shape.input.dist) &&
                fitsInt(shape.output.stride) && fitsInt(shape.output.dist);
    for (long long v : shape.n) fits = fits && fitsInt(v);
    for (long long v : shape.input.embed) fits = fits && fitsInt(v);
    for (long long v : shape.output.embed) fits = fits && fitsInt(v);
    if (!fits) return call.refuse(CUFFT_INVALID_SIZE, cudaErrorInvalidValue, "a size does not fit in int");
  }
  return true;
}

std::uint64_t maxOf(std::uint64_t a, std::uint64_t b) { return a > b ? a : b; }

// The extent of a requested shape. With exactly one embed given, cuFFT's documentation says
// the basic layout applies; the extent is computed both that way and with the missing embed
// taken as the logical shape (strides and distances honoured), and the larger of each side is
// kept, so the check holds whichever way the library reads it.
bool extentOf(AdapterInvocation& call, const RequestedShape& requested, PlanExtent* extent) {
  std::string error;
  PlanShape basic = requested.shape;
  if (!requested.inembedGiven || !requested.onembedGiven)
    basic.input.embed.clear(), basic.output.embed.clear();
  auto first = computeExtent(basic, &error);
  if (!first) return call.refuse(CUFFT_INVALID_VALUE, cudaErrorInvalidValue, "plan shape refused: " + error);
  *extent = *first;
  if (requested.inembedGiven != requested.onembedGiven) {
    PlanShape mixed = requested.shape;
    SideLayout& missing = requested.inembedGiven ? mixed.output : mixed.input;
    const bool missingIsInput = !requested.inembedGiven;
    missing.embed = logicalShape(mixed, missingIsInput);
    auto second = computeExtent(mixed, &error);
    if (!second)
      return call.refuse(CUFFT_INVALID_VALUE, cudaErrorInvalidValue, "plan shape refused: " + error);
    extent->inputBytes = maxOf(extent->inputBytes, second->inputBytes);
    extent->outputBytes = maxOf(extent->outputBytes, second->outputBytes);
    extent->inPlaceBytes = maxOf(extent->inPlaceBytes, second->inPlaceBytes);
  }
  return true;
}

// Calls the cuFFT entry point the variant names: cufftMakePlan* / cufftGetSize* (plan given)
// or cufftEstimate* (none).
cufftResult planCall(const char* kind, cufftHandle plan, const RequestedShape& requested,
                     std::size_t* workSize) {
  const PlanShape& s = requested.shape;
  std::vector<int> n(s.n.begin(), s.n.end());
  std::vector<int> inembed(s.input.embed.begin(), s.input.embed.end());
  std::vector<int> onembed(s.output.embed.begin(), s.output.embed.end());
  std::vector<long long> n64 = s.n, inembed64 = s.input.embed, onembed64 = s.output.embed;
  int* in = requested.inembedGiven ? inembed.data() : nullptr;
  int* on = requested.onembedGiven ? onembed.data() : nullptr;
  long long* in64 = requested.inembedGiven ? inembed64.data() : nullptr;
  long long* on64 = requested.onembedGiven ? onembed64.data() : nullptr;
  const int rank = static_cast<int>(n.size());
  const auto is = static_cast<int>(s.input.stride), id = static_cast<int>(s.input.dist);
  const auto os = static_cast<int>(s.output.stride), od = static_cast<int>(s.output.dist);
  const int batch = static_cast<int>(s.batch);
  const std::string_view what(kind);
  switch (requested.variant) {
    case ShapeVariant::kOne:
      if (what == "make") return cufftMakePlan1d(plan, n[0], s.type, batch, workSize);
      if (what == "size") return cufftGetSize1d(plan, n[0], s.type, batch, workSize);
      return cufftEstimate1d(n[0], s.type, batch, workSize);
    case ShapeVariant::kTwo:
      if (what == "make") return cufftMakePlan2d(plan, n[0], n[1], s.type, workSize);
      if (what == "size") return cufftGetSize2d(plan, n[0], n[1], s.type, workSize);
      return cufftEstimate2d(n[0], n[1], s.type, workSize);
    case ShapeVariant::kThree:
      if (what == "make") return cufftMakePlan3d(plan, n[0], n[1], n[2], s.type, workSize);
      if (what == "size") return cufftGetSize3d(plan, n[0], n[1], n[2], s.type, workSize);
      return cufftEstimate3d(n[0], n[1], n[2], s.type, workSize);
    case ShapeVariant::kMany:
      if (what == "make")
        return cufftMakePlanMany(plan, rank, n.data(), in, is, id, on, os, od, s.type, batch, workSize);
      if (what == "size")
        return cufftGetSizeMany(plan, rank, n.data(), in, is, id, on, os, od, s.type, batch, workSize);
      return cufftEstimateMany(rank, n.data(), in, is, id, on, os, od, s.type, batch, workSize);
    case ShapeVariant::kMany64:
      if (what == "make") {
        return cufftMakePlanMany64(plan, rank, n64.data(), in64, s.input.stride, s.input.dist, on64,
                                   s.output.stride, s.output.dist, s.type, s.batch, workSize);
      }
      if (what == "size") {
        return cufftGetSizeMany64(plan, rank, n64.data(), in64, s.input.stride, s.input.dist, on64,
                                  s.output.stride, s.output.dist, s.type, s.batch, workSize);
      }
      return CUFFT_NOT_SUPPORTED;  // cuFFT has no cufftEstimateMany64
    case ShapeVariant::kTyped: {
      const bool half = s.precision == Precision::kHalf;
      const cudaDataType real = half ? CUDA_R_16F : CUDA_R_16BF, complex = half ? CUDA_C_16F : CUDA_C_16BF;
      const cudaDataType input = s.type == CUFFT_R2C ? real : complex;
      const cudaDataType output = s.type == CUFFT_C2R ? real : complex;
      if (what == "make") {
        return cufftXtMakePlanMany(plan, rank, n64.data(), in64, s.input.stride, s.input.dist, input, on64,
                                   s.output.stride, s.output.dist, output, s.batch, workSize, complex);
      }
      if (what == "size") {
        return cufftXtGetSizeMany(plan, rank, n64.data(), in64, s.input.stride, s.input.dist, input, on64,
                                  s.output.stride, s.output.dist, output, s.batch, workSize, complex);
      }
      return CUFFT_NOT_SUPPORTED;  // no estimate for typed plans
    }
  }
  return CUFFT_INVALID_VALUE;
}

// A cuFFT result that is not success refuses the call with it (the detail names the call).
bool libraryOk(AdapterInvocation& call, cufftResult result, const char* what) {
  if (result == CUFFT_SUCCESS) return true;
  return call.refuse(result, cudaErrorUnknown,
                     std::string(what) + " returned cufftResult " + std::to_string(result));
}

// ensureOwnWorkArea's result, with the reason when the protected work area was refused because
// the client runs unguarded code.
bool workAreaOk(AdapterInvocation& call, Plan& plan, cufftResult result) {
  if (result != CUFFT_SUCCESS && plan.lastAllocation == CUDA_ERROR_NOT_PERMITTED) {
    return call.refuse(CUFFT_ALLOC_FAILED, cudaErrorNotPermitted,
                       "the plan's protected work area is refused: " + worker::unguardedCodeRefusal() +
                           "; give the plan a work area of the client's (cufftSetAutoAllocation(plan, 0) "
                           "and cufftSetWorkArea)");
  }
  return libraryOk(call, result, "work area allocation");
}

bool bound(AdapterInvocation& call) {
  const CUresult result = call.ctx.gpu.bindContext();
  if (result == CUDA_SUCCESS) return true;
  return call.refuse(CUFFT_INTERNAL_ERROR, cudaErrorUnknown,
                     "the worker's context could not be made current");
}

static_assert(adapters::cufft::transformOfKind(ExecKind::kC2C) == CUFFT_C2C &&
              adapters::cufft::transformOfKind(ExecKind::kR2C) == CUFFT_R2C &&
              adapters::cufft::transformOfKind(ExecKind::kC2R) == CUFFT_C2R &&
              adapters::cufft::transformOfKind(ExecKind::kZ2Z) == CUFFT_Z2Z &&
              adapters::cufft::transformOfKind(ExecKind::kD2Z) == CUFFT_D2Z &&
              adapters::cufft::transformOfKind(ExecKind::kZ2D) == CUFFT_Z2D);
cufftType typeOf(ExecKind kind) { return static_cast<cufftType>(adapters::cufft::transformOfKind(kind)); }

class CufftAdapter final : public worker::LibraryAdapter {
 public:
  explicit CufftAdapter(const worker::AdapterEnvironment& environment) : gpu_(environment.gpu) {}
  const LibraryDecl& declaration() const override { return kLibrary; }

  void run(std::size_t operation, AdapterInvocation& call) override {
    if (!bound(call)) return;
    const std::string_view name = kOperations[operation].name;
    if (name == names::kCreate) return create(call);
    if (name == names::kMakePlan) return makePlan(call);
    if (name == names::kEstimate) return sizeOf(call, "estimate", 0);
    if (name == names::kGetSizeFor) return sizeOf(call, "size", 1);
    if (name == names::kWorkSize) return workSize(call);
    if (name == names::kSetAutoAllocation) return setAutoAllocation(call);
    if (name == names::kSetWorkArea) return setWorkArea(call);
    if (name == names::kSetStream) return setStream(call);
    if (name == names::kExec) return exec(call);
    if (name == names::kDestroy) return destroy(call);
    if (name == names::kGetVersion) return getVersion(call);
    if (name == names::kGetProperty) return getProperty(call);
    if (name == names::kSetPlanProperty || name == names::kGetPlanProperty ||
        name == names::kResetPlanProperty) {
      return planProperty(call, name);
    }
    call.refuse(CUFFT_NOT_SUPPORTED, cudaErrorNotSupported, "cufft operation not implemented");
  }

 private:
  void create(AdapterInvocation& call) {
    // The client's library-object table is bounded (worker/handle_table.h): refuse before
    // cuFFT makes anything.
    if (call.ctx.session.libraryObjects.full()) {
      call.refuse(CUFFT_ALLOC_FAILED, cudaErrorMemoryAllocation,
                  "the client holds the most library objects a client may");
      return;
    }
    cufftHandle handle = 0;
    if (!libraryOk(call, cufftCreate(&handle), "cufftCreate")) return;
    // cuFFT never allocates on its own (see cufft_adapter.h).
    const cufftResult off = cufftSetAutoAllocation(handle, 0);
    if (off != CUFFT_SUCCESS) {
      cufftDestroy(handle);
      libraryOk(call, off, "cufftSetAutoAllocation");
      return;
    }
    auto pool = call.ctx.session.libraryStates.getOrCreate<WorkAreaPool>(kLibrary.name, [&] {
      return std::make_shared<WorkAreaPool>(call.ctx.memory, call.ctx.session.id());
    });
    auto plan = std::make_shared<Plan>(gpu_, std::move(pool), call.ctx.session.id(), handle);
    call.addHandle(call.ctx.session.libraryObjects.insert(std::move(plan)));
    call.result.set_status(CUFFT_SUCCESS);
  }

  void makePlan(AdapterInvocation& call) {
    auto plan = call.object<Plan>(0, CUFFT_INVALID_PLAN);
    if (!plan) return;
    RequestedShape requested;
    PlanExtent extent;
    if (!readShape(call, 1, &requested) || !extentOf(call, requested, &extent)) return;
    std::lock_guard lock(plan->mutex);
    if (plan->made) {
      call.refuse(CUFFT_INVALID_PLAN, cudaErrorInvalidValue, "the plan is already made");
      return;
    }
    std::size_t workSize = 0;
    if (!libraryOk(call, planCall("make", plan->handle(), requested, &workSize), "cufftMakePlan")) return;
    plan->made = true;
    plan->shape = requested.shape;
    plan->extent = extent;
    plan->workSize = workSize;
    if (plan->autoAllocate && !workAreaOk(call, *plan, plan->ensureOwnWorkArea())) return;
    call.addInteger(static_cast<std::int64_t>(workSize));
    call.result.set_status(CUFFT_SUCCESS);
  }

  void sizeOf(AdapterInvocation& call, const char* kind, int first) {
    std::shared_ptr<Plan> plan;
    if (first == 1 && !(plan = call.object<Plan>(0, CUFFT_INVALID_PLAN))) return;
    RequestedShape requested;
    PlanExtent extent;
    if (!readShape(call, first, &requested) || !extentOf(call, requested, &extent)) return;
    std::size_t workSize = 0;
    if (!libraryOk(call, planCall(kind, plan ? plan->handle() : 0, requested, &workSize), "cufftGetSize"))
      return;
    call.addInteger(static_cast<std::int64_t>(workSize));
    call.result.set_status(CUFFT_SUCCESS);
  }

  void workSize(AdapterInvocation& call) {
    auto plan = call.object<Plan>(0, CUFFT_INVALID_PLAN);
    if (!plan) return;
    std::lock_guard lock(plan->mutex);
    call.addInteger(static_cast<std::int64_t>(plan->workSize));
    call.result.set_status(CUFFT_SUCCESS);
  }

  void setAutoAllocation(AdapterInvocation& call) {
    auto plan = call.object<Plan>(0, CUFFT_INVALID_PLAN);
    if (!plan) return;
    std::lock_guard lock(plan->mutex);
    plan->autoAllocate = call.integer(1) != 0;
    if (plan->autoAllocate && plan->made) {
      if (!workAreaOk(call, *plan, plan->ensureOwnWorkArea())) return;
      plan->userWorkArea = 0;
    }
    call.result.set_status(CUFFT_SUCCESS);
  }

  void setWorkArea(AdapterInvocation& call) {
    auto plan = call.object<Plan>(0, CUFFT_INVALID_PLAN);
    if (!plan) return;
    std::lock_guard lock(plan->mutex);
    const std::uint64_t area = call.pointer(1);
    if (plan->workSize > 0 &&
        !worker::checkRange(call.ctx, area, plan->workSize, call.reply, "cuFFT work area")) {
      call.result.set_status(CUFFT_INVALID_VALUE);
      return;
    }
    plan->userWorkArea = area;
    if (area != 0) plan->autoAllocate = false;
    call.result.set_status(CUFFT_SUCCESS);
  }

  void setStream(AdapterInvocation& call) {
    auto plan = call.object<Plan>(0, CUFFT_INVALID_PLAN);
    if (!plan) return;
    CUstream stream = nullptr;
    if (!worker::resolveStream(call.ctx, call.args[1].stream(), &stream, call.reply)) {
      call.result.set_status(CUFFT_INVALID_VALUE);
      return;
    }
    std::lock_guard lock(plan->mutex);
    plan->stream = call.args[1].stream();
    call.result.set_status(CUFFT_SUCCESS);
  }

  // The checks of cufft_adapter.h, then the transform.
  void exec(AdapterInvocation& call) {
    auto plan = call.object<Plan>(0, CUFFT_INVALID_PLAN);
    if (!plan) return;
    const long long kindValue = call.integer(1);
    if (kindValue < 0 || kindValue > int(ExecKind::kZ2D)) {
      call.refuse(CUFFT_INVALID_VALUE, cudaErrorInvalidValue, "unknown transform kind");
      return;
    }
    const auto kind = static_cast<ExecKind>(kindValue);
    const std::uint64_t idata = call.pointer(2), odata = call.pointer(3);
    const long long direction = call.integer(4);
    std::lock_guard lock(plan->mutex);
    if (!plan->made) {
      call.refuse(CUFFT_INVALID_PLAN, cudaErrorInvalidValue, "the plan was created but never made");
      return;
    }
    if (typeOf(kind) != plan->shape.type) {
      call.refuse(CUFFT_INVALID_VALUE, cudaErrorInvalidValue, "the transform does not match the plan's type");
      return;
    }
    if ((kind == ExecKind::kC2C || kind == ExecKind::kZ2Z) && direction != CUFFT_FORWARD &&
        direction != CUFFT_INVERSE) {
      call.refuse(CUFFT_INVALID_VALUE, cudaErrorInvalidValue,
                  "direction must be CUFFT_FORWARD or CUFFT_INVERSE");
      return;
    }
    const PlanExtent& extent = plan->extent;
    const bool inPlace = idata == odata;
    const bool buffersOk =
        inPlace
            ? worker::checkRange(call.ctx, idata, extent.inPlaceBytes, call.reply, "cuFFT in-place buffer")
            : worker::checkRange(call.ctx, idata, extent.inputBytes, call.reply, "cuFFT input") &&
                  worker::checkRange(call.ctx, odata, extent.outputBytes, call.reply, "cuFFT output");
    if (!buffersOk) {
      call.result.set_status(CUFFT_INVALID_VALUE);
      return;
    }
    if (!plan->autoAllocate && plan->workSize > 0) {
      if (plan->userWorkArea == 0) {
        call.refuse(CUFFT_NO_WORKSPACE, cudaErrorInvalidValue,
                    "auto-allocation is off and no work area is set");
        return;
      }
      if (!worker::checkRange(call.ctx, plan->userWorkArea, plan->workSize, call.reply, "cuFFT work area")) {
        call.result.set_status(CUFFT_INVALID_VALUE);
        return;
      }
    }
    const void* workArea =
        reinterpret_cast<void*>(plan->autoAllocate ? plan->ownWorkArea : plan->userWorkArea);
    if (plan->workSize > 0 && workArea == nullptr) {
      call.refuse(CUFFT_NO_WORKSPACE, cudaErrorInvalidValue, "the plan has no work area");
      return;
    }
    if (plan->workSize > 0 &&
        !libraryOk(call, plan->applyWorkArea(const_cast<void*>(workArea)), "cufftSetWorkArea")) {
      return;
    }
    CUstream stream = nullptr;
    if (!worker::resolveStream(call.ctx, plan->stream, &stream, call.reply)) {
      call.result.set_status(CUFFT_INVALID_VALUE);
      return;
    }
    if (!libraryOk(call, plan->applyStream(stream), "cufftSetStream")) {
      return;
    }
    void* in = reinterpret_cast<void*>(idata);
    void* out = reinterpret_cast<void*>(odata);
    const int dir = static_cast<int>(direction);
    cufftResult result = CUFFT_INVALID_VALUE;
    const bool realTransform = kind != ExecKind::kC2C && kind != ExecKind::kZ2Z;
    if (plan->shape.precision != Precision::kStandard || realTransform) {
      // A half or bfloat16 plan runs only through cufftXtExec (its buffers were checked above at
      // that precision's element sizes). So does every real transform: the direction arrives as
      // the program gave it to cufftXtExec (cufftExec<R2C|C2R|...> send the one they imply), and
      // cuFFT's cufftXtExec gives it the meaning it has natively.
      result = cufftXtExec(plan->handle(), in, out, dir);
      if (!libraryOk(call, result, "cufftXtExec")) return;
      call.result.set_status(CUFFT_SUCCESS);
      return;
    }
    result = kind == ExecKind::kC2C ? cufftExecC2C(plan->handle(), static_cast<cufftComplex*>(in),
                                                   static_cast<cufftComplex*>(out), dir)
                                    : cufftExecZ2Z(plan->handle(), static_cast<cufftDoubleComplex*>(in),
                                                   static_cast<cufftDoubleComplex*>(out), dir);
    if (!libraryOk(call, result, "cufftExec")) return;
    call.result.set_status(CUFFT_SUCCESS);
  }

  void destroy(AdapterInvocation& call) {
    auto plan = call.object<Plan>(0, CUFFT_INVALID_PLAN);
    if (!plan) return;
    // cufftDestroy waits for the plan's work; so do we, before its work area goes.
    worker::succeeded(call.ctx, call.ctx.gpu.synchronizeContext(), call.reply, "cuCtxSynchronize");
    call.ctx.session.libraryObjects.erase(call.args[0].handle());
    call.result.set_status(CUFFT_SUCCESS);
  }

  void getVersion(AdapterInvocation& call) {
    int version = 0;
    if (!libraryOk(call, cufftGetVersion(&version), "cufftGetVersion")) return;
    call.addInteger(version);
    call.result.set_status(CUFFT_SUCCESS);
  }

  void getProperty(AdapterInvocation& call) {
    const long long property = call.integer(0);
    if (property != MAJOR_VERSION && property != MINOR_VERSION && property != PATCH_LEVEL) {
      call.refuse(CUFFT_INVALID_TYPE, cudaErrorInvalidValue, "unknown libraryPropertyType");
      return;
    }
    int value = 0;
    if (!libraryOk(call, cufftGetProperty(static_cast<libraryPropertyType>(property), &value),
                   "cufftGetProperty")) {
      return;
    }
    call.addInteger(value);
    call.result.set_status(CUFFT_SUCCESS);
  }

  void planProperty(AdapterInvocation& call, std::string_view name) {
    auto plan = call.object<Plan>(0, CUFFT_INVALID_PLAN);
    if (!plan) return;
    const long long property = call.integer(1);
    if (property != NVFFT_PLAN_PROPERTY_INT64_PATIENT_JIT &&
        property != NVFFT_PLAN_PROPERTY_INT64_MAX_NUM_HOST_THREADS) {
      call.refuse(CUFFT_INVALID_VALUE, cudaErrorInvalidValue, "unknown cufftProperty");
      return;
    }
    const auto which = static_cast<cufftProperty>(property);
    std::lock_guard lock(plan->mutex);
    if (name == names::kSetPlanProperty) {
      if (!libraryOk(call, cufftSetPlanPropertyInt64(plan->handle(), which, call.integer(2)),
                     "cufftSetPlanProperty")) {
        return;
      }
    } else if (name == names::kGetPlanProperty) {
      long long value = 0;
      if (!libraryOk(call, cufftGetPlanPropertyInt64(plan->handle(), which, &value), "cufftGetPlanProperty"))
        return;
      call.addInteger(value);
    } else if (!libraryOk(call, cufftResetPlanProperty(plan->handle(), which), "cufftResetPlanProperty")) {
      return;
    }
    call.result.set_status(CUFFT_SUCCESS);
  }

  worker::GpuBackend& gpu_;
};

}  // namespace

std::unique_ptr<worker::LibraryAdapter> makeCufftAdapter(const worker::AdapterEnvironment& environment) {
  return std::make_unique<CufftAdapter>(environment);
}

}  // namespace agileos::adapters::cufft
