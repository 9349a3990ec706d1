// The inputs read as the parse goes on (input.h): a gzip stream inflated, a file read, a file mapped.
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "fault_guard.h"
#include "gzip_stream.h"
#include "input.h"
#include "numbers.h"

namespace ptadvise::detail {

PendingGzip::PendingGzip(std::unique_ptr<GzipStream> stream, size_t cap, size_t filled, std::string beyond_cap)
    : PendingInput(cap, filled), stream_(std::move(stream)), beyond_cap_(std::move(beyond_cap)) {}

PendingGzip::~PendingGzip() = default;

size_t PendingGzip::expected_size() const {
  return stream_ ? std::max(filled_, std::min(size_, stream_->expected_size())) : size_;
}

void PendingInput::populate(char* data, size_t end, size_t resident_end, int advice) const {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t from = std::max(filled_ / page * page, resident_end / page * page);
  if (page_round(end) > from) (void)madvise(data + from, page_round(end) - from, advice);
}

std::optional<std::string> PendingGzip::fill(char* data, size_t end, size_t resident_end) {
  end = std::min(size_, std::max(end, filled_ + kPendingRead));
  if (end <= filled_ || !stream_) return std::nullopt;
  populate(data, end, resident_end, MADV_POPULATE_WRITE);
  filled_ += stream_->inflate(data + filled_, end - filled_);
  if (!stream_->done()) {
    if (filled_ < size_ || !stream_->has_more()) return std::nullopt;
    failure_ = beyond_cap_;
    size_ = filled_;
    stream_.reset();
    return std::nullopt;
  }
  // The stream ended: so does the text.
  size_ = filled_;
  unread_ = stream_->unread_bytes();
  std::optional<std::string> problem = stream_->warning();
  stream_.reset();
  return problem;
}

PendingMapped::PendingMapped(int fd, size_t size, size_t filled, std::shared_ptr<const FaultGuard> guard)
    : PendingInput(size, filled), fd_(fd), guard_(std::move(guard)) {}

PendingMapped::~PendingMapped() {
  if (fd_ >= 0) close(fd_);
}

std::optional<std::pair<size_t, std::string>> PendingMapped::shortfall() const {
  std::optional<std::pair<size_t, std::string>> found;
  struct stat info {};
  if (fstat(fd_, &info) == 0 && static_cast<size_t>(info.st_size) < size_) {
    found.emplace(static_cast<size_t>(info.st_size), file_shrank(size_, static_cast<size_t>(info.st_size)));
  }
  // A page the disk could not read (or that vanished before fstat saw the file shrink).
  if (const size_t fault = guard_->fault_offset(); fault < (found ? found->first : size_)) {
    found.emplace(fault, "cannot read the file past byte " + with_commas(fault) + "; parsed the bytes before it");
  }
  return found;
}

std::optional<std::string> PendingMapped::after_parse() {
  auto found = shortfall();
  if (!found || found->first >= told_) return std::nullopt;  // nothing new since fill() told it
  told_ = found->first;
  return found->second;
}

std::optional<std::string> PendingMapped::fill(char* data, size_t end, size_t) {
  end = std::min(size_, std::max(end, filled_ + kPendingRead));
  if (end <= filled_) return std::nullopt;
  std::optional<std::string> problem;
  size_t reaches = size_;
  if (auto found = shortfall()) {
    reaches = found->first;
    if (reaches < told_) {
      problem = found->second;
      told_ = reaches;
    }
  }
  if (reaches < size_) {
    // Bytes already handed out stay (zeros past the cut, if the guard caught it first); the pages past
    // the new end read as zeros from now on instead of faulting.
    const size_t cut = page_round(std::max(reaches, filled_));
    const size_t mapped = page_round(size_);
    if (cut < mapped) {
      (void)mmap(data + cut, mapped - cut, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE,
                 -1, 0);
    }
    size_ = std::max(reaches, filled_);
    end = std::min(end, size_);
  }
  // One call maps the pages that are in the page cache (reading the others), instead of a fault per 16.
  populate(data, end, 0, MADV_POPULATE_READ);
  filled_ = std::max(filled_, end);
  return problem;
}

PendingFile::~PendingFile() {
  if (fd_ >= 0) close(fd_);
}

std::optional<std::string> PendingFile::fill(char* data, size_t end, size_t resident_end) {
  end = std::min(size_, std::max(end, filled_ + kPendingRead));
  if (end <= filled_) return std::nullopt;
  populate(data, end, resident_end, MADV_POPULATE_WRITE);
  while (filled_ < end) {
    ssize_t got = read(fd_, data + filled_, std::min(end - filled_, size_t{64} << 20));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      std::string problem = got == 0 ? file_shrank(size_, filled_)
                                     : "cannot read the file past byte " + std::to_string(filled_) + ": " +
                                           std::strerror(errno) + "; parsed the bytes read";
      size_ = filled_;
      close(fd_);
      fd_ = -1;
      return problem;
    }
    filled_ += static_cast<size_t>(got);
  }
  if (filled_ == size_) {
    close(fd_);
    fd_ = -1;
  }
  return std::nullopt;
}

}  // namespace ptadvise::detail
