// MemoryManager: the worker's GPU memory, laid out as in address_layout.h.
//
// create() reserves the fixed ranges (and the guard zone below them) with cuMemAddressReserve and fails
// unless each is granted exactly. User allocations are placed in kUserRange:
// requests below kSmallAllocationLimit are carved out of granularity-sized
// chunks (one chunk serves one client only, so no two clients ever share a
// physical page); larger ones get their own mapping rounded up to the
// granularity. Every user pointer is 256-byte aligned, as cudaMalloc's are.
// The allocation table records the size the client asked for, so validation is
// exact even though the mapping behind it is rounded up.
//
// Scrub policy: physical memory is zero-filled (VmmBackend::fill) before it is
// unmapped and handed back to the driver, whether by free(), by releaseClient(),
// by the destructor or when an emptied chunk is given back. Up to
// kEmptyChunksCachedPerClient emptied chunks per client stay mapped for that same
// client's next small allocations; they are never handed to another client and
// are scrubbed when they are finally given back (releaseClient, destructor, or
// when another allocation runs out of memory and the caches are dropped).
//
// Ownership: the MemoryManager owns every physical handle and mapping it made
// and releases them in free(), releaseClient() and its destructor. The backend
// must outlive it.
// Thread-safety: all public methods are safe to call concurrently. check() takes
// only the table's shared lock, so validation never waits for an allocation that
// is talking to the driver. An entry is inserted only after its memory is mapped
// and accessible, and erased before its memory is unmapped. A caller that checks
// a pointer and then uses it must itself keep the client's free() from running
// in between (the worker serializes each client's calls).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "memmgr/allocation_table.h"
#include "memmgr/vmm_backend.h"

namespace agileos::memmgr {

inline constexpr std::uint64_t kSmallAllocationLimit = 1u << 20;
inline constexpr std::uint64_t kAllocationAlignment = 256;
// Placements in the MMIO window are multiples of this (a host page size the kernel accepts for
// any mapping, and a multiple of every base page size).
inline constexpr std::uint64_t kIoPlacementAlignment = 64 * 1024;
// Emptied chunks a client keeps mapped for its own next small allocations.
inline constexpr std::size_t kEmptyChunksCachedPerClient = 2;
// Address space one client may hold reserved at once (reserveAddress): a quarter of the user
// range, so that one client cannot take the address space every client allocates from.
inline constexpr std::uint64_t kMaxReservedBytesPerClient = 256ull << 30;

// What a protected allocation is for. kState is protected state: what the kernel memory guard
// exists to protect (module state, cuFFT work areas, the guard's test canary). kGuardState is
// the guard's own page (hit count and quarantine): it holds only the guard's account of this
// client's own kernels, so it is not protected state (it neither keeps unguarded code out nor is
// refused once unguarded code runs; see admitUnguardedCode).
enum class ProtectedUse { kState, kGuardState };

// What device memory the driver holds for a client, outside this manager, is for.
enum class DriverShare : std::size_t {
  kContextLimits,  // limits the client raised: stack, malloc heap, printf FIFO (driver_limit_cost.h)
  kModuleImages,   // its loaded modules' code, constants and global variables
  kArrays,         // its CUDA arrays (worker/array_texture/array_geometry.h: chargedBytes)
  kCount
};
// A share saturates here, so the sum of the shares cannot wrap.
inline constexpr std::uint64_t kMaxDriverShare = std::uint64_t{1} << 62;

struct BackedRange;  // memmgr/mapping_lifecycle.h

class MemoryManager {
 public:
  // Queries the granularity and reserves kGuardZone, kIoAperture, kModuleRange and kUserRange
  // exactly at their addresses. Returns nullptr and sets *error (if error is not
  // null) when the granularity is unusable or a range cannot be reserved exactly;
  // whatever was reserved by then is given back.
  static std::unique_ptr<MemoryManager> create(VmmBackend& backend, std::string* error);
  ~MemoryManager();
  MemoryManager(const MemoryManager&) = delete;
  MemoryManager& operator=(const MemoryManager&) = delete;

