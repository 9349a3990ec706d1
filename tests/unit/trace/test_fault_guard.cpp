// Large files are mapped, not read: a file cut while it is loaded must read as a cut file (zeros past the
// cut, a warning), never kill the process with SIGBUS; and faults in mappings nobody watches must still
// end the process as they would without the guard. Each case runs in a child process, so that a SIGBUS
// fails the test instead of ending the test run.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <variant>

#include "fault_guard.h"
#include "input.h"
#include "numbers.h"
#include "ptadvise/loader.h"
#include "trace_parser.h"

namespace {

std::string temp_file(const std::string& name, const std::string& bytes) {
  const std::string path = (std::filesystem::temp_directory_path() / ("ptadvise_fault_guard_" + name)).string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// Runs `body` in a child; returns its wait status.
int in_child(const std::function<int()>& body) {
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) _exit(body());
  int status = 0;
  waitpid(child, &status, 0);
  return status;
}

// One event of about 1 KB, written as the big traces below repeat it.
const std::string kEvent = "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": 7, \"ts\": 1000, "
                           "\"dur\": 5, \"args\": {\"bytes\": 64, \"padding\": \"" + std::string(900, 'x') + "\"}}";

// 70 MiB (73,401,276 bytes) of kEvent, one per line.
std::string big_trace() {
  std::string bytes = "{\"traceEvents\": [\n";
  size_t events = 0;
  while (bytes.size() < (size_t{70} << 20)) bytes += (events++ == 0 ? "" : ",\n") + kEvent;
  return bytes + "\n]}\n";
}

// How many events of big_trace() end before byte `cut`.
size_t events_before(size_t cut) {
  size_t whole = 0;
  for (size_t end = 18 + kEvent.size(); end <= cut; end += kEvent.size() + 2) ++whole;
  return whole;
}

// Loads `path` as `check` does (incrementally, keeping the `bytes` key), `before_parse` run once the file
// is mapped; the child's exit code: 0 when the timeline holds the events before `cut`, the shrink warning
// first and then the cut file's, else which of these failed.
int load_cut_file(const std::string& path, const std::string& label, size_t cut, unsigned threads,
                  const std::function<bool(ptadvise::LoadOptions&)>& before_parse) {
  auto input = ptadvise::detail::read_input_file(path, true);
  if (!input.ok() || input.pending == nullptr) return 3;
  ptadvise::detail::TraceParser parser(std::move(input.buffer), std::move(input.pending), label, threads);
  ptadvise::LoadOptions options;
  options.arg_keys = std::make_shared<const ptadvise::ArgKeySet>(ptadvise::ArgKeySet{"bytes"});
  if (!before_parse(options)) return 4;
  auto result = parser.run(options);
  if (!std::holds_alternative<ptadvise::Timeline>(result)) return 5;
  const auto& timeline = std::get<ptadvise::Timeline>(result);
  if (timeline.events.size() != events_before(cut)) return 6;
  if (timeline.stats.warnings.size() != 2) return 7;
  if (timeline.stats.warnings[0] != label + ": the file shrank from 73,401,276 to " +
                                        ptadvise::detail::with_commas(cut) + " bytes while it was read (was it being rewritten?)") {
    return 8;
  }
  // Read as a file cut there: the events after the cut are not made up from the zeros.
  if (timeline.stats.warnings[1].find("file ends inside an event") == std::string::npos) return 9;
  return timeline.arg_int(0, "bytes") == 64 ? 0 : 10;
}

void check_child_ended_well(int status) {
  CHECK_FALSE(WIFSIGNALED(status));
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

}  // namespace

TEST_CASE("fault guard: a watched mapping of a file cut short reads zeros past the cut and says where") {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const std::string path = temp_file("cut.bin", std::string(16 * page, 'x'));
  int status = in_child([&] {
    int fd = open(path.c_str(), O_RDWR);
    if (fd < 0) return 3;
    auto* data = static_cast<char*>(mmap(nullptr, 16 * page, PROT_READ, MAP_PRIVATE, fd, 0));
    if (data == MAP_FAILED) return 4;
    auto guard = ptadvise::detail::FaultGuard::watch(data, 16 * page);
    if (!guard) return 5;
    if (guard->fault_offset() != ptadvise::detail::FaultGuard::kNoFault) return 6;
    if (ftruncate(fd, static_cast<off_t>(5 * page + 10)) != 0) return 7;
    if (data[5 * page + 9] != 'x' || data[5 * page + 10] != 0) return 8;  // the last page: zeros past the end
    if (data[9 * page + 1] != 0) return 9;                                 // faulted: zeros, not SIGBUS
    if (guard->fault_offset() != 9 * page) return 10;
    if (data[15 * page] != 0) return 11;  // the rest of the mapping was replaced at the first fault
    if (guard->fault_offset() != 9 * page) return 12;
    if (data[6 * page] != 0) return 13;   // before it: a second fault, which moves the offset back
    if (guard->fault_offset() != 6 * page) return 14;
    return 0;
  });
  std::filesystem::remove(path);
  check_child_ended_well(status);
}

TEST_CASE("fault guard: a fault in a mapping nobody watches still ends the process with SIGBUS") {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const std::string watched = temp_file("watched.bin", std::string(4 * page, 'x'));
  const std::string other = temp_file("other.bin", std::string(4 * page, 'y'));
  int status = in_child([&] {
    int fd = open(watched.c_str(), O_RDONLY);
    auto* data = static_cast<char*>(mmap(nullptr, 4 * page, PROT_READ, MAP_PRIVATE, fd, 0));
    auto guard = ptadvise::detail::FaultGuard::watch(data, 4 * page);  // installs the handler
    if (!guard) return 3;
    int other_fd = open(other.c_str(), O_RDWR);
    auto* unwatched = static_cast<volatile char*>(mmap(nullptr, 4 * page, PROT_READ, MAP_PRIVATE, other_fd, 0));
    if (ftruncate(other_fd, 0) != 0) return 4;
    return unwatched[2 * page] == 0 ? 5 : 6;  // never returns: SIGBUS
  });
  std::filesystem::remove(watched);
  std::filesystem::remove(other);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // The handler there before is the sanitizer's: it reports the fault and ends the process its own way
  // (with its exit code, none of the child's own 3 to 6).
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) != 0);
  CHECK((WEXITSTATUS(status) < 3 || WEXITSTATUS(status) > 6));
