// gzip-compresses bytes in memory (libdeflate, level 6), for loader tests of .json.gz input; reads a
// gzip file back.
#pragma once

#include <libdeflate.h>
#include <zlib.h>

#include <string>
#include <string_view>

namespace ptadvise::testing {

inline std::string gzip_bytes(std::string_view text) {
  libdeflate_compressor* compressor = libdeflate_alloc_compressor(6);
  std::string out(libdeflate_gzip_compress_bound(compressor, text.size()), '\0');
  size_t size = libdeflate_gzip_compress(compressor, text.data(), text.size(), out.data(), out.size());
  libdeflate_free_compressor(compressor);
  out.resize(size);
  return out;
}

// The inflated content of a gzip file (a plain file is passed through, as zlib does); empty when it
// cannot be opened.
inline std::string gunzip_file(const std::string& path) {
  std::string text;
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) return text;
  char buffer[65536];
  int got;
  while ((got = gzread(file, buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<size_t>(got));
  gzclose(file);
  return text;
}

}  // namespace ptadvise::testing
