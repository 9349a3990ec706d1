# Writes OUTPUT: a C++ file defining `std::string_view NAME()` that returns the bytes of INPUT, for
# assets that must be inside the binary (the HTML report's script, style and charting library).
# Run as `cmake -DINPUT=… -DOUTPUT=… -DNAME=… -P EmbedText.cmake`.
file(READ "${INPUT}" content)
string(FIND "${content}" ")pta_asset\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter )pta_asset\"")
endif()
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by cmake/EmbedText.cmake; do not edit.\n"
  "#include <string_view>\n"
  "namespace ptadvise::html_assets {\n"
  "std::string_view ${NAME}() {\n"
  "  static constexpr char text[] = R\"pta_asset(${content})pta_asset\";\n"
  "  return {text, sizeof text - 1};\n"
  "}\n"
  "}  // namespace ptadvise::html_assets\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
