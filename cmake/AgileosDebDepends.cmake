# The Debian package's Depends (cmake/AgileosPackage.cmake): run by cpack after it has installed the
# package's files into its staging directory and before it packs them (CPACK_PRE_BUILD_SCRIPTS),
# so dpkg-shlibdeps reads the files the package holds, with their installed RPATHs.
#
# Which files, and what is left out, and why:
#   - every ELF file of the package but those in lib/agileos/shim/deps/: that directory is the
#     shims' private copy of their library closure (cmake/AgileosInstall.cmake), found through the
#     shims' RPATH, so that a container with nothing but glibc runs them; its files are not to pull
#     in the Debian packages they were copied from. What the shims need from the host is glibc
#     alone, which the rest of the package needs too.
#   - the CUDA libraries are not Debian packages: libcuda.so.1 comes with the NVIDIA driver,
#     libcufft.so.12 and libnvrtc.so.13 with CUDA Toolkit 13 (the worker's RUNPATH names its
#     library directories). dpkg-shlibdeps finds the toolkit's libraries through that RUNPATH and,
#     since no Debian package with dependency information owns them, adds nothing for them
#     (--ignore-missing-info). The driver is not installed on a build machine without a GPU, and
#     where it is, it may come from a package of its own (Debian's libcuda1): dpkg-shlibdeps is
#     shown the toolkit's stub of it (stubs/libcuda.so, soname libcuda.so.1) first (-l), which no
#     package owns, so the result is the same on every build machine. The package's description
#     states the NVIDIA requirement instead (docs/packaging.md).
# A Depends that names a CUDA or NVIDIA package fails the build: it would mean the build machine's
# CUDA came from packages and leaked into the result. The CPU test deb_clean_root checks the
# outcome: in a minimal Debian root, apt installs the package with these Depends and every ELF
# file of it then finds every library but the CUDA ones.
#
# Inputs (CPackConfig.cmake): CPACK_TEMPORARY_DIRECTORY (the staging root), CPACK_TOPLEVEL_DIRECTORY,
# CPACK_AGILEOS_SHIM_DEPS_DIR (relative to the staging root), CPACK_AGILEOS_CUDA_DRIVER_STUB.
# Output: CPACK_DEBIAN_PACKAGE_DEPENDS, which CPackDeb.cmake reads next.

set(_staging "${CPACK_TEMPORARY_DIRECTORY}")
set(_work "${CPACK_TOPLEVEL_DIRECTORY}/agileos-shlibdeps")
find_program(_agileos_shlibdeps dpkg-shlibdeps REQUIRED)
if(NOT EXISTS "${CPACK_AGILEOS_CUDA_DRIVER_STUB}")
  message(FATAL_ERROR "the CUDA toolkit's driver stub is missing: ${CPACK_AGILEOS_CUDA_DRIVER_STUB}")
endif()

file(GLOB_RECURSE _files LIST_DIRECTORIES false "${_staging}/*")
set(_elf_files)
foreach(_file IN LISTS _files)
  if(IS_SYMLINK "${_file}" OR _file MATCHES "^${_staging}/${CPACK_AGILEOS_SHIM_DEPS_DIR}/")
    continue()
  endif()
  file(READ "${_file}" _magic LIMIT 4 HEX)
  if(_magic STREQUAL "7f454c46")
    list(APPEND _elf_files "${_file}")
  endif()
endforeach()
if(NOT _elf_files)
  message(FATAL_ERROR "no ELF file in ${_staging}")
endif()

# dpkg-shlibdeps wants debian/control in its working directory, and a DEBIAN directory at the
# package's root to resolve $ORIGIN (and to know the shims' own libraries are the package's).
file(REMOVE_RECURSE "${_work}")
file(MAKE_DIRECTORY "${_work}/debian" "${_work}/cuda-driver" "${_staging}/DEBIAN")
file(WRITE "${_work}/debian/control" "")
file(CREATE_LINK "${CPACK_AGILEOS_CUDA_DRIVER_STUB}" "${_work}/cuda-driver/libcuda.so.1" SYMBOLIC)
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env LC_ALL=C ${_agileos_shlibdeps} -l${_work}/cuda-driver --ignore-missing-info
          -O ${_elf_files}
  WORKING_DIRECTORY "${_work}"
  OUTPUT_VARIABLE _out
  ERROR_VARIABLE _err
  RESULT_VARIABLE _status)
file(REMOVE_RECURSE "${_staging}/DEBIAN")
if(NOT _status EQUAL 0 OR NOT _out MATCHES "shlibs:Depends=([^\n]*)")
  message(FATAL_ERROR "dpkg-shlibdeps failed (${_status}): ${_err}${_out}")
endif()
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${CMAKE_MATCH_1}")
if(CPACK_DEBIAN_PACKAGE_DEPENDS MATCHES "(cuda|nvidia)")
  message(FATAL_ERROR "the Depends name a CUDA or NVIDIA package (${CMAKE_MATCH_1}): "
                      "${CPACK_DEBIAN_PACKAGE_DEPENDS}")
endif()
list(LENGTH _elf_files _count)
message(STATUS "agileos: Depends from dpkg-shlibdeps over ${_count} ELF files: ${CPACK_DEBIAN_PACKAGE_DEPENDS}")
