#include "worker/array_texture/array_table.h"

namespace agileos::worker {

bool ArrayTable::full() const {
  std::lock_guard lock(mutex_);
  return arrays_.size() >= kHandleTableCapacity || objects_.size() >= kHandleTableCapacity;
}

Token ArrayTable::add(ArrayRecord record) {
  std::lock_guard lock(mutex_);
  const Token token = tokens_.next();
  arrays_[token].record = record;
  return token;
}

std::optional<ArrayRecord> ArrayTable::find(Token token) const {
  std::lock_guard lock(mutex_);
  auto it = arrays_.find(token);
  if (it == arrays_.end() || it->second.retired) return std::nullopt;
  if (const Token parent = it->second.record.parent; parent != 0) {
    auto root = arrays_.find(parent);
    if (root == arrays_.end() || root->second.retired) return std::nullopt;
  }
  return it->second.record;
}

Token ArrayTable::levelToken(Token parent, unsigned level, const ArrayRecord& record) {
  std::lock_guard lock(mutex_);
  auto it = arrays_.find(parent);
  if (it == arrays_.end() || it->second.retired || it->second.record.mipmapped == nullptr) return 0;
  if (auto known = it->second.levels.find(level); known != it->second.levels.end()) return known->second;
  const Token token = tokens_.next();
  Entry& entry = arrays_[token];
  entry.record = record;
  entry.record.parent = parent;
  entry.record.chargedBytes = 0;
  arrays_[parent].levels[level] = token;
  return token;
}

std::vector<ArrayRecord> ArrayTable::takeRootLocked(Token token) {
  std::vector<ArrayRecord> out;
  auto it = arrays_.find(token);
  if (it == arrays_.end()) return out;
  for (const auto& [level, levelToken] : it->second.levels) {
    if (auto found = arrays_.find(levelToken); found != arrays_.end()) {
      out.push_back(found->second.record);
      arrays_.erase(found);
    }
  }
  out.push_back(it->second.record);
  arrays_.erase(it);
  return out;
}

std::optional<std::vector<ArrayRecord>> ArrayTable::remove(Token token) {
  std::lock_guard lock(mutex_);
  auto it = arrays_.find(token);
  if (it == arrays_.end() || it->second.retired || it->second.record.parent != 0) return std::nullopt;
  if (it->second.objects != 0) {
    it->second.retired = true;
    return std::vector<ArrayRecord>{};
  }
  return takeRootLocked(token);
}

bool ArrayTable::addObject(std::uint64_t handle, ObjectRecord record) {
  std::lock_guard lock(mutex_);
  if (record.root != 0) {
    auto it = arrays_.find(record.root);
    if (it == arrays_.end() || it->second.retired || it->second.record.parent != 0) return false;
  }
  const bool inserted = objects_.emplace(std::pair{int(record.kind), handle}, record).second;
  if (inserted && record.root != 0) ++arrays_[record.root].objects;
  return inserted;
}

std::optional<ObjectRecord> ArrayTable::removeObject(std::uint64_t handle, ObjectKind kind,
                                                     std::vector<ArrayRecord>* release) {
  std::lock_guard lock(mutex_);
  auto it = objects_.find({int(kind), handle});
  if (it == objects_.end()) return std::nullopt;
  const ObjectRecord record = it->second;
  objects_.erase(it);
  if (record.root != 0) {
    auto root = arrays_.find(record.root);
    if (root != arrays_.end() && --root->second.objects == 0 && root->second.retired) {
      *release = takeRootLocked(record.root);
    }
  }
  return record;
}

void ArrayTable::drain(std::vector<std::pair<std::uint64_t, ObjectRecord>>* objects,
                       std::vector<ArrayRecord>* arrays) {
  std::lock_guard lock(mutex_);
  for (const auto& [key, record] : objects_) objects->emplace_back(key.second, record);
  objects_.clear();
  // Levels first: a mipmapped array's levels go with it, and the caller destroys roots only.
  for (const auto& [token, entry] : arrays_) arrays->push_back(entry.record);
  arrays_.clear();
}

std::size_t ArrayTable::arrayCount() const {
  std::lock_guard lock(mutex_);
  return arrays_.size();
}

std::size_t ArrayTable::objectCount() const {
  std::lock_guard lock(mutex_);
  return objects_.size();
}

}  // namespace agileos::worker
