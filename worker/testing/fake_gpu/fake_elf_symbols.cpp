#include "worker/testing/fake_gpu/fake_elf_symbols.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace agileos::worker::fake {
namespace {

using Bytes = std::span<const std::uint8_t>;

template <typename T>
std::optional<T> read(Bytes image, std::uint64_t offset) {
  if (offset > image.size() || image.size() - offset < sizeof(T)) return std::nullopt;
  T value;
  std::memcpy(&value, image.data() + offset, sizeof value);
  return value;
}

std::optional<std::string_view> stringAt(Bytes image, const Elf64_Shdr& table, std::uint32_t offset) {
  if (offset >= table.sh_size || table.sh_offset > image.size() ||
      image.size() - table.sh_offset < table.sh_size)
    return std::nullopt;
  const auto* begin = reinterpret_cast<const char*>(image.data() + table.sh_offset);
  const void* end = std::memchr(begin + offset, '\0', table.sh_size - offset);
  if (end == nullptr) return std::nullopt;
  return std::string_view(begin + offset, static_cast<const char*>(end) - (begin + offset));
}

// The EIATTR records of a `.nv.info.NAME` section: format byte, attribute byte, then a 16-bit
// field that is the value (EIFMT_HVAL), the value and a pad byte (EIFMT_BVAL), unused (EIFMT_NVAL),
// or the length of the bytes that follow (EIFMT_SVAL); records stay 4-byte aligned. EIATTR_KPARAM_INFO (0x17)
// is an SVAL of 12 bytes: index (4), ordinal (2), offset (2), and a word whose bits 18-31 are the parameter's
// size in bytes.
constexpr std::uint8_t kFormatNone = 0x01, kFormatByte = 0x02, kFormatHalf = 0x03, kFormatSized = 0x04;
constexpr std::uint8_t kKernelParamInfo = 0x17;

bool readParams(Bytes image, const Elf64_Shdr& info, std::vector<PtxParam>* params, std::string* why) {
  auto fail = [&](std::string what) {
    *why = std::move(what);
    return false;
  };
  if (info.sh_offset > image.size() || image.size() - info.sh_offset < info.sh_size)
    return fail("its attributes lie outside the image");
  const Bytes records = image.subspan(info.sh_offset, info.sh_size);
  std::map<std::uint16_t, PtxParam> byOrdinal;
  std::size_t at = 0;
  while (at + 2 <= records.size()) {
    const std::uint8_t format = records[at], attribute = records[at + 1];
    at += 2;
    if (format == kFormatNone || format == kFormatByte || format == kFormatHalf) {
      at += 2;
      continue;
    }
    if (format != kFormatSized)
      return fail("attribute format " + std::to_string(format) + " at byte " + std::to_string(at - 2));
    const auto length = read<std::uint16_t>(records, at);
    if (!length || records.size() - at - 2 < *length) return fail("an attribute runs past its section");
    at += 2;
    if (attribute == kKernelParamInfo) {
      if (*length != 12) return fail("a parameter record of " + std::to_string(*length) + " bytes");
      const std::uint16_t ordinal = *read<std::uint16_t>(records, at + 4);
      const std::uint16_t offset = *read<std::uint16_t>(records, at + 6);
      const std::uint32_t word = *read<std::uint32_t>(records, at + 8);
      byOrdinal[ordinal] = PtxParam{offset, (word >> 18) & 0x3fff};
    }
    at += *length;
  }
  if (at != records.size()) return fail("the last attribute runs past its section");
  for (std::uint16_t expected = 0; const auto& [ordinal, param] : byOrdinal) {
    if (ordinal != expected++) return fail("parameter " + std::to_string(expected - 1) + " has no record");
    params->push_back(param);
  }
  return true;
}

// SHT_NOBITS and CUDA's memory-only section types (worker/fatbin/elf_reading.h) have no bytes in
// the file.
bool hasFileBytes(std::uint32_t type) {
  return type != SHT_NOBITS && type != SHT_LOPROC + 0x07 && type != SHT_LOPROC + 0x09 &&
         type != SHT_LOPROC + 0x0a && type != SHT_LOPROC + 0x15;
}

}  // namespace

