// The storage service's checks of what its clients send, kept free of I/O so that they are
// tested on their own (tests/cpu/services/storage_validation_test.cpp). Each returns 0 or a
// negative errno, which is what the client is answered.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "proto/services/storage_protocol.h"

namespace agileos::services::storage {

// The service's copy of one submission entry (storage_protocol.h: the copy is what is checked
// and used; the entry in shared memory may change at any time).
struct Submission {
  std::uint64_t offset = 0;
  std::uint32_t file = 0;
  std::uint32_t bytes = 0;
  std::uint32_t sequence = 0;
  std::uint32_t target = 0;         // 0: the entry's slot; else a registered buffer's id
  std::uint64_t target_offset = 0;  // target != 0: where in the registered range
};

// The header copied at ATTACH against the sizes in the request: magic, version, slots in
// 1..AGILEOS_STORAGE_MAX_SLOTS, slot_bytes in 4096..AGILEOS_STORAGE_MAX_SLOT_BYTES and a
// multiple of 4096, queue_bytes >= AGILEOS_STORAGE_QUEUE_BYTES(slots), buffer_bytes >=
// slots * slot_bytes. -EINVAL (-EPROTONOSUPPORT for another version) with *reason for the log.
int checkQueueHeader(const agileos_storage_queue_header& header, std::uint64_t queue_bytes,
                     std::uint64_t buffer_bytes, std::string* reason);

// The parts of a submission that need no lookup: 1 <= bytes <= slot_bytes (-EINVAL), and
// offset + bytes representable as a file offset, off_t being signed (-EOVERFLOW). The file
// handle is checked against the connection's table when the entry is served (-EBADF).
int checkSubmission(const Submission& submission, std::uint32_t slot_bytes);

// REGISTER_BUFFER's sizes: handle_bytes > 0, buffer_bytes > 0, and the registered range
// [buffer_offset, buffer_offset + buffer_bytes) within [0, handle_bytes), the sum without
// overflow. -EINVAL with *reason for the log.
int checkBufferRegistration(std::uint64_t handle_bytes, std::uint64_t buffer_offset,
                            std::uint64_t buffer_bytes, std::string* reason);

// A targeted submission against its registration: [target_offset, target_offset + bytes)
// within [0, buffer_bytes), the sum without overflow (-ERANGE). `bytes` already passed
// checkSubmission.
int checkTargetRange(const Submission& submission, std::uint64_t buffer_bytes);

// OPEN's path: path_bytes in 1..AGILEOS_STORAGE_MAX_PATH, no NUL among them, relative (no
// leading '/'). -EINVAL (-ENAMETOOLONG for path_bytes too large); on success *path holds it.
// Escapes (".."), symlinks and magic links are refused later by openat2's RESOLVE_* flags.
int checkOpenPath(const agileos_storage_request& request, std::string* path);

}  // namespace agileos::services::storage
