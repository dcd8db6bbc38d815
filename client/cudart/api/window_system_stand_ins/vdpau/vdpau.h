// Stand-in for <vdpau/vdpau.h>, on the include path of the generated cudart stubs only (see
// client/cudart/CMakeLists.txt). These are the VDPAU types cuda_vdpau_interop.h names, with the widths
// and function type of the real header (handles are uint32_t, VdpStatus is an enum), so the
// interop stubs can be compiled against NVIDIA's declarations without libvdpau-dev. The stubs
// never read these arguments.
#pragma once

#include <stdint.h>

typedef uint32_t VdpDevice;
typedef uint32_t VdpVideoSurface;
typedef uint32_t VdpOutputSurface;
typedef uint32_t VdpFuncId;
typedef enum { VDP_STATUS_OK = 0 } VdpStatus;
typedef VdpStatus VdpGetProcAddress(VdpDevice device, VdpFuncId function_id, void** function_pointer);
