# What `cmake --install` puts on a GPU host (docs/operations.md, "Installing"):
#   bin/                      agileosd, agileos-worker, agileos-nvrtc-compiler, agileos-storage-service,
#                             agileos-sandbox and its helper: one directory, since agileosd finds the
#                             worker and the sandbox its helper next to themselves
#   lib/agileos/shim/         the client shims, libagileos_client.so, and the NVIDIA sonames that
#                             point at them (libcudart.so.13 is the runtime shim's own soname file)
#   lib/agileos/shim/deps/    the shims' library closure but glibc (gRPC, protobuf, abseil, libstdc++)
#   etc/agileos/agileosd.json every configuration key with its default (agileosd --check-config)
#   lib/systemd/system/       agileosd.service (Type=notify)
#   etc/cdi/agileos.json      the CDI spec for the default configuration (agileosd --cdi-spec;
#                             docs/containers.md)
#   share/doc/AgileOS/        README.md and docs/ (the unit's Documentation=)
# For the prefix /usr (the Debian package, cmake/AgileosPackage.cmake) etc/ is /etc and the unit
# goes to /lib/systemd/system (below, "decided at install time").
# The trusted executables find the CUDA libraries they load (cuFFT, NVRTC) through an RUNPATH on
# the toolkit's library directory; the shims find libagileos_client.so through $ORIGIN.
# AGILEOS_SHIM_INSTALL_DIR is set in the top-level CMakeLists.txt (agileosd needs it to build).

set(_agileos_trusted_executables agileosd agileos-worker agileos-nvrtc-compiler agileos-storage-service)
# The toolkit's library directory as found here, and its usual names on a GPU host (lib64 where
# the runtime-only packages install).
set(_agileos_cuda_rpath "${CUDAToolkit_LIBRARY_DIR}")
foreach(dir IN ITEMS "${CUDAToolkit_TARGET_DIR}/lib64" "${CUDAToolkit_TARGET_DIR}/lib")
  if(NOT dir IN_LIST _agileos_cuda_rpath)
    list(APPEND _agileos_cuda_rpath "${dir}")
  endif()
endforeach()
foreach(target IN LISTS _agileos_trusted_executables)
  set_target_properties(${target} PROPERTIES INSTALL_RPATH "${_agileos_cuda_rpath}")
endforeach()
install(TARGETS ${_agileos_trusted_executables} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT daemon)
# The admin CLI (links no CUDA library).
install(TARGETS agileosctl RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT daemon)

install(TARGETS agileos_cudart agileos_cuda agileos_cufft agileos_nvrtc agileos_client_session
        LIBRARY DESTINATION ${AGILEOS_SHIM_INSTALL_DIR} COMPONENT shim)
foreach(link IN ITEMS "libcudart.so.13=libagileos_cudart.so" "libcuda.so.1=libagileos_cuda.so"
                      "libcufft.so.12=libagileos_cufft.so" "libnvrtc.so.13=libagileos_nvrtc.so")
  string(REPLACE "=" ";" pair "${link}")
  list(GET pair 0 soname)
  list(GET pair 1 file)
  install(CODE "file(CREATE_LINK ${file} \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${AGILEOS_SHIM_INSTALL_DIR}/${soname}\" SYMBOLIC)"
          COMPONENT shim)
endforeach()

