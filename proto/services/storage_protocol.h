/*
 * The storage service's shared layouts (C, also compiled as CUDA device code). A shared contract
 * (proto/): it includes nothing outside proto/ but libc headers.
 *
 * Three parties use this header:
 *  - the storage module's plugin (libstorage.so, inside the trusted worker), which sets a lease up
 *    with the service over a unix SOCK_SEQPACKET socket (the control messages below, file
 *    descriptors passed with SCM_RIGHTS);
 *  - the storage service (agileos-storage-service, a trusted helper the daemon supervises), which
 *    serves block reads of files under its root directory;
 *  - the storage module's device code, linked into user kernels by the worker, which writes
 *    submissions into and reads completions out of the queue region.
 *
 * The queue region is host memory (a memfd) that the worker maps into the I/O aperture and
 * registers for GPU access, and that the service maps into its own address space. Entry i of the
 * submission array and of the completion array belongs to data slot i: a slot is a fixed-size
 * window of the lease's data buffer (protected device memory the worker exports to the service
 * with cuMemExportToShareableHandle; the service imports and maps it).
 *
 * Per-slot protocol (single producer per slot, the device; single consumer, the service):
 *   device:  fill sq[i].file/offset/bytes; system fence; sq[i].sequence = previous + 1
 *   service: sees sq[i].sequence != the last sequence it served for slot i; copies the entry
 *            (the device may rewrite it: the COPY is validated and used); reads the file into
 *            slot i of the data buffer; fills cq[i].result; release fence; cq[i].sequence =
 *            sq[i].sequence of the copy it served
 *   device:  waits for cq[i].sequence == the sequence it submitted, then reads cq[i].result.
 * Everything in the region is untrusted from the service's side (device code runs with user
 * arguments): the service validates every field of its copy against the lease (file handle of
 * this lease, bytes <= slot_bytes, offset + bytes without overflow, and for a target: a buffer
 * this lease registered, target_offset + bytes within it) and answers a bad entry with a
 * negative result; it never trusts a value it read twice.
 *
 * Targets: an entry with target != 0 is read straight into a registered buffer (a client's own
 * allocation, registered for DMA through the worker) instead of its slot; the service writes
 * exactly the bytes read there, nothing around them.
 */
#ifndef AGILEOS_PROTO_SERVICES_STORAGE_PROTOCOL_H
#define AGILEOS_PROTO_SERVICES_STORAGE_PROTOCOL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AGILEOS_STORAGE_PROTOCOL_VERSION 1u

/* ---- queue region (shared memory) ---- */

#define AGILEOS_STORAGE_MAX_SLOTS 256u
#define AGILEOS_STORAGE_MAX_SLOT_BYTES (4u << 20)

/* One submission; 32 bytes, written by device code. */
typedef struct agileos_storage_sqe {
  uint64_t offset;        /* byte offset in the file */
  uint32_t file;          /* a file handle of this lease (AGILEOS_STORAGE_OPEN's reply) */
  uint32_t bytes;         /* bytes to read, 1..slot_bytes */
  uint32_t sequence;      /* written LAST: a new value submits the entry */
  uint32_t target;        /* 0: into the entry's slot; else a buffer of this lease (REGISTER_BUFFER) */
  uint64_t target_offset; /* target != 0: where in that buffer (offset + bytes within its size) */
} agileos_storage_sqe;

/* One completion; 16 bytes, written by the service. */
typedef struct agileos_storage_cqe {
  int64_t result;    /* bytes read (>= 0; short at end of file) or a negative errno */
  uint32_t sequence; /* written LAST: equals the submission's sequence once complete */
  uint32_t reserved;
} agileos_storage_cqe;

/* The region: a header, then sq[slots], then cq[slots]. The header is written by the plugin
 * before the lease is attached and never changes afterwards (the service copies it at attach). */
