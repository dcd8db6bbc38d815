/*
 * AgileOS protected module ABI, version 1 (stable, C).
 *
 * A protected module offers a protected GPU service to untrusted kernels. Its host part is a
 * shared library that the trusted AgileOS worker loads with dlopen(RTLD_NOW | RTLD_LOCAL). The
 * library exports the five functions declared at the end of this header with C linkage and
 * default visibility (AGILEOS_MODULE_EXPORT).
 *
 * Trust. The plugin runs inside the trusted worker process, so its code is trusted; its INPUTS
 * are not: every request payload comes from an untrusted client. The worker checks the command
 * id and the request size against the plugin's command table before the plugin is called, but
 * the CONTENT of a request is the plugin's to validate.
 *
 * Instances. The worker creates one instance per client (host_init_module) and destroys it when
 * the client ends or its worker is retired (host_cleanup_module). Instances of modules that
 * depend on one another are destroyed in reverse order of creation.
 *
 * Threading. Calls on one instance (control, cleanup) are serialized by the worker: a plugin
 * needs no locking for per-instance state. Different instances of the same library may be
 * called concurrently from different threads, so state shared across instances (globals)
 * must be protected by the plugin. The host callbacks may be called only from within a call
 * the worker made into this instance (init, control or cleanup), on that call's thread.
 *
 * Memory ownership.
 *  - Strings and tables the worker passes (module_name, config_json, the context itself) are
 *    worker-owned and valid only for the duration of the call that receives them; copy what
 *    must be kept.
 *  - The request and response buffers of host_module_control are worker-owned copies: the
 *    request is a private copy of the client's payload (the client cannot change it during the
 *    call), the response buffer is never shared with a client until the call returned and its
 *    size was checked. Neither may be retained after the call returns.
 *  - The command table returned by host_module_commands is plugin-owned and must be static
 *    (valid for the library's whole lifetime); the worker copies it once at load.
 *  - Protected device memory from alloc_protected belongs to the instance; whatever the plugin
 *    has not freed is freed (revoked) by the worker after host_cleanup_module returns.
 *  - The service socket from service_fd is owned by the worker: the plugin must not close it.
 *  - A descriptor from export_protected belongs to the plugin (close it once passed on); I/O
 *    mappings and DMA registrations left at cleanup are undone by the worker after
 *    host_cleanup_module returns.
 *
 * Nothing a callback returns (device addresses, descriptors, registration ids) may ever be sent
 * to the client: control responses are copied to the client as they are, so a plugin answers
 * with its own handles, never with addresses or descriptors.
 */
#ifndef AGILEOS_MODULE_ABI_H
#define AGILEOS_MODULE_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version this header describes; host_module_abi_version() must return it. */
#define AGILEOS_MODULE_ABI_VERSION 1u

/* Return codes: 0 is success, every failure is negative. */
#define AGILEOS_MODULE_OK 0
#define AGILEOS_MODULE_EINVAL (-22)  /* malformed argument or request content */
#define AGILEOS_MODULE_ENOMEM (-12)  /* out of (protected) memory */
#define AGILEOS_MODULE_ENOTSUP (-95) /* command or feature not supported */
#define AGILEOS_MODULE_EIO (-5)      /* device or service failure */
#define AGILEOS_MODULE_EPERM (-1)    /* the address or resource is not this instance's */
#define AGILEOS_MODULE_ERANGE (-34)  /* out of bounds, or a response larger than its buffer */

/* Log levels for agileos_module_host_api.log. */
#define AGILEOS_MODULE_LOG_DEBUG 0
#define AGILEOS_MODULE_LOG_INFO 1
#define AGILEOS_MODULE_LOG_WARN 2
#define AGILEOS_MODULE_LOG_ERROR 3

/* Limits the worker enforces on a command table at load (a table outside them is refused). */
#define AGILEOS_MODULE_MAX_COMMANDS 256u
#define AGILEOS_MODULE_MAX_COMMAND_NAME 63u            /* bytes, excluding the NUL */
#define AGILEOS_MODULE_MAX_PAYLOAD_BYTES (16ull << 20) /* request and response, each */

/* map_io flags. */
#define AGILEOS_MODULE_IO_DEVICE_MEMORY \
  1u /* fd maps a device resource (a PCIe BAR): registered as I/O memory */

