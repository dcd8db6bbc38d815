// ArrayTable: one client's CUDA arrays and its texture and surface objects.
//
// Invariants (under one mutex, so that each holds between any two calls):
// - An array token resolves only to an array this client created (or a level of one of its
//   mipmapped arrays); tokens are never reused (TokenSource).
// - A level is never destroyed alone: it goes with its mipmapped array.
// - Every object (texture or surface) this client created and has not destroyed is in the
//   table, with the root array (plain or mipmapped, never a level) it views, if any.
// - A root array named by a live object is never destroyed: destroying it retires it (its token
//   stops resolving at once) and the driver array goes when its last object does (CUDA leaves
//   destroying a viewed array undefined; here the object keeps working until destroyed).
//
// Thread-safety: every method is safe to call concurrently.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "worker/handle_table.h"

namespace agileos::worker {

struct ArrayRecord {
  CUarray array = nullptr;               // a plain array or a level; null for a mipmapped array
  CUmipmappedArray mipmapped = nullptr;  // a mipmapped array; null otherwise
  CUDA_ARRAY3D_DESCRIPTOR descriptor{};  // a level's own extent
  unsigned levels = 0;                   // a mipmapped array's level count
  Token parent = 0;                      // a level: its mipmapped array; 0 otherwise
  std::uint64_t chargedBytes = 0;        // on the client's quota (DriverShare::kArrays); 0 for a level
};

enum class ObjectKind { kTexture, kSurface };

struct ObjectRecord {
  ObjectKind kind = ObjectKind::kTexture;
  Token root = 0;  // the root array it views (0: linear memory)
};

class ArrayTable {
 public:
  bool full() const;  // as HandleTable::full: kHandleTableCapacity arrays or objects
  Token add(ArrayRecord record);
  // A live array (not retired): a plain array, a level or a mipmapped array.
  std::optional<ArrayRecord> find(Token token) const;
  // The token of level `level` of mipmapped array `parent`, minted once for `record`; later calls
  // for the same level return the same token. 0 when `parent` is not a live mipmapped array.
  Token levelToken(Token parent, unsigned level, const ArrayRecord& record);
  // Takes a root array from the client: nullopt when `token` is not a live root array of it;
  // otherwise the records whose driver arrays go now (the root and its levels, or nothing when an
  // object still views it: it is retired until then).
  std::optional<std::vector<ArrayRecord>> remove(Token token);

  // Records an object the driver created (the root must be live, or 0). False when the handle is
  // already recorded for this kind (the driver reused a handle it still counts live: a bug).
  bool addObject(std::uint64_t handle, ObjectRecord record);
  // Forgets an object of this client: nullopt when it is not one; *release gets the records of a
  // retired root whose last object this was.
  std::optional<ObjectRecord> removeObject(std::uint64_t handle, ObjectKind kind,
                                           std::vector<ArrayRecord>* release);
  // Empties the table (session end, device reset): every object, then every array record.
  void drain(std::vector<std::pair<std::uint64_t, ObjectRecord>>* objects, std::vector<ArrayRecord>* arrays);

  std::size_t arrayCount() const;  // live and retired records, levels included
  std::size_t objectCount() const;

 private:
  struct Entry {
    ArrayRecord record;
    std::map<unsigned, Token> levels;  // a mipmapped array's minted levels
    std::size_t objects = 0;           // live objects viewing this root
    bool retired = false;
  };
  std::vector<ArrayRecord> takeRootLocked(Token token);

  mutable std::mutex mutex_;
  TokenSource tokens_;
  std::map<Token, Entry> arrays_;
  std::map<std::pair<int, std::uint64_t>, ObjectRecord> objects_;  // by (kind, handle)
};

}  // namespace agileos::worker
