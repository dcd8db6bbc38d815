# cudaGetErrorName / cudaGetErrorString with the real libcudart's texts (error_api.cpp).
# Include this file from a CMakeLists.txt, then:
#
#   agileos_cudart_error_table(<target>)
#
# adds to <target> client/cudart/error_api.cpp and the table it includes,
# error_strings.gen.inc, which a custom command generates in
# ${CMAKE_CURRENT_BINARY_DIR}/<target>_error_table/ by running the build tool
# agileos_dump_error_strings (tools/dump_error_strings.cpp) against the build host's real
# libcudart. The table is regenerated when the tool or that library changes.
#
# Trust boundary: only the build tool links CUDA::cudart; <target> gets a table of constant
# strings and no CUDA library. <target> needs the CUDA headers (CUDAToolkit_INCLUDE_DIRS).
# Compile <target> with AGILEOS_ERROR_API_PREFIX=<prefix> to rename the two functions (tests
# that compare them with the real ones in one process do).
#
# The tool must run on the build host, so cross-compiling is refused.
include_guard(GLOBAL)

if(CMAKE_CROSSCOMPILING)
  message(FATAL_ERROR "error_api.cmake: the error table is dumped from the build host's libcudart "
                      "by a program that runs at build time; cross-compiling is not supported")
endif()
if(NOT TARGET CUDA::cudart)
  find_package(CUDAToolkit 13 REQUIRED)
endif()

# include_guard(GLOBAL) runs this file once, in the first includer's directory scope, so what
# the function needs from here is kept in the cache, which every directory sees.
set(AGILEOS_CUDART_ERROR_API_SOURCE "${CMAKE_CURRENT_LIST_DIR}/error_api.cpp" CACHE INTERNAL "")

# The build tool. It lands in tools/, not bin/, so that nothing collecting bin/ picks it up.
add_executable(agileos_dump_error_strings "${CMAKE_CURRENT_LIST_DIR}/tools/dump_error_strings.cpp")
agileos_target_defaults(agileos_dump_error_strings)
target_link_libraries(agileos_dump_error_strings PRIVATE CUDA::cudart)
# The tool deliberately asks libcudart about codes outside the cudaError_t enumeration
# (to learn its answer for unknown codes), which clang's enum sanitizer reports.
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang" AND AGILEOS_SANITIZE)
  target_compile_options(agileos_dump_error_strings PRIVATE -fno-sanitize=enum)
endif()
set_target_properties(agileos_dump_error_strings PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/tools")

function(agileos_cudart_error_table target)
  if(NOT TARGET ${target})
    message(FATAL_ERROR "agileos_cudart_error_table: ${target} is not a target")
  endif()
  # One directory per target, so that two targets of one directory never share an OUTPUT.
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/${target}_error_table")
  set(table "${dir}/error_strings.gen.inc")
  add_custom_command(
    OUTPUT "${table}"
    COMMAND "${CMAKE_COMMAND}" -E make_directory "${dir}"
    COMMAND agileos_dump_error_strings "${table}"
    DEPENDS agileos_dump_error_strings "$<TARGET_FILE:CUDA::cudart>"
    COMMENT "Dumping cudaGetErrorName/String texts from the host's libcudart for ${target}"
    VERBATIM)
  target_sources(${target} PRIVATE "${AGILEOS_CUDART_ERROR_API_SOURCE}" "${table}")
  target_include_directories(${target} PRIVATE "${dir}" ${CUDAToolkit_INCLUDE_DIRS})
endfunction()
