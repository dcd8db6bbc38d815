#include "worker/fatbin/elf_device_footprint.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "worker/fatbin/elf_reading.h"

namespace agileos::fatbin {
namespace {

using elf::Bytes;
using elf::readAt;

constexpr std::uint64_t kSmallPage = 64u << 10;
constexpr std::uint64_t kLargePage = 2u << 20;

std::uint64_t placed(std::uint64_t size) {
  if (size == 0) return 0;
  if (size > kMaxElfFootprint) return kMaxElfFootprint;
  const std::uint64_t page = size > (1u << 20) ? kLargePage : kSmallPage;
  return (size + page - 1) / page * page;
}

void add(std::uint64_t* total, std::uint64_t bytes) {
  *total = bytes > kMaxElfFootprint - *total ? kMaxElfFootprint : *total + bytes;
}

std::string_view sectionName(Bytes image, const Elf64_Shdr& names, std::uint32_t offset) {
  if (offset >= names.sh_size) return {};
  const auto* begin = reinterpret_cast<const char*>(image.data() + names.sh_offset + offset);
  // checkElfImage: a string table ends with a NUL.
  return std::string_view(begin, ::strnlen(begin, names.sh_size - offset));
}

bool onChipOrStack(const Elf64_Shdr& section, std::string_view name) {
  return section.sh_type == elf::kShtCudaLocal || section.sh_type == elf::kShtCudaShared ||
         section.sh_type == elf::kShtCudaSharedReserved || name.starts_with(".nv.shared") ||
         name.starts_with(".nv.local");
}

// The driver places a module's code, its constant banks and its global variables in separate
// allocations; each is charged its total, rounded up once (placed).
enum Group { kCode, kConstants, kData, kGroups };

Group groupOf(std::string_view name) {
  if (name.starts_with(".text")) return kCode;
  if (name.starts_with(".nv.constant")) return kConstants;
  return kData;  // .nv.global, .nv.global.init, and anything else the driver places
}

// Whether the driver places `section` in device memory. By its flag, and also by its name
// whatever its flags: a crafted image could clear SHF_ALLOC on a .nv.global the driver still
// allocates by name, and an over-count is the safe side.
bool placedByDriver(const Elf64_Shdr& section, std::string_view name) {
  if (onChipOrStack(section, name)) return false;
  return (section.sh_flags & SHF_ALLOC) != 0 || name.starts_with(".text") ||
         name.starts_with(".nv.constant") || name.starts_with(".nv.global");
}

// The footprint by sections: each group's total, placed.
std::uint64_t sectionFootprint(Bytes image, const Elf64_Ehdr& header) {
  const auto sectionAt = [&](std::uint64_t index) {
    return readAt<Elf64_Shdr>(image, header.e_shoff + index * sizeof(Elf64_Shdr));
  };
  const Elf64_Shdr names = sectionAt(header.e_shstrndx);
  std::uint64_t groups[kGroups] = {};
  for (std::uint64_t index = 1; index < header.e_shnum; ++index) {
    const Elf64_Shdr section = sectionAt(index);
    if (section.sh_type == SHT_SYMTAB) {
      // Common symbols (relocatable cubins) take memory no section shows.
      for (std::uint64_t offset = 0; offset + sizeof(Elf64_Sym) <= section.sh_size;
           offset += sizeof(Elf64_Sym)) {
        const auto symbol = readAt<Elf64_Sym>(image, section.sh_offset + offset);
        if (symbol.st_shndx == SHN_COMMON) add(&groups[kData], symbol.st_size);
      }
    }
    const std::string_view name = sectionName(image, names, section.sh_name);
    if (placedByDriver(section, name)) add(&groups[groupOf(name)], section.sh_size);
  }
  std::uint64_t total = 0;
  for (std::uint64_t bytes : groups) add(&total, placed(bytes));
  return total;
}

// The footprint by loadable segments (an executable cubin's PT_LOAD entries, each placed): what
// a loader that reads program headers rather than sections would allocate.
std::uint64_t segmentFootprint(Bytes image, const Elf64_Ehdr& header) {
  std::uint64_t total = 0;
  for (std::uint64_t index = 0; index < header.e_phnum; ++index) {
    const auto segment = readAt<Elf64_Phdr>(image, header.e_phoff + index * sizeof(Elf64_Phdr));
    if (segment.p_type == PT_LOAD) add(&total, placed(segment.p_memsz));
  }
  return total;
}

}  // namespace

// The larger of the two readings: the driver's loader is closed source, and a crafted image can
// make sections and segments disagree.
std::uint64_t elfDeviceFootprint(Bytes image) {
  const auto header = readAt<Elf64_Ehdr>(image, 0);
  const std::uint64_t bySections = header.e_shnum == 0 ? 0 : sectionFootprint(image, header);
  return std::max(bySections, segmentFootprint(image, header));
}

}  // namespace agileos::fatbin
