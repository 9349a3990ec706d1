// gzip-compresses bytes in memory (zlib, level 6), for loader tests of .json.gz input; reads a gzip file
// back.
#pragma once

#include <zlib.h>

#include <cstdio>
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
// cannot be opened. The string's capacity holds `spare` bytes more (simdjson's padding, say), and is
// reserved once from the size the file states (its own, or a gzip member's ISIZE): growing it as the
// reads go made fresh copies of tens of MB, page by page.
inline std::string gunzip_file(const std::string& path, size_t spare = 0) {
  std::string text;
  size_t expected = 0;
  if (FILE* raw = std::fopen(path.c_str(), "rb")) {
    unsigned char head[2] = {0, 0}, tail[4] = {0, 0, 0, 0};
    if (std::fread(head, 1, 2, raw) == 2 && head[0] == 0x1f && head[1] == 0x8b) {
      if (std::fseek(raw, -4, SEEK_END) == 0 && std::fread(tail, 1, 4, raw) == 4) {
        expected = size_t{tail[0]} | size_t{tail[1]} << 8 | size_t{tail[2]} << 16 | size_t{tail[3]} << 24;
      }
    } else if (std::fseek(raw, 0, SEEK_END) == 0) {
      const long size = std::ftell(raw);
      expected = size > 0 ? static_cast<size_t>(size) : 0;
    }
    std::fclose(raw);
  }
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) return text;
  text.reserve(expected + spare);
  char buffer[65536];
  int got;
  while ((got = gzread(file, buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<size_t>(got));
  gzclose(file);
  if (text.capacity() < text.size() + spare) text.reserve(text.size() + spare);
  return text;
}

}  // namespace ptadvise::testing
