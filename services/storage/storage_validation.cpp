#include "services/storage/storage_validation.h"

#include <cerrno>
#include <cstring>
#include <limits>

namespace agileos::services::storage {
namespace {

constexpr std::uint32_t kSlotAlignment = 4096;

}  // namespace

int checkQueueHeader(const agileos_storage_queue_header& header, std::uint64_t queue_bytes,
                     std::uint64_t buffer_bytes, std::string* reason) {
  if (header.magic != AGILEOS_STORAGE_QUEUE_MAGIC) {
    *reason = "bad queue magic";
    return -EINVAL;
  }
  if (header.version != AGILEOS_STORAGE_PROTOCOL_VERSION) {
    *reason = "queue version " + std::to_string(header.version) + ", service speaks " +
              std::to_string(AGILEOS_STORAGE_PROTOCOL_VERSION);
    return -EPROTONOSUPPORT;
  }
  if (header.slots < 1 || header.slots > AGILEOS_STORAGE_MAX_SLOTS) {
    *reason =
        "slots " + std::to_string(header.slots) + " not in 1.." + std::to_string(AGILEOS_STORAGE_MAX_SLOTS);
    return -EINVAL;
  }
  if (header.slot_bytes < kSlotAlignment || header.slot_bytes > AGILEOS_STORAGE_MAX_SLOT_BYTES ||
      header.slot_bytes % kSlotAlignment != 0) {
    *reason = "slot_bytes " + std::to_string(header.slot_bytes) + " not a multiple of 4096 in 4096.." +
              std::to_string(AGILEOS_STORAGE_MAX_SLOT_BYTES);
    return -EINVAL;
  }
  if (queue_bytes < AGILEOS_STORAGE_QUEUE_BYTES(header.slots)) {
    *reason = "queue_bytes " + std::to_string(queue_bytes) + " < the " +
              std::to_string(AGILEOS_STORAGE_QUEUE_BYTES(header.slots)) + " that " +
              std::to_string(header.slots) + " slots need";
    return -EINVAL;
  }
  // At most 256 * 4 MiB: no overflow.
  const std::uint64_t slots_bytes = std::uint64_t{header.slots} * header.slot_bytes;
  if (buffer_bytes < slots_bytes) {
    *reason = "buffer_bytes " + std::to_string(buffer_bytes) +
              " < slots * slot_bytes = " + std::to_string(slots_bytes);
    return -EINVAL;
  }
  return 0;
}

int checkSubmission(const Submission& submission, std::uint32_t slot_bytes) {
  if (submission.bytes < 1 || submission.bytes > slot_bytes) return -EINVAL;
  constexpr std::uint64_t kMaxFileOffset = std::numeric_limits<std::int64_t>::max();
  if (submission.offset > kMaxFileOffset - submission.bytes) return -EOVERFLOW;
  return 0;
}

int checkBufferRegistration(std::uint64_t handle_bytes, std::uint64_t buffer_offset,
                            std::uint64_t buffer_bytes, std::string* reason) {
  if (handle_bytes == 0 || buffer_bytes == 0) {
    *reason = "handle_bytes " + std::to_string(handle_bytes) + " and buffer_bytes " +
              std::to_string(buffer_bytes) + " must not be 0";
    return -EINVAL;
  }
  // Written so that nothing wraps: buffer_bytes <= handle_bytes first, then the offset.
  if (buffer_bytes > handle_bytes || buffer_offset > handle_bytes - buffer_bytes) {
    *reason = "range [" + std::to_string(buffer_offset) + ", +" + std::to_string(buffer_bytes) +
              ") is not within the " + std::to_string(handle_bytes) + " bytes of the handle";
    return -EINVAL;
  }
  return 0;
}

int checkTargetRange(const Submission& submission, std::uint64_t buffer_bytes) {
  if (submission.bytes > buffer_bytes || submission.target_offset > buffer_bytes - submission.bytes) {
    return -ERANGE;
  }
  return 0;
}

int checkOpenPath(const agileos_storage_request& request, std::string* path) {
  if (request.path_bytes > AGILEOS_STORAGE_MAX_PATH) return -ENAMETOOLONG;
  if (request.path_bytes < 1) return -EINVAL;
  if (std::memchr(request.path, '\0', request.path_bytes) != nullptr) return -EINVAL;
  if (request.path[0] == '/') return -EINVAL;
  path->assign(request.path, request.path_bytes);
  return 0;
}

}  // namespace agileos::services::storage
