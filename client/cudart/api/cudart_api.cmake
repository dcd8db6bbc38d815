# Build-time generation of the CUDA runtime API surface from cudart_api.tsv (see
# generate_cudart_api.py). Include it from a CMakeLists.txt, then:
#
#   agileos_cudart_generate(<sources-var> <version-script-var>
#                           [INCLUDE_DIR <var>] [PROBE_DEFINITIONS <var>])
#
# adds the custom command that regenerates, in ${CMAKE_CURRENT_BINARY_DIR}/cudart_api/ and
# whenever the table or the generator changes:
#   cudart_unsupported.gen.cpp       fail-closed stubs of the `unsupported` rows and the reason
#                                    table behind unsupportedReason() (unsupported_reason.h)
#   cudart_extra_prototypes.gen.h    prototypes no includable header declares (_ptds/_ptsz,
#                                    __cuda*) and AGILEOS_CUDART_EXPORT
#   libcudart.map                    the version script: every row as name@@libcudart.so.13
# <sources-var> receives the .cpp and the header, <version-script-var> the .map path,
# INCLUDE_DIR the directory holding the header (hand-written definitions include
# "cudart_extra_prototypes.gen.h"), PROBE_DEFINITIONS a test-only .cpp with an aborting
# definition of every `implemented` row (tests/cpu/cudart_exports uses it).
#
# The target that compiles the stubs needs the CUDA headers (CUDA::toolkit) and must not be
# compiled with CUDA_API_PER_THREAD_DEFAULT_STREAM; it should link with
#   -Wl,--version-script=<map> -Wl,--no-undefined-version
# so that a row whose function nobody defines is a link error. The stubs call
# agileos::client::reportUnsupported (client/cudart/error_state.h), which the target provides.
#
# Also defines the target agileos_api_docs, which rewrites docs/api-coverage.md in the source
# tree from the table.
include_guard(GLOBAL)

find_package(Python3 3.9 REQUIRED COMPONENTS Interpreter)
if(NOT CUDAToolkit_INCLUDE_DIRS)
  find_package(CUDAToolkit 13 REQUIRED)
endif()

# include_guard(GLOBAL) runs this file once, in the first includer's directory scope, so what
# the function needs from here is kept in the cache, which every directory sees.
set(AGILEOS_CUDART_API_PYTHON "${Python3_EXECUTABLE}" CACHE INTERNAL "")
set(AGILEOS_CUDART_API_DIR "${CMAKE_CURRENT_LIST_DIR}" CACHE INTERNAL "")
set(AGILEOS_CUDART_API_TABLE "${CMAKE_CURRENT_LIST_DIR}/cudart_api.tsv" CACHE INTERNAL "")
set(AGILEOS_CUDART_API_GENERATOR "${CMAKE_CURRENT_LIST_DIR}/generate_cudart_api.py" CACHE INTERNAL "")

# --cuda-include arguments for every CUDA include directory.
set(_agileos_cudart_include_args)
foreach(dir IN LISTS CUDAToolkit_INCLUDE_DIRS)
  list(APPEND _agileos_cudart_include_args --cuda-include "${dir}")
endforeach()
set(AGILEOS_CUDART_API_INCLUDE_ARGS "${_agileos_cudart_include_args}" CACHE INTERNAL "")

function(agileos_cudart_generate out_sources out_version_script)
  cmake_parse_arguments(PARSE_ARGV 2 ARG "" "INCLUDE_DIR;PROBE_DEFINITIONS" "")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "agileos_cudart_generate: unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()

  set(dir "${CMAKE_CURRENT_BINARY_DIR}/cudart_api")
  set(stubs "${dir}/cudart_unsupported.gen.cpp")
  set(prototypes "${dir}/cudart_extra_prototypes.gen.h")
  set(map "${dir}/libcudart.map")
  set(outputs "${stubs}" "${prototypes}" "${map}")
  set(probe_args)
  if(ARG_PROBE_DEFINITIONS)
    set(probe "${dir}/cudart_probe_implemented.gen.cpp")
    list(APPEND outputs "${probe}")
    set(probe_args --probe-definitions "${probe}")
  endif()

  add_custom_command(
    OUTPUT ${outputs}
    COMMAND "${AGILEOS_CUDART_API_PYTHON}" "${AGILEOS_CUDART_API_GENERATOR}"
            --table "${AGILEOS_CUDART_API_TABLE}" ${AGILEOS_CUDART_API_INCLUDE_ARGS}
            --stubs "${stubs}" --prototypes "${prototypes}" --version-script "${map}"
            ${probe_args}
    DEPENDS "${AGILEOS_CUDART_API_TABLE}" "${AGILEOS_CUDART_API_GENERATOR}"
    COMMENT "Generating the cudart API surface from cudart_api.tsv"
    VERBATIM)

  # Only the stubs include the interop headers, whose GL/EGL/VDPAU includes the stand-ins
  # satisfy; no other file of the target sees them.
  set_source_files_properties("${stubs}" PROPERTIES
    INCLUDE_DIRECTORIES "${AGILEOS_CUDART_API_DIR}/window_system_stand_ins")

  set(${out_sources} "${stubs}" "${prototypes}" PARENT_SCOPE)
  set(${out_version_script} "${map}" PARENT_SCOPE)
  if(ARG_INCLUDE_DIR)
    set(${ARG_INCLUDE_DIR} "${dir}" PARENT_SCOPE)
  endif()
  if(ARG_PROBE_DEFINITIONS)
    set(${ARG_PROBE_DEFINITIONS} "${probe}" PARENT_SCOPE)
  endif()
endfunction()

# The list of implemented entry points that the GPU test programs and benchmarks may import
# (tests/gpu/check_program_imports.sh), generated with every build; its path is
# AGILEOS_CUDART_SUPPORTED_API.
set(AGILEOS_CUDART_SUPPORTED_API "${PROJECT_BINARY_DIR}/generated/cudart_supported_api.txt" CACHE INTERNAL "")
if(NOT TARGET agileos_cudart_supported_api)
  add_custom_command(
    OUTPUT "${AGILEOS_CUDART_SUPPORTED_API}"
    COMMAND "${AGILEOS_CUDART_API_PYTHON}" "${AGILEOS_CUDART_API_GENERATOR}"
            --table "${AGILEOS_CUDART_API_TABLE}" ${AGILEOS_CUDART_API_INCLUDE_ARGS}
            --supported-list "${AGILEOS_CUDART_SUPPORTED_API}"
    DEPENDS "${AGILEOS_CUDART_API_TABLE}" "${AGILEOS_CUDART_API_GENERATOR}"
    COMMENT "Generating the list of implemented cudart entry points from cudart_api.tsv"
    VERBATIM)
  add_custom_target(agileos_cudart_supported_api ALL DEPENDS "${AGILEOS_CUDART_SUPPORTED_API}")
endif()

if(NOT TARGET agileos_api_docs)
  add_custom_target(agileos_api_docs
    COMMAND "${AGILEOS_CUDART_API_PYTHON}" "${AGILEOS_CUDART_API_GENERATOR}"
            --table "${AGILEOS_CUDART_API_TABLE}" ${AGILEOS_CUDART_API_INCLUDE_ARGS}
            --coverage-doc "${PROJECT_SOURCE_DIR}/docs/api-coverage.md"
    COMMENT "Regenerating docs/api-coverage.md from cudart_api.tsv"
    VERBATIM)
endif()
