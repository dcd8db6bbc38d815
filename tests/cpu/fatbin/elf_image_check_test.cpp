// The ELF image check (worker/fatbin/elf_image_check.h): every cubin the CUDA 13 toolchain builds
// here passes (nvcc -cubin of several kinds, nvlink, the SASS in the fatbin samples, NVRTC), and
// real cubins with one field patched, or cut short, are refused with the field's offset.
#include "worker/fatbin/elf_image_check.h"

#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tests/cpu/fatbin/fatbin_test_support.h"
#include "worker/fatbin/elf_device_footprint.h"
#include "worker/fatbin/fatbin_reader.h"

namespace agileos::fatbin {
namespace {

using testing::ByteVector;

constexpr std::uint64_t kMax64 = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint32_t kShtCudaGlobal = SHT_LOPROC + 0x07;  // .nv.global of a relocatable cubin

// ---- samples -----------------------------------------------------------------------------

std::vector<std::string> elfSampleNames() {
  std::vector<std::string> names;
  std::stringstream list(AGILEOS_ELF_SAMPLES);
  for (std::string name; std::getline(list, name, ',');) names.push_back(name);
  return names;
}

ByteVector readFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  EXPECT_TRUE(file) << "cannot open " << path;
  return ByteVector(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

// cubins/<name>.cubin, built by CMakeLists.txt (cubin_sample).
ByteVector readCubin(std::string_view name) {
  return readFile(std::string(AGILEOS_ELF_SAMPLE_DIR) + "/" + std::string(name) + ".cubin");
}

// ---- the check ---------------------------------------------------------------------------

struct Verdict {
  bool ok = false;
  std::string error;
};

Verdict check(const ByteVector& image) {
  Verdict verdict;
  verdict.ok = checkElfImage(image, &verdict.error);
  return verdict;
}

void expectAccepted(const ByteVector& image, std::string_view what) {
  const Verdict verdict = check(image);
  EXPECT_TRUE(verdict.ok) << what << ": " << verdict.error;
  EXPECT_TRUE(verdict.error.empty()) << what;
}

// Refused, with a message that says where ("byte offset 0x...") and contains `phrase`.
void expectRefused(const ByteVector& image, std::string_view phrase, std::string_view what = "") {
  const Verdict verdict = check(image);
  EXPECT_FALSE(verdict.ok) << what << ": accepted, expected \"" << phrase << "\"";
  EXPECT_EQ(verdict.error.rfind("byte offset 0x", 0), 0u) << what << ": " << verdict.error;
  EXPECT_NE(verdict.error.find(phrase), std::string::npos) << what << ": " << verdict.error;
}

// ---- reading and patching a real cubin -------------------------------------------------------

template <typename T>
T load(const ByteVector& bytes, std::size_t at) {
  T value;
  std::memcpy(&value, bytes.data() + at, sizeof value);
  return value;
}

template <typename T>
void store(ByteVector& bytes, std::size_t at, const T& value) {
  std::memcpy(bytes.data() + at, &value, sizeof value);
}

Elf64_Ehdr header(const ByteVector& bytes) { return load<Elf64_Ehdr>(bytes, 0); }

std::size_t sectionHeaderAt(const ByteVector& bytes, std::size_t index) {
  return header(bytes).e_shoff + index * sizeof(Elf64_Shdr);
}

Elf64_Shdr section(const ByteVector& bytes, std::size_t index) {
  return load<Elf64_Shdr>(bytes, sectionHeaderAt(bytes, index));
}

std::size_t programHeaderAt(const ByteVector& bytes, std::size_t index) {
  return header(bytes).e_phoff + index * sizeof(Elf64_Phdr);
}

// The first section of `type` with at least one byte, by index.
std::size_t findSection(const ByteVector& bytes, std::uint32_t type) {
  for (std::size_t index = 1; index < header(bytes).e_shnum; ++index) {
    if (section(bytes, index).sh_type == type && section(bytes, index).sh_size > 0) return index;
  }
  ADD_FAILURE() << "no non-empty section of type " << type;
  return 0;
}

// A copy of `original` with `patch` applied to its ELF header, section `index`'s header or
// program header `index`.
ByteVector withHeader(const ByteVector& original, const std::function<void(Elf64_Ehdr&)>& patch) {
  ByteVector bytes = original;
  Elf64_Ehdr value = header(bytes);
  patch(value);
  store(bytes, 0, value);
  return bytes;
}

ByteVector withSection(const ByteVector& original, std::size_t index,
                       const std::function<void(Elf64_Shdr&)>& patch) {
  ByteVector bytes = original;
  Elf64_Shdr value = section(bytes, index);
  patch(value);
  store(bytes, sectionHeaderAt(bytes, index), value);
  return bytes;
}

ByteVector withSegment(const ByteVector& original, std::size_t index,
                       const std::function<void(Elf64_Phdr&)>& patch) {
  ByteVector bytes = original;
  Elf64_Phdr value = load<Elf64_Phdr>(bytes, programHeaderAt(bytes, index));
  patch(value);
  store(bytes, programHeaderAt(bytes, index), value);
  return bytes;
}

// Byte offset of entry `entry` of the table in section `index`.
std::size_t entryAt(const ByteVector& bytes, std::size_t index, std::size_t entry) {
  const Elf64_Shdr table = section(bytes, index);
  return table.sh_offset + entry * table.sh_entsize;
}

// The executable sample (program headers, symbols) and the relocatable one (relocations with
// entries, CUDA's memory-only section types).
ByteVector executable() { return readCubin("sm90"); }
ByteVector relocatable() { return readCubin("sm90_rdc"); }

// ---- what the toolchain builds is accepted ----------------------------------------------------

TEST(ElfImageCheck, AcceptsEveryCubinTheToolchainBuilds) {
  const std::vector<std::string> names = elfSampleNames();
  ASSERT_GE(names.size(), 9u) << AGILEOS_ELF_SAMPLES;
  bool sawExecutable = false, sawRelocatable = false, sawMemoryOnlyPastTheEnd = false;
  for (const std::string& name : names) {
    const ByteVector bytes = readCubin(name);
    ASSERT_GE(bytes.size(), sizeof(Elf64_Ehdr)) << name;
    expectAccepted(bytes, name);
    EXPECT_EQ(header(bytes).e_machine, EM_CUDA) << name;
    sawExecutable |= header(bytes).e_type == ET_EXEC && header(bytes).e_phnum > 0;
    sawRelocatable |= header(bytes).e_type == ET_REL;
    for (std::size_t index = 1; index < header(bytes).e_shnum; ++index) {
      const Elf64_Shdr s = section(bytes, index);
      sawMemoryOnlyPastTheEnd |= s.sh_type == kShtCudaGlobal && s.sh_offset + s.sh_size > bytes.size();
    }
  }
  EXPECT_TRUE(sawExecutable);
  EXPECT_TRUE(sawRelocatable);
  EXPECT_TRUE(sawMemoryOnlyPastTheEnd) << "a relocatable .nv.global holds a memory size, not file bytes";
}

TEST(ElfImageCheck, AcceptsTheSassOfEveryFatbinSample) {
  std::size_t images = 0;
  for (const char* name : {"default_arch", "sm90", "multi_gencode", "compress_all", "uncompressed", "lz4",
                           "arch_variants", "with_lto_ir", "program_section"}) {
    const ParseResult parsed = parse(testing::readSample(name));
    ASSERT_TRUE(parsed.ok) << name << ": " << parsed.error;
    for (const Entry& entry : parsed.entries) {
      if (entry.kind != EntryKind::kElf) continue;
      std::string payload, error;
      ASSERT_TRUE(decodedPayload(entry, &payload, &error)) << name << ": " << error;
      expectAccepted(ByteVector(payload.begin(), payload.end()),
                     std::string(name) + " sm_" + std::to_string(entry.smArch));
      ++images;
    }
  }
  EXPECT_GE(images, 10u);
}

// NVRTC, in this process (never unloaded, as in nvrtc_shim_test.cpp), as the NVRTC adapter's
// compiler process runs it: its CUBIN is what a client hands to cudaLibraryLoadData.
class Nvrtc {
 public:
  Nvrtc() : library_(dlopen(AGILEOS_REAL_NVRTC, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)) {}
  bool loaded() const { return library_ != nullptr; }

  std::optional<ByteVector> compile(const char* source, const std::vector<const char*>& options) {
    using Create = int (*)(void**, const char*, const char*, int, const char* const*, const char* const*);
    using Compile = int (*)(void*, int, const char* const*);
    using Size = int (*)(void*, std::size_t*);
    using Get = int (*)(void*, char*);
    using Destroy = int (*)(void**);
    auto create = reinterpret_cast<Create>(dlsym(library_, "nvrtcCreateProgram"));
    auto compile = reinterpret_cast<Compile>(dlsym(library_, "nvrtcCompileProgram"));
    auto size = reinterpret_cast<Size>(dlsym(library_, "nvrtcGetCUBINSize"));
    auto get = reinterpret_cast<Get>(dlsym(library_, "nvrtcGetCUBIN"));
    auto destroy = reinterpret_cast<Destroy>(dlsym(library_, "nvrtcDestroyProgram"));
    if (!create || !compile || !size || !get || !destroy) return std::nullopt;
    void* program = nullptr;
    if (create(&program, source, "elf_sample.cu", 0, nullptr, nullptr) != 0) return std::nullopt;
    std::optional<ByteVector> cubin;
    std::size_t bytes = 0;
    if (compile(program, static_cast<int>(options.size()), options.data()) == 0 &&
        size(program, &bytes) == 0) {
      ByteVector out(bytes);
      if (get(program, reinterpret_cast<char*>(out.data())) == 0) cubin = std::move(out);
    }
    destroy(&program);
    return cubin;
  }

 private:
  void* library_;
};

TEST(ElfImageCheck, AcceptsNvrtcOutput) {
  Nvrtc nvrtc;
  if (!nvrtc.loaded()) GTEST_SKIP() << "cannot load NVRTC: " << dlerror();
  const char* source =
      "__device__ char buffer[1 << 20];\n"
      "extern \"C\" __global__ void k(float* o, int n) {\n"
      "  __shared__ float t[256];\n"
      "  t[threadIdx.x] = o[threadIdx.x] + buffer[n];\n"
      "  __syncthreads();\n"
      "  o[threadIdx.x] = t[255 - threadIdx.x];\n"
      "  printf(\"%d\\n\", n);\n"
      "}\n"
      "template <int N> __global__ void store(int* p) { *p = N; }\n"
      "template __global__ void store<5>(int*);\n";
  for (const std::vector<const char*>& options :
       std::vector<std::vector<const char*>>{{"--gpu-architecture=sm_90"},
                                             {"--gpu-architecture=sm_100", "-rdc=true"},
                                             {"--gpu-architecture=sm_120", "-G", "-lineinfo"}}) {
    const std::optional<ByteVector> cubin = nvrtc.compile(source, options);
    ASSERT_TRUE(cubin) << options.front();
    expectAccepted(*cubin, options.front());
  }
}

// ---- truncation ------------------------------------------------------------------------------

TEST(ElfImageCheck, RefusesEveryTruncation) {
  for (const char* name : {"sm90", "sm90_rdc"}) {
    const ByteVector whole = readCubin(name);
    // Each prefix in a buffer of its own size, so a sanitizer sees any read past it.
    for (std::size_t size = 0; size < whole.size(); ++size) {
      const ByteVector prefix(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(size));
      ASSERT_FALSE(checkElfImage(prefix, nullptr)) << name << " cut to " << size << " bytes";
    }
  }
  const ByteVector whole = executable();
  auto cut = [&](std::size_t size) { return ByteVector(whole.begin(), whole.begin() + size); };
  expectRefused(cut(0), "shorter than an ELF64 header");
  expectRefused(cut(4), "shorter than an ELF64 header");
  expectRefused(cut(sizeof(Elf64_Ehdr) - 1), "shorter than an ELF64 header");
  const Elf64_Ehdr h = header(whole);
  ASSERT_GT(h.e_phnum, 0);
  // nvcc writes the section header table, then the program header table, at the end.
  ASSERT_EQ(h.e_phoff + h.e_phnum * sizeof(Elf64_Phdr), whole.size());
  expectRefused(cut(whole.size() - 1), "program header table");
  expectRefused(cut(h.e_phoff), "program header table");
  const ByteVector rdc = relocatable();
  const Elf64_Ehdr r = header(rdc);
  ASSERT_EQ(r.e_phnum, 0);
  ASSERT_EQ(r.e_shoff + r.e_shnum * sizeof(Elf64_Shdr), rdc.size());
  expectRefused(ByteVector(rdc.begin(), rdc.end() - 1), "section header table");
  expectRefused(ByteVector(rdc.begin(), rdc.begin() + static_cast<std::ptrdiff_t>(r.e_shoff)),
                "section header table");
}

// ---- the ELF header ----------------------------------------------------------------------------

TEST(ElfImageCheck, RefusesOtherMachinesClassesAndEncodings) {
  const ByteVector good = executable();
  expectRefused(withHeader(good, [](Elf64_Ehdr& h) { h.e_machine = EM_X86_64; }), "is not EM_CUDA");
  expectRefused(withHeader(good, [](Elf64_Ehdr& h) { h.e_ident[EI_CLASS] = ELFCLASS32; }), "not ELFCLASS64");
  expectRefused(withHeader(good, [](Elf64_Ehdr& h) { h.e_ident[EI_DATA] = ELFDATA2MSB; }),
                "not little-endian");
  expectRefused(withHeader(good, [](Elf64_Ehdr& h) { h.e_ident[EI_VERSION] = 0; }), "identification version");
  expectRefused(withHeader(good, [](Elf64_Ehdr& h) { h.e_ident[EI_MAG1] = 'e'; }), "no ELF magic");
  expectRefused(withHeader(good, [](Elf64_Ehdr& h) { h.e_type = ET_DYN; }), "neither ET_EXEC nor ET_REL");
  expectRefused(withHeader(good, [](Elf64_Ehdr& h) { h.e_ehsize = 52; }), "header size 52");
  expectRefused(withHeader(good, [](Elf64_Ehdr& h) { h.e_shentsize = 40; }), "section header size 40");
  expectRefused(withHeader(good, [](Elf64_Ehdr& h) { h.e_phentsize = 32; }), "program header size 32");
  // A real ELF for another machine: this test program.
  expectRefused(readFile("/proc/self/exe"), "is not EM_CUDA");
}

// OS/ABI, e_version and e_flags are the driver's: CUDA's older ABI (0x33) keeps the toolkit's
// version in e_version (libraries of CUDA 11 and 12 ship such cubins).
TEST(ElfImageCheck, LeavesOsAbiVersionAndFlagsToTheDriver) {
  expectAccepted(withHeader(executable(),
                            [](Elf64_Ehdr& h) {
                              h.e_ident[EI_OSABI] = 0x33;
                              h.e_ident[EI_ABIVERSION] = 7;
                              h.e_version = 123;
                              h.e_flags = 0x5a05a;
                            }),
                 "OS/ABI 0x33");
}

// ---- header tables ---------------------------------------------------------------------------

TEST(ElfImageCheck, RefusesHeaderTablesOutsideTheImage) {
  const ByteVector good = executable();
  const std::uint64_t size = good.size();
  const Elf64_Ehdr h = header(good);
  const std::uint64_t sectionTable = h.e_shnum * sizeof(Elf64_Shdr);
  expectRefused(withHeader(good, [&](Elf64_Ehdr& e) { e.e_shoff = size - sectionTable + 1; }),
                "section header table");
  expectRefused(withHeader(good, [&](Elf64_Ehdr& e) { e.e_shoff = size; }), "section header table");
  // offset + size wraps around to a small number.
  expectRefused(withHeader(good, [&](Elf64_Ehdr& e) { e.e_shoff = kMax64 - sectionTable + 2; }),
                "section header table");
  expectRefused(withHeader(good, [&](Elf64_Ehdr& e) { e.e_phoff = size - sizeof(Elf64_Phdr) + 1; }),
                "program header table");
  expectRefused(withHeader(good, [&](Elf64_Ehdr& e) { e.e_phoff = kMax64 - 8; }), "program header table");
  expectRefused(withHeader(good, [&](Elf64_Ehdr& e) { e.e_phnum = static_cast<Elf64_Half>(e.e_phnum + 1); }),
                "program header table");
  // In the relocatable sample the section header table ends the image.
  expectRefused(
      withHeader(relocatable(), [&](Elf64_Ehdr& e) { e.e_shnum = static_cast<Elf64_Half>(e.e_shnum + 1); }),
      "section header table");
}

TEST(ElfImageCheck, RefusesExtendedNumbering) {
  const ByteVector good = executable();
  expectRefused(withHeader(good, [](Elf64_Ehdr& h) { h.e_shnum = 0; }), "extended section numbering");
  expectRefused(withHeader(good, [](Elf64_Ehdr& h) { h.e_shstrndx = SHN_XINDEX; }), "SHN_XINDEX");
  expectRefused(withHeader(good, [](Elf64_Ehdr& h) { h.e_phnum = PN_XNUM; }), "PN_XNUM");
  expectRefused(withHeader(good, [](Elf64_Ehdr& h) { h.e_shnum = SHN_LORESERVE; }), "reserved indices");
}

TEST(ElfImageCheck, AcceptsAnImageWithoutSectionsOnlyWithoutANameTable) {
  const ByteVector good = executable();
  auto bare = [](Elf64_Ehdr& h) {
    h.e_shnum = 0;
    h.e_shoff = 0;
    h.e_shstrndx = SHN_UNDEF;
  };
  expectAccepted(withHeader(good, bare), "no sections");
  expectRefused(withHeader(good,
                           [&](Elf64_Ehdr& h) {
                             bare(h);
                             h.e_shstrndx = 1;
                           }),
                "with no sections");
}

// ---- sections ----------------------------------------------------------------------------------

TEST(ElfImageCheck, RefusesSectionContentsPastTheEnd) {
  const ByteVector good = executable();
  const std::uint64_t size = good.size();
  const std::size_t code = findSection(good, SHT_PROGBITS);
  const std::uint64_t offset = section(good, code).sh_offset;
  expectRefused(withSection(good, code, [&](Elf64_Shdr& s) { s.sh_offset = size; }), "past the end");
  expectRefused(withSection(good, code, [&](Elf64_Shdr& s) { s.sh_size = size - offset + 1; }),
                "past the end");
  expectRefused(withSection(good, code, [&](Elf64_Shdr& s) { s.sh_size = kMax64; }), "past the end");
  // offset + size wraps around to 16.
  expectRefused(withSection(good, code,
                            [&](Elf64_Shdr& s) {
                              s.sh_offset = kMax64 - 15;
                              s.sh_size = 32;
                            }),
                "past the end");
  // Up to the last byte is inside.
  expectAccepted(withSection(good, code, [&](Elf64_Shdr& s) { s.sh_size = size - offset; }), "exact fit");
  // The same for a string table and a symbol table.
  const std::size_t symtab = findSection(good, SHT_SYMTAB);
  expectRefused(withSection(good, symtab, [&](Elf64_Shdr& s) { s.sh_offset = size - 8; }), "past the end");
  const std::size_t names = header(good).e_shstrndx;
  expectRefused(withSection(good, names, [&](Elf64_Shdr& s) { s.sh_offset = kMax64; }), "past the end");
}

TEST(ElfImageCheck, ChecksOnlyTheBoundsOfSectionTypesItDoesNotKnow) {
  const ByteVector good = executable();
  const std::size_t code = findSection(good, SHT_PROGBITS);
  expectAccepted(withSection(good, code, [](Elf64_Shdr& s) { s.sh_type = SHT_HIPROC; }), "unknown type");
  expectRefused(withSection(good, code,
                            [&](Elf64_Shdr& s) {
                              s.sh_type = SHT_HIPROC;
                              s.sh_size = good.size();
                            }),
                "past the end");
  // Memory-only types hold a memory size: neither SHT_NOBITS nor CUDA's .nv.global is file bytes.
  expectAccepted(withSection(good, code,
                             [](Elf64_Shdr& s) {
                               s.sh_type = kShtCudaGlobal;
                               s.sh_size = 1ull << 40;
                             }),
                 ".nv.global");
  expectAccepted(withSection(good, code,
                             [](Elf64_Shdr& s) {
                               s.sh_type = SHT_NOBITS;
                               s.sh_size = kMax64;
                             }),
                 "SHT_NOBITS");
  // Their offset is still where the toolchain placed them: inside the file.
  expectRefused(withSection(good, code,
                            [&](Elf64_Shdr& s) {
                              s.sh_type = kShtCudaGlobal;
                              s.sh_offset = good.size() + 1;
                            }),
                "is past the end of the image");
}

TEST(ElfImageCheck, SectionZeroIsNull) {
  expectRefused(withSection(executable(), 0, [](Elf64_Shdr& s) { s.sh_type = SHT_PROGBITS; }),
                "not SHT_NULL");
}

TEST(ElfImageCheck, RefusesABadSectionNameTable) {
  const ByteVector good = executable();
  const Elf64_Half count = header(good).e_shnum;
  expectRefused(withHeader(good, [&](Elf64_Ehdr& h) { h.e_shstrndx = count; }), "is not a section");
  expectRefused(withHeader(good, [](Elf64_Ehdr& h) { h.e_shstrndx = SHN_UNDEF; }), "is not a section");
  const auto symtab = static_cast<Elf64_Half>(findSection(good, SHT_SYMTAB));
  expectRefused(withHeader(good, [&](Elf64_Ehdr& h) { h.e_shstrndx = symtab; }), "not SHT_STRTAB");
}

TEST(ElfImageCheck, RefusesUnterminatedAndEmptyStringTables) {
  const ByteVector good = executable();
  // The section name table, and the symbol table's string table.
  for (std::size_t strings : {std::size_t{header(good).e_shstrndx},
                              std::size_t{section(good, findSection(good, SHT_SYMTAB)).sh_link}}) {
    const Elf64_Shdr s = section(good, strings);
    ByteVector bytes = good;
    bytes[s.sh_offset + s.sh_size - 1] = 'x';
    expectRefused(bytes, "does not end with a NUL");
    expectRefused(withSection(good, strings, [](Elf64_Shdr& t) { t.sh_size = 0; }), "empty string table");
    // A shorter table that ends inside a name.
    expectRefused(withSection(good, strings, [](Elf64_Shdr& t) { t.sh_size = 2; }), "");
  }
}

TEST(ElfImageCheck, RefusesNamesOutsideTheirStringTables) {
  const ByteVector good = executable();
  const auto namesSize = static_cast<Elf64_Word>(section(good, header(good).e_shstrndx).sh_size);
  expectRefused(withSection(good, 1, [&](Elf64_Shdr& s) { s.sh_name = namesSize; }),
                "outside the section name table");
  expectRefused(withSection(good, 1, [&](Elf64_Shdr& s) { s.sh_name = 0xffffffffu; }),
                "outside the section name table");
  expectAccepted(withSection(good, 1, [&](Elf64_Shdr& s) { s.sh_name = namesSize - 1; }), "the last NUL");

  const std::size_t symtab = findSection(good, SHT_SYMTAB);
  const auto stringsSize = static_cast<Elf64_Word>(section(good, section(good, symtab).sh_link).sh_size);
  ByteVector bytes = good;
  const std::size_t at = entryAt(bytes, symtab, 1);
  Elf64_Sym symbol = load<Elf64_Sym>(bytes, at);
  symbol.st_name = stringsSize;
  store(bytes, at, symbol);
  expectRefused(bytes, "outside its string table");
}

// ---- symbol tables -------------------------------------------------------------------------------

ByteVector withSymbol(const ByteVector& original, std::size_t entry,
                      const std::function<void(Elf64_Sym&)>& patch) {
  ByteVector bytes = original;
  const std::size_t at = entryAt(bytes, findSection(bytes, SHT_SYMTAB), entry);
  Elf64_Sym symbol = load<Elf64_Sym>(bytes, at);
  patch(symbol);
  store(bytes, at, symbol);
  return bytes;
}

TEST(ElfImageCheck, RefusesBadSymbolTables) {
  const ByteVector good = executable();
  const std::size_t symtab = findSection(good, SHT_SYMTAB);
  const Elf64_Shdr table = section(good, symtab);
  const Elf64_Half sections = header(good).e_shnum;
  expectRefused(withSection(good, symtab, [](Elf64_Shdr& s) { s.sh_entsize = 16; }), "entry size 16");
  expectRefused(withSection(good, symtab, [](Elf64_Shdr& s) { s.sh_entsize = 0; }), "entry size 0");
  expectRefused(withSection(good, symtab, [](Elf64_Shdr& s) { s.sh_size -= 1; }), "whole number of entries");
  expectRefused(withSection(good, symtab, [&](Elf64_Shdr& s) { s.sh_link = sections; }),
                "not a string table");
  expectRefused(withSection(good, symtab, [&](Elf64_Shdr& s) { s.sh_link = 0xffffffffu; }),
                "not a string table");
  expectRefused(
      withSection(good, symtab, [&](Elf64_Shdr& s) { s.sh_link = static_cast<Elf64_Word>(symtab); }),
      "not a string table");
  expectRefused(withSection(good, symtab,
                            [&](Elf64_Shdr& s) {
                              s.sh_info = static_cast<Elf64_Word>(table.sh_size / sizeof(Elf64_Sym) + 1);
                            }),
                "first global symbol");
  // Section indices: a real section or SHN_UNDEF, SHN_ABS, SHN_COMMON.
  expectRefused(withSymbol(good, 1, [&](Elf64_Sym& s) { s.st_shndx = sections; }), "section index");
  expectRefused(withSymbol(good, 1, [](Elf64_Sym& s) { s.st_shndx = SHN_XINDEX; }), "section index");
  expectRefused(withSymbol(good, 1, [](Elf64_Sym& s) { s.st_shndx = SHN_LORESERVE; }), "section index");
  expectAccepted(withSymbol(good, 1, [](Elf64_Sym& s) { s.st_shndx = SHN_ABS; }), "SHN_ABS");
  expectAccepted(withSymbol(good, 1, [](Elf64_Sym& s) { s.st_shndx = SHN_COMMON; }), "SHN_COMMON");
  expectAccepted(withSymbol(good, 1, [](Elf64_Sym& s) { s.st_shndx = SHN_UNDEF; }), "SHN_UNDEF");
}

// Sections may overlap, so 65279 symbol tables could each cover the whole image: the tables the
// check walks are together bounded by the image size.
TEST(ElfImageCheck, RefusesSymbolTablesThatTogetherExceedTheImage) {
  const ByteVector good = executable();
  const std::size_t symtab = findSection(good, SHT_SYMTAB);
  const Elf64_Shdr real = section(good, symtab);
  // The next section becomes a second symbol table over every whole entry of the image.
  const ByteVector bytes = withSection(good, symtab + 1, [&](Elf64_Shdr& s) {
    s.sh_type = SHT_SYMTAB;
    s.sh_offset = 0;
    s.sh_size = good.size() / sizeof(Elf64_Sym) * sizeof(Elf64_Sym);
    s.sh_entsize = sizeof(Elf64_Sym);
    s.sh_link = real.sh_link;
    s.sh_info = 0;
  });
  ASSERT_GT(real.sh_size + good.size() / sizeof(Elf64_Sym) * sizeof(Elf64_Sym), good.size());
  expectRefused(bytes, "exceed the image size");
}

// ---- relocation tables ---------------------------------------------------------------------------

TEST(ElfImageCheck, RefusesBadRelocationTables) {
  const ByteVector good = relocatable();
  const std::size_t rela = findSection(good, SHT_RELA);
  const Elf64_Shdr table = section(good, rela);
  const Elf64_Half sections = header(good).e_shnum;
  ASSERT_GT(table.sh_size, 0u);
  expectRefused(withSection(good, rela, [](Elf64_Shdr& s) { s.sh_entsize = sizeof(Elf64_Rel); }),
                "entry size");
  expectRefused(withSection(good, rela, [](Elf64_Shdr& s) { s.sh_size -= 8; }), "whole number of entries");
  // An SHT_REL table has 16-byte entries.
  expectRefused(withSection(good, rela, [](Elf64_Shdr& s) { s.sh_type = SHT_REL; }), "SHT_REL entry size 24");
  expectRefused(withSection(good, rela, [&](Elf64_Shdr& s) { s.sh_link = sections; }), "not a symbol table");
  expectRefused(withSection(good, rela,
                            [&](Elf64_Shdr& s) {
                              s.sh_link = section(good, findSection(good, SHT_SYMTAB)).sh_link;  // .strtab
                            }),
                "not a symbol table");
  // An empty table links where cuBLASLt 13.1's cubins link theirs (a non-symbol section): nothing
  // is read through it. Its link must still be a section.
  const Elf64_Word notSymbols = section(good, findSection(good, SHT_SYMTAB)).sh_link;
  expectAccepted(withSection(good, rela,
                             [&](Elf64_Shdr& s) {
                               s.sh_size = 0;
                               s.sh_link = notSymbols;
                             }),
                 "an empty relocation table linked to a string table");
  expectRefused(withSection(good, rela,
                            [&](Elf64_Shdr& s) {
                              s.sh_size = 0;
                              s.sh_link = sections;
                            }),
                "not a symbol table");
  // A one-entry table for a section that is not loaded (as cuBLASLt's .rela.debug_frame), linked
  // to a section that is no symbol table: its symbol index is bounded by the .symtab.
  const std::size_t symtab = findSection(good, SHT_SYMTAB);
  auto misLinked = [&](std::size_t target, std::uint64_t symbol) {
    ByteVector bytes = withSection(good, rela, [&](Elf64_Shdr& s) {
      s.sh_size = sizeof(Elf64_Rela);
      s.sh_link = notSymbols;
      s.sh_info = static_cast<Elf64_Word>(target);
    });
    Elf64_Rela relocation = load<Elf64_Rela>(bytes, table.sh_offset);
    relocation.r_offset = 0;
    relocation.r_info = ELF64_R_INFO(symbol, ELF64_R_TYPE(relocation.r_info));
    store(bytes, table.sh_offset, relocation);
    return bytes;
  };
  const std::uint64_t symtabCount = section(good, symtab).sh_size / sizeof(Elf64_Sym);
  ASSERT_EQ(section(good, symtab).sh_flags & SHF_ALLOC, 0u);
  expectAccepted(misLinked(symtab, 0), "a mislinked table for a section that is not loaded");
  expectRefused(misLinked(symtab, symtabCount), "symbols of its symbol table");
  expectRefused(misLinked(table.sh_info, 0), "not a symbol table");  // .text is loaded
  expectRefused(withSection(good, rela, [&](Elf64_Shdr& s) { s.sh_info = sections; }), "relocated section");
  expectRefused(withSection(good, rela, [](Elf64_Shdr& s) { s.sh_info = SHN_UNDEF; }), "relocated section");

  const std::uint64_t symbols = section(good, table.sh_link).sh_size / sizeof(Elf64_Sym);
  const std::uint64_t targetSize = section(good, table.sh_info).sh_size;
  auto withRelocation = [&](const std::function<void(Elf64_Rela&)>& patch) {
    ByteVector bytes = good;
    Elf64_Rela relocation = load<Elf64_Rela>(bytes, table.sh_offset);
    patch(relocation);
    store(bytes, table.sh_offset, relocation);
    return bytes;
  };
  expectRefused(
      withRelocation([&](Elf64_Rela& r) { r.r_info = ELF64_R_INFO(symbols, ELF64_R_TYPE(r.r_info)); }),
      "symbols of its symbol table");
  expectRefused(withRelocation([&](Elf64_Rela& r) { r.r_offset = targetSize; }), "is outside the");
  expectRefused(withRelocation([&](Elf64_Rela& r) { r.r_offset = kMax64; }), "is outside the");
  expectAccepted(
      withRelocation([&](Elf64_Rela& r) { r.r_info = ELF64_R_INFO(symbols - 1, ELF64_R_TYPE(r.r_info)); }),
      "last symbol");
}

// ---- program headers -----------------------------------------------------------------------------

TEST(ElfImageCheck, RefusesProgramHeadersOutsideTheImage) {
  const ByteVector good = executable();
  const std::uint64_t size = good.size();
  ASSERT_GT(header(good).e_phnum, 1);
  // Segment 1 is a LOAD with file bytes.
  const auto segment = load<Elf64_Phdr>(good, programHeaderAt(good, 1));
  ASSERT_GT(segment.p_filesz, 0u);
  expectRefused(withSegment(good, 1, [&](Elf64_Phdr& p) { p.p_offset = size; }), "past the end");
  expectRefused(withSegment(good, 1,
                            [&](Elf64_Phdr& p) {
                              p.p_filesz = size - p.p_offset + 1;
                              p.p_memsz = p.p_filesz;
                            }),
                "past the end");
  expectRefused(withSegment(good, 1,
                            [&](Elf64_Phdr& p) {
                              p.p_offset = kMax64 - 7;
                              p.p_filesz = 16;
                              p.p_memsz = 16;
                            }),
                "past the end");
  expectRefused(withSegment(good, 1, [](Elf64_Phdr& p) { p.p_memsz = p.p_filesz - 1; }),
                "exceeds memory size");
  expectAccepted(withSegment(good, 1, [](Elf64_Phdr& p) { p.p_memsz = p.p_filesz + 4096; }), "larger memory");
}

TEST(ElfImageCheck, NeedsNoErrorString) {
  EXPECT_TRUE(checkElfImage(executable(), nullptr));
  EXPECT_FALSE(
      checkElfImage(withHeader(executable(), [](Elf64_Ehdr& h) { h.e_machine = EM_X86_64; }), nullptr));
}

// ---- the device footprint a loaded image is charged (elf_device_footprint.h) ------------------

std::uint64_t footprint(const ByteVector& image) {
  return elfDeviceFootprint(std::span<const std::uint8_t>(image.data(), image.size()));
}

// The samples declare 1 MiB of .nv.global, 16 bytes of initialised globals and 1 KiB of
// __constant__ data besides their code: every cubin the toolchain builds from them is charged at
// least that. Shared memory and the per-thread stack are not device memory the module holds.
TEST(ElfDeviceFootprint, EveryCubinIsChargedAtLeastTheMemoryItsSourceDeclares) {
  for (const std::string& name : elfSampleNames()) {
    const ByteVector image = readCubin(name);
    ASSERT_TRUE(checkElfImage(std::span<const std::uint8_t>(image.data(), image.size()), nullptr)) << name;
    const std::uint64_t bytes = footprint(image);
    EXPECT_GE(bytes, (1u << 20) + 1024 + 16) << name;
    EXPECT_LT(bytes, 16u << 20) << name << ": far more than the source declares";
  }
}

// A crafted image cannot hide memory: a section's declared size is what is charged, rounded up
// to the driver's pages, and a size past any device saturates.
TEST(ElfDeviceFootprint, ADeclaredSizeIsChargedWhateverTheImageHolds) {
  for (const ByteVector& image : {executable(), relocatable()}) {
    std::size_t global = 0;
    for (std::size_t index = 1; index < header(image).e_shnum; ++index) {
      if (section(image, index).sh_size == (1u << 20) && (section(image, index).sh_flags & SHF_ALLOC) != 0)
        global = index;
    }
    ASSERT_NE(global, 0u) << "the 1 MiB .nv.global";
    const std::uint64_t original = footprint(image);
    EXPECT_GE(footprint(withSection(image, global, [](Elf64_Shdr& s) { s.sh_size = 3u << 20; })), 4u << 20)
        << "3 MiB of globals takes two 2 MiB pages";
    EXPECT_GE(footprint(withSection(image, global, [](Elf64_Shdr& s) { s.sh_size = 1ull << 40; })),
              1ull << 40);
    EXPECT_EQ(footprint(withSection(image, global, [](Elf64_Shdr& s) { s.sh_size = ~0ull; })),
              kMaxElfFootprint);
    EXPECT_EQ(
        footprint(withSection(image, global, [](Elf64_Shdr& s) { s.sh_flags &= ~std::uint64_t{SHF_ALLOC}; })),
        original)
        << "clearing SHF_ALLOC does not hide a .nv.global: the driver may place it by name";
    EXPECT_GE(footprint(withSection(image, global,
                                    [](Elf64_Shdr& s) {
                                      s.sh_flags &= ~std::uint64_t{SHF_ALLOC};
                                      s.sh_size = 1ull << 40;
                                    })),
              1ull << 40);
  }
}

// Sections and loadable segments are two readings of one image; a crafted image may make them
// disagree, and the larger is charged, so a segment cannot hide memory the sections understate.
TEST(ElfDeviceFootprint, ALoadableSegmentCannotHideMemory) {
  const ByteVector image = executable();
  const std::uint64_t original = footprint(image);
  bool sawLoad = false;
  for (std::size_t index = 0; index < header(image).e_phnum; ++index) {
    if (load<Elf64_Phdr>(image, programHeaderAt(image, index)).p_type != PT_LOAD) continue;
    sawLoad = true;
    EXPECT_GE(footprint(withSegment(image, index, [](Elf64_Phdr& p) { p.p_memsz = 1ull << 40; })), 1ull << 40)
        << "segment " << index;
    EXPECT_EQ(footprint(withSegment(image, index, [](Elf64_Phdr& p) { p.p_memsz = ~0ull; })),
              kMaxElfFootprint);
  }
  EXPECT_TRUE(sawLoad) << "the executable sample has loadable segments";
  EXPECT_GE(original, 2u << 20) << "its 1 MiB .nv.global and the rest";
}

}  // namespace
}  // namespace agileos::fatbin
