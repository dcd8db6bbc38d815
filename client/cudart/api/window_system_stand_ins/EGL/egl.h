// Stand-in for <EGL/egl.h>, on the include path of the generated cudart stubs only (see
// client/cudart/CMakeLists.txt). cuda_egl_interop.h needs only EGLint from it; this is the Khronos
// definition (khronos_int32_t), so the interop stubs can be compiled against NVIDIA's
// declarations without an EGL development package. The stubs never read these arguments.
#pragma once

#include <stdint.h>

typedef int32_t EGLint;