std::uint64_t elfImageSize(const void* image) {
  const auto* bytes = static_cast<const std::uint8_t*>(image);
  const auto header = read<Elf64_Ehdr>(Bytes(bytes, sizeof(Elf64_Ehdr)), 0);
  if (!header || std::memcmp(header->e_ident, ELFMAG, SELFMAG) != 0 ||
      header->e_ident[EI_CLASS] != ELFCLASS64 || header->e_shentsize != sizeof(Elf64_Shdr)) {
    return 0;
  }
  const std::uint64_t tableEnd = header->e_shoff + std::uint64_t{header->e_shnum} * sizeof(Elf64_Shdr);
  std::uint64_t end = std::max<std::uint64_t>(
      tableEnd, header->e_phoff + std::uint64_t{header->e_phnum} * header->e_phentsize);
  const Bytes headers(bytes, tableEnd);
  for (std::uint16_t i = 0; i < header->e_shnum; ++i) {
    const auto section = read<Elf64_Shdr>(headers, header->e_shoff + std::uint64_t{i} * sizeof(Elf64_Shdr));
    if (!section) return 0;
    if (hasFileBytes(section->sh_type))
      end = std::max<std::uint64_t>(end, section->sh_offset + section->sh_size);
  }
  return end;
}

PtxSymbols scanElfSymbols(Bytes image) {
  PtxSymbols symbols;
  auto fail = [&](std::string why) {
    symbols = PtxSymbols{};
    symbols.error = std::move(why);
    return symbols;
  };
  const auto header = read<Elf64_Ehdr>(image, 0);
  if (!header || header->e_shentsize != sizeof(Elf64_Shdr)) return fail("no ELF64 header");
  std::vector<Elf64_Shdr> sections(header->e_shnum);
  for (std::uint16_t i = 0; i < header->e_shnum; ++i) {
    const auto section = read<Elf64_Shdr>(image, header->e_shoff + std::uint64_t{i} * sizeof(Elf64_Shdr));
    if (!section) return fail("a section header lies outside the image");
    sections[i] = *section;
  }
  if (header->e_shstrndx >= sections.size()) return fail("no section name table");
  std::vector<std::string_view> names(sections.size());
  std::map<std::string_view, std::size_t> byName;
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const auto name = stringAt(image, sections[header->e_shstrndx], sections[i].sh_name);
    if (!name) return fail("a section name lies outside its table");
    names[i] = *name;
    byName.emplace(*name, i);
  }
  constexpr std::string_view kText = ".text.", kInfo = ".nv.info.";
  for (std::size_t i = 0; i < sections.size(); ++i) {
    if (!names[i].starts_with(kText)) continue;
    const std::string_view kernel = names[i].substr(kText.size());
    auto info = byName.find(std::string(kInfo) + std::string(kernel));
    if (info == byName.end()) continue;  // a device function, not a kernel
    PtxEntry entry{std::string(kernel), {}};
    std::string why;
    if (!readParams(image, sections[info->second], &entry.params, &why))
      return fail("unreadable parameter records for " + entry.name + ": " + why);
    symbols.entries.push_back(std::move(entry));
  }
  for (std::size_t i = 0; i < sections.size(); ++i) {
    if (sections[i].sh_type != SHT_SYMTAB) continue;
    if (sections[i].sh_link >= sections.size() || sections[i].sh_entsize != sizeof(Elf64_Sym))
      return fail("a symbol table without its string table");
    for (std::uint64_t at = 0; at + sizeof(Elf64_Sym) <= sections[i].sh_size; at += sizeof(Elf64_Sym)) {
      const auto symbol = read<Elf64_Sym>(image, sections[i].sh_offset + at);
      if (!symbol) return fail("a symbol lies outside the image");
      if (ELF64_ST_TYPE(symbol->st_info) != STT_OBJECT || symbol->st_size == 0 ||
          symbol->st_shndx >= sections.size()) {
        continue;
      }
      const std::string_view section = names[symbol->st_shndx];
      const bool constant = section.starts_with(".nv.constant");
      if (!constant && !section.starts_with(".nv.global")) continue;
      const auto name = stringAt(image, sections[sections[i].sh_link], symbol->st_name);
      if (!name) return fail("a symbol name lies outside its table");
      symbols.variables.push_back(PtxVariable{std::string(*name), symbol->st_size, constant});
    }
  }
  symbols.ok = true;
  return symbols;
}

}  // namespace agileos::worker::fake
