# Applies AGILEOS_SANITIZE to every target in the tree. ASan/UBSan builds abort on the
# first UBSan report so that a test cannot pass with undefined behaviour in it.
#
# Sanitizer builds compile at -O1 with line tables only (-g1; clang reads it as
# -gline-tables-only), placed after the build type's -O2 -g so that they win: reports still
# name every frame's function, file and line, and the heaviest test file compiles in 33 s
# instead of 83 s (GCC 12, ASan + UBSan). -O1 is what the sanitizers' own documentation asks
# for; full debug info only served a debugger, which a developer can ask for with
# CMAKE_CXX_FLAGS. CI builds three sanitizer trees on two cores, so this is most of its time.
if(AGILEOS_SANITIZE)
  string(REPLACE ";" "," _agileos_san "${AGILEOS_SANITIZE}")
  add_compile_options(-fsanitize=${_agileos_san} -fno-omit-frame-pointer -O1 -g1)
  add_link_options(-fsanitize=${_agileos_san})
  if("undefined" IN_LIST AGILEOS_SANITIZE)
    add_compile_options(-fno-sanitize-recover=undefined)
  endif()
endif()

# agileos_require_resolved_symbols(<target>): every symbol a shared library needs must
# resolve when it is linked (-Wl,--no-undefined). Not under clang's sanitizers: clang
# leaves the sanitizer runtime to the executable that loads the library.
function(agileos_require_resolved_symbols target)
  if(NOT (AGILEOS_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang"))
    target_link_options(${target} PRIVATE "LINKER:--no-undefined")
  endif()
endfunction()