/* Device constants (publish_device_constant): name syntax [A-Za-z0-9_], 1..this many bytes. */
#define AGILEOS_MODULE_MAX_CONSTANT_NAME 48u

#if defined(__GNUC__) || defined(__clang__)
#define AGILEOS_MODULE_EXPORT __attribute__((visibility("default")))
#else
#define AGILEOS_MODULE_EXPORT
#endif

/*
 * Callbacks the worker gives a plugin instance. `host` is an opaque worker pointer, passed back
 * as the first argument of every callback. The table and `host` are valid from
 * host_init_module until host_cleanup_module returns, and only for the instance they were
 * given to. Every callback returns 0 or a negative AGILEOS_MODULE_E* code.
 */
typedef struct agileos_module_host_api {
  void* host;

  /* Allocates `bytes` (> 0) of device memory in the protected module range, owned by this
   * instance; stores its device address in *device_address. Client kernels cannot reach it
   * directly. Freed by free_protected or, at the latest, after host_cleanup_module. */
  int (*alloc_protected)(void* host, uint64_t bytes, uint64_t* device_address);

  /* Frees an allocation returned by alloc_protected to THIS instance; `device_address` must be
   * the start of that allocation. Anything else is refused with AGILEOS_MODULE_EPERM. */
  int (*free_protected)(void* host, uint64_t device_address);

  /* Copies between host memory and this instance's protected memory. The range
   * [device_address, device_address + bytes) must lie inside ONE allocation of this instance
   * (AGILEOS_MODULE_EPERM otherwise, AGILEOS_MODULE_ERANGE if it runs past its end). */
  int (*write_protected)(void* host, uint64_t device_address, const void* src, uint64_t bytes);
  int (*read_protected)(void* host, uint64_t device_address, void* dst, uint64_t bytes);

  /* A connected socket to the module's service process, or -1 if the module has none. The
   * worker owns the descriptor: do not close it. */
  int (*service_fd)(void* host);

  /* Writes `message` (NUL-terminated, copied by the worker) to the worker's log. */
  void (*log)(void* host, int level, const char* message);

  /* Exports an allocation of this instance from alloc_protected (`device_address` its start) as a
   * POSIX file descriptor for cuMemImportFromShareableHandle, to share it with the module's
   * service. *fd belongs to the plugin: close it once passed on. The memory stays allocated while
   * any importer holds it, so the worker's revocation never lets it be reused under an importer. */
  int (*export_protected)(void* host, uint64_t device_address, int* fd);

  /* Maps [offset, offset + bytes) of `fd` (MAP_SHARED, read/write; offset page aligned) into the
   * I/O aperture at an address the worker's memory manager chooses (mmap MAP_FIXED_NOREPLACE,
   * the returned address checked), and registers it for GPU access (cuMemHostRegister DEVICEMAP,
   * with IOMEMORY when flags has AGILEOS_MODULE_IO_DEVICE_MEMORY). *address is the mapping's
   * address in this process AND on the device (they are equal, or the call fails). Client
   * kernels cannot reach it (the aperture is protected); the module's device code can. The
   * worker keeps its own reference to the file, so the plugin may close `fd`. Undone by
   * unmap_io(address) or after host_cleanup_module. */
  int (*map_io)(void* host, int fd, uint64_t offset, uint64_t bytes, uint32_t flags, uint64_t* address);
  int (*unmap_io)(void* host, uint64_t address);

  /* Registers [device_address, device_address + bytes) of the CLIENT's memory for access by this
   * module (its service, say): accepted only if it is exactly one live allocation of the client
   * (its start and its size as allocated), else AGILEOS_MODULE_EPERM. *registration identifies
   * it. It ends with unregister_dma, when the client frees the allocation (the worker revokes it
   * first and tells the plugin through host_module_dma_revoked, if exported) or after cleanup. */
  int (*register_dma)(void* host, uint64_t device_address, uint64_t bytes, uint64_t* registration);
  int (*unregister_dma)(void* host, uint64_t registration);

  /* Publishes a 64-bit value for this instance's device code: when the worker links the module's
   * device functions into this client's kernels, __agileos_<module>_const_<name>() returns it.
   * Kernels loaded before a (re)publication keep the value they were linked with. */
  int (*publish_device_constant)(void* host, const char* name, uint64_t value);

  /* The memory of a live DMA registration as a POSIX file descriptor for
   * cuMemImportFromShareableHandle in the module's service: *fd (the plugin's: close it once
   * passed on) is the whole physical allocation behind the registered range, *handle_bytes its
   * size, *offset where the registered range starts in it. The service must write only inside
   * [offset, offset + the registered bytes): the descriptor may also reach other memory of the
   * same client (small allocations share pages), never another client's. */
  int (*export_dma)(void* host, uint64_t registration, int* fd, uint64_t* handle_bytes, uint64_t* offset);
} agileos_module_host_api;

