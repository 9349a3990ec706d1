// `--annotate OUT`: a copy of the trace with the findings on their own track, for Perfetto.
// The original bytes are streamed through unchanged; our events are spliced in at the start of
// `traceEvents` (or of the top-level array in the 2020 form), so nothing of the original is re-encoded.
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "ptadvise/bad_alloc_shield.h"
#include "json_doc.h"
#include "format.h"
#include "whatif_format.h"
#include "ptadvise/advisor.h"
#include "ptadvise/io.h"

namespace ptadvise {

namespace {


// A process id no real trace uses (Linux pids stay below 2^22; Kineto GPU pids are device indices),
// small enough for viewers that keep pids in 32 bits.
constexpr int64_t kFindingsPid = 1000000000;

// Finds where `traceEvents` (or a bare top-level array) opens, one byte at a time, across chunks.
class InsertionFinder {
 public:
  // True when `c` is the '[' after which the events go.
  bool feed(char c) {
    if (in_string_) {
      if (escape_) {
        escape_ = false;
        remember(c);
      } else if (c == '\\') {
        escape_ = true;
        remember(c);
      } else if (c == '"') {
        in_string_ = false;
        state_ = depth_ == 1 ? State::AfterString : State::None;
      } else {
        remember(c);
      }
      return false;
    }
    switch (c) {
      case ' ': case '\t': case '\n': case '\r':
        return false;
      case '"':
        in_string_ = true;
        text_.clear();
        return false;
      case ':':
        if (state_ == State::AfterString) {
          key_ = text_;
          state_ = State::AfterColon;
        } else {
          state_ = State::None;
        }
        return false;
      case '[': {
        bool found = depth_ == 0 || (depth_ == 1 && state_ == State::AfterColon && key_ == "traceEvents");
        ++depth_;
        state_ = State::None;
        return found;
      }
      case '{':
        ++depth_;
        state_ = State::None;
        return false;
      case ']': case '}':
        --depth_;
        state_ = State::None;
        return false;
      default:
        state_ = State::None;
        return false;
    }
  }

 private:
  enum class State { None, AfterString, AfterColon };
  void remember(char c) {
    if (text_.size() < 32) text_ += c;  // keys we care about are short
  }
  int depth_ = 0;
  bool in_string_ = false;
  bool escape_ = false;
  State state_ = State::None;
  std::string text_;
  std::string key_;
};

// The annotated copy, written to a temporary file next to OUT and renamed over it when complete.
class Output {
 public:
  explicit Output(const std::string& path) : file_(path) {
    gzip_ = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
    if (file_.error()) return;
    if (gzip_) {
      int fd = dup(file_.fd());  // gzclose closes its own descriptor; the file keeps its own for fsync
      gz_ = fd >= 0 ? gzdopen(fd, "wb6") : nullptr;
      if (gz_ == nullptr && fd >= 0) ::close(fd);
    }
  }
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;
  bool ok() const { return !file_.error() && (!gzip_ || gz_ != nullptr) && !failed_; }
  void write(const char* data, size_t size) {
    if (size == 0 || !ok()) return;
    if (gzip_) {
      failed_ = gzwrite(gz_, data, static_cast<unsigned>(size)) != static_cast<int>(size);
    } else {
      failed_ = !file_.write(std::string_view(data, size));
    }
  }
  void write(const std::string& text) { write(text.data(), text.size()); }
  // Completes the file and renames it over OUT. Returns an error phrase, or nullopt.
  std::optional<std::string> commit() {
    bool good = ok();
    if (gz_ != nullptr) good = gzclose(gz_) == Z_OK && good;
    gz_ = nullptr;
    if (!good) return file_.error() ? file_.error() : std::optional<std::string>("write error");
    return file_.commit();
  }
  ~Output() {
    if (gz_ != nullptr) gzclose(gz_);  // not committed: AtomicFile removes the temporary file
  }