  // cudaMalloc semantics: size 0 gives *out = 0 and CUDA_SUCCESS; exhaustion gives
  // CUDA_ERROR_OUT_OF_MEMORY and changes nothing. Any other failing driver call
  // returns its CUresult and also changes nothing (everything done is undone).
  // *out is written only on success; out == nullptr gives CUDA_ERROR_INVALID_VALUE.
  CUresult allocate(ClientId client, std::uint64_t size, DevicePtr* out);

  // cudaFree semantics: p == 0 is a no-op success; anything that is not the exact
  // base of a live kUser allocation of `client` gives CUDA_ERROR_INVALID_VALUE and
  // changes nothing. If the driver fails while giving the memory back, the
  // allocation is still gone for the client, the memory is kept out of reuse
  // (retried in the destructor) and that driver CUresult is returned.
  CUresult free(ClientId client, DevicePtr p);

  // Graph allocations (worker/graph_memory.h, which decides what is mapped where; memory_manager_graph.cpp).
  // As natively, an allocation node's address is fixed when the node is added, and physical memory
  // is bound to it only when a launch runs the node; allocations whose lifetimes do not overlap
  // share physical memory.
  // - A reservation is address space only: `size` bytes rounded up to the granularity (its span)
  //   in the user range, counted with the client's reserveAddress reservations
  //   (kMaxReservedBytesPerClient), and a kGraphReserved table entry of the size asked for, which
  //   no check() passes. setGraphAllocationLive(…, true) makes it kGraphLive (only while a block is
  //   mapped there); false makes it kGraphReserved again. free() refuses both kinds.
  // - A block is physical memory of the client (a multiple of the granularity), charged to it from
  //   createGraphBlock until destroyGraphBlock, held at a home mapping of the worker's (whose
  //   teardown scrubs it, mapping_lifecycle.h) and mapped at any number of the client's
  //   reservations at once. Blocks are the client's only: a block is never mapped at another
  //   client's reservation, so what one allocation leaves in it is seen only by the same client.
  // Every call names the client's own reservations (exact base) and blocks; anything else is
  // CUDA_ERROR_INVALID_VALUE and changes nothing. The caller makes sure no work queued on the GPU
  // still uses a reservation it unmaps or gives back, or a block it destroys.
  CUresult reserveGraphAddress(ClientId client, std::uint64_t size, DevicePtr* out);
  // Not live; a block mapped there is unmapped first. The address space goes back.
  CUresult freeGraphReservation(ClientId client, DevicePtr base);
  CUresult createGraphBlock(ClientId client, std::uint64_t size, std::uint64_t* block);
  // Mapped nowhere but its home.
  CUresult destroyGraphBlock(ClientId client, std::uint64_t block);
  // Maps the first span bytes of `block` (at least the span) at the reservation, which has none.
  CUresult mapGraphBlock(ClientId client, DevicePtr base, std::uint64_t block);
  // The reservation (not live) has a block mapped: it is unmapped.
  CUresult unmapGraphReservation(ClientId client, DevicePtr base);
  bool setGraphAllocationLive(ClientId client, DevicePtr base, bool live);
  // A reservation's span for `size` bytes (0 if it could never be placed).
  std::uint64_t graphSpan(std::uint64_t size) const;

  // Validation of an untrusted range against the client's live allocations
  // (including its module globals). Protected ranges are refused arithmetically
  // before any lookup. See AllocationTable::check for the order of verdicts.
  PointerCheck check(ClientId client, DevicePtr p, std::uint64_t n) const;
  // True when p is the exact base of a live user allocation of `client` (what free() accepts);
  // *size (if not null) is its requested size then.
  bool isUserAllocationBase(ClientId client, DevicePtr p, std::uint64_t* size) const;

  // Records a module global so copies to it validate; it is removed by
  // forgetModuleGlobal or releaseClient, never by free(). Returns false for p == 0,
  // size == 0, a range that wraps, touches a protected range or the user range
  // (the driver cannot place globals in our reservations), or overlaps a live entry.
  bool registerModuleGlobal(ClientId client, DevicePtr p, std::uint64_t size);
  // Removes the module global of `client` based exactly at p; anything else is ignored.
  void forgetModuleGlobal(ClientId client, DevicePtr p);

