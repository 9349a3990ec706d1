# Installed layout (FHS, relocatable: the binary finds share/ptadvise relative to itself):
#   bin/ptadvise
#   share/ptadvise/{rules.d,data,schemas,python}   rules, tables, output schemas, the Python package
#   lib/ptadvise/libptadvise_cupti.so              the capture library (capture/CMakeLists.txt)
#   share/man/man1/ptadvise.1, shell completions   generated from the CLI definitions (cli/CMakeLists.txt)
# The build tree mirrors share/ptadvise with links to the sources, so build/cli/ptadvise finds its data
# the same way an installed one does and edits to rules.d take effect without a rebuild.
set(PTADVISE_DATA_DESTINATION share/ptadvise)
set(_build_data ${PROJECT_BINARY_DIR}/share/ptadvise)
file(MAKE_DIRECTORY ${_build_data})
foreach(_link rules.d:rules.d data:data schemas:schemas python:capture/python)
  string(REPLACE ":" ";" _pair ${_link})
  list(GET _pair 0 _name)
  list(GET _pair 1 _source)
  if(NOT IS_SYMLINK ${_build_data}/${_name})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${_source} ${_build_data}/${_name} SYMBOLIC)
  endif()
endforeach()

install(TARGETS ptadvise RUNTIME DESTINATION bin)
# Rule files only: their fixture traces (*.tests/) are for the project's own tests.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/rules.d/ DESTINATION ${PTADVISE_DATA_DESTINATION}/rules.d
  FILES_MATCHING PATTERN "*.yaml" PATTERN "*.yml" PATTERN "*.tests" EXCLUDE)
# Every file of data/ (tables such as the kernel classification), whatever is added there.
if(IS_DIRECTORY ${PROJECT_SOURCE_DIR}/data)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/data/ DESTINATION ${PTADVISE_DATA_DESTINATION}/data
    PATTERN "README*" EXCLUDE PATTERN "*~" EXCLUDE)
endif()
if(IS_DIRECTORY ${PROJECT_SOURCE_DIR}/schemas)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/schemas/ DESTINATION ${PTADVISE_DATA_DESTINATION}/schemas
    FILES_MATCHING PATTERN "*.json")
endif()
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION share/doc/ptadvise)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION share/doc/ptadvise/docs FILES_MATCHING PATTERN "*.md")

# `cpack -G DEB` in the build directory (or the `package` target) writes ptadvise_VERSION_ARCH.deb.
set(CPACK_PACKAGE_NAME ptadvise)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "ptadvise")
set(CPACK_PACKAGE_CONTACT "ptadvise maintainers <ptadvise@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "linter and advisor for PyTorch profiler traces")
set(CPACK_PACKAGE_DESCRIPTION
  "ptadvise reads PyTorch-profiler (Kineto) traces, finds the well-known performance mistakes of training\n"
  "runs, estimates what each costs per step, ranks them and tells the fix. It gates CI like a linter\n"
  "(SARIF, JUnit, GitHub annotations) and can record a run with CUPTI or torch.profiler.")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS python3)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS python3-torch)
set(CPACK_STRIP_FILES ON)
set(CPACK_SOURCE_IGNORE_FILES "/build[^/]*/;/\\\\.git/")
include(CPack)
