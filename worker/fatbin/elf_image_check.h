// ElfImageCheck: the structural check an ELF cubin passes before the CUDA driver sees it.
//
// A client's SASS (a fatbin's ELF entry, a raw cubin given to cudaLibraryLoadData, NVRTC output)
// and a compiled-module-cache file reach cuModuleLoadDataEx, whose ELF parser is closed source
// and is handed a pointer without a length. checkElfImage accepts only a well-formed ELF64
// little-endian image for EM_CUDA of the shape nvcc, ptxas, nvlink and NVRTC produce (checked
// against the images CUDA 13 builds: tests/cpu/fatbin/elf_image_check_test.cpp), so that every
// table and every section the driver may follow from the headers lies inside the bytes the
// worker holds. It checks structure only: what the code does is the guard's business
// (worker/module_guard.h), and the driver still parses what this lets through.
//
// What is checked (each failure says what and at which byte offset):
// - the ELF header: size, magic, ELFCLASS64, ELFDATA2LSB, EV_CURRENT in e_ident, ET_EXEC or ET_REL,
//   EM_CUDA, e_ehsize, the entry sizes of the section and program header tables;
// - the section and program header tables lie wholly inside the image; no extended numbering
//   (PN_XNUM, e_shnum == 0 with a table, SHN_XINDEX); fewer than SHN_LORESERVE sections;
// - every section with file contents lies inside the image; SHT_NOBITS and CUDA's memory-only
//   types (.nv.global, .nv.local.*, .nv.shared.* of relocatable cubins) carry a memory size, not
//   file bytes, and only their offset must be inside it; section 0 is SHT_NULL;
// - e_shstrndx names a string table; every string table is non-empty and ends with a NUL;
//   every section name and symbol name is an offset inside its string table;
// - symbol tables: entry size, whole entries, sh_link names a string table, sh_info at most the
//   symbol count, each st_shndx a real section or SHN_ABS / SHN_COMMON;
// - relocation tables (SHT_REL, SHT_RELA): entry size, whole entries, sh_link names a symbol
//   table, sh_info a real section, each entry's r_offset inside that section and its symbol
//   index inside that symbol table;
// - each program header's file range lies inside the image and p_filesz <= p_memsz;
// - the work is linear in the image size: the symbol and relocation tables walked together are
//   at most the image's size (overlapping tables could otherwise multiply it).
// Section types it does not know (CUDA's SHT_LOPROC range) are checked for their bounds only.
// e_ident[EI_OSABI] (0x33 for CUDA's older ABI, 0x41 for the newer), e_version (the toolkit's
// version, e.g. 123, in OS/ABI 0x33 cubins; 1 in 0x41 ones) and e_flags (the architecture) are
// left to the driver.
//
// Thread-safety: a pure function of its argument.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace agileos::fatbin {

// True if `image` is a well-formed ELF cubin as described above. Otherwise false, with *error
// (when error is not null) saying what is wrong and at which byte offset of the image. Never
// reads outside `image`.
bool checkElfImage(std::span<const std::uint8_t> image, std::string* error);

}  // namespace agileos::fatbin
