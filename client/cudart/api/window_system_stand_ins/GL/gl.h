// Stand-in for <GL/gl.h>, on the include path of the generated cudart stubs only (see
// client/cudart/CMakeLists.txt). cuda_gl_interop.h includes <GL/gl.h> for two typedefs; this header
// declares just those, with the types Khronos gives them, so the interop stubs can be compiled
// against NVIDIA's declarations without an OpenGL development package. The stubs never read
// these arguments, so nothing here is ever interpreted.
#pragma once

typedef unsigned int GLenum;
typedef unsigned int GLuint;

// cuda_gl_interop.h requires GL_VERSION on arm builds as proof that a GL header was included.
#define GL_VERSION 0x1F02