  // Protected memory (kModuleRange) held by the worker on behalf of `client`: guard
  // state, module state. It is in no allocation table, so no client call can name it,
  // and user kernels cannot reach it through the guard. `size` is rounded up to the
  // granularity; the memory is zero-filled. Same results as allocate(), and
  // CUDA_ERROR_NOT_PERMITTED for kState while the client runs unguarded code
  // (admitUnguardedCode).
  CUresult allocateProtected(ClientId client, std::uint64_t size, DevicePtr* out,
                             ProtectedUse use = ProtectedUse::kState);
  // Frees a protected allocation of `client` made by allocateProtected (exact base).
  CUresult freeProtected(ClientId client, DevicePtr p);

  // Exports the protected allocation of `client` based exactly at p as a POSIX file descriptor
  // (cuMemExportToShareableHandle) that the caller owns: a trusted service imports it to share
  // the memory. Anything but the exact base of the client's protected allocation is refused
  // (CUDA_ERROR_INVALID_VALUE). The memory stays allocated while any importer holds it, so an
  // export can never expose memory that is later reused. CUDA_ERROR_NOT_PERMITTED while the
  // client runs unguarded code.
  CUresult exportProtected(ClientId client, DevicePtr p, int* fd);
  // Exports the physical memory behind the user allocation of `client` that is EXACTLY
  // [p, p + size) (its base and the size it was allocated with; anything else:
  // CUDA_ERROR_INVALID_VALUE), for a module's DMA registration: *fd (the caller owns it) is the
  // whole physical allocation, *handleBytes its size, *offset where the allocation starts in it.
  // A small allocation shares its chunk with other allocations of the SAME client, which the
  // descriptor also reaches; never memory of another client. The memory stays allocated while an
  // importer holds it, so a free never hands it to anyone under an importer.
  // CUDA_ERROR_NOT_PERMITTED while the client runs unguarded code.
  CUresult exportUserAllocation(ClientId client, DevicePtr p, std::uint64_t size, int* fd,
                                std::uint64_t* handleBytes, std::uint64_t* offset);

  // The mapped size of the protected allocation of `client` based exactly at p, or 0.
  std::uint64_t protectedSize(ClientId client, DevicePtr p) const;

  // Chooses where a host mapping of `size` bytes goes in the MMIO window (kMmioWindow), for
  // `client`: the caller maps there with MAP_FIXED_NOREPLACE and registers it for the GPU. The
  // placement is the caller's until releaseIoRange; a placement the caller could not map (the
  // address was taken by a foreign mapping) may simply be kept out of use until then. nullopt:
  // no room, or the client runs unguarded code (runsUnguardedCode). Never overlaps another
  // placement.
  std::optional<DevicePtr> placeIoRange(ClientId client, std::uint64_t size);
  // Gives back a placement of `client` (exact base). False, changing nothing, otherwise.
  bool releaseIoRange(ClientId client, DevicePtr p);

  // Bytes of protected memory held for `client` (as mapped), of every use.
  std::uint64_t protectedBytes(ClientId client) const;

  // The memory manager's half of the unguarded-code gate (worker/handlers/module_loading.h).
  // Whether `client` holds protected state here: a kState protected allocation or an I/O
  // placement (the guard's own kGuardState page does not count).
  bool holdsProtectedState(ClientId client) const;
  // Atomically: if `client` holds no protected state here, marks it as running code the kernel
  // memory guard has not rewritten and returns true; from then on every step that would give it
  // protected state is refused (kState allocateProtected, placeIoRange, exportProtected,
  // exportUserAllocation). Returns false, marking nothing, if it holds protected state. The mark
  // is the client's (several clients may share a worker) and lasts until releaseProtected.
  bool admitUnguardedCode(ClientId client);
  bool runsUnguardedCode(ClientId client) const;

