// libagileos_cufft.so: the implemented cuFFT entry points (the `implemented` rows of
// client/cufft/cufft_api.tsv). UNTRUSTED side: the plans live in the worker, which checks
// every call (worker/adapters/cufft/cufft_adapter.cpp); this file only translates each call into an
// operation of the cuFFT adapter (proto/adapters/cufft_operations.h: names, argument order and
// kinds) and the answer back into cuFFT's results.
#include <cufft.h>
#include <library_types.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "client/cufft/plan_table.h"
#include "client/library_shim/library_call_client.h"
#include "proto/adapters/cufft_operations.h"

namespace agileos::client::cufft_shim {
namespace {

namespace names = adapters::cufft::names;  // the library's and operations' declared names
using adapters::cufft::ExecKind;
using adapters::cufft::ShapeVariant;
using library_shim::devicePointerValue;
using library_shim::handleValue;
using library_shim::integersValue;
using library_shim::integerValue;
using library_shim::LibraryReply;
using library_shim::noneValue;
using library_shim::streamValue;

// No reply at all: CUFFT_INTERNAL_ERROR; refused without a cuFFT status: CUFFT_INVALID_VALUE.
constexpr library_shim::FailureCodes kCodes{CUFFT_INTERNAL_ERROR, CUFFT_INVALID_VALUE, CUFFT_INTERNAL_ERROR};

cufftResult asResult(int status) { return static_cast<cufftResult>(status); }

LibraryReply call(const char* entryPoint, const char* operation, std::span<const agileos_value> args) {
  return LibraryReply::call(names::kLibrary, entryPoint, operation, args);
}

// The last execution of each plan that the worker accepted, and the resource epoch it was sent
// in (agileos_resource_epoch). The same execution again, with nothing released since and the
// plan unchanged, is sent without waiting, like a kernel launch: the worker still checks it,
// and a refusal reaches the program at its next synchronizing call. Anything else waits for
// the worker's verdict, so the program gets cuFFT's result at once.
struct AcceptedExec {
  ExecKind kind;
  const void* idata;
  const void* odata;
  int direction;
  std::uint64_t epoch;
  bool operator==(const AcceptedExec&) const = default;
};

class AcceptedExecs {
 public:
  bool contains(std::uint64_t token, const AcceptedExec& exec) {
    std::lock_guard lock(mutex_);
    auto it = accepted_.find(token);
    return it != accepted_.end() && it->second == exec;
  }
  void remember(std::uint64_t token, const AcceptedExec& exec) {
    std::lock_guard lock(mutex_);
    accepted_[token] = exec;
  }
  // After any change of a plan's configuration (stream, work area, properties, destroy).
  void forget(std::uint64_t token) {
    std::lock_guard lock(mutex_);
    accepted_.erase(token);
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::uint64_t, AcceptedExec> accepted_;
};

AcceptedExecs& acceptedExecs() {
  static auto* execs = new AcceptedExecs;  // never destroyed: plans may be used from atexit handlers
  return *execs;
}

// An operation whose only outcome is its status.
cufftResult statusOf(const char* entryPoint, const char* operation, std::span<const agileos_value> args) {
  return asResult(call(entryPoint, operation, args).status(kCodes));
}

// An operation that answers one integer (a work size, a version, a property value), at least
// `minimum`.
cufftResult integerOf(const char* entryPoint, const char* operation, std::span<const agileos_value> args,
                      std::int64_t* out, std::int64_t minimum = std::numeric_limits<std::int64_t>::min()) {
  const LibraryReply reply = call(entryPoint, operation, args);
  const int status = reply.status(kCodes);
  if (status != CUFFT_SUCCESS) return asResult(status);
  if (!reply.integer(0, out) || *out < minimum) return asResult(reply.malformed(kCodes));
  return CUFFT_SUCCESS;
}

// An operation that answers a work size; *workSize (when given) receives it.
cufftResult workSizeOf(const char* entryPoint, const char* operation, std::span<const agileos_value> args,
                       std::size_t* workSize) {
  std::int64_t size = 0;
  const cufftResult result = integerOf(entryPoint, operation, args, &size, 0);
  if (result == CUFFT_SUCCESS && workSize != nullptr) *workSize = static_cast<std::size_t>(size);
  return result;
}

// A plan shape, the adapter's op::kShape: variant, n[rank], inembed (or unset), istride, idist,
// onembed (or unset), ostride, odist, type, batch.
struct Shape {
  ShapeVariant variant = ShapeVariant::kOne;
  std::vector<std::int64_t> n;
  std::optional<std::vector<std::int64_t>> inembed, onembed;
  std::int64_t istride = 1, idist = 0, ostride = 1, odist = 0;
  std::int64_t type = 0;
  std::int64_t batch = 1;

