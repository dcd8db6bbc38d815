// The kernel of guard_escape's SASS-only routes (sass_only_fatbin, elf_cubin): the same load and
// store as the hand-written PTX of the layout routes, compiled for sm_90 WITHOUT PTX (a fatbin
// with sm_90 SASS only, and a bare ELF cubin). tests/gpu/CMakeLists.txt builds both and embeds
// them into guard_escape with bin2c; nothing here is linked into a program.
//
// Loaded with cudaLibraryLoadData by a client whose context holds protected state (its canary),
// such an image must be refused: there is no PTX for the kernel memory guard to rewrite.
extern "C" __global__ void escape_loaded(unsigned* p, unsigned* out) {
  unsigned v;
  asm volatile("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  asm volatile("st.global.u32 [%0], %1;" ::"l"(out), "r"(v) : "memory");
  asm volatile("st.global.u32 [%0], %1;" ::"l"(p), "r"(0x5A5A5A5Au) : "memory");
}
