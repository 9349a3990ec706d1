# Warnings and sanitizer flags for the project's own targets only (linked PRIVATE).
add_library(ptadvise_settings INTERFACE)
target_compile_options(ptadvise_settings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Wunused -Woverloaded-virtual -Wimplicit-fallthrough
  $<$<BOOL:${PTADVISE_WERROR}>:-Werror>)
# GCC 12 reports -Wrestrict inside libstdc++'s std::string operator+ at -O2 and above (GCC bugs 105329,
# 105651: a false positive fixed in GCC 13); the project's own code has no restrict-qualified calls.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12
   AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(ptadvise_settings INTERFACE -Wno-restrict)
endif()
if(PTADVISE_SANITIZE)
  set(_san -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  target_compile_options(ptadvise_settings INTERFACE ${_san})
  target_link_options(ptadvise_settings INTERFACE ${_san})
  # The sanitizers' usual optimisation level, and line tables only (all their reports print): the default
  # build type's -O2 -g took twice as long to compile per file under both sanitizers (10.1 s against 5.7 s
  # for a test file), for a suite whose run time barely depends on it. Later options win.
  target_compile_options(ptadvise_settings INTERFACE $<$<CONFIG:RelWithDebInfo>:-O1 -g1>)
  # Executables at a fixed address: the sanitizers' metadata holds about 1.4 million pointers, which a
  # position-independent executable relocates (and so writes) at every start. The test suite starts the
  # binary hundreds of times: 0.41 s per start without this, 0.28 s with it.
  string(APPEND CMAKE_EXE_LINKER_FLAGS " -no-pie")
endif()
if(PTADVISE_FUZZ)
  # Library code gets no coverage callbacks (tests/fuzz/coverage_ignorelist.txt says why). The list is used
  # through a copy named by its hash, so that editing it changes the command line: everything recompiles,
  # and ccache (which does not read the list) cannot hand back objects built with the old one.
  set(_ignorelist ${PROJECT_SOURCE_DIR}/tests/fuzz/coverage_ignorelist.txt)
  file(SHA1 ${_ignorelist} _ignorelist_hash)
  string(SUBSTRING ${_ignorelist_hash} 0 12 _ignorelist_hash)
  set(_ignorelist_copy ${PROJECT_BINARY_DIR}/coverage_ignorelist-${_ignorelist_hash}.txt)
  configure_file(${_ignorelist} ${_ignorelist_copy} COPYONLY)  # also re-runs CMake when the list changes
  target_compile_options(ptadvise_settings INTERFACE -fsanitize=fuzzer-no-link,address,undefined
    -fsanitize-coverage-ignorelist=${_ignorelist_copy})
  target_link_options(ptadvise_settings INTERFACE -fsanitize=address,undefined)
  # Line tables only, as in the sanitizer build; -O2 stays: executions per second are what fuzzing buys.
  target_compile_options(ptadvise_settings INTERFACE $<$<CONFIG:RelWithDebInfo>:-g1>)
endif()
