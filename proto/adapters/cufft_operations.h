// The operations of the cuFFT adapter (proto/adapters/adapter_declaration.h): what
// libagileos_cufft.so (client/cufft) sends and worker/adapters/cufft/cufft_adapter.cpp runs, by
// the names below. Argument order is the order of each list below; results are listed in comments.
#pragma once

#include <array>
#include <optional>
#include <utility>

#include "proto/adapters/adapter_declaration.h"

namespace agileos::adapters::cufft {

// The names on the wire (AdapterCall.library, AdapterCall.operation) and in the daemon's
// `adapters` configuration ("cufft.exec", "cufft.*").
namespace names {
inline constexpr char kLibrary[] = "cufft";
inline constexpr char kCreate[] = "create";
inline constexpr char kMakePlan[] = "make_plan";
inline constexpr char kEstimate[] = "estimate";
inline constexpr char kGetSizeFor[] = "get_size_for";
inline constexpr char kWorkSize[] = "work_size";
inline constexpr char kSetAutoAllocation[] = "set_auto_allocation";
inline constexpr char kSetWorkArea[] = "set_work_area";
inline constexpr char kSetStream[] = "set_stream";
inline constexpr char kExec[] = "exec";
inline constexpr char kDestroy[] = "destroy";
inline constexpr char kGetVersion[] = "get_version";
inline constexpr char kGetProperty[] = "get_property";
inline constexpr char kSetPlanProperty[] = "set_plan_property";
inline constexpr char kGetPlanProperty[] = "get_plan_property";
inline constexpr char kResetPlanProperty[] = "reset_plan_property";
}  // namespace names

// Which cuFFT entry point a plan-shape operation stands for; the worker calls exactly that
// one, so sizes and plans match what the application would get natively.
// kTyped: cufftXtMakePlanMany / cufftXtGetSizeMany of a precision no cufftType names (half,
// bfloat16), with the 64-bit layout of kMany64 and a type value of typedTransform() below.
enum class ShapeVariant : int { kOne = 1, kTwo = 2, kThree = 3, kMany = 4, kMany64 = 5, kTyped = 6 };

// The precision of a typed plan; its transform is the single-precision cufftType of the same
// kind (CUFFT_C2C, CUFFT_R2C or CUFFT_C2R), and the shape's type value carries both.
enum class Precision : int { kStandard = 0, kHalf = 1, kBFloat16 = 2 };
inline constexpr long long typedTransform(int singlePrecisionType, Precision precision) {
  return singlePrecisionType + (static_cast<long long>(precision) << 8);
}
inline constexpr int transformOf(long long typeValue) { return static_cast<int>(typeValue & 0xff); }
// The transform an `exec` runs (cufftExecC2C ... cufftExecZ2D).
enum class ExecKind : int { kC2C = 0, kR2C = 1, kC2R = 2, kZ2Z = 3, kD2Z = 4, kZ2D = 5 };

// Each ExecKind with the cufftType of the plans it runs on: the one table both sides read. The
// values are cufft.h's (CUFFT_C2C = 0x29, ...; this header is read where cufft.h is not, and the
// sides that include both check them).
inline constexpr std::array<std::pair<ExecKind, int>, 6> kExecTransforms{{
    {ExecKind::kC2C, 0x29},
    {ExecKind::kR2C, 0x2a},
    {ExecKind::kC2R, 0x2c},
    {ExecKind::kZ2Z, 0x69},
    {ExecKind::kD2Z, 0x6a},
    {ExecKind::kZ2D, 0x6c},
}};
inline constexpr int transformOfKind(ExecKind kind) {
  for (const auto& [k, type] : kExecTransforms) {
    if (k == kind) return type;
  }
  return 0x29;  // unreachable for an ExecKind
}
// The ExecKind of a plan's type value (a typed plan's transform included); none for a value
// that is no cufftType.
inline constexpr std::optional<ExecKind> kindOfTransform(long long typeValue) {
  for (const auto& [kind, type] : kExecTransforms) {
    if (type == transformOf(typeValue)) return kind;
  }
  return std::nullopt;
}

namespace op {
using enum ArgKind;
// A plan shape: variant, n[rank], inembed (optional), istride, idist, onembed (optional),
// ostride, odist, type, batch. 1d/2d/3d use n and type (and batch for 1d) only.
inline constexpr std::array kShape{kInteger,          kIntegers, kOptionalIntegers, kInteger, kInteger,
                                   kOptionalIntegers, kInteger,  kInteger,          kInteger, kInteger};
inline constexpr std::array kNone = std::array<ArgKind, 0>{};
inline constexpr std::array kHandleOnly{kHandle};
// handle + shape
inline constexpr std::array kHandleShape{kHandle,  kInteger, kIntegers,         kOptionalIntegers,
                                         kInteger, kInteger, kOptionalIntegers, kInteger,
                                         kInteger, kInteger, kInteger};
inline constexpr std::array kHandleInteger{kHandle, kInteger};
inline constexpr std::array kHandleTwoIntegers{kHandle, kInteger, kInteger};
inline constexpr std::array kHandlePointer{kHandle, kDevicePointer};
inline constexpr std::array kHandleStream{kHandle, kStream};
// handle, ExecKind, idata, odata, direction (what cufftXtExec gets; for real transforms, the one
// cufftExec<kind> implies unless the program called cufftXtExec)
inline constexpr std::array kExec{kHandle, kInteger, kDevicePointer, kDevicePointer, kInteger};
inline constexpr std::array kInteger1{kInteger};
}  // namespace op

inline constexpr std::array kOperations{
    OperationDecl{names::kCreate, op::kNone},                 // -> handle
    OperationDecl{names::kMakePlan, op::kHandleShape, true},  // -> work size
    OperationDecl{names::kEstimate, op::kShape},              // -> work size
    OperationDecl{names::kGetSizeFor, op::kHandleShape},      // -> work size (cufftGetSize1d...)
    OperationDecl{names::kWorkSize, op::kHandleOnly},         // -> work size (cufftGetSize)
    OperationDecl{names::kSetAutoAllocation, op::kHandleInteger, true},
    OperationDecl{names::kSetWorkArea, op::kHandlePointer},
    OperationDecl{names::kSetStream, op::kHandleStream},
    OperationDecl{names::kExec, op::kExec},
    OperationDecl{names::kDestroy, op::kHandleOnly, true},
    OperationDecl{names::kGetVersion, op::kNone},       // -> version
    OperationDecl{names::kGetProperty, op::kInteger1},  // -> value
    OperationDecl{names::kSetPlanProperty, op::kHandleTwoIntegers},
    OperationDecl{names::kGetPlanProperty, op::kHandleInteger},  // -> value
    OperationDecl{names::kResetPlanProperty, op::kHandleInteger},
};

inline constexpr LibraryDecl kLibrary{names::kLibrary, kOperations};

}  // namespace agileos::adapters::cufft
