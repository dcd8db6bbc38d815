/* The call that the library shims (libagileos_cufft.so, libagileos_nvrtc.so) make into
 * libagileos_cudart.so to run one operation of a trusted library adapter in the worker
 * (proto/adapters/adapter_declaration.h lists the operations and the kinds of their arguments).
 *
 * A plain C interface on purpose: each shim is its own shared object, and only the runtime
 * shim holds the connection to the worker and links the wire protocol; the others must not
 * carry a second copy of it. Exported by libagileos_cudart.so in version AGILEOS_1.
 *
 * UNTRUSTED side: nothing here is checked by the runtime shim; the worker checks every call
 * against the operation's declaration. */
#ifndef AGILEOS_LIBRARY_CALL_H
#define AGILEOS_LIBRARY_CALL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The kinds of AdapterValue's `value` oneof in client_api.proto, by field number (checked at
 * compile time in client/cudart/api_library_call.cpp). */
typedef enum agileos_value_kind {
  AGILEOS_VALUE_NONE = 0,           /* unset: a null optional list */
  AGILEOS_VALUE_INTEGER = 1,        /* integer */
  AGILEOS_VALUE_INTEGERS = 2,       /* integers[0..count) */
  AGILEOS_VALUE_DEVICE_POINTER = 3, /* word */
  AGILEOS_VALUE_HANDLE = 4,         /* word: a token the worker returned */
  AGILEOS_VALUE_STREAM = 5,         /* stream: a cudaStream_t of this process (translated here) */
  AGILEOS_VALUE_BLOB = 6,           /* bytes[0..count) */
  AGILEOS_VALUE_TEXT = 7,           /* bytes[0..count): a string, not NUL-terminated */
  AGILEOS_VALUE_TEXTS = 8           /* texts[0..count), each NUL-terminated */
} agileos_value_kind;

typedef struct agileos_value {
  agileos_value_kind kind;
  int64_t integer;
  uint64_t word;
  void* stream;
  const int64_t* integers;
  const void* bytes;
  const char* const* texts;
  size_t count;
} agileos_value;

/* The outcome of one call. Results are owned by the reply (agileos_library_reply_free). */
typedef struct agileos_library_reply {
  int32_t error;  /* cudaError_t: 0 if the operation ran (then status is the library's) */
  int32_t status; /* the library's own result code; meaningful when has_status */
  int32_t has_status;
  size_t result_count;
  agileos_value* results; /* integers, handles, blobs, texts (bytes owned by the reply) */
  char detail[512];       /* why a refusal happened, NUL-terminated; empty otherwise */
} agileos_library_reply;

/* Runs `operation` of `library`. Returns 0 and fills *reply (free it with
 * agileos_library_reply_free) whenever the worker answered, whatever it answered; returns
 * non-zero (a cudaError_t) if there is no session or the transport failed, and then *reply is
 * untouched. */
int agileos_library_call(const char* library, const char* operation, const agileos_value* args,
                         size_t arg_count, agileos_library_reply** reply);
void agileos_library_reply_free(agileos_library_reply* reply);

/* Sends the call without waiting for its reply where the transport allows (the shared-memory
 * transport), like a kernel launch: a refusal then comes back as the error of the program's
 * next synchronizing call. Returns 0 once sent, or a cudaError_t if it could not be. For calls
 * whose arguments the worker has accepted before, with nothing released since
 * (agileos_resource_epoch unchanged); the worker checks every call either way. */
int agileos_library_call_async(const char* library, const char* operation, const agileos_value* args,
                               size_t arg_count);

/* For a library call that puts work on `stream` (a cudaStream_t as the program passed it): 0 when
 * the stream is not capturing; otherwise the capture is invalidated and cudaErrorStreamCaptureUnsupported
 * returned, since work the worker's adapters run cannot be captured into a graph. */
int agileos_refuse_in_capture(void* stream);

/* Changes whenever this process may have released memory or a stream that a library call
 * could name (cudaFree, cudaStreamDestroy, cudaDeviceReset). */
uint64_t agileos_resource_epoch(void);

#ifdef __cplusplus
}
#endif

#endif
