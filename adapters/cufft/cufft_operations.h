// The operations of the cuFFT adapter (adapters/adapter_declaration.h): what
// libagileos_cufft.so sends and adapters/cufft/cufft_adapter.cpp runs. Argument order is
// the order of each list below; results are listed in comments.
#pragma once

#include <array>

#include "adapters/adapter_declaration.h"

namespace agileos::adapters::cufft {

// Which cuFFT entry point a plan-shape operation stands for; the worker calls exactly that
// one, so sizes and plans match what the application would get natively.
enum class ShapeVariant : int { kOne = 1, kTwo = 2, kThree = 3, kMany = 4, kMany64 = 5 };
// The transform an `exec` runs (cufftExecC2C ... cufftExecZ2D).
enum class ExecKind : int { kC2C = 0, kR2C = 1, kC2R = 2, kZ2Z = 3, kD2Z = 4, kZ2D = 5 };

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
// handle, ExecKind, idata, odata, direction (C2C/Z2Z only; ignored otherwise)
inline constexpr std::array kExec{kHandle, kInteger, kDevicePointer, kDevicePointer, kInteger};
inline constexpr std::array kInteger1{kInteger};
}  // namespace op

inline constexpr std::array kOperations{
    OperationDecl{"create", op::kNone},                  // -> handle
    OperationDecl{"make_plan", op::kHandleShape, true},  // -> work size
    OperationDecl{"estimate", op::kShape},               // -> work size
    OperationDecl{"get_size_for", op::kHandleShape},     // -> work size (cufftGetSize1d...)
    OperationDecl{"work_size", op::kHandleOnly},         // -> work size (cufftGetSize)
    OperationDecl{"set_auto_allocation", op::kHandleInteger, true},
    OperationDecl{"set_work_area", op::kHandlePointer},
    OperationDecl{"set_stream", op::kHandleStream},
    OperationDecl{"exec", op::kExec},
    OperationDecl{"destroy", op::kHandleOnly, true},
    OperationDecl{"get_version", op::kNone},       // -> version
    OperationDecl{"get_property", op::kInteger1},  // -> value
    OperationDecl{"set_plan_property", op::kHandleTwoIntegers},
    OperationDecl{"get_plan_property", op::kHandleInteger},  // -> value
    OperationDecl{"reset_plan_property", op::kHandleInteger},
};

inline constexpr LibraryDecl kLibrary{"cufft", kOperations};

}  // namespace agileos::adapters::cufft
