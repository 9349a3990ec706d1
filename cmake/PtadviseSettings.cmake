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
endif()
if(PTADVISE_FUZZ)
  target_compile_options(ptadvise_settings INTERFACE -fsanitize=fuzzer-no-link,address,undefined)
  target_link_options(ptadvise_settings INTERFACE -fsanitize=address,undefined)
endif()
