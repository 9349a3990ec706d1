// gzip-compresses bytes in memory (libdeflate, level 6), for loader tests of .json.gz input.
#pragma once

#include <libdeflate.h>

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

}  // namespace ptadvise::testing
