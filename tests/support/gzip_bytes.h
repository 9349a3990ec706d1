// gzip-compresses bytes in memory (zlib, level 6), for loader tests of .json.gz input; reads a gzip file
// back.
#pragma once

#include <zlib.h>

#include <string>
#include <string_view>

namespace ptadvise::testing {

inline std::string gzip_bytes(std::string_view text) {
  z_stream stream{};
  if (deflateInit2(&stream, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
  std::string out(deflateBound(&stream, text.size()) + 32, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  stream.avail_in = static_cast<uInt>(text.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int status = deflate(&stream, Z_FINISH);
  out.resize(status == Z_STREAM_END ? stream.total_out : 0);
  deflateEnd(&stream);
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
