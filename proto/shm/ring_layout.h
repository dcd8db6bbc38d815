// The shared-memory call region: the layout both sides of the shared-memory call
// transport agree on (the worker in worker/transport/shm_*, the client in
// client/common/shm_*). Messages are serialized agileos.v1.CallRequest/CallReply,
// exactly as on the gRPC transport.
//
// One region per connection, created and sized by the worker (memfd, passed to the
// client over a unix socket, see handshake.h):
//
//   [ControlBlock]                  geometry (written once by the worker) + counters + doorbells
//   [request ring]    slotCount x slotBytes    client -> worker
//   [completion ring] slotCount x slotBytes    worker -> client
//   [request arena]   requestArenaBytes        a request too large for a slot
//   [reply arena]     replyArenaBytes          a reply too large for a slot
//   [staging]         stagingBytes             bulk bytes of copies (HostBuffer segment 0),
//                                              registered with the GPU by the worker
//
// Each ring is single-producer single-consumer with free-running 64-bit indices
// (slot = index % slotCount): the producer writes the slot, then publishes
// `produced` with release; the consumer reads `produced` with acquire, copies the
// slot, then publishes `consumed`. A message larger than a slot's payload goes to
// its direction's arena at offset 0 (the slot then names offset and length). At
// most one arena message per direction is live: the client writes the request arena
// only when the worker has taken every earlier request (the worker copies a message
// out as it takes it), and the worker writes the reply arena only when the client has
// consumed every earlier completion.
//
// A request slot's `status` carries RequestFlags: kNoReply marks a call the client
// does not wait for (launches, async copies, ...). The worker runs it in ring order
// and writes no completion; the first error of such calls rides on the next reply
// (CallReply.deferred_error). Every other request gets exactly one completion, in
// request order, so several calls may be in flight at once.
//
// The staging area is the client's to carve: it names parts of it in copy requests
// (HostBuffer{segment 0, offset, size}) and reuses a part only after the call that
// used it has completed. The worker bounds every such range by the staging area.
//
// Trust: the worker trusts NOTHING in the region (the client can rewrite any byte
// at any time). It keeps the geometry in private memory, copies a slot or arena
// payload to private memory before reading it, and validates every index the
// client publishes (ring_index.h). The client validates the geometry against the
// mapping's size before use, and bounds every length the worker writes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace agileos::shm {

inline constexpr std::uint64_t kRegionMagic = 0x314d4853534f4741ull;  // "AGOSSHM1", little endian
inline constexpr std::uint32_t kRegionVersion = 2;
inline constexpr std::size_t kCacheLine = 64;

// The counters are shared between processes, so they must be genuinely lock-free
// (an address-free atomic), not a library lock that exists once per process.
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);
static_assert(sizeof(std::atomic<std::uint64_t>) == sizeof(std::uint64_t));
static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));

// Sizes and offsets of one region, in bytes. Every offset is from the start of the mapping.
struct RegionGeometry {
  std::uint64_t magic;
  std::uint32_t version;
  std::uint32_t slotCount;  // per ring, a power of two
  std::uint32_t slotBytes;  // SlotHeader + inline payload; a multiple of kCacheLine
  std::uint32_t reserved;
  std::uint64_t requestRingOffset;
  std::uint64_t completionRingOffset;
  std::uint64_t requestArenaOffset;
  std::uint64_t requestArenaBytes;
  std::uint64_t replyArenaOffset;
  std::uint64_t replyArenaBytes;
  std::uint64_t stagingOffset;  // page aligned
  std::uint64_t stagingBytes;
  std::uint64_t regionBytes;
};
static_assert(std::is_trivially_copyable_v<RegionGeometry>);

// A 64-bit counter alone on its cache line, so producer and consumer do not false-share.
struct alignas(kCacheLine) SharedCounter {
  std::atomic<std::uint64_t> value;
};

