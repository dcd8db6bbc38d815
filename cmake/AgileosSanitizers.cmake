# Applies AGILEOS_SANITIZE to every target in the tree. ASan/UBSan builds abort on the
# first UBSan report so that a test cannot pass with undefined behaviour in it.
if(AGILEOS_SANITIZE)
  string(REPLACE ";" "," _agileos_san "${AGILEOS_SANITIZE}")
  add_compile_options(-fsanitize=${_agileos_san} -fno-omit-frame-pointer -g)
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
