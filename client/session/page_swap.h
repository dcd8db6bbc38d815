// Moving a range of the program's own pages into memory shared with the worker, and back
// (cudaHostRegister / cudaHostUnregister; client/session/host_allocations.h).
//
// The worker cannot reach this process's pages, so registration replaces them: the contents of
// the whole pages covering the range are copied into a shared mapping of a segment the worker
// made, and that mapping is moved over the original pages with one mremap(MREMAP_FIXED), which
// swaps them in the address space at once. The program's pointers keep working and now name
// memory the worker (and, mapped for it, the device) shares. Unregistration does the reverse into
// fresh private anonymous pages, so no shared page outlives the registration (a fork() after it
// copies the memory again, as it did before; a child forked while the range is registered shares
// those pages with its parent, where natively it would get copies, or nothing, under
// MADV_DONTFORK).
//
// What this cannot do: another thread of the program that writes the pages between the copy and
// the swap loses that write (the swap is atomic, the copy before it is not). The first and last
// page may hold bytes outside the range (a neighbouring malloc chunk, its header): they move with
// the page and keep their values, but the same race applies to them, so a program registering
// heap memory while another thread allocates could lose a heap write. The edge pages are copied
// last, right before the swap, so that window is the time of copying two pages. CUDA documents nothing
// similar, because the driver pins the pages in place; programs that register buffers before
// starting threads (the common pattern) are unaffected.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace agileos::client {

// Whether [begin, end) (page aligned) is covered, without a gap, by mappings of `maps` (the text
// of /proc/self/maps) that are private, anonymous (no file; the heap counts as anonymous; no other
// [name] such as the stack, vdso or vvar) and readable and writable. *why says why not.
bool privateAnonymousReadWrite(std::string_view maps, std::uintptr_t begin, std::uintptr_t end,
                               std::string* why);
// The same for this process, now.
bool ownPagesArePrivateAnonymous(std::uintptr_t begin, std::uintptr_t end, std::string* why);
// Whether [begin, end) meets the calling thread's stack. Such pages must never be swapped: the
// swap itself writes to the stack (a return address) between the copy and the swap. Other
// threads' stacks look like any anonymous memory in /proc/self/maps; registering them races with
// those threads like any concurrent writer.
bool meetsOwnStack(std::uintptr_t begin, std::uintptr_t end);

// Copies [pages, pages+bytes) into `shared` (a mapping of the same length) and moves `shared` over
// the pages. Both page aligned. False (nothing changed at `pages`; `shared` still mapped) if the
// kernel refuses.
bool swapInShared(void* pages, std::size_t bytes, void* shared);
// Replaces [pages, pages+bytes) by private anonymous pages holding the same bytes. False (nothing
// changed) if memory runs out.
bool swapOutToPrivate(void* pages, std::size_t bytes);

}  // namespace agileos::client
