cmake_minimum_required(VERSION 3.25)
# Writes OUTPUT (a header defining PTADVISE_GIT_COMMIT) from `git describe` of SOURCE_DIR, or from
# COMMIT when given (-DPTADVISE_GIT_COMMIT=... for source tarballs). Run with `cmake -P` at every build;
# configure_file leaves the header untouched when the commit did not change, so nothing recompiles.
if(COMMIT)
  set(PTADVISE_GIT_COMMIT "${COMMIT}")
else()
  execute_process(COMMAND git -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
    OUTPUT_VARIABLE PTADVISE_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _status)
  if(NOT _status EQUAL 0 OR PTADVISE_GIT_COMMIT STREQUAL "")
    set(PTADVISE_GIT_COMMIT "unknown (not built from a git checkout)")
  else()
    execute_process(COMMAND git -C "${SOURCE_DIR}" status --porcelain --untracked-files=no
      OUTPUT_VARIABLE _changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(NOT _changes STREQUAL "")
      string(APPEND PTADVISE_GIT_COMMIT " with local changes")
    endif()
  endif()
endif()
file(CONFIGURE OUTPUT "${OUTPUT}" CONTENT "#pragma once\n#define PTADVISE_GIT_COMMIT \"@PTADVISE_GIT_COMMIT@\"\n" @ONLY)