typedef struct agileos_storage_queue_header {
  uint32_t magic; /* AGILEOS_STORAGE_QUEUE_MAGIC */
  uint32_t version;
  uint32_t slots;      /* 1..AGILEOS_STORAGE_MAX_SLOTS */
  uint32_t slot_bytes; /* size of each data slot, 4096..AGILEOS_STORAGE_MAX_SLOT_BYTES, 4096-aligned */
  uint64_t reserved[6];
} agileos_storage_queue_header; /* 64 bytes */

#define AGILEOS_STORAGE_QUEUE_MAGIC 0x51475341u /* "ASGQ" */
#define AGILEOS_STORAGE_SQ_OFFSET 64u
#define AGILEOS_STORAGE_CQ_OFFSET(slots) (AGILEOS_STORAGE_SQ_OFFSET + 32u * (uint64_t)(slots))
#define AGILEOS_STORAGE_QUEUE_BYTES(slots) (AGILEOS_STORAGE_CQ_OFFSET(slots) + 16u * (uint64_t)(slots))

/* ---- control messages (SOCK_SEQPACKET, one message per request and per reply) ---- */

enum agileos_storage_op {
  AGILEOS_STORAGE_HELLO = 1,  /* -> version check */
  AGILEOS_STORAGE_ATTACH = 2, /* fds: [queue memfd, data buffer POSIX fd]; sets the lease up */
  AGILEOS_STORAGE_OPEN = 3,   /* opens path (relative to the service root) read-only */
  AGILEOS_STORAGE_CLOSE = 4,  /* closes a file handle */
  AGILEOS_STORAGE_STATS = 5,  /* service-wide counters */
  AGILEOS_STORAGE_DETACH = 6, /* ends the lease: no access to its memory once replied */
  /* fds: [the POSIX fd of a client allocation's physical memory, from the worker's DMA
   * registration]; registers [buffer_offset, buffer_offset + buffer_bytes) of it (handle_bytes
   * is the whole physical allocation, which the service maps) as a read target; reply.buffer is
   * its id (>= 1) for sqe.target. */
  AGILEOS_STORAGE_REGISTER_BUFFER = 7,
  /* Ends a registration (request.buffer): once replied, the service never writes to it again
   * (reads in flight to it have completed). */
  AGILEOS_STORAGE_UNREGISTER_BUFFER = 8
};

#define AGILEOS_STORAGE_MAX_PATH 255u

typedef struct agileos_storage_request {
  uint32_t op;           /* agileos_storage_op */
  uint32_t version;      /* AGILEOS_STORAGE_PROTOCOL_VERSION */
  uint64_t client_id;    /* ATTACH: for the service's log only */
  uint64_t queue_bytes;  /* ATTACH: size of the queue memfd mapping */
  uint64_t buffer_bytes; /* ATTACH: size of the exported data buffer (>= slots * slot_bytes);
                            REGISTER_BUFFER: size of the registered range */
  uint32_t file;         /* CLOSE */
  uint32_t path_bytes;   /* OPEN: bytes of path used, 1..AGILEOS_STORAGE_MAX_PATH */
  char path[AGILEOS_STORAGE_MAX_PATH + 1]; /* OPEN: not NUL-terminated necessarily */
  uint64_t handle_bytes;  /* REGISTER_BUFFER: size of the physical allocation behind the fd */
  uint64_t buffer_offset; /* REGISTER_BUFFER: start of the registered range in it */
  uint32_t buffer;        /* UNREGISTER_BUFFER: the id */
  uint32_t reserved;
} agileos_storage_request;

typedef struct agileos_storage_reply {
  int32_t status;           /* 0 or a negative errno */
  uint32_t file;            /* OPEN: the handle */
  uint64_t file_bytes;      /* OPEN: the file's size */
  uint64_t active_leases;   /* STATS */
  uint64_t leases_served;   /* STATS: leases attached since the service started */
  uint64_t reads_completed; /* STATS */
  uint64_t leases_revoked;  /* STATS: leases ended by DETACH or by their connection closing */
  uint32_t buffer;          /* REGISTER_BUFFER: the id */
  uint32_t reserved;
} agileos_storage_reply;

#ifdef __cplusplus
}
#endif

#endif /* AGILEOS_PROTO_SERVICES_STORAGE_PROTOCOL_H */