  // The driver's virtual-memory API for clients (cuMemAddressReserve, cuMemCreate, cuMemMap, ...),
  // confined to the user range (memory_manager_vmm.cpp). A client reserves address ranges in the
  // user range; creates physical allocations, each charged to its quota and held by the worker at
  // a mapping of its own (its "home", which the scrub on release goes through); and maps them into
  // its reservations, where each mapping becomes a kVirtualMapping table entry that copies and
  // launches may use. Handles are numbers the worker gives out, owned by one client: another
  // client's, or a made-up one, is CUDA_ERROR_INVALID_VALUE. Sizes and addresses are multiples of
  // the granularity. Everything a client holds is given back by releaseClient.
  //
  // A reservation: `size` bytes at a multiple of `alignment` (0 or a power of two; at least the
  // granularity). At most kMaxReservedBytesPerClient reserved at once (the user range is shared).
  CUresult reserveAddress(ClientId client, std::uint64_t size, std::uint64_t alignment, DevicePtr* out);
  // Exactly a reservation of `client` (base and size), with nothing mapped in it.
  CUresult freeAddress(ClientId client, DevicePtr base, std::uint64_t size);
  // `compressible`: generic compression is asked of the driver (cuMemCreate's
  // allocFlags.compressionType), which may grant memory without it; *compressed (if not null) is
  // what was granted. Compression is asked for only where its granularity divides the manager's,
  // so that compressible memory maps wherever plain memory does; elsewhere the memory is plain.
  CUresult createPhysical(ClientId client, std::uint64_t size, std::uint64_t* handle,
                          bool compressible = false, bool* compressed = nullptr);
  // cuMemRelease drops one reference (cuMemCreate's, or a retain's); at none the handle is gone for
  // the client, and its memory goes (scrubbed) when its last mapping is unmapped.
  CUresult releasePhysical(ClientId client, std::uint64_t handle);
  // cuMemRetainAllocationHandle: the handle of the allocation mapped at `va` (any address in a
  // mapping of `client`), with one more reference, which a cuMemRelease must drop.
  CUresult retainPhysical(ClientId client, DevicePtr va, std::uint64_t* handle);
  // cuMemMap at offset 0: [va, va + size) lies in one reservation of `client`, overlaps none of
  // its mappings, and size is at most the allocation's. Mapped read/write for the device.
  CUresult mapPhysical(ClientId client, DevicePtr va, std::uint64_t size, std::uint64_t handle);
  // cuMemUnmap: [va, va + size) must be exactly a run of adjacent mappings of `client`.
  CUresult unmapRange(ClientId client, DevicePtr va, std::uint64_t size);
  // Whether [va, va + size) is exactly a run of adjacent mappings of `client` (cuMemSetAccess's
  // range; the mappings are read/write already).
  bool coversMappings(ClientId client, DevicePtr va, std::uint64_t size) const;
  // The size and handle of the allocation mapped at `va` (any address in a mapping of `client`).
  bool mappedAllocation(ClientId client, DevicePtr va, std::uint64_t* handle, std::uint64_t* size) const;

  // Frees every protected allocation of `client` (at the end of its session; a device
  // reset keeps them, as the client's loaded modules refer to them), and forgets its
  // unguarded-code mark.
  void releaseProtected(ClientId client);

  // Frees everything `client` holds (user allocations, cached chunks, module-global
  // records; not its protected allocations); its memory is scrubbed before it is handed back to the driver.
  void releaseClient(ClientId client);

  // Physical bytes mapped on behalf of `client`: its chunks (including cached empty
  // ones) and its large mappings, rounded as mapped. This is what a memory quota
  // must count; the bytes the client asked for are table().bytesOwnedBy(client).
  std::uint64_t bytesInUse(ClientId client) const;

  // Device-memory quota (issue 14): every byte mapped on behalf of `client` is charged to it,
  // user memory as mapped (bytesInUse) and protected memory (protectedBytes) alike. An
  // allocate() or allocateProtected() that would take the charge past the quota fails with
  // CUDA_ERROR_OUT_OF_MEMORY and changes nothing (the client's own cached empty chunks are
  // given back first, as they count). 0 = no quota. Lowering it below the charge refuses new
  // allocations only; nothing is taken away. Kept by releaseClient (a device reset keeps the
  // client's quota); setQuota(client, 0) forgets it.
  void setQuota(ClientId client, std::uint64_t bytes);
  std::uint64_t quota(ClientId client) const;
  // bytesInUse(client) + protectedBytes(client) + driverCharge(client), under one lock.
  std::uint64_t chargedBytes(ClientId client) const;