 private:
  AtomicFile file_;
  bool gzip_ = false;
  bool failed_ = false;
  gzFile gz_ = nullptr;
};

}  // namespace

std::string annotation_events(const std::vector<Finding>& findings, const StepPrediction* prediction) {
  BadAllocShield shield;  // nlohmann::json's noexcept destructor allocates (json_doc.h)
  using jsondoc::Json;
  std::string out;
  auto add = [&](const Json& event) {
    if (!out.empty()) out += ",\n";
    out += jsondoc::dump(event, -1);
  };
  bool any = false;
  for (const auto& f : findings) any = any || !f.evidence.empty();
  const bool has_path = prediction != nullptr && !prediction->critical_path.empty();
  if (!any && !has_path) return out;
  add({{"ph", "M"}, {"name", "process_name"}, {"pid", kFindingsPid}, {"tid", 0}, {"args", {{"name", "ptadvise findings"}}}});
  add({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", kFindingsPid}, {"tid", 0}, {"args", {{"sort_index", -1}}}});
  if (has_path) {
    for (const Json& event : format::critical_path_events(*prediction, kFindingsPid)) add(event);
  }
  for (size_t k = 0; k < findings.size(); ++k) {
    const Finding& f = findings[k];
    if (f.evidence.empty()) continue;
    // One track per finding, in rank order.
    const int tid = f.rank > 0 ? f.rank : static_cast<int>(k + 1);
    const std::string label = "#" + std::to_string(tid) + " " + f.rule_id + " " + f.rule_name;
    add({{"ph", "M"}, {"name", "thread_name"}, {"pid", kFindingsPid}, {"tid", tid}, {"args", {{"name", label}}}});
    add({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", kFindingsPid}, {"tid", tid}, {"args", {{"sort_index", tid}}}});
    for (const auto& e : f.evidence) {
      // The file's own ts, so the marker sits on the event in any viewer (Perfetto never adds
      // baseTimeNanoseconds); at least 1 ns long so that zero-length evidence stays visible.
      Json args = {{"rule", f.rule_id},
                   {"name", f.rule_name},
                   {"message", f.message},
                   {"fix", f.fix},
                   {"saving_ms_per_step", jsondoc::number(f.saving_ms_per_step, 3)},
                   {"fingerprint", f.fingerprint},
                   {"event", e.event},
                   {"track", e.track}};
      add({{"ph", "X"},
           {"cat", "ptadvise"},
           {"name", f.rule_id + " " + f.rule_name},
           {"pid", kFindingsPid},
           {"tid", tid},
           {"ts", jsondoc::number(static_cast<double>(e.file_ts_ns) / 1000.0, 3)},
           {"dur", jsondoc::number(std::max(static_cast<double>(e.dur_ns) / 1000.0, 0.001), 3)},
           {"args", std::move(args)}});
    }
  }
  return out;
}

std::optional<AnnotateError> write_annotated_trace(const std::string& trace_path, const std::vector<Finding>& findings,
                                                   const std::string& out_path, const StepPrediction* prediction) {
  // The trace is read a second time: a pipe or stdin has nothing left to give.
  std::error_code type_error;
  const auto type = std::filesystem::status(trace_path, type_error).type();
  if (trace_path == "<stdin>" || type == std::filesystem::file_type::fifo ||
      type == std::filesystem::file_type::character || type == std::filesystem::file_type::socket) {
    return AnnotateError{trace_path + ": --annotate needs the trace as a file (it was read from a pipe)"};
  }
  // gzread reads plain files unchanged and gzip files (all members) decompressed.
  gzFile in = gzopen(trace_path.c_str(), "rb");
  if (!in) return AnnotateError{trace_path + ": cannot open the trace to annotate"};
  std::unique_ptr<gzFile_s, int (*)(gzFile)> in_guard(in, gzclose);
  gzbuffer(in, 1 << 20);

  Output out(out_path);
  if (!out.ok()) return AnnotateError{out_path + ": cannot write the annotated trace"};

  const std::string events = annotation_events(findings, prediction);
  InsertionFinder finder;
  enum class Phase { Searching, AfterBracket, Copying } phase = Phase::Searching;
  std::vector<char> chunk(1 << 20);
  std::string held;  // whitespace after '[' until we know whether the array is empty
  while (true) {
    int got = gzread(in, chunk.data(), static_cast<unsigned>(chunk.size()));
    if (got < 0) {
      int code = 0;
      const char* message = gzerror(in, &code);
      return AnnotateError{trace_path + ": cannot read the trace: " + (message ? message : "read error")};
    }
    if (got == 0) break;
    size_t size = static_cast<size_t>(got);
    size_t copied_from = 0;
    for (size_t i = 0; i < size && phase != Phase::Copying; ++i) {
      char c = chunk[i];
      if (phase == Phase::Searching) {
        if (finder.feed(c)) {
          out.write(chunk.data() + copied_from, i + 1 - copied_from);
          copied_from = i + 1;
          phase = Phase::AfterBracket;
        }
      } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        held += c;
        copied_from = i + 1;
      } else {
        if (!events.empty()) out.write("\n" + events + (c == ']' ? "" : ","));
        out.write(held);
        copied_from = i;
        phase = Phase::Copying;
      }
    }
    out.write(chunk.data() + copied_from, size - copied_from);
  }
  if (phase == Phase::Searching) {
    return AnnotateError{trace_path + ": no traceEvents array found; nothing to annotate"};
  }
  if (phase == Phase::AfterBracket) {  // the file ends right after '[': cut short
    if (!events.empty()) out.write("\n" + events);
    out.write(held);
  }
  if (auto error = out.commit()) return AnnotateError{out_path + ": cannot write the annotated trace: " + *error};
  return std::nullopt;
}

}  // namespace ptadvise
