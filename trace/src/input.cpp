#include "input.h"

#include <libdeflate.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace ptadvise::detail {
namespace {

bool is_gzip(const char* data, size_t size) {
  return size >= 2 && static_cast<unsigned char>(data[0]) == 0x1f && static_cast<unsigned char>(data[1]) == 0x8b;
}

bool allocate(PaddedBuffer& buffer, size_t size) {
  buffer.data.reset(new (std::nothrow) char[size + PaddedBuffer::kPadding + PaddedBuffer::kSpare]);
  if (!buffer.data) return false;
  buffer.size = size;
  buffer.capacity = size + PaddedBuffer::kPadding;
  std::memset(buffer.data.get() + size, 0, PaddedBuffer::kPadding + PaddedBuffer::kSpare);
  return true;
}

std::string with_commas(uint64_t value) {
  std::string digits = std::to_string(value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// Inflates every gzip member in turn. The output size is unknown up front (ISIZE is only the last member's
// size modulo 4 GiB), so it starts from a guess and doubles on LIBDEFLATE_INSUFFICIENT_SPACE.
InputResult inflate_gzip(const char* compressed, size_t compressed_size) {
  InputResult result;
  std::unique_ptr<libdeflate_decompressor, decltype(&libdeflate_free_decompressor)> decompressor(
      libdeflate_alloc_decompressor(), &libdeflate_free_decompressor);
  if (!decompressor) {
    result.error = "out of memory while preparing to decompress";
    return result;
  }
  // Deflate cannot exceed about 1032:1; anything claiming more than that is corrupt.
  const size_t ratio_cap = compressed_size > kMaxInputBytes / 1032 ? kMaxInputBytes : compressed_size * 1032 + 4096;
  const size_t max_output = std::min(kMaxInputBytes, ratio_cap);

  size_t guess = compressed_size * 8 + 4096;
  if (compressed_size >= 18) {
    uint32_t isize = 0;
    std::memcpy(&isize, compressed + compressed_size - 4, 4);  // little-endian on every supported target
    if (isize > compressed_size) guess = std::max<size_t>(guess, isize + size_t{1});
  }
  guess = std::min(guess, max_output);

  std::vector<char> output;
  size_t produced = 0;
  size_t in_offset = 0;
  size_t capacity = guess;
  output.resize(capacity);
  while (in_offset < compressed_size) {
    if (!is_gzip(compressed + in_offset, compressed_size - in_offset)) {
      if (in_offset == 0) {
        result.error = "not gzip data";
        return result;
      }
      break;  // trailing garbage after the last member: ignore, as gzip(1) warns and ignores it
    }
    size_t in_used = 0;
    size_t out_used = 0;
    libdeflate_result status = libdeflate_gzip_decompress_ex(decompressor.get(), compressed + in_offset,
                                                             compressed_size - in_offset, output.data() + produced,
                                                             capacity - produced, &in_used, &out_used);
    if (status == LIBDEFLATE_INSUFFICIENT_SPACE) {
      if (capacity >= max_output) {
        result.error = "gzip data inflates beyond " + with_commas(max_output) +
                       " bytes (corrupt, or too large to load)";
        return result;
      }
      capacity = std::min(max_output, capacity * 2);
      output.resize(capacity);
      continue;
    }
    if (status != LIBDEFLATE_SUCCESS) {
      if (produced > 0 && in_offset > 0) break;  // a damaged later member: keep the complete ones
      result.error = "corrupt gzip data at compressed byte " + std::to_string(in_offset) +
                     (status == LIBDEFLATE_SHORT_OUTPUT ? " (stream cut short)" : "");
      return result;
    }
    produced += out_used;
    in_offset += in_used;
    if (produced == capacity && in_offset < compressed_size) {
      capacity = std::min(max_output, capacity * 2);
      if (capacity == produced) {
        result.error = "gzip data inflates beyond " + with_commas(max_output) + " bytes";
        return result;
      }
      output.resize(capacity);
    }
  }
  if (!allocate(result.buffer, produced)) {
    result.error = "out of memory for " + with_commas(produced) + " bytes";
    return result;
  }
  std::memcpy(result.buffer.data.get(), output.data(), produced);
  return result;
}

}  // namespace

InputResult copy_input_bytes(std::string_view bytes) {
  if (is_gzip(bytes.data(), bytes.size())) return inflate_gzip(bytes.data(), bytes.size());
  InputResult result;
  if (bytes.size() > kMaxInputBytes) {
    result.error = "input larger than " + with_commas(kMaxInputBytes) + " bytes";
    return result;
  }
  if (!allocate(result.buffer, bytes.size())) {
    result.error = "out of memory for " + with_commas(bytes.size()) + " bytes";
    return result;
  }
  if (!bytes.empty()) std::memcpy(result.buffer.data.get(), bytes.data(), bytes.size());
  return result;
}

InputResult read_input_file(const std::string& path) {
  InputResult result;
  std::unique_ptr<FILE, decltype(&std::fclose)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) {
    result.error = std::string("cannot open: ") + std::strerror(errno);
    return result;
  }
  if (std::fseek(file.get(), 0, SEEK_END) != 0) {
    result.error = std::string("cannot read: ") + std::strerror(errno);
    return result;
  }
  long end = std::ftell(file.get());
  if (end < 0 || std::fseek(file.get(), 0, SEEK_SET) != 0) {
    result.error = "cannot read: not a regular file";
    return result;
  }
  auto size = static_cast<size_t>(end);
  if (size > kMaxInputBytes) {
    result.error = "file larger than " + with_commas(kMaxInputBytes) + " bytes";
    return result;
  }
  PaddedBuffer raw;
  if (!allocate(raw, size)) {
    result.error = "out of memory for " + with_commas(size) + " bytes";
    return result;
  }
  if (size > 0 && std::fread(raw.data.get(), 1, size, file.get()) != size) {
    result.error = std::string("cannot read: ") + (std::ferror(file.get()) ? std::strerror(errno) : "file shrank");
    return result;
  }
  if (is_gzip(raw.data.get(), raw.size)) return inflate_gzip(raw.data.get(), raw.size);
  result.buffer = std::move(raw);
  return result;
}

}  // namespace ptadvise::detail
