# Run by ctest (modules.sdk.InstalledPackageBuildsAPlugin) with -P. Installs the `module_sdk`
# component of BUILD_DIR to SCRATCH/prefix, builds CONSUMER_SOURCE against it with
# find_package(AgileOSModuleSDK), loads the result with PROBE; then the same against the build
# tree's exported package (BUILD_PACKAGE).
foreach(var BUILD_DIR SCRATCH CONSUMER_SOURCE GENERATOR C_COMPILER PROBE BUILD_PACKAGE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "sdk_package_check.cmake: ${var} is not set")
  endif()
endforeach()

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "${what}: ok")
endfunction()

function(build_and_probe name)  # ARGN: the package's find arguments
  set(build ${SCRATCH}/${name})
  run("configure the consumer (${name})" ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE} -B ${build} -G ${GENERATOR}
      -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_BUILD_TYPE=Release -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF ${ARGN})
  run("build the consumer (${name})" ${CMAKE_COMMAND} --build ${build})
  set(plugin ${build}/sdk_consumer_plugin.so)
  if(NOT EXISTS ${plugin})
    message(FATAL_ERROR "the consumer build made no ${plugin}")
  endif()
  run("load the consumer plugin (${name})" ${PROBE} ${plugin})
  # With a CUDA toolkit the consumer also builds its device code through agileos_add_module_ptx.
  set(ptx ${build}/sdk_consumer_ptx.ptx)
  if(EXISTS ${ptx})
    file(READ ${ptx} text)
    if(NOT text MATCHES "\\.visible \\.func[^\n]*agileos_consumer_answer")
      message(FATAL_ERROR "${ptx} does not define agileos_consumer_answer")
    endif()
    message(STATUS "device code (${name}): ok")
  endif()
endfunction()

file(REMOVE_RECURSE ${SCRATCH})
set(prefix ${SCRATCH}/prefix)
run("install the module_sdk component" ${CMAKE_COMMAND} --install ${BUILD_DIR} --component module_sdk
    --prefix ${prefix})
if(NOT EXISTS ${prefix}/include/agileos/module_abi.h)
  message(FATAL_ERROR "the install put no include/agileos/module_abi.h under ${prefix}")
endif()
build_and_probe(installed -DCMAKE_PREFIX_PATH=${prefix})
build_and_probe(build_tree -DAgileOSModuleSDK_DIR=${BUILD_PACKAGE})
