# The Debian package (issue 18; docs/packaging.md): `cpack -G DEB` in the build directory, or
# `cmake --build --preset release --target agileos_deb`, writes agileos_<version>_<arch>.deb there.
#
# One package, `agileos`, holding every install() component (daemon, shim, module_sdk): the parts
# are one installation that names itself, not pieces a host picks from. agileosd finds the worker
# and the services next to itself and writes the CDI spec naming the shim directory beside its
# bin/ (agileosd --cdi-spec); agileos-sandbox needs the shims; the shims are of use only on a host
# whose daemon they connect to (containers get them from that host's directory through the CDI
# spec, not from a package of their own); and the module SDK is three headers and a CMake package
# file (a few tens of KiB, nothing to depend on), which a -dev package would split off for no gain.
# A split would also have to keep the daemon's and the shims' versions in lockstep (the wire
# protocol is not versioned across releases), which one package does by construction.
#
# Layout: the package is installed with the prefix /usr, so the files land where
# cmake/AgileosInstall.cmake puts them for that prefix: /usr/bin, /usr/lib/agileos/shim (with its
# deps/), /usr/include/agileos, /usr/share/agileos/kubernetes, and, decided at install time for the
# prefix /usr, /etc/agileos/agileosd.json, /etc/cdi/agileos.json and
# /lib/systemd/system/agileosd.service, whose ExecStart is
# `/usr/bin/agileosd --config /etc/agileos/agileosd.json`.
#
# Depends: what dpkg-shlibdeps finds for the package's ELF files, computed when cpack packs them
# (cmake/AgileosDebDepends.cmake says what it leaves out: the shims' private closure and the CUDA
# libraries, which are not Debian packages). The NVIDIA driver and the CUDA Toolkit 13 runtime
# libraries are a requirement stated in the description, not a Depends: Debian has no package of
# CUDA 13. Recommends: bubblewrap, which agileos-sandbox runs (the daemon and containers through the
# CDI spec do not need it).
#
# The configuration and the CDI spec are conffiles: dpkg keeps an administrator's edits across
# upgrades and removes them on purge. The maintainer scripts (docker/deb/) reload systemd and never
# start or enable the service.

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME agileos)
set(CPACK_PACKAGE_VENDOR "AgileOS")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# agileos_<version>_<arch>.deb, Debian's own naming (the architecture from dpkg).
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(AGILEOS_PACKAGE_MAINTAINER "AgileOS developers <dev@agileos.local>"
    CACHE STRING "The Debian package's Maintainer field")
set(AGILEOS_PACKAGE_HOMEPAGE "" CACHE STRING "The Debian package's Homepage field (none when empty)")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${AGILEOS_PACKAGE_MAINTAINER}")
if(AGILEOS_PACKAGE_HOMEPAGE)
  set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "${AGILEOS_PACKAGE_HOMEPAGE}")
endif()
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The first line is the synopsis; CPack indents the rest and writes an empty line as " .".
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "operating-system layer that runs untrusted CUDA programs
AgileOS runs unmodified CUDA programs with no GPU device node and no CUDA
installation: client shims preloaded into the program carry every CUDA call
to a trusted worker process that owns the GPU context, checks every pointer
and handle, and keeps protected GPU memory out of the program's reach. The
daemon agileosd starts and supervises the workers and the trusted services.

This package holds agileosd and its workers, agileos-sandbox,
agileosctl, the Kubernetes device plugin and manifests, the client shims
(/usr/lib/agileos/shim, with their own copies of the libraries they need),
the module SDK headers, a systemd unit (not enabled or started on
installation) and a CDI spec for container engines.

Requirement not expressed as a dependency: the host needs an NVIDIA GPU with
the NVIDIA driver (libcuda.so.1) and the CUDA Toolkit 13 runtime libraries
cuFFT (libcufft.so.12) and NVRTC (libnvrtc.so.13) in /usr/local/cuda, from
NVIDIA; Debian has no package of them.")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS bubblewrap)
# Executables and libraries stripped of their symbol tables, as Debian's packages are (the
# dynamic symbols the shims export are kept).
set(CPACK_STRIP_FILES ON)

# Depends, computed over the staged files (cmake/AgileosDebDepends.cmake).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_CURRENT_LIST_DIR}/AgileosDebDepends.cmake)
set(CPACK_AGILEOS_SHIM_DEPS_DIR usr/${AGILEOS_SHIM_INSTALL_DIR}/deps)
# The toolkit's stub of the driver library (soname libcuda.so.1), which stands in for the driver
# when dpkg-shlibdeps reads the worker.
find_file(AGILEOS_CUDA_DRIVER_STUB libcuda.so PATHS ${CUDAToolkit_LIBRARY_DIR}/stubs
          ${CUDAToolkit_TARGET_DIR}/lib64/stubs NO_DEFAULT_PATH REQUIRED)
set(CPACK_AGILEOS_CUDA_DRIVER_STUB ${AGILEOS_CUDA_DRIVER_STUB})

# Conffiles and maintainer scripts. The conffiles list names what the install puts in /etc for
# the prefix /usr (cmake/AgileosInstall.cmake); dpkg refuses a package whose conffile is missing.
file(WRITE ${CMAKE_BINARY_DIR}/deb/conffiles "/etc/agileos/agileosd.json\n/etc/cdi/agileos.json\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_BINARY_DIR}/deb/conffiles ${PROJECT_SOURCE_DIR}/docker/deb/postinst
                                       ${PROJECT_SOURCE_DIR}/docker/deb/prerm ${PROJECT_SOURCE_DIR}/docker/deb/postrm)
# The scripts 0755 and the conffiles list 0644, whatever their modes in the checkout.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

include(CPack)

# The .deb from the build directory. cpack installs every install() rule, so the target builds
# what they install (not the tests); agileos_example_config is the configuration they copy. A
# target added to an install() rule belongs in this list too (cpack fails on a missing file, so
# the omission shows the first time the target is not built already).
add_custom_target(agileos_deb
  COMMAND ${CMAKE_CPACK_COMMAND} -G DEB --config ${CMAKE_BINARY_DIR}/CPackConfig.cmake
  WORKING_DIRECTORY ${CMAKE_BINARY_DIR}
  COMMENT "cpack -G DEB: the Debian package"
  USES_TERMINAL VERBATIM)
add_dependencies(agileos_deb agileosd agileos-worker agileos-nvrtc-compiler agileos-storage-service agileosctl
                 agileos-sandbox agileos-sandbox-exec agileos-device-plugin agileos_cudart agileos_cuda agileos_cufft
                 agileos_nvrtc agileos_client_session agileos_example_config)
