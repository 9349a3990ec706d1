#include "input.h"

#include <fcntl.h>
#include <libdeflate.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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
  char* bytes = new (std::nothrow) char[size + PaddedBuffer::kPadding + PaddedBuffer::kSpare];
  if (bytes == nullptr) return false;
  buffer.owner = std::shared_ptr<char>(bytes, std::default_delete<char[]>());
  buffer.data = bytes;
  buffer.size = size;
  buffer.capacity = size + PaddedBuffer::kPadding;
  std::memset(bytes + size, 0, PaddedBuffer::kPadding + PaddedBuffer::kSpare);
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
  std::memcpy(result.buffer.data, output.data(), produced);
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
  if (!bytes.empty()) std::memcpy(result.buffer.data, bytes.data(), bytes.size());
  return result;
}

// Maps the file privately with zeroed padding after it: the file's pages, then anonymous zero pages when
// the last page has too little slack. False when mapping is not possible (the caller reads instead).
bool map_file(int fd, size_t size, PaddedBuffer& buffer) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t file_span = (size + page - 1) / page * page;
  const size_t needed = size + PaddedBuffer::kPadding + PaddedBuffer::kSpare;
  const size_t total = std::max(file_span, (needed + page - 1) / page * page);
  void* region = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) return false;
  void* mapped = mmap(region, file_span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, 0);
  if (mapped == MAP_FAILED) {
    munmap(region, total);
    return false;
  }
  auto* bytes = static_cast<char*>(region);
  buffer.owner = std::shared_ptr<char>(bytes, [total](char* p) { munmap(p, total); });
  buffer.data = bytes;
  buffer.size = size;
  buffer.capacity = size + PaddedBuffer::kPadding;
  return true;
}

InputResult read_input_file(const std::string& path) {
  InputResult result;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    result.error = std::string("cannot open: ") + std::strerror(errno);
    return result;
  }
  std::unique_ptr<int, void (*)(int*)> closer(&fd, [](int* descriptor) { close(*descriptor); });
  struct stat info {};
  if (fstat(fd, &info) != 0) {
    result.error = std::string("cannot read: ") + std::strerror(errno);
    return result;
  }
  if (!S_ISREG(info.st_mode)) {
    result.error = "cannot read: not a regular file";
    return result;
  }
  auto size = static_cast<size_t>(info.st_size);
  if (size > kMaxInputBytes) {
    result.error = "file larger than " + with_commas(kMaxInputBytes) + " bytes";
    return result;
  }
  PaddedBuffer raw;
  if (size == 0 || !map_file(fd, size, raw)) {
    if (!allocate(raw, size)) {
      result.error = "out of memory for " + with_commas(size) + " bytes";
      return result;
    }
    size_t done = 0;
    while (done < size) {
      ssize_t got = read(fd, raw.data + done, size - done);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        result.error = std::string("cannot read: ") + (got < 0 ? std::strerror(errno) : "file shrank while reading");
        return result;
      }
      done += static_cast<size_t>(got);
    }
  }
  if (is_gzip(raw.data, raw.size)) return inflate_gzip(raw.data, raw.size);
  result.buffer = std::move(raw);
  return result;
}

}  // namespace ptadvise::detail
