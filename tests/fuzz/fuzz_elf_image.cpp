// libFuzzer target: fatbin::checkElfImage on arbitrary bytes, seeded with the cubins nvcc builds
// (tests/cpu/fatbin, elf_samples).
//
// Besides the sanitizers' own checks (the check must never read outside the span), it aborts
// when a verdict breaks what the worker relies on: a refusal carries a message that says where;
// an acceptance is of an ELF64 little-endian EM_CUDA image whose section and program header
// tables lie inside the input.
#include <elf.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "worker/fatbin/elf_image_check.h"

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

bool inside(std::uint64_t offset, std::uint64_t size, std::uint64_t total) {
  return offset <= total && size <= total - offset;
}

void checkAccepted(const std::uint8_t* data, std::size_t size) {
  require(size >= sizeof(Elf64_Ehdr));
  Elf64_Ehdr header;
  std::memcpy(&header, data, sizeof header);
  require(std::memcmp(header.e_ident, ELFMAG, SELFMAG) == 0);
  require(header.e_ident[EI_CLASS] == ELFCLASS64 && header.e_ident[EI_DATA] == ELFDATA2LSB);
  require(header.e_machine == EM_CUDA);
  require(inside(header.e_shoff, std::uint64_t{header.e_shnum} * sizeof(Elf64_Shdr), size));
  require(inside(header.e_phoff, std::uint64_t{header.e_phnum} * sizeof(Elf64_Phdr), size) ||
          header.e_phnum == 0);
  require(header.e_shnum == 0 ? header.e_shstrndx == SHN_UNDEF : header.e_shstrndx < header.e_shnum);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string error;
  if (agileos::fatbin::checkElfImage({data, size}, &error)) {
    require(error.empty());
    checkAccepted(data, size);
  } else {
    require(error.rfind("byte offset 0x", 0) == 0);
  }
  return 0;
}