# The shims' library closure, in lib/agileos/shim/deps/: every library the shims and
# libagileos_client.so need, directly or not, but glibc's, copied from this host at install time,
# so that a container image with nothing but glibc runs them (docs/containers.md). They find it
# through their RPATH/RUNPATH ($ORIGIN/deps, client/session/CMakeLists.txt), never through
# LD_LIBRARY_PATH. Debian's static archives cannot be linked into the shims instead: protobuf's,
# re2's, several of abseil's and libstdc++'s are built for executables (local-exec TLS
# relocations, R_X86_64_TPOFF32), which a shared object cannot hold.
install(CODE "
  set(_shim \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${AGILEOS_SHIM_INSTALL_DIR}\")
  file(GET_RUNTIME_DEPENDENCIES
    LIBRARIES \"\${_shim}/libagileos_client.so\" \"\${_shim}/libagileos_cudart.so\" \"\${_shim}/libagileos_cuda.so\"
              \"\${_shim}/libagileos_cufft.so\" \"\${_shim}/libagileos_nvrtc.so\"
    RESOLVED_DEPENDENCIES_VAR _resolved
    UNRESOLVED_DEPENDENCIES_VAR _unresolved
    # glibc is the image's; the shims' own files and sonames are in the directory already.
    PRE_EXCLUDE_REGEXES
      \"^(libc|libm|libmvec|libdl|libpthread|librt|libresolv|libutil|libanl|libnsl|libBrokenLocale)\\\\.so\"
      \"^ld-linux.*\\\\.so\" \"^libagileos_\" \"^libcudart\\\\.so\"
    POST_EXCLUDE_FILES_STRICT \"\${_shim}/libagileos_client.so\")
  if(_unresolved)
    message(FATAL_ERROR \"the shims need libraries that are not found here: \${_unresolved}\")
  endif()
  file(REMOVE_RECURSE \"\${_shim}/deps\")
  file(MAKE_DIRECTORY \"\${_shim}/deps\")
  foreach(_library IN LISTS _resolved)
    get_filename_component(_name \"\${_library}\" NAME)
    file(COPY_FILE \"\${_library}\" \"\${_shim}/deps/\${_name}\")
    message(STATUS \"Installing: \${_shim}/deps/\${_name} (from \${_library})\")
  endforeach()
" COMPONENT shim)

# The documentation, where the unit's Documentation= points (share/doc/AgileOS).
file(GLOB _agileos_docs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${_agileos_docs} DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT daemon)

# The example configuration: the effective configuration of an empty one, every key at its default.
set(_agileos_example_config ${CMAKE_BINARY_DIR}/agileosd.json.example)
file(WRITE ${CMAKE_BINARY_DIR}/agileosd.empty.json "{}\n")
add_custom_command(
  OUTPUT ${_agileos_example_config}
  COMMAND agileosd --config ${CMAKE_BINARY_DIR}/agileosd.empty.json --check-config > ${_agileos_example_config}
  # --check-config refuses a configuration whose worker executable is missing: the worker first.
  DEPENDS agileosd agileos-worker
  COMMENT "agileosd --check-config: the example configuration"
  VERBATIM)
add_custom_target(agileos_example_config ALL DEPENDS ${_agileos_example_config})

# Where the configuration, the CDI spec and the unit go, decided at install time from the prefix
# given then (cmake --install --prefix, or /usr for the Debian package, cmake/AgileosPackage.cmake),
# as install(CODE) that sets _sysconfdir and _unitdir (absolute, without DESTDIR):
#   sysconfdir  CMAKE_INSTALL_SYSCONFDIR when it is absolute; /etc for the prefix /usr (GNU's rule,
#               GNUInstallDirs' CMAKE_INSTALL_FULL_SYSCONFDIR, and Debian's: a package's
#               configuration is in /etc, never /usr/etc); <prefix>/etc otherwise;
#   unitdir     /lib/systemd/system for the prefix /usr (where Debian 12's packages put units, and
#               what its systemd.pc says: dpkg does not know that /lib and /usr/lib are one
#               directory on a merged-/usr system, so packaged files keep their historical paths);
#               <prefix>/lib/systemd/system otherwise (never a multiarch libdir: systemd does not
#               look there).
# The unit and the CDI spec name these paths, so the three always agree.
set(_agileos_install_dirs "
  set(_prefix \"\${CMAKE_INSTALL_PREFIX}\")
  if(IS_ABSOLUTE \"${CMAKE_INSTALL_SYSCONFDIR}\")
    set(_sysconfdir \"${CMAKE_INSTALL_SYSCONFDIR}\")
  elseif(_prefix STREQUAL \"/usr\")
    set(_sysconfdir /etc)
  else()
    set(_sysconfdir \"\${_prefix}/${CMAKE_INSTALL_SYSCONFDIR}\")
  endif()
  if(_prefix STREQUAL \"/usr\")
    set(_unitdir /lib/systemd/system)
  else()
    set(_unitdir \"\${_prefix}/lib/systemd/system\")
  endif()
")
# file(INSTALL) adds DESTDIR to an absolute destination itself and records the file in the
# install manifest.
install(CODE "${_agileos_install_dirs}
  file(INSTALL \"${_agileos_example_config}\" DESTINATION \"\${_sysconfdir}/agileos\"
       RENAME agileosd.json)
" COMPONENT daemon)

# The unit names the daemon and the configuration where this installation puts them: written at
# install time, from the prefix given then (cmake --install --prefix), not the configured one.
install(CODE "${_agileos_install_dirs}
  set(AGILEOS_UNIT_SYSCONFDIR \"\${_sysconfdir}\")
  set(AGILEOS_UNIT_BINDIR \"\${_prefix}/${CMAKE_INSTALL_BINDIR}\")
  set(AGILEOS_UNIT_DOCDIR \"\${_prefix}/${CMAKE_INSTALL_DOCDIR}\")
  configure_file(\"${PROJECT_SOURCE_DIR}/docker/systemd/agileosd.service.in\"
                 \"\$ENV{DESTDIR}\${_unitdir}/agileosd.service\" @ONLY)
  message(STATUS \"Installing: \$ENV{DESTDIR}\${_unitdir}/agileosd.service\")
" COMPONENT daemon)

# The CDI spec (scheduler/cdi_spec.h), written at install time by the installed agileosd: it names
# the shim directory by its installed path, which only the installed tree knows (--prefix given to
# cmake --install). For the default configuration (socket_path and runtime_dir /run/agileos); a
# host that changes them regenerates it (docs/containers.md). Under DESTDIR (a staged install) the
# staging prefix is taken out of the paths, so the spec names where the tree will be.
install(CODE "${_agileos_install_dirs}
  set(_cdi_dir \"\$ENV{DESTDIR}\${_sysconfdir}/cdi\")
  execute_process(COMMAND \"\$ENV{DESTDIR}\${_prefix}/${CMAKE_INSTALL_BINDIR}/agileosd\" --cdi-spec
                  OUTPUT_VARIABLE _spec RESULT_VARIABLE _status ERROR_VARIABLE _error)
  if(NOT _status EQUAL 0)
    message(FATAL_ERROR \"agileosd --cdi-spec failed (\${_status}): \${_error}\")
  endif()
  if(NOT \"\$ENV{DESTDIR}\" STREQUAL \"\")
    file(REAL_PATH \"\$ENV{DESTDIR}\" _staging)
    string(REPLACE \"\\\"\${_staging}/\" \"\\\"/\" _spec \"\${_spec}\")
  endif()
  file(MAKE_DIRECTORY \"\${_cdi_dir}\")
  file(WRITE \"\${_cdi_dir}/agileos.json\" \"\${_spec}\")
  message(STATUS \"Installing: \${_cdi_dir}/agileos.json\")
" COMPONENT daemon)