#else
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGBUS);
#endif
}

TEST_CASE("fault guard: a large file cut inside the part mapped before the parse loads as a cut file") {
  // 70 MiB: mapped, its first 16 MiB counted as read before the parse starts. The file is cut to 10 MiB
  // after that, so the parse meets the cut in bytes it already holds (the SIGBUS path, not fstat's).
  const std::string path = temp_file("cut.json", big_trace());
  const size_t cut = size_t{10} << 20;
  int status = in_child([&] {
    return load_cut_file(path, "cut.json", cut, 2,
                         [&](ptadvise::LoadOptions&) { return truncate(path.c_str(), static_cast<off_t>(cut)) == 0; });
  });
  std::filesystem::remove(path);
  check_child_ended_well(status);
}

TEST_CASE("fault guard: a large file cut after its last stretch was taken still says it shrank") {
  // The parse takes the whole 70 MiB (in stretches kept 10 MiB ahead on one thread) before it reaches
  // 62 MiB; the file is cut to 66 MiB there, from the progress callback. The parse meets zeros (the
  // guard's) at the cut, and the check made once the parse is over says why.
  const std::string path = temp_file("cut_late.json", big_trace());
  const size_t cut = size_t{66} << 20;
  int status = in_child([&] {
    bool cut_done = false;
    int code = load_cut_file(path, "cut_late.json", cut, 1, [&](ptadvise::LoadOptions& options) {
      options.on_bytes_parsed = [&](uint64_t parsed, uint64_t) {
        if (!cut_done && parsed >= (size_t{62} << 20)) cut_done = truncate(path.c_str(), static_cast<off_t>(cut)) == 0;
      };
      return true;
    });
    return code != 0 ? code : cut_done ? 0 : 11;
  });
  std::filesystem::remove(path);
  check_child_ended_well(status);
}
