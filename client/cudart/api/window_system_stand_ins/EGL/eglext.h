// Stand-in for <EGL/eglext.h>, on the include path of the generated cudart stubs only (see
// client/cudart/CMakeLists.txt). These are the three opaque handle types cuda_egl_interop.h names,
// defined as in Khronos' eglext.h. The stubs never read these arguments.
#pragma once

typedef void* EGLImageKHR;
typedef void* EGLStreamKHR;
typedef void* EGLSyncKHR;
