# Build of the library shims (UNTRUSTED client code): libagileos_cufft.so, libagileos_nvrtc.so.
# Include it from a shim's CMakeLists.txt, then:
#
#   agileos_library_shim(<name> TABLE <name>_api.tsv SONAME <soname> SOURCES <file>...)
#
# Generates the surface from the table with agileos_api_surface (cmake/api_surface: the one
# table format and generator every shim shares): the version script (every row as
# name@@<soname>, nothing else), the fail-closed stubs of the unsupported rows and
# <name>_api.gen.h, which the hand-written sources include. Defines:
#   agileos_<name>_objects  OBJECT library: SOURCES, the generated sources and the shims' common
#                           support (client/library_shim, client/common/log.cpp). Everything but
#                           agileos_library_call, which the runtime shim provides; a test links
#                           these objects with a fake of it.
#   agileos_<name>          SHARED library libagileos_<name>.so with soname <soname>, linked
#                           against agileos_cudart (DT_NEEDED libcudart.so.13: the preloaded
#                           runtime shim supplies agileos_library_call@AGILEOS_1), written next
#                           to libagileos_cudart.so with a symlink <soname> -> libagileos_<name>.so
#                           so that a program needing <soname> finds the shim on that directory.
#
# A shim links neither protobuf, gRPC nor agileos_client_common: the runtime shim holds the only
# copy of the wire protocol in the process (two copies of the generated descriptors abort).
include_guard(GLOBAL)
include(${CMAKE_CURRENT_LIST_DIR}/../api_surface/ApiSurface.cmake)

function(agileos_library_shim name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "TABLE;SONAME" "SOURCES")
  if(ARG_UNPARSED_ARGUMENTS OR NOT ARG_TABLE OR NOT ARG_SONAME OR NOT ARG_SOURCES)
    message(FATAL_ERROR "agileos_library_shim(<name> TABLE <tsv> SONAME <soname> SOURCES <files>)")
  endif()
  get_filename_component(table "${ARG_TABLE}" ABSOLUTE)
  agileos_api_surface(${name} TABLE "${table}")
  set(map "${${name}_API_VERSION_SCRIPT}")

  set(objects agileos_${name}_objects)
  add_library(${objects} OBJECT
    ${ARG_SOURCES}
    ${${name}_API_SOURCES}
    "${PROJECT_SOURCE_DIR}/client/common/log.cpp"
    "${PROJECT_SOURCE_DIR}/client/library_shim/library_call_client.cpp")
  agileos_target_defaults(${objects})
  target_include_directories(${objects} PUBLIC
    "${${name}_API_INCLUDE_DIR}" "${PROJECT_SOURCE_DIR}/client/include" ${CUDAToolkit_INCLUDE_DIRS})
  set_target_properties(${objects} PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)

  set(output_dir "${CMAKE_LIBRARY_OUTPUT_DIRECTORY}")
  if(TARGET agileos_cudart)
    get_target_property(cudart_dir agileos_cudart LIBRARY_OUTPUT_DIRECTORY)
    if(cudart_dir)
      set(output_dir "${cudart_dir}")
    endif()
  endif()

  add_library(agileos_${name} SHARED)
  agileos_target_defaults(agileos_${name})
  target_link_libraries(agileos_${name} PRIVATE ${objects})
  if(TARGET agileos_cudart)
    target_link_libraries(agileos_${name} PRIVATE agileos_cudart)
  endif()
  set_target_properties(agileos_${name} PROPERTIES
    OUTPUT_NAME agileos_${name}
    NO_SONAME ON
    LIBRARY_OUTPUT_DIRECTORY "${output_dir}"
    # No build-tree RUNPATH: libcudart.so.13 is the runtime shim already in the process, never a
    # file looked up next to this one.
    SKIP_BUILD_RPATH ON
    LINK_DEPENDS "${map}")
  target_link_options(agileos_${name} PRIVATE
    "LINKER:-soname,${ARG_SONAME}" "LINKER:--version-script=${map}" "LINKER:--no-undefined-version")
  agileos_require_resolved_symbols(agileos_${name})
  add_custom_command(TARGET agileos_${name} POST_BUILD
    COMMAND "${CMAKE_COMMAND}" -E create_symlink "$<TARGET_FILE_NAME:agileos_${name}>"
            "$<TARGET_FILE_DIR:agileos_${name}>/${ARG_SONAME}"
    COMMENT "Linking ${ARG_SONAME} -> $<TARGET_FILE_NAME:agileos_${name}>"
    VERBATIM)

  set_property(TARGET agileos_${name} PROPERTY AGILEOS_SHIM_TABLE "${table}")
  set_property(TARGET agileos_${name} PROPERTY AGILEOS_SHIM_SONAME "${ARG_SONAME}")
endfunction()
