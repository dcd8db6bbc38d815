#include "worker/fatbin/elf_image_check.h"

#include <elf.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "worker/fatbin/elf_reading.h"

namespace agileos::fatbin {
namespace {

using elf::Bytes;
using elf::kShtCudaGlobal;
using elf::kShtCudaLocal;
using elf::kShtCudaShared;
using elf::kShtCudaSharedReserved;
using elf::readAt;

std::string hex(std::uint64_t value) {
  char text[19];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

std::string decimal(std::uint64_t value) { return std::to_string(value); }

// [offset, offset + size) lies within an image of `imageSize` bytes. Written so that no sum
// can wrap: offset <= imageSize first, then size against what is left.
bool inside(std::uint64_t offset, std::uint64_t size, std::uint64_t imageSize) {
  return offset <= imageSize && size <= imageSize - offset;
}

bool hasFileContents(std::uint32_t type) {
  switch (type) {
    case SHT_NULL:
    case SHT_NOBITS:
    case kShtCudaGlobal:
    case kShtCudaLocal:
    case kShtCudaShared:
    case kShtCudaSharedReserved:
      return false;
    default:
      return true;
  }
}

bool isSymbolTable(std::uint32_t type) { return type == SHT_SYMTAB || type == SHT_DYNSYM; }

class ElfChecker {
 public:
  explicit ElfChecker(Bytes image) : image_(image) {}

  bool run() {
    return checkHeader() && checkProgramHeaders() && readSectionHeaders() && checkSectionContents() &&
           checkSectionNames() && checkSymbolTables() && checkRelocationTables();
  }

  std::string error;

 private:
  bool fail(std::uint64_t offset, std::string what) {
    error = "byte offset " + hex(offset) + ": " + std::move(what);
    return false;
  }

  // Byte offset of section `index`'s header, for messages.
  std::uint64_t headerOffset(std::size_t index) const { return header_.e_shoff + index * sizeof(Elf64_Shdr); }

  std::string sectionName(std::size_t index) const { return "section " + decimal(index); }

  // ---- ELF header --------------------------------------------------------------------------
  // Invariant after: the image holds a whole Elf64_Ehdr of an ELF64 LSB EM_CUDA executable or
  // relocatable object, and its table entry sizes are those of ELF64.
  bool checkHeader() {
    if (image_.size() < sizeof(Elf64_Ehdr)) {
      return fail(0, "image of " + decimal(image_.size()) + " bytes is shorter than an ELF64 header (" +
                         decimal(sizeof(Elf64_Ehdr)) + " bytes)");
    }
    header_ = readAt<Elf64_Ehdr>(image_, 0);
    const unsigned char* ident = header_.e_ident;
    if (std::memcmp(ident, ELFMAG, SELFMAG) != 0) return fail(0, "no ELF magic");
    if (ident[EI_CLASS] != ELFCLASS64) {
      return fail(EI_CLASS, "ELF class " + decimal(ident[EI_CLASS]) + " is not ELFCLASS64");
    }
    if (ident[EI_DATA] != ELFDATA2LSB) {
      return fail(EI_DATA, "ELF data encoding " + decimal(ident[EI_DATA]) + " is not little-endian");
    }
    if (ident[EI_VERSION] != EV_CURRENT) {
      return fail(EI_VERSION, "ELF identification version " + decimal(ident[EI_VERSION]) + " is not 1");
    }
    if (header_.e_machine != EM_CUDA) {
      return fail(offsetof(Elf64_Ehdr, e_machine),
                  "machine " + decimal(header_.e_machine) + " is not EM_CUDA (" + decimal(EM_CUDA) + ")");
    }
    if (header_.e_type != ET_EXEC && header_.e_type != ET_REL) {
      return fail(offsetof(Elf64_Ehdr, e_type),
                  "ELF type " + decimal(header_.e_type) + " is neither ET_EXEC nor ET_REL");
    }
    // e_version is not checked: cubins of CUDA's older ABI (OS/ABI 0x33) carry the toolkit's
    // version there (116 for CUDA 11.6, 123 for 12.3); those of OS/ABI 0x41 carry EV_CURRENT.
    if (header_.e_ehsize != sizeof(Elf64_Ehdr)) {
      return fail(offsetof(Elf64_Ehdr, e_ehsize),
                  "header size " + decimal(header_.e_ehsize) + " is not " + decimal(sizeof(Elf64_Ehdr)));
    }
    if (header_.e_phnum > 0 && header_.e_phentsize != sizeof(Elf64_Phdr)) {
      return fail(offsetof(Elf64_Ehdr, e_phentsize), "program header size " + decimal(header_.e_phentsize) +
                                                         " is not " + decimal(sizeof(Elf64_Phdr)));
    }
    if (header_.e_shnum > 0 && header_.e_shentsize != sizeof(Elf64_Shdr)) {
      return fail(offsetof(Elf64_Ehdr, e_shentsize), "section header size " + decimal(header_.e_shentsize) +
                                                         " is not " + decimal(sizeof(Elf64_Shdr)));
    }
    return true;
  }

  // ---- program headers ---------------------------------------------------------------------
  // Invariant after: the program header table and each segment's file bytes lie inside the
  // image, and no segment has more file bytes than memory bytes.
  bool checkProgramHeaders() {
    if (header_.e_phnum == PN_XNUM) {
      return fail(offsetof(Elf64_Ehdr, e_phnum), "extended program header numbering (PN_XNUM) is refused");
    }
    if (header_.e_phnum == 0) return true;
    // e_phnum < 2^16 and the entry is 56 bytes: the table size cannot overflow.
    const std::uint64_t tableSize = std::uint64_t{header_.e_phnum} * sizeof(Elf64_Phdr);
    if (!inside(header_.e_phoff, tableSize, image_.size())) {
      return fail(offsetof(Elf64_Ehdr, e_phoff), "program header table [" + hex(header_.e_phoff) + ", +" +
                                                     hex(tableSize) + ") runs past the end of the image (" +
                                                     hex(image_.size()) + " bytes)");
    }
    for (std::size_t index = 0; index < header_.e_phnum; ++index) {
      const std::uint64_t at = header_.e_phoff + index * sizeof(Elf64_Phdr);
      const auto segment = readAt<Elf64_Phdr>(image_, at);
      const std::string what = "program header " + decimal(index);
      if (!inside(segment.p_offset, segment.p_filesz, image_.size())) {
        return fail(at, what + ": file range [" + hex(segment.p_offset) + ", +" + hex(segment.p_filesz) +
                            ") runs past the end of the image (" + hex(image_.size()) + " bytes)");
      }
      if (segment.p_filesz > segment.p_memsz) {
        return fail(at, what + ": file size " + hex(segment.p_filesz) + " exceeds memory size " +
                            hex(segment.p_memsz));
      }
    }
    return true;
  }

  // ---- section header table ----------------------------------------------------------------
  // Invariant after: sections_ holds every section header (fewer than SHN_LORESERVE, so every
  // section index is an ordinary one), section 0 is SHT_NULL, and e_shstrndx is a real section
  // index (or SHN_UNDEF when there are no sections).
  bool readSectionHeaders() {
    if (header_.e_shstrndx == SHN_XINDEX) {
      return fail(offsetof(Elf64_Ehdr, e_shstrndx), "extended section numbering (SHN_XINDEX) is refused");
    }
    if (header_.e_shnum == 0) {
      // With e_shnum == 0, a table would mean extended numbering (the count in section 0).
      if (header_.e_shoff != 0) {
        return fail(offsetof(Elf64_Ehdr, e_shoff),
                    "section header table at " + hex(header_.e_shoff) +
                        " with no sections (extended section numbering) is refused");
      }
      if (header_.e_shstrndx != SHN_UNDEF) {
        return fail(offsetof(Elf64_Ehdr, e_shstrndx),
                    "section name table index " + decimal(header_.e_shstrndx) + " with no sections");
      }
      return true;
    }
    if (header_.e_shnum >= SHN_LORESERVE) {
      return fail(offsetof(Elf64_Ehdr, e_shnum), decimal(header_.e_shnum) +
                                                     " sections reach the reserved indices (at most " +
                                                     decimal(SHN_LORESERVE - 1) + ")");
    }
    const std::uint64_t tableSize = std::uint64_t{header_.e_shnum} * sizeof(Elf64_Shdr);
    if (!inside(header_.e_shoff, tableSize, image_.size())) {
      return fail(offsetof(Elf64_Ehdr, e_shoff), "section header table [" + hex(header_.e_shoff) + ", +" +
                                                     hex(tableSize) + ") runs past the end of the image (" +
                                                     hex(image_.size()) + " bytes)");
    }
    if (header_.e_shstrndx == SHN_UNDEF || header_.e_shstrndx >= header_.e_shnum) {
      return fail(offsetof(Elf64_Ehdr, e_shstrndx),
                  "section name table index " + decimal(header_.e_shstrndx) + " is not a section (of " +
                      decimal(header_.e_shnum) + ")");
    }
    sections_.reserve(header_.e_shnum);
    for (std::size_t index = 0; index < header_.e_shnum; ++index) {
      sections_.push_back(readAt<Elf64_Shdr>(image_, headerOffset(index)));
    }
    if (sections_[0].sh_type != SHT_NULL) {
      return fail(headerOffset(0), "section 0 has type " + hex(sections_[0].sh_type) + ", not SHT_NULL");
    }
    return true;
  }

  // ---- section contents --------------------------------------------------------------------
  // Invariant after: every section with file contents lies inside the image, every other
  // section (but SHT_NULL) starts inside it, and every string table is non-empty and ends with a
  // NUL (so any offset below its size starts a C string that ends inside it). Types this does not
  // know are checked for their bounds only.
  bool checkSectionContents() {
    for (std::size_t index = 1; index < sections_.size(); ++index) {
      const Elf64_Shdr& section = sections_[index];
      if (section.sh_type == SHT_NULL) continue;
      if (!hasFileContents(section.sh_type)) {
        // Its size is memory, but its offset is where the toolchain placed it, inside the file: a
        // reader that took it for file contents anyway would start inside the image.
        if (section.sh_offset > image_.size()) {
          return fail(headerOffset(index), sectionName(index) + ": offset " + hex(section.sh_offset) +
                                               " is past the end of the image (" + hex(image_.size()) +
                                               " bytes)");
        }
        continue;
      }
      if (!inside(section.sh_offset, section.sh_size, image_.size())) {
        return fail(headerOffset(index), sectionName(index) + ": contents [" + hex(section.sh_offset) +
                                             ", +" + hex(section.sh_size) +
                                             ") run past the end of the image (" + hex(image_.size()) +
                                             " bytes)");
      }
      if (section.sh_type == SHT_STRTAB) {
        if (section.sh_size == 0)
          return fail(headerOffset(index), sectionName(index) + ": empty string table");
        const std::uint64_t last = section.sh_offset + section.sh_size - 1;
        if (image_[last] != 0) {
          return fail(last, sectionName(index) + ": string table does not end with a NUL");
        }
      }
    }
    return true;
  }

  // Invariant after: e_shstrndx names a string table and every sh_name is inside it.
  bool checkSectionNames() {
    if (sections_.empty()) return true;
    const Elf64_Shdr& names = sections_[header_.e_shstrndx];
    if (names.sh_type != SHT_STRTAB) {
      return fail(headerOffset(header_.e_shstrndx), "section name table (section " +
                                                        decimal(header_.e_shstrndx) + ") has type " +
                                                        hex(names.sh_type) + ", not SHT_STRTAB");
    }
    for (std::size_t index = 0; index < sections_.size(); ++index) {
      if (sections_[index].sh_name >= names.sh_size) {
        return fail(headerOffset(index) + offsetof(Elf64_Shdr, sh_name),
                    sectionName(index) + ": name offset " + hex(sections_[index].sh_name) +
                        " is outside the section name table (" + hex(names.sh_size) + " bytes)");
      }
    }
    return true;
  }

  // A table of whole `entrySize`-byte entries: sh_entsize and sh_size agree with it.
  bool checkEntries(std::size_t index, std::uint64_t entrySize, const char* kind) {
    const Elf64_Shdr& section = sections_[index];
    if (section.sh_entsize != entrySize) {
      return fail(headerOffset(index) + offsetof(Elf64_Shdr, sh_entsize),
                  sectionName(index) + ": " + kind + " entry size " + decimal(section.sh_entsize) +
                      " is not " + decimal(entrySize));
    }
    if (section.sh_size % entrySize != 0) {
      return fail(headerOffset(index) + offsetof(Elf64_Shdr, sh_size),
                  sectionName(index) + ": " + kind + " size " + hex(section.sh_size) +
                      " is not a whole number of entries");
    }
    return true;
  }

  // Each table the check walks adds its size; together they stay within the image size, so
  // sections that overlap (any number can cover the same bytes) cannot multiply the work.
  bool chargeWalk(std::size_t index) {
    walked_ += sections_[index].sh_size;  // each is at most the image size: no overflow
    if (walked_ > image_.size()) {
      return fail(headerOffset(index), sectionName(index) +
                                           ": symbol and relocation tables overlap (together they exceed "
                                           "the image size)");
    }
    return true;
  }

  // ---- symbol tables -----------------------------------------------------------------------
  // Invariant after: each symbol table is whole Elf64_Sym entries linked to a string table,
  // every symbol's name is inside that string table, and every symbol's section index is a real
  // section or SHN_ABS / SHN_COMMON.
  bool checkSymbolTables() {
    for (std::size_t index = 1; index < sections_.size(); ++index) {
      if (isSymbolTable(sections_[index].sh_type) && !checkSymbolTable(index)) return false;
    }
    return true;
  }

  bool checkSymbolTable(std::size_t index) {
    const Elf64_Shdr& table = sections_[index];
    if (!checkEntries(index, sizeof(Elf64_Sym), "symbol table")) return false;
    if (table.sh_link >= sections_.size() || sections_[table.sh_link].sh_type != SHT_STRTAB) {
      return fail(headerOffset(index) + offsetof(Elf64_Shdr, sh_link),
                  sectionName(index) + ": symbol table's string table " + decimal(table.sh_link) +
                      " is not a string table section");
    }
    const std::uint64_t count = table.sh_size / sizeof(Elf64_Sym);
    if (table.sh_info > count) {
      return fail(headerOffset(index) + offsetof(Elf64_Shdr, sh_info),
                  sectionName(index) + ": first global symbol " + decimal(table.sh_info) + " is past its " +
                      decimal(count) + " symbols");
    }
    if (!chargeWalk(index)) return false;
    const std::uint64_t namesSize = sections_[table.sh_link].sh_size;
    for (std::uint64_t symbol = 0; symbol < count; ++symbol) {
      const std::uint64_t at = table.sh_offset + symbol * sizeof(Elf64_Sym);
      const auto entry = readAt<Elf64_Sym>(image_, at);
      const std::string what = sectionName(index) + ", symbol " + decimal(symbol);
      if (entry.st_name >= namesSize) {
        return fail(at, what + ": name offset " + hex(entry.st_name) + " is outside its string table (" +
                            hex(namesSize) + " bytes)");
      }
      const bool reserved = entry.st_shndx == SHN_ABS || entry.st_shndx == SHN_COMMON;
      if (!reserved && entry.st_shndx >= sections_.size()) {
        return fail(at + offsetof(Elf64_Sym, st_shndx),
                    what + ": section index " + hex(entry.st_shndx) + " is neither a section (of " +
                        decimal(sections_.size()) + ") nor SHN_UNDEF, SHN_ABS or SHN_COMMON");
      }
    }
    return true;
  }

  // ---- relocation tables -------------------------------------------------------------------
  // Invariant after: each relocation table is whole entries, linked to a symbol table, applies
  // to a real section, and every entry's offset is inside that section (its sh_size) and its
  // symbol index inside that symbol table. Two exceptions, both in cuBLASLt 13.1's cubins, whose
  // tables link to .nv.info instead of .symtab (a slip of NVIDIA's toolchain; the driver loads
  // them): an empty table need only name sections that exist; a table for a section that is not
  // loaded (no SHF_ALLOC: .rela.debug_frame) has its symbol indices bounded by the image's one
  // SHT_SYMTAB (which they fit; .nv.info is far smaller) and also, read through the section it
  // links to, within the image, so that either reading stays inside the bytes.
  bool checkRelocationTables() {
    for (std::size_t index = 1; index < sections_.size(); ++index) {
      const std::uint32_t type = sections_[index].sh_type;
      if (type == SHT_REL && !checkRelocationTable<Elf64_Rel>(index, "SHT_REL")) return false;
      if (type == SHT_RELA && !checkRelocationTable<Elf64_Rela>(index, "SHT_RELA")) return false;
    }
    return true;
  }

  template <typename Relocation>
  bool checkRelocationTable(std::size_t index, const char* kind) {
    const Elf64_Shdr& table = sections_[index];
    if (!checkEntries(index, sizeof(Relocation), kind)) return false;
    const bool empty = table.sh_size == 0;
    if (table.sh_link >= sections_.size()) {
      return fail(headerOffset(index) + offsetof(Elf64_Shdr, sh_link),
                  sectionName(index) + ": relocations' symbol table " + decimal(table.sh_link) +
                      " is not a symbol table section");
    }
    std::size_t symbolTable = table.sh_link;
    bool misLinked = false;
    if (!empty && !isSymbolTable(sections_[table.sh_link].sh_type)) {
      const bool loadedTarget =
          table.sh_info >= sections_.size() || (sections_[table.sh_info].sh_flags & SHF_ALLOC) != 0;
      const std::size_t only = onlySymbolTable();
      if (loadedTarget || only == 0) {
        return fail(headerOffset(index) + offsetof(Elf64_Shdr, sh_link),
                    sectionName(index) + ": relocations' symbol table " + decimal(table.sh_link) +
                        " is not a symbol table section");
      }
      symbolTable = only;
      misLinked = true;
    }
    if (table.sh_info == SHN_UNDEF || table.sh_info >= sections_.size()) {
      return fail(headerOffset(index) + offsetof(Elf64_Shdr, sh_info),
                  sectionName(index) + ": relocated section " + decimal(table.sh_info) +
                      " is not a section (of " + decimal(sections_.size()) + ")");
    }
    if (!chargeWalk(index)) return false;
    const std::uint64_t symbols = sections_[symbolTable].sh_size / sizeof(Elf64_Sym);
    const std::uint64_t targetSize = sections_[table.sh_info].sh_size;
    const std::uint64_t count = table.sh_size / sizeof(Relocation);
    for (std::uint64_t entry = 0; entry < count; ++entry) {
      const std::uint64_t at = table.sh_offset + entry * sizeof(Relocation);
      const auto relocation = readAt<Relocation>(image_, at);
      if (relocation.r_offset >= targetSize) {
        return fail(at + offsetof(Relocation, r_offset),
                    sectionName(index) + ", relocation " + decimal(entry) + ": offset " +
                        hex(relocation.r_offset) + " is outside the " + hex(targetSize) +
                        " bytes of section " + decimal(table.sh_info));
      }
      if (ELF64_R_SYM(relocation.r_info) >= symbols) {
        return fail(at + offsetof(Relocation, r_info),
                    sectionName(index) + ", relocation " + decimal(entry) + ": symbol " +
                        decimal(ELF64_R_SYM(relocation.r_info)) + " is past the " + decimal(symbols) +
                        " symbols of its symbol table");
      }
      const std::uint64_t throughLink =
          sections_[table.sh_link].sh_offset + (ELF64_R_SYM(relocation.r_info) + 1) * sizeof(Elf64_Sym);
      if (misLinked && throughLink > image_.size()) {
        return fail(at + offsetof(Relocation, r_info),
                    sectionName(index) + ", relocation " + decimal(entry) + ": symbol " +
                        decimal(ELF64_R_SYM(relocation.r_info)) + " read through section " +
                        decimal(table.sh_link) + " would end past the image");
      }
    }
    return true;
  }

  // The index of the image's only SHT_SYMTAB section, 0 when it has none or several.
  std::size_t onlySymbolTable() const {
    std::size_t found = 0;
    for (std::size_t index = 1; index < sections_.size(); ++index) {
      if (sections_[index].sh_type != SHT_SYMTAB) continue;
      if (found != 0) return 0;
      found = index;
    }
    return found;
  }

  Bytes image_;
  Elf64_Ehdr header_{};
  std::vector<Elf64_Shdr> sections_;
  std::uint64_t walked_ = 0;  // bytes of symbol and relocation tables walked so far
};

}  // namespace

bool checkElfImage(std::span<const std::uint8_t> image, std::string* error) {
  ElfChecker checker(image);
  if (checker.run()) return true;
  if (error != nullptr) *error = std::move(checker.error);
  return false;
}

}  // namespace agileos::fatbin
