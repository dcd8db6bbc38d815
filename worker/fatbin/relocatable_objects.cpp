#include "worker/fatbin/relocatable_objects.h"

#include <cstdint>
#include <span>

namespace agileos::fatbin {

RelocatableStandIn relocatableStandIn(const std::vector<std::string_view>& objects) {
  RelocatableStandIn standIn;
  if (objects.empty()) return standIn;
  if (objects.size() > kMaxRelocatableObjects) {
    standIn.unavailable = "it lists " + std::to_string(objects.size()) + " relocatable objects, more than " +
                          std::to_string(kMaxRelocatableObjects);
    return standIn;
  }
  for (std::size_t i = 0; i < objects.size(); ++i) {
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(objects[i].data());
    ParseResult parsed =
        parse(std::span<const std::uint8_t>(bytes, objects[i].size()), {}, PayloadDecoding::kOnDemand);
    if (!parsed.ok) {
      standIn.objects.clear();
      standIn.unavailable = "its relocatable object " + std::to_string(i) + " is refused: " + parsed.error;
      return standIn;
    }
    if (parsed.entries.empty()) continue;
    std::vector<Entry> ptx;
    for (Entry& entry : parsed.entries) {
      if (entry.kind == EntryKind::kPtx) ptx.push_back(std::move(entry));
    }
    if (ptx.empty()) {
      standIn.objects.clear();
      standIn.unavailable = "its relocatable object " + std::to_string(i) + " carries no PTX";
      return standIn;
    }
    standIn.objects.push_back(std::move(ptx));
  }
  return standIn;
}

}  // namespace agileos::fatbin