// Where a consumer sleeps. `sequence` is the futex word: the producer increments it
// after publishing when `sleeping` is set, then FUTEX_WAKEs (doorbell.h).
struct alignas(kCacheLine) Doorbell {
  std::atomic<std::uint32_t> sequence;
  std::atomic<std::uint32_t> sleeping;
};

struct ControlBlock {
  alignas(kCacheLine) RegionGeometry geometry;
  SharedCounter requestProduced;     // written by the client
  SharedCounter requestConsumed;     // written by the worker
  SharedCounter completionProduced;  // written by the worker
  SharedCounter completionConsumed;  // written by the client
  Doorbell requestBell;              // the worker sleeps here
  Doorbell completionBell;           // the client sleeps here
};
static_assert(std::is_standard_layout_v<ControlBlock>);
static_assert(sizeof(ControlBlock) % kCacheLine == 0);

enum class SlotKind : std::uint32_t {
  kInline = 1,  // the message is the slot's payload, `inlineBytes` long
  kArena = 2,   // the message is [arenaOffset, arenaOffset + arenaBytes) of its direction's arena
};

enum class CompletionStatus : std::uint32_t {
  kOk = 1,             // the message is the worker's CallReply
  kRejected = 2,       // the session token is no longer attached; the connection ends
  kReplyTooLarge = 3,  // the reply did not fit the reply arena; no message
};

// Bits of a request slot's `status`.
enum RequestFlags : std::uint32_t {
  kNoReply = 1u << 0,  // run in order, write no completion, defer the error
};

// Start of every slot. In a request slot `status` holds RequestFlags; in a completion slot it
// is a CompletionStatus. `callId` is chosen by the client and echoed in the completion.
struct SlotHeader {
  std::uint32_t kind;  // SlotKind
  std::uint32_t status;
  std::uint64_t callId;
  std::uint32_t inlineBytes;
  std::uint32_t reserved;
  std::uint64_t arenaOffset;
  std::uint64_t arenaBytes;
};
static_assert(std::is_trivially_copyable_v<SlotHeader>);
static_assert(sizeof(SlotHeader) == 40);

inline constexpr std::uint64_t roundUp(std::uint64_t value, std::uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// The worker's choice of sizes. Slot payloads of ~4 KiB hold every small call inline;
// 256 slots let a client run that many asynchronous calls ahead of the worker. Bulk
// bytes travel through staging, so the arenas only hold large messages (module images;
// the client sends a request larger than its arena over gRPC instead). About 57 MiB in
// all, every page reserved up front.
struct RegionSizes {
  std::uint32_t slotCount = 256;
  std::uint32_t slotBytes = 4096;
  std::uint64_t requestArenaBytes = 16ull << 20;
  std::uint64_t replyArenaBytes = 8ull << 20;
  std::uint64_t stagingBytes = 32ull << 20;
};

// Lays out a region for `sizes`. Returns false if the sizes are unusable (slot count
// not a power of two, slots smaller than a header, ...). Pure; used by the worker.
bool computeGeometry(const RegionSizes& sizes, RegionGeometry* geometry);

// Checks a geometry read from a mapping of `mappedBytes` bytes: magic, version, and that
// every ring and arena lies inside the mapping without overlapping the control block.
// Used by the client; the worker never reads the geometry back.
bool validGeometry(const RegionGeometry& geometry, std::uint64_t mappedBytes);

inline std::uint32_t slotPayloadBytes(const RegionGeometry& geometry) {
  return geometry.slotBytes - static_cast<std::uint32_t>(sizeof(SlotHeader));
}

// Offset of slot `index` (free-running) of the ring that starts at `ringOffset`.
inline std::uint64_t slotOffset(std::uint64_t ringOffset, std::uint64_t index,
                                const RegionGeometry& geometry) {
  return ringOffset + (index & (geometry.slotCount - 1)) * geometry.slotBytes;
}

// True if [offset, offset + length) lies within [0, limit), without overflow.
inline constexpr bool rangeWithin(std::uint64_t offset, std::uint64_t length, std::uint64_t limit) {
  return offset <= limit && length <= limit - offset;
}

}  // namespace agileos::shm