  // Appends the ten values; they point into this Shape, which must outlive the call.
  void appendTo(std::vector<agileos_value>* args) const {
    args->push_back(integerValue(static_cast<std::int64_t>(variant)));
    args->push_back(integersValue(n));
    args->push_back(inembed ? integersValue(*inembed) : noneValue());
    args->push_back(integerValue(istride));
    args->push_back(integerValue(idist));
    args->push_back(onembed ? integersValue(*onembed) : noneValue());
    args->push_back(integerValue(ostride));
    args->push_back(integerValue(odist));
    args->push_back(integerValue(type));
    args->push_back(integerValue(batch));
  }
};

// cufft*1d/2d/3d: the basic layout (no embeds, unit strides), batch 1 except for 1d.
Shape basicShape(ShapeVariant variant, std::initializer_list<int> dims, cufftType type, int batch) {
  Shape shape;
  shape.variant = variant;
  shape.n.assign(dims.begin(), dims.end());
  shape.type = type;
  shape.batch = batch;
  return shape;
}

// cufft*Many and *Many64: n[rank], and inembed/onembed[rank] when given. cuFFT plans have rank 1,
// 2 or 3; checked here because the arrays are read with that length.
template <typename T>
cufftResult manyShape(ShapeVariant variant, int rank, const T* n, const T* inembed, long long istride,
                      long long idist, const T* onembed, long long ostride, long long odist, cufftType type,
                      long long batch, Shape* shape) {
  if (rank < 1 || rank > 3) return CUFFT_INVALID_SIZE;
  if (n == nullptr) return CUFFT_INVALID_VALUE;
  const auto count = static_cast<std::size_t>(rank);
  shape->variant = variant;
  shape->n.assign(n, n + count);
  if (inembed != nullptr) shape->inembed.emplace(inembed, inembed + count);
  if (onembed != nullptr) shape->onembed.emplace(onembed, onembed + count);
  shape->istride = istride;
  shape->idist = idist;
  shape->ostride = ostride;
  shape->odist = odist;
  shape->type = type;
  shape->batch = batch;
  return CUFFT_SUCCESS;
}

// make_plan, estimate and get_size_for: [plan token,] shape -> work size.
cufftResult shapeCall(const char* entryPoint, const char* operation, std::optional<std::uint64_t> token,
                      const Shape& shape, std::size_t* workSize) {
  std::vector<agileos_value> args;
  if (token) args.push_back(handleValue(*token));
  shape.appendTo(&args);
  return workSizeOf(entryPoint, operation, args, workSize);
}

// make_plan / get_size_for on the plan `plan` names.
cufftResult onPlan(const char* entryPoint, const char* operation, cufftHandle plan, const Shape& shape,
                   std::size_t* workSize) {
  const std::optional<std::uint64_t> token = plans().find(plan);
  if (!token) return CUFFT_INVALID_PLAN;
  const cufftResult result = shapeCall(entryPoint, operation, token, shape, workSize);
  if (result == CUFFT_SUCCESS && std::string_view(operation) == names::kMakePlan) {
    plans().setType(plan, shape.type);
  }
  return result;
}

cufftResult createToken(const char* entryPoint, std::uint64_t* token) {
  const LibraryReply reply = call(entryPoint, names::kCreate, {});
  const int status = reply.status(kCodes);
  if (status != CUFFT_SUCCESS) return asResult(status);
  if (!reply.handle(0, token)) return asResult(reply.malformed(kCodes));
  return CUFFT_SUCCESS;
}

void destroyToken(const char* entryPoint, std::uint64_t token) {
  acceptedExecs().forget(token);
  const agileos_value args[] = {handleValue(token)};
  (void)statusOf(entryPoint, names::kDestroy, args);
}

// Registers a plan the worker created; if the handle numbers ran out, destroys it again.
cufftResult registerToken(const char* entryPoint, std::uint64_t token, cufftHandle* plan) {
  const std::optional<int> handle = plans().add(token);
  if (!handle) {
    destroyToken(entryPoint, token);
    return CUFFT_INTERNAL_ERROR;
  }
  *plan = *handle;
  return CUFFT_SUCCESS;
}

// cufftPlan1d/2d/3d/Many: cufftCreate + cufftMakePlan*, in the worker. If making the plan
// fails, the worker's plan is destroyed and *plan is left as it was.
cufftResult createAndMake(const char* entryPoint, cufftHandle* plan, const Shape& shape) {
  if (plan == nullptr) return CUFFT_INVALID_VALUE;
  std::uint64_t token = 0;
  cufftResult result = createToken(entryPoint, &token);
  if (result != CUFFT_SUCCESS) return result;
  result = shapeCall(entryPoint, names::kMakePlan, token, shape, nullptr);
  if (result != CUFFT_SUCCESS) {
    destroyToken(entryPoint, token);
    return result;
  }
  result = registerToken(entryPoint, token, plan);
  if (result == CUFFT_SUCCESS) plans().setType(*plan, shape.type);
  return result;
}

cufftResult exec(const char* entryPoint, cufftHandle plan, ExecKind kind, const void* idata,
                 const void* odata, int direction) {
  const std::optional<std::uint64_t> token = plans().find(plan);
  if (!token) return CUFFT_INVALID_PLAN;
  if (agileos_refuse_in_capture(plans().stream(plan)) != 0) return CUFFT_EXEC_FAILED;
  const agileos_value args[] = {handleValue(*token), integerValue(static_cast<std::int64_t>(kind)),
                                devicePointerValue(idata), devicePointerValue(odata),
                                integerValue(direction)};
  const AcceptedExec attempt{kind, idata, odata, direction, agileos_resource_epoch()};
  if (acceptedExecs().contains(*token, attempt)) {
    const int sent = agileos_library_call_async(names::kLibrary, names::kExec, args, std::size(args));
    if (sent == 0) return CUFFT_SUCCESS;
    // Not sent, or refused at once (a transport that cannot defer): no transform ran.
    acceptedExecs().forget(*token);
    return sent == cudaErrorInvalidValue || sent == cudaErrorInvalidResourceHandle ? CUFFT_INVALID_VALUE
                                                                                   : CUFFT_EXEC_FAILED;
  }
  const cufftResult result = statusOf(entryPoint, names::kExec, args);
  if (result == CUFFT_SUCCESS) {
    acceptedExecs().remember(*token, attempt);
  } else {
    acceptedExecs().forget(*token);
  }
  return result;
}

// cufftXtMakePlanMany's (input, output, execution) data types as a plan shape: single and double
// precision as the cufftType cuFFT documents them equal to (kMany64), half and bfloat16 as a typed
// shape (kTyped, cufft_operations.h: typedTransform). Complex to complex, real to complex and
// complex to real; anything else is nullopt.
struct TypedPlan {
  ShapeVariant variant = ShapeVariant::kMany64;
  std::int64_t type = 0;
};
std::optional<TypedPlan> planOfDataTypes(cudaDataType input, cudaDataType output, cudaDataType execution) {
  struct Row {
    cudaDataType input, output, execution;
    ShapeVariant variant;
    std::int64_t type;
  };
  using adapters::cufft::Precision;
  using adapters::cufft::typedTransform;
  constexpr ShapeVariant k64 = ShapeVariant::kMany64, kTyped = ShapeVariant::kTyped;
  static constexpr Row kRows[] = {
      {CUDA_C_32F, CUDA_C_32F, CUDA_C_32F, k64, CUFFT_C2C},
      {CUDA_R_32F, CUDA_C_32F, CUDA_C_32F, k64, CUFFT_R2C},
      {CUDA_C_32F, CUDA_R_32F, CUDA_C_32F, k64, CUFFT_C2R},
      {CUDA_C_64F, CUDA_C_64F, CUDA_C_64F, k64, CUFFT_Z2Z},
      {CUDA_R_64F, CUDA_C_64F, CUDA_C_64F, k64, CUFFT_D2Z},
      {CUDA_C_64F, CUDA_R_64F, CUDA_C_64F, k64, CUFFT_Z2D},
      {CUDA_C_16F, CUDA_C_16F, CUDA_C_16F, kTyped, typedTransform(CUFFT_C2C, Precision::kHalf)},
      {CUDA_R_16F, CUDA_C_16F, CUDA_C_16F, kTyped, typedTransform(CUFFT_R2C, Precision::kHalf)},
      {CUDA_C_16F, CUDA_R_16F, CUDA_C_16F, kTyped, typedTransform(CUFFT_C2R, Precision::kHalf)},
      {CUDA_C_16BF, CUDA_C_16BF, CUDA_C_16BF, kTyped, typedTransform(CUFFT_C2C, Precision::kBFloat16)},
      {CUDA_R_16BF, CUDA_C_16BF, CUDA_C_16BF, kTyped, typedTransform(CUFFT_R2C, Precision::kBFloat16)},
      {CUDA_C_16BF, CUDA_R_16BF, CUDA_C_16BF, kTyped, typedTransform(CUFFT_C2R, Precision::kBFloat16)},
  };
  for (const Row& row : kRows) {
    if (row.input == input && row.output == output && row.execution == execution) {
      return TypedPlan{row.variant, row.type};
    }
  }
  return std::nullopt;
}

// cufftXtMakePlanMany / cufftXtGetSizeMany: the shape of the data types (planOfDataTypes); a
// combination cuFFT does not document is CUFFT_NOT_SUPPORTED without a call.
struct DataTypes {
  cudaDataType input, output, execution;
};
cufftResult typedShapeCall(const char* entryPoint, const char* operation, cufftHandle plan, int rank,
                           const long long* n, const long long* inembed, long long istride, long long idist,
                           const long long* onembed, long long ostride, long long odist, DataTypes types,
                           long long batch, std::size_t* workSize) {
  if (!plans().find(plan)) return CUFFT_INVALID_PLAN;
  const std::optional<TypedPlan> typed = planOfDataTypes(types.input, types.output, types.execution);
  if (!typed) return CUFFT_NOT_SUPPORTED;
  Shape shape;
  const cufftResult result = manyShape(typed->variant, rank, n, inembed, istride, idist, onembed, ostride,
                                       odist, CUFFT_C2C, batch, &shape);
  if (result != CUFFT_SUCCESS) return result;
  shape.type = typed->type;  // set here: a typed value is no cufftType enumerator
  return onPlan(entryPoint, operation, plan, shape, workSize);
}

// The transform of a plan's recorded type value (a cufftType, or a typed plan's value).
std::optional<ExecKind> kindOfType(std::int64_t type) { return adapters::cufft::kindOfTransform(type); }

// An operation on a plan with integer arguments and no result.
cufftResult planStatus(const char* entryPoint, const char* operation, cufftHandle plan,
                       std::initializer_list<std::int64_t> integers) {
  const std::optional<std::uint64_t> token = plans().find(plan);
  if (!token) return CUFFT_INVALID_PLAN;
  acceptedExecs().forget(*token);
  std::vector<agileos_value> args{handleValue(*token)};
  for (std::int64_t value : integers) args.push_back(integerValue(value));
  return statusOf(entryPoint, operation, args);
}

}  // namespace
}  // namespace agileos::client::cufft_shim

using agileos::adapters::cufft::ExecKind;
using agileos::adapters::cufft::ShapeVariant;
namespace names = agileos::adapters::cufft::names;
namespace shim = agileos::client::cufft_shim;

// --- plans ----------------------------------------------------------------------------------

AGILEOS_SHIM_EXPORT cufftResult cufftCreate(cufftHandle* handle) {
  if (handle == nullptr) return CUFFT_INVALID_VALUE;
  std::uint64_t token = 0;
  const cufftResult result = shim::createToken("cufftCreate", &token);
  if (result != CUFFT_SUCCESS) return result;
  return shim::registerToken("cufftCreate", token, handle);
}

AGILEOS_SHIM_EXPORT cufftResult cufftDestroy(cufftHandle plan) {
  if (plan == CUFFT_PLAN_NULL) return CUFFT_SUCCESS;  // "safe to call cufftDestroy on" (cufft.h)
  // Removed first, so that of two concurrent destroys only one reaches the worker, and the
  // number is gone even if the worker cannot be reached (its session ends with the process).
  const std::optional<std::uint64_t> token = shim::plans().remove(plan);
  if (!token) return CUFFT_INVALID_PLAN;
  shim::acceptedExecs().forget(*token);
  const agileos_value args[] = {agileos::client::library_shim::handleValue(*token)};
  return shim::statusOf("cufftDestroy", names::kDestroy, args);
}

AGILEOS_SHIM_EXPORT cufftResult cufftPlan1d(cufftHandle* plan, int nx, cufftType type, int batch) {
  return shim::createAndMake("cufftPlan1d", plan, shim::basicShape(ShapeVariant::kOne, {nx}, type, batch));
}

AGILEOS_SHIM_EXPORT cufftResult cufftPlan2d(cufftHandle* plan, int nx, int ny, cufftType type) {
  return shim::createAndMake("cufftPlan2d", plan, shim::basicShape(ShapeVariant::kTwo, {nx, ny}, type, 1));
}

AGILEOS_SHIM_EXPORT cufftResult cufftPlan3d(cufftHandle* plan, int nx, int ny, int nz, cufftType type) {
  return shim::createAndMake("cufftPlan3d", plan,
                             shim::basicShape(ShapeVariant::kThree, {nx, ny, nz}, type, 1));
}

AGILEOS_SHIM_EXPORT cufftResult cufftPlanMany(cufftHandle* plan, int rank, int* n, int* inembed, int istride,
                                              int idist, int* onembed, int ostride, int odist, cufftType type,
                                              int batch) {
  shim::Shape shape;
  const cufftResult result = shim::manyShape(ShapeVariant::kMany, rank, n, inembed, istride, idist, onembed,
                                             ostride, odist, type, batch, &shape);
  if (result != CUFFT_SUCCESS) return result;
  return shim::createAndMake("cufftPlanMany", plan, shape);
}

AGILEOS_SHIM_EXPORT cufftResult cufftMakePlan1d(cufftHandle plan, int nx, cufftType type, int batch,
                                                size_t* workSize) {
  return shim::onPlan("cufftMakePlan1d", names::kMakePlan, plan,
                      shim::basicShape(ShapeVariant::kOne, {nx}, type, batch), workSize);
}

AGILEOS_SHIM_EXPORT cufftResult cufftMakePlan2d(cufftHandle plan, int nx, int ny, cufftType type,
                                                size_t* workSize) {
  return shim::onPlan("cufftMakePlan2d", names::kMakePlan, plan,
                      shim::basicShape(ShapeVariant::kTwo, {nx, ny}, type, 1), workSize);
}

AGILEOS_SHIM_EXPORT cufftResult cufftMakePlan3d(cufftHandle plan, int nx, int ny, int nz, cufftType type,
                                                size_t* workSize) {
  return shim::onPlan("cufftMakePlan3d", names::kMakePlan, plan,
                      shim::basicShape(ShapeVariant::kThree, {nx, ny, nz}, type, 1), workSize);
}

AGILEOS_SHIM_EXPORT cufftResult cufftMakePlanMany(cufftHandle plan, int rank, int* n, int* inembed,
                                                  int istride, int idist, int* onembed, int ostride,
                                                  int odist, cufftType type, int batch, size_t* workSize) {
  if (!shim::plans().find(plan)) return CUFFT_INVALID_PLAN;
  shim::Shape shape;
  const cufftResult result = shim::manyShape(ShapeVariant::kMany, rank, n, inembed, istride, idist, onembed,
                                             ostride, odist, type, batch, &shape);
  if (result != CUFFT_SUCCESS) return result;
  return shim::onPlan("cufftMakePlanMany", names::kMakePlan, plan, shape, workSize);
}

AGILEOS_SHIM_EXPORT cufftResult cufftMakePlanMany64(cufftHandle plan, int rank, long long int* n,
                                                    long long int* inembed, long long int istride,
                                                    long long int idist, long long int* onembed,
                                                    long long int ostride, long long int odist,
                                                    cufftType type, long long int batch, size_t* workSize) {
  if (!shim::plans().find(plan)) return CUFFT_INVALID_PLAN;
  shim::Shape shape;
  const cufftResult result = shim::manyShape(ShapeVariant::kMany64, rank, n, inembed, istride, idist, onembed,
                                             ostride, odist, type, batch, &shape);
  if (result != CUFFT_SUCCESS) return result;
  return shim::onPlan("cufftMakePlanMany64", names::kMakePlan, plan, shape, workSize);
}

// --- sizes ----------------------------------------------------------------------------------

AGILEOS_SHIM_EXPORT cufftResult cufftEstimate1d(int nx, cufftType type, int batch, size_t* workSize) {
  return shim::shapeCall("cufftEstimate1d", names::kEstimate, std::nullopt,
                         shim::basicShape(ShapeVariant::kOne, {nx}, type, batch), workSize);
}

AGILEOS_SHIM_EXPORT cufftResult cufftEstimate2d(int nx, int ny, cufftType type, size_t* workSize) {
  return shim::shapeCall("cufftEstimate2d", names::kEstimate, std::nullopt,
                         shim::basicShape(ShapeVariant::kTwo, {nx, ny}, type, 1), workSize);
}

AGILEOS_SHIM_EXPORT cufftResult cufftEstimate3d(int nx, int ny, int nz, cufftType type, size_t* workSize) {
  return shim::shapeCall("cufftEstimate3d", names::kEstimate, std::nullopt,
                         shim::basicShape(ShapeVariant::kThree, {nx, ny, nz}, type, 1), workSize);
}

AGILEOS_SHIM_EXPORT cufftResult cufftEstimateMany(int rank, int* n, int* inembed, int istride, int idist,
                                                  int* onembed, int ostride, int odist, cufftType type,
                                                  int batch, size_t* workSize) {
  shim::Shape shape;
  const cufftResult result = shim::manyShape(ShapeVariant::kMany, rank, n, inembed, istride, idist, onembed,
                                             ostride, odist, type, batch, &shape);
  if (result != CUFFT_SUCCESS) return result;
  return shim::shapeCall("cufftEstimateMany", names::kEstimate, std::nullopt, shape, workSize);
}

AGILEOS_SHIM_EXPORT cufftResult cufftGetSize1d(cufftHandle handle, int nx, cufftType type, int batch,
                                               size_t* workSize) {
  return shim::onPlan("cufftGetSize1d", names::kGetSizeFor, handle,
                      shim::basicShape(ShapeVariant::kOne, {nx}, type, batch), workSize);
}

AGILEOS_SHIM_EXPORT cufftResult cufftGetSize2d(cufftHandle handle, int nx, int ny, cufftType type,
                                               size_t* workSize) {
  return shim::onPlan("cufftGetSize2d", names::kGetSizeFor, handle,
                      shim::basicShape(ShapeVariant::kTwo, {nx, ny}, type, 1), workSize);
}

AGILEOS_SHIM_EXPORT cufftResult cufftGetSize3d(cufftHandle handle, int nx, int ny, int nz, cufftType type,
                                               size_t* workSize) {
  return shim::onPlan("cufftGetSize3d", names::kGetSizeFor, handle,
                      shim::basicShape(ShapeVariant::kThree, {nx, ny, nz}, type, 1), workSize);
}

AGILEOS_SHIM_EXPORT cufftResult cufftGetSizeMany(cufftHandle handle, int rank, int* n, int* inembed,
                                                 int istride, int idist, int* onembed, int ostride, int odist,
                                                 cufftType type, int batch, size_t* workArea) {
  if (!shim::plans().find(handle)) return CUFFT_INVALID_PLAN;
  shim::Shape shape;
  const cufftResult result = shim::manyShape(ShapeVariant::kMany, rank, n, inembed, istride, idist, onembed,
                                             ostride, odist, type, batch, &shape);
  if (result != CUFFT_SUCCESS) return result;
  return shim::onPlan("cufftGetSizeMany", names::kGetSizeFor, handle, shape, workArea);
}

AGILEOS_SHIM_EXPORT cufftResult cufftGetSizeMany64(cufftHandle plan, int rank, long long int* n,
                                                   long long int* inembed, long long int istride,
                                                   long long int idist, long long int* onembed,
                                                   long long int ostride, long long int odist, cufftType type,
                                                   long long int batch, size_t* workSize) {
  if (!shim::plans().find(plan)) return CUFFT_INVALID_PLAN;
  shim::Shape shape;
  const cufftResult result = shim::manyShape(ShapeVariant::kMany64, rank, n, inembed, istride, idist, onembed,
                                             ostride, odist, type, batch, &shape);
  if (result != CUFFT_SUCCESS) return result;
  return shim::onPlan("cufftGetSizeMany64", names::kGetSizeFor, plan, shape, workSize);
}

// --- typed plans (cufftXt, one GPU) ------------------------------------------------------------

// A typed plan of single or double precision is the cufftMakePlanMany64 plan of the equal
// cufftType (cuFFT documents them as the same transform); one of half or bfloat16 precision is
// made in the worker by cufftXtMakePlanMany itself.
AGILEOS_SHIM_EXPORT cufftResult cufftXtMakePlanMany(cufftHandle plan, int rank, long long int* n,
                                                    long long int* inembed, long long int istride,
                                                    long long int idist, cudaDataType inputtype,
                                                    long long int* onembed, long long int ostride,
                                                    long long int odist, cudaDataType outputtype,
                                                    long long int batch, size_t* workSize,
                                                    cudaDataType executiontype) {
  return shim::typedShapeCall("cufftXtMakePlanMany", names::kMakePlan, plan, rank, n, inembed, istride, idist,
                              onembed, ostride, odist, {inputtype, outputtype, executiontype}, batch,
                              workSize);
}

AGILEOS_SHIM_EXPORT cufftResult cufftXtGetSizeMany(cufftHandle plan, int rank, long long int* n,
                                                   long long int* inembed, long long int istride,
                                                   long long int idist, cudaDataType inputtype,
                                                   long long int* onembed, long long int ostride,
                                                   long long int odist, cudaDataType outputtype,
                                                   long long int batch, size_t* workSize,
                                                   cudaDataType executiontype) {
  return shim::typedShapeCall("cufftXtGetSizeMany", names::kGetSizeFor, plan, rank, n, inembed, istride,
                              idist, onembed, ostride, odist, {inputtype, outputtype, executiontype}, batch,
                              workSize);
}

// The transform of the plan's type. The direction goes to the worker as the program gave it: the
// worker runs real transforms through cuFFT's own cufftXtExec, which decides what a direction
// means for them (it refuses a complex-to-real transform asked to go forward).
AGILEOS_SHIM_EXPORT cufftResult cufftXtExec(cufftHandle plan, void* input, void* output, int direction) {
  if (!shim::plans().find(plan)) return CUFFT_INVALID_PLAN;
  const std::optional<std::int64_t> type = shim::plans().type(plan);
  if (!type) return CUFFT_INVALID_PLAN;  // created but never made
  const std::optional<ExecKind> kind = shim::kindOfType(*type);
  if (!kind) return CUFFT_INVALID_PLAN;
  return shim::exec("cufftXtExec", plan, *kind, input, output, direction);
}

AGILEOS_SHIM_EXPORT cufftResult cufftGetSize(cufftHandle handle, size_t* workSize) {
  const std::optional<std::uint64_t> token = shim::plans().find(handle);
  if (!token) return CUFFT_INVALID_PLAN;
  const agileos_value args[] = {agileos::client::library_shim::handleValue(*token)};
  return shim::workSizeOf("cufftGetSize", names::kWorkSize, args, workSize);
}

// --- work area and stream -------------------------------------------------------------------

AGILEOS_SHIM_EXPORT cufftResult cufftSetAutoAllocation(cufftHandle plan, int autoAllocate) {
  return shim::planStatus("cufftSetAutoAllocation", names::kSetAutoAllocation, plan, {autoAllocate});
}

AGILEOS_SHIM_EXPORT cufftResult cufftSetWorkArea(cufftHandle plan, void* workArea) {
  const std::optional<std::uint64_t> token = shim::plans().find(plan);
  if (!token) return CUFFT_INVALID_PLAN;
  const agileos_value args[] = {agileos::client::library_shim::handleValue(*token),
                                agileos::client::library_shim::devicePointerValue(workArea)};
  shim::acceptedExecs().forget(*token);
  return shim::statusOf("cufftSetWorkArea", names::kSetWorkArea, args);
}

// One work area per GPU of the plan: a client's plans have one GPU, so workArea[0] is the plan's.
AGILEOS_SHIM_EXPORT cufftResult cufftXtSetWorkArea(cufftHandle plan, void** workArea) {
  if (!shim::plans().find(plan)) return CUFFT_INVALID_PLAN;
  if (workArea == nullptr) return CUFFT_INVALID_VALUE;
  return cufftSetWorkArea(plan, workArea[0]);
}

AGILEOS_SHIM_EXPORT cufftResult cufftSetStream(cufftHandle plan, cudaStream_t stream) {
  const std::optional<std::uint64_t> token = shim::plans().find(plan);
  if (!token) return CUFFT_INVALID_PLAN;
  // The runtime shim translates the stream into its token (agileos_library_call).
  const agileos_value args[] = {agileos::client::library_shim::handleValue(*token),
                                agileos::client::library_shim::streamValue(stream)};
  shim::acceptedExecs().forget(*token);
  const cufftResult result = shim::statusOf("cufftSetStream", names::kSetStream, args);
  if (result == CUFFT_SUCCESS) shim::plans().setStream(plan, stream);
  return result;
}

// --- execution ------------------------------------------------------------------------------
// The direction of a real transform is implied by its kind; the adapter ignores it.

AGILEOS_SHIM_EXPORT cufftResult cufftExecC2C(cufftHandle plan, cufftComplex* idata, cufftComplex* odata,
                                             int direction) {
  return shim::exec("cufftExecC2C", plan, ExecKind::kC2C, idata, odata, direction);
}

AGILEOS_SHIM_EXPORT cufftResult cufftExecR2C(cufftHandle plan, cufftReal* idata, cufftComplex* odata) {
  return shim::exec("cufftExecR2C", plan, ExecKind::kR2C, idata, odata, CUFFT_FORWARD);
}

AGILEOS_SHIM_EXPORT cufftResult cufftExecC2R(cufftHandle plan, cufftComplex* idata, cufftReal* odata) {
  return shim::exec("cufftExecC2R", plan, ExecKind::kC2R, idata, odata, CUFFT_INVERSE);
}

AGILEOS_SHIM_EXPORT cufftResult cufftExecZ2Z(cufftHandle plan, cufftDoubleComplex* idata,
                                             cufftDoubleComplex* odata, int direction) {
  return shim::exec("cufftExecZ2Z", plan, ExecKind::kZ2Z, idata, odata, direction);
}

AGILEOS_SHIM_EXPORT cufftResult cufftExecD2Z(cufftHandle plan, cufftDoubleReal* idata,
                                             cufftDoubleComplex* odata) {
  return shim::exec("cufftExecD2Z", plan, ExecKind::kD2Z, idata, odata, CUFFT_FORWARD);
}

AGILEOS_SHIM_EXPORT cufftResult cufftExecZ2D(cufftHandle plan, cufftDoubleComplex* idata,
                                             cufftDoubleReal* odata) {
  return shim::exec("cufftExecZ2D", plan, ExecKind::kZ2D, idata, odata, CUFFT_INVERSE);
}

// --- versions and properties ----------------------------------------------------------------

AGILEOS_SHIM_EXPORT cufftResult cufftGetVersion(int* version) {
  if (version == nullptr) return CUFFT_INVALID_VALUE;
  std::int64_t value = 0;
  const cufftResult result = shim::integerOf("cufftGetVersion", names::kGetVersion, {}, &value);
  if (result == CUFFT_SUCCESS) *version = static_cast<int>(value);
  return result;
}

AGILEOS_SHIM_EXPORT cufftResult cufftGetProperty(libraryPropertyType type, int* value) {
  if (value == nullptr) return CUFFT_INVALID_VALUE;
  const agileos_value args[] = {agileos::client::library_shim::integerValue(type)};
  std::int64_t answer = 0;
  const cufftResult result = shim::integerOf("cufftGetProperty", names::kGetProperty, args, &answer);
  if (result == CUFFT_SUCCESS) *value = static_cast<int>(answer);
  return result;
}

AGILEOS_SHIM_EXPORT cufftResult cufftSetPlanPropertyInt64(cufftHandle plan, cufftProperty property,
                                                          const long long int inputValueInt) {
  return shim::planStatus("cufftSetPlanPropertyInt64", names::kSetPlanProperty, plan,
                          {property, inputValueInt});
}

AGILEOS_SHIM_EXPORT cufftResult cufftGetPlanPropertyInt64(cufftHandle plan, cufftProperty property,
                                                          long long int* returnPtrValue) {
  const std::optional<std::uint64_t> token = shim::plans().find(plan);
  if (!token) return CUFFT_INVALID_PLAN;
  if (returnPtrValue == nullptr) return CUFFT_INVALID_VALUE;
  const agileos_value args[] = {agileos::client::library_shim::handleValue(*token),
                                agileos::client::library_shim::integerValue(property)};
  std::int64_t value = 0;
  const cufftResult result =
      shim::integerOf("cufftGetPlanPropertyInt64", names::kGetPlanProperty, args, &value);
  if (result == CUFFT_SUCCESS) *returnPtrValue = value;
  return result;
}

AGILEOS_SHIM_EXPORT cufftResult cufftResetPlanProperty(cufftHandle plan, cufftProperty property) {
  return shim::planStatus("cufftResetPlanProperty", names::kResetPlanProperty, plan, {property});
}