/* What host_init_module receives. All pointers are worker-owned and valid during the call. */
typedef struct agileos_module_init_context {
  uint32_t abi_version;                /* AGILEOS_MODULE_ABI_VERSION */
  const char* module_name;             /* the module's configured name */
  const char* module_version;          /* the module's configured version */
  uint64_t client_id;                  /* the client this instance serves */
  const agileos_module_host_api* host; /* valid until host_cleanup_module returns */
  const char* config_json;             /* module configuration, a JSON document ("{}" if none) */
} agileos_module_init_context;

/* One command a client may send. The worker refuses, without calling the plugin, any command
 * whose id is not in the table or whose request is shorter than min_request_bytes or longer
 * than max_request_bytes. The response buffer the plugin gets holds max_response_bytes. */
typedef struct agileos_module_command {
  uint32_t id;                 /* unique within the table */
  const char* name;            /* non-empty, at most AGILEOS_MODULE_MAX_COMMAND_NAME bytes */
  uint64_t min_request_bytes;  /* <= max_request_bytes */
  uint64_t max_request_bytes;  /* <= AGILEOS_MODULE_MAX_PAYLOAD_BYTES */
  uint64_t max_response_bytes; /* <= AGILEOS_MODULE_MAX_PAYLOAD_BYTES */
} agileos_module_command;

/* ---- Functions the plugin exports ---- */

/* The ABI the plugin was built against: return AGILEOS_MODULE_ABI_VERSION. */
AGILEOS_MODULE_EXPORT uint32_t host_module_abi_version(void);

/* The command table: a static array of *count entries (at most AGILEOS_MODULE_MAX_COMMANDS).
 * Called once at load; a null table is refused. */
AGILEOS_MODULE_EXPORT const agileos_module_command* host_module_commands(uint32_t* count);

/* Creates an instance for context->client_id and stores an opaque pointer to it in *instance.
 * On failure, returns a negative code and must have released everything it allocated (the
 * worker still revokes any protected memory left). */
AGILEOS_MODULE_EXPORT int host_init_module(const agileos_module_init_context* context, void** instance);

/* Runs `command` on `instance`. `request` holds request_bytes bytes (already checked against the
 * command's [min, max]; may be null when request_bytes is 0). The plugin writes at most
 * response_capacity (the command's max_response_bytes) bytes to `response` and stores the count
 * in *response_bytes; a count above the capacity makes the worker discard the response and
 * fail the call. */
AGILEOS_MODULE_EXPORT int host_module_control(void* instance, uint32_t command, const void* request,
                                              uint64_t request_bytes, void* response,
                                              uint64_t response_capacity, uint64_t* response_bytes);

/* Destroys `instance`. Called exactly once per successful host_init_module, last of all calls
 * on that instance. The host callbacks may still be used during it. */
AGILEOS_MODULE_EXPORT void host_cleanup_module(void* instance);

/* Optional. Called when the worker revokes a DMA registration because the client freed the
 * allocation (before the memory is released): stop every use of it before returning. Same
 * threading rules as host_module_control. */
AGILEOS_MODULE_EXPORT void host_module_dma_revoked(void* instance, uint64_t registration);

/* The types of the exports, for the worker's dlsym. */
typedef uint32_t (*agileos_host_module_abi_version_fn)(void);
typedef const agileos_module_command* (*agileos_host_module_commands_fn)(uint32_t* count);
typedef int (*agileos_host_init_module_fn)(const agileos_module_init_context* context, void** instance);
typedef int (*agileos_host_module_control_fn)(void* instance, uint32_t command, const void* request,
                                              uint64_t request_bytes, void* response,
                                              uint64_t response_capacity, uint64_t* response_bytes);
typedef void (*agileos_host_cleanup_module_fn)(void* instance);
typedef void (*agileos_host_module_dma_revoked_fn)(void* instance, uint64_t registration);

#ifdef __cplusplus
}
#endif

#endif /* AGILEOS_MODULE_ABI_H */
