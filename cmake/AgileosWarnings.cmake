# agileos_target_defaults(<target>): the warning set every AgileOS target builds with.
function(agileos_target_defaults target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX,C>:-Wall -Wextra -Werror -Wno-missing-field-initializers>)
  # GCC 12 at -O2/-O3 reports impossible overlaps inside libstdc++'s own
  # std::string concatenation (GCC bug 105329); keep the warning visible but do
  # not fail the build on it.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-error=restrict>)
  endif()
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>)
endfunction()
