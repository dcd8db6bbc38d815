// Finds the fatbin containers that nvcc embedded in an ELF executable, so the
// adversarial clients can send real, truncated and corrupted device code.
//
// The .nv_fatbin section holds one or more containers back to back (8-byte
// aligned). Each container: uint32 magic 0xBA55ED50, uint16 version, uint16
// header size, uint64 size of the entries that follow; each entry starts with
// uint16 kind (1 = PTX, 2 = ELF/SASS), uint16 version, uint32 header size,
// uint64 payload size.
//
// Header-only; used by adversary_api.cu (nvcc, C++17) and adversary_wire.cpp.
// Every function returns an empty result instead of throwing on a malformed or
// unreadable file: these are test tools, and the caller reports the failure.
#pragma once

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace agileos::adversary {

inline constexpr std::uint32_t kFatbinContainerMagic = 0xBA55ED50u;
inline constexpr std::uint32_t kFatbinWrapperMagic = 0x466243B1u;
inline constexpr std::uint16_t kEntryKindPtx = 1;

using Bytes = std::vector<unsigned char>;

struct FatbinContainerHeader {
  std::uint32_t magic;
  std::uint16_t version;
  std::uint16_t headerSize;
  std::uint64_t fatSize;  // bytes of entries after the header
};
static_assert(sizeof(FatbinContainerHeader) == 16);

struct FatbinEntryPrefix {
  std::uint16_t kind;
  std::uint16_t version;
  std::uint32_t headerSize;
  std::uint64_t payloadSize;
};
static_assert(sizeof(FatbinEntryPrefix) == 16);

// Offset of one entry inside a container, with its decoded prefix.
struct FatbinEntryLocation {
  std::size_t offset;  // from the start of the container
  FatbinEntryPrefix prefix;
};

inline Bytes readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The bytes of the named section of a 64-bit little-endian ELF image, or empty.
inline Bytes elfSection(const Bytes& image, const std::string& name) {
  if (image.size() < sizeof(Elf64_Ehdr) || std::memcmp(image.data(), ELFMAG, SELFMAG) != 0 ||
      image[EI_CLASS] != ELFCLASS64) {
    return {};
  }
  Elf64_Ehdr header;
  std::memcpy(&header, image.data(), sizeof header);
  const std::uint64_t tableEnd = header.e_shoff + std::uint64_t{header.e_shnum} * sizeof(Elf64_Shdr);
  if (header.e_shentsize != sizeof(Elf64_Shdr) || tableEnd > image.size() ||
      header.e_shstrndx >= header.e_shnum) {
    return {};
  }
  auto section = [&](std::size_t index) {
    Elf64_Shdr s;
    std::memcpy(&s, image.data() + header.e_shoff + index * sizeof(Elf64_Shdr), sizeof s);
    return s;
  };
  const Elf64_Shdr names = section(header.e_shstrndx);
  for (std::size_t i = 0; i < header.e_shnum; ++i) {
    const Elf64_Shdr s = section(i);
    if (s.sh_name >= names.sh_size || names.sh_offset + s.sh_name >= image.size()) continue;
    const char* sectionName = reinterpret_cast<const char*>(image.data() + names.sh_offset + s.sh_name);
    const std::size_t maxLength = image.size() - (names.sh_offset + s.sh_name);
    if (strnlen(sectionName, maxLength) == maxLength || name != sectionName) continue;
    if (s.sh_type == SHT_NOBITS || s.sh_offset + s.sh_size > image.size()) return {};
    return Bytes(image.begin() + static_cast<std::ptrdiff_t>(s.sh_offset),
                 image.begin() + static_cast<std::ptrdiff_t>(s.sh_offset + s.sh_size));
  }
  return {};
}

// Splits a .nv_fatbin section into its containers (each copied whole, header included).
inline std::vector<Bytes> fatbinContainers(const Bytes& section) {
  std::vector<Bytes> containers;
  std::size_t offset = 0;
  while (offset + sizeof(FatbinContainerHeader) <= section.size()) {
    FatbinContainerHeader header;
    std::memcpy(&header, section.data() + offset, sizeof header);
    if (header.magic != kFatbinContainerMagic) {
      offset += 8;  // padding between containers
      continue;
    }
    const std::uint64_t size = std::uint64_t{header.headerSize} + header.fatSize;
    if (header.headerSize < sizeof header || size > section.size() - offset) break;
    containers.emplace_back(section.begin() + static_cast<std::ptrdiff_t>(offset),
                            section.begin() + static_cast<std::ptrdiff_t>(offset + size));
    offset += (size + 7) & ~std::uint64_t{7};
  }
  return containers;
}

// The entries of a well-formed container (stops at the first inconsistency).
inline std::vector<FatbinEntryLocation> fatbinEntries(const Bytes& container) {
  std::vector<FatbinEntryLocation> entries;
  if (container.size() < sizeof(FatbinContainerHeader)) return entries;
  FatbinContainerHeader header;
  std::memcpy(&header, container.data(), sizeof header);
  std::size_t offset = header.headerSize;
  while (offset + sizeof(FatbinEntryPrefix) <= container.size()) {
    FatbinEntryPrefix prefix;
    std::memcpy(&prefix, container.data() + offset, sizeof prefix);
    if (prefix.headerSize < sizeof prefix || prefix.payloadSize > container.size() ||
        offset + prefix.headerSize + prefix.payloadSize > container.size()) {
      break;
    }
    entries.push_back({offset, prefix});
    offset += prefix.headerSize + prefix.payloadSize;
  }
  return entries;
}

// The container of `executable` whose bytes mention `marker` (e.g. an extern "C" kernel
// name, present in the SASS entry's string table), or empty if there is none.
inline Bytes fatbinContaining(const std::string& executable, const std::string& marker) {
  for (Bytes& container : fatbinContainers(elfSection(readFile(executable), ".nv_fatbin"))) {
    const auto* begin = reinterpret_cast<const char*>(container.data());
    if (std::string(begin, container.size()).find(marker) != std::string::npos) return std::move(container);
  }
  return {};
}

}  // namespace agileos::adversary