  // Device memory the driver holds for `client` outside this manager, charged to its quota like
  // a mapping, in shares by what it is for (DriverShare). Raising a share fails (false, nothing
  // changes) when the rise would take the client past its quota (its cached empty chunks given
  // back first, as in allocate()); lowering one always succeeds. Kept by releaseClient (the
  // limits live in the context, the modules stay loaded); setDriverCharge(client, share, 0)
  // forgets a share.
  bool setDriverCharge(ClientId client, DriverShare share, std::uint64_t bytes);
  // Adds `bytes` to a share, or fails as setDriverCharge does. Saturating.
  bool addDriverCharge(ClientId client, DriverShare share, std::uint64_t bytes);
  // Takes `bytes` off a share (at most what it holds). Always succeeds.
  void subtractDriverCharge(ClientId client, DriverShare share, std::uint64_t bytes);
  std::uint64_t driverCharge(ClientId client) const;  // every share
  std::uint64_t driverCharge(ClientId client, DriverShare share) const;

  std::size_t granularity() const { return granularity_; }
  const AllocationTable& table() const { return table_; }

 private:
  explicit MemoryManager(VmmBackend& backend, std::size_t granularity);
  struct State;  // VA allocator, mappings, chunks, large allocations (memory_manager.cpp)

  // The following run with mutex_ held.
  CUresult allocateLocked(ClientId client, std::uint64_t size, DevicePtr* out);
  CUresult allocateSmall(ClientId client, std::uint64_t size, DevicePtr* out);
  CUresult allocateLarge(ClientId client, std::uint64_t size, DevicePtr* out);
  // Gives back the memory of the user allocation at p, whose table entry is already erased.
  CUresult releaseBackingLocked(ClientId client, DevicePtr p);
  CUresult createMapping(std::uint64_t size, BackedRange* out, bool compressible = false);
  // cuMemMap of `handle` at [va, va + size) with read/write access for the device, or nothing mapped.
  CUresult mapReadWriteLocked(DevicePtr va, std::uint64_t size, PhysicalHandle handle);
  // The run of adjacent mappings of `client` that is exactly [va, va + size), first to last; empty
  // if there is none.
  std::vector<DevicePtr> mappingRunLocked(ClientId client, DevicePtr va, std::uint64_t size) const;
  // Unmaps one mapping (its table entry already erased) and gives back its allocation if that was
  // released and this was its last mapping.
  CUresult unmapLocked(DevicePtr va);
  // The handle of the mapping of `client` that holds `va` (any address in it); false if none does.
  bool handleMappedAtLocked(ClientId client, DevicePtr va, std::uint64_t* handle) const;
  void releaseVirtualMemoryLocked(ClientId client);
  void releaseGraphMemoryLocked(ClientId client);  // memory_manager_graph.cpp
  // Gives back a physical allocation (memory_manager_vmm.cpp) that is released and mapped nowhere:
  // uncharged, then scrubbed, unmapped and released through its home mapping.
  CUresult destroyPhysicalLocked(std::uint64_t handle);
  bool holdsProtectedStateLocked(ClientId client) const;
  std::uint64_t chargedBytesLocked(ClientId client) const;
  std::uint64_t driverChargeLocked(ClientId client) const;  // every share
  std::uint64_t driverChargeLocked(ClientId client, DriverShare share) const;
  bool setDriverChargeLocked(ClientId client, DriverShare share, std::uint64_t bytes);
  // Whether `extra` more mapped bytes keep `client` within its quota; gives its cached empty
  // chunks back first when they are what stands in the way.
  bool fitsQuota(ClientId client, std::uint64_t extra);

  VmmBackend& backend_;
  std::size_t granularity_;
  AllocationTable table_;
  mutable std::mutex mutex_;
  std::unique_ptr<State> state_;
};

}  // namespace agileos::memmgr
