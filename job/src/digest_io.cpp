// The digest as JSON: written by `check --digest-out`, read by `merge`. Versioned; unknown versions and
// malformed files are refused with one line naming the file and what was wrong.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <ostream>
#include <string>

#include "ptadvise/bad_alloc_shield.h"
#include "ptadvise/io.h"
#include "ptadvise/job.h"

namespace ptadvise {

namespace {

using nlohmann::json;

constexpr const char* kFormat = "ptadvise-rank-digest";
constexpr int kVersion = 1;  // the layout merge reads
// The published schema (schemas/digest.schema.json), versioned like the other JSON outputs
// (advisor/include/ptadvise/schema_versions.h): MINOR grows when fields are added.
constexpr const char* kSchemaVersion = "1.5";

struct Invalid {
  std::string message;
};

// An integer field that fits T. nlohmann's get<T>() converts a double or an out-of-range integer without
// a check (undefined behaviour for 1e300), so a hostile digest could plant INT64_MIN or garbage.
template <class T>
T whole_value(const json& value, const std::string& name) {
  if (value.is_number_unsigned()) {
    const uint64_t v = value.get<uint64_t>();
    if (v <= static_cast<uint64_t>(std::numeric_limits<T>::max())) return static_cast<T>(v);
  } else if (value.is_number_integer()) {
    const int64_t v = value.get<int64_t>();
    // INT64_MIN is refused too: no field holds it, and negating it overflows.
    if (v > std::numeric_limits<int64_t>::min() && v >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
        (v < 0 || static_cast<uint64_t>(v) <= static_cast<uint64_t>(std::numeric_limits<T>::max()))) {
      return static_cast<T>(v);
    }
  } else {
    throw Invalid{"not a complete rank digest: \"" + name + "\" must be an integer, not " + value.type_name()};
  }
  throw Invalid{"a damaged rank digest: \"" + name + "\" is " + value.dump() + ", out of range"};
}

template <class T>
T whole(const json& parent, const char* key) {
  return whole_value<T>(parent.at(key), key);
}

template <class T>
T whole(const json& row, size_t column) {
  return whole_value<T>(row.at(column), "column " + std::to_string(column + 1));
}

CollectiveType type_from_string(const std::string& text) {
  for (auto type : {CollectiveType::AllReduce, CollectiveType::AllGather, CollectiveType::ReduceScatter,
                    CollectiveType::AllToAll, CollectiveType::Broadcast, CollectiveType::Reduce,
                    CollectiveType::SendRecv, CollectiveType::Barrier, CollectiveType::Other}) {
    if (to_string(type) == text) return type;
  }
  throw Invalid{"unknown collective type '" + text + "'"};
}

json finding_json(const Finding& f) {
  json evidence = json::array();
  for (const auto& e : f.evidence) {
    evidence.push_back({{"step", e.step == kNone ? -1 : static_cast<int64_t>(e.step)},
                        {"step_number", e.step_number},
                        {"ts_ns", e.ts_ns},
                        {"file_ts_ns", e.file_ts_ns},
                        {"dur_ns", e.dur_ns},
                        {"event", e.event},
                        {"track", e.track}});
  }
  json site = {{"op", f.site.op}, {"kernel", f.site.kernel}, {"op_chain", f.site.op_chain}, {"detail", f.site.detail}};
  if (f.site.source) {
    site["source"] = {{"file", f.site.source->file}, {"line", f.site.source->line}, {"function", f.site.source->function}};
  }
  json out = {{"rule_id", f.rule_id},
              {"rule_name", f.rule_name},
              {"severity", std::string(to_string(f.severity))},
              {"tags", f.tags},
              {"site", site},
              {"message", f.message},
              {"fix", f.fix},
              {"evidence", evidence},
              {"count_per_step", f.count_per_step},
              {"time_ms_per_step", f.time_ms_per_step},
              {"steps_present_pct", f.steps_present_pct},
              {"saving_ms_per_step", f.saving_ms_per_step},
              {"saving_pct", f.saving_pct},
              {"saving_method", f.saving_method},
              {"saving_basis", f.saving_basis},
              {"predicted_step_ms", f.predicted_step_ms},
              {"confidence", std::string(to_string(f.confidence))},
              {"trace_path", f.trace_path},
              {"ranks", f.ranks}};
  if (f.trace_rank) out["trace_rank"] = *f.trace_rank;
  if (!f.short_message.empty()) out["short_message"] = f.short_message;
  if (!f.short_fix.empty()) out["short_fix"] = f.short_fix;
  return out;
}

Finding finding_from(const json& j) {
  Finding f;
  f.rule_id = j.at("rule_id").get<std::string>();
  f.rule_name = j.at("rule_name").get<std::string>();
  auto severity = parse_severity(j.at("severity").get<std::string>());
  if (!severity) throw Invalid{"finding " + f.rule_id + ": unknown severity"};
  f.severity = *severity;
  f.tags = j.at("tags").get<std::vector<std::string>>();
  const json& site = j.at("site");
  f.site.op = site.at("op").get<std::string>();
  f.site.kernel = site.at("kernel").get<std::string>();
  f.site.op_chain = site.at("op_chain").get<std::vector<std::string>>();
  f.site.detail = site.at("detail").get<std::string>();
  if (site.contains("source")) {
    const json& source = site.at("source");
    f.site.source = SourceLocation{source.at("file").get<std::string>(), whole<int>(source, "line"),
                                   source.at("function").get<std::string>()};
  }
  f.message = j.at("message").get<std::string>();
  f.fix = j.at("fix").get<std::string>();
  f.short_message = j.value("short_message", std::string());  // optional: digests of older versions lack them
  f.short_fix = j.value("short_fix", std::string());
  for (const auto& e : j.at("evidence")) {
    Evidence evidence;
    const int64_t step = whole<int64_t>(e, "step");
    evidence.step = step < 0 ? kNone : static_cast<uint32_t>(step);
    evidence.step_number = whole<int64_t>(e, "step_number");
    evidence.ts_ns = whole<int64_t>(e, "ts_ns");
    evidence.file_ts_ns = whole<int64_t>(e, "file_ts_ns");
    evidence.dur_ns = whole<int64_t>(e, "dur_ns");
    evidence.event = e.at("event").get<std::string>();
    evidence.track = e.at("track").get<std::string>();
    f.evidence.push_back(std::move(evidence));
  }
  f.count_per_step = j.at("count_per_step").get<double>();
  f.time_ms_per_step = j.at("time_ms_per_step").get<double>();
  f.steps_present_pct = j.at("steps_present_pct").get<double>();
  f.saving_ms_per_step = j.at("saving_ms_per_step").get<double>();
  f.saving_pct = j.at("saving_pct").get<double>();
  f.saving_method = j.at("saving_method").get<std::string>();
  f.saving_basis = j.value("saving_basis", std::string("ledger"));
  f.predicted_step_ms = j.value("predicted_step_ms", 0.0);
  const std::string confidence = j.at("confidence").get<std::string>();
  f.confidence = confidence == "low" ? Confidence::Low : confidence == "high" ? Confidence::High : Confidence::Medium;
  f.trace_path = j.at("trace_path").get<std::string>();
  if (j.contains("trace_rank")) f.trace_rank = whole<int>(j, "trace_rank");
  f.ranks = j.at("ranks").get<std::vector<int>>();
  return f;
}


// The join model (RankJoin): a time is [free_ns or null, [source, delay_ns, source, delay_ns, ...]].
json join_time_json(const whatif::JoinTime& time) {
  json terms = json::array();
  for (const whatif::JoinTerm& term : time.terms) {
    terms.push_back(term.source);
    terms.push_back(term.delay_ns);
  }
  return json::array({time.free_ns == whatif::kNoTime ? json(nullptr) : json(time.free_ns), terms});
}

json join_model_json(const whatif::JoinModel& model) {
  json arrival = json::array();
  for (const auto& time : model.arrival) arrival.push_back(join_time_json(time));
  json steps = json::array();
  for (const auto& step : model.steps) {
    steps.push_back(json::array({join_time_json(step.host_start), join_time_json(step.gpu_first), step.gpu_span_only}));
  }
  return {{"arrival", arrival}, {"steps", steps}};
}

json join_json(const RankJoin& join) {
  json steps = json::array();
  for (size_t i = 0; i < join.step_numbers.size(); ++i) {
    steps.push_back(json::array({join.step_numbers[i], join.measured[i] != 0, join.measured_period_ns[i]}));
  }
  json in_window = json::array();
  for (size_t c = 0; c < join.in_window.size(); ++c) {
    if (join.in_window[c]) in_window.push_back(c);
  }
  return {{"steps", steps},
          {"in_window", in_window},
          {"predicted_step_ms", join.predicted_step_ms},
          {"exact", join.exact},
          {"unchanged", join_model_json(join.unchanged)},
          {"fixed", join_model_json(join.fixed)}};
}

// Delays and times a job adds together: bounded so that no sum of them overflows (a hostile digest).
constexpr int64_t kJoinBound = int64_t{1} << 61;

whatif::JoinTime join_time_from(const json& row, size_t collectives) {
  if (!row.is_array() || row.size() != 2 || !row.at(1).is_array() || row.at(1).size() % 2 != 0) {
    throw Invalid{"a join time is not [free_ns or null, [source, delay_ns, ...]]"};
  }
  whatif::JoinTime time;
  if (!row.at(0).is_null()) {
    time.free_ns = whole_value<int64_t>(row.at(0), "join free_ns");
    if (time.free_ns <= -kJoinBound || time.free_ns >= kJoinBound) throw Invalid{"a join time is out of range"};
  }
  const json& terms = row.at(1);
  for (size_t i = 0; i < terms.size(); i += 2) {
    whatif::JoinTerm term;
    term.source = whole_value<uint32_t>(terms.at(i), "join term source");
    term.delay_ns = whole_value<int64_t>(terms.at(i + 1), "join term delay_ns");
    if (term.source >= collectives) throw Invalid{"a join term names collective " + std::to_string(term.source) + " of " + std::to_string(collectives)};
    if (term.delay_ns <= -kJoinBound || term.delay_ns >= kJoinBound) throw Invalid{"a join delay is out of range"};
    time.terms.push_back(term);
  }
  return time;
}

whatif::JoinModel join_model_from(const json& j, size_t collectives, size_t steps) {
  whatif::JoinModel model;
  const json& arrival = j.at("arrival");
  if (!arrival.is_array() || arrival.size() != collectives) throw Invalid{"a join model does not give every collective's arrival"};
  for (const auto& row : arrival) model.arrival.push_back(join_time_from(row, collectives));
  const json& rows = j.at("steps");
  if (!rows.is_array() || rows.size() != steps) throw Invalid{"a join model does not give every step"};
  for (const auto& row : rows) {
    if (!row.is_array() || row.size() != 3) throw Invalid{"a join step is not [host_start, gpu_first, gpu_span_only]"};
    whatif::JoinStep step;
    step.host_start = join_time_from(row.at(0), collectives);
    step.gpu_first = join_time_from(row.at(1), collectives);
    step.gpu_span_only = row.at(2).get<bool>();
    model.steps.push_back(std::move(step));
  }
  return model;
}

RankJoin join_from(const json& j, size_t collectives) {
  RankJoin join;
  for (const auto& row : j.at("steps")) {
    if (!row.is_array() || row.size() != 3) throw Invalid{"a join step row is not [number, measured, period_ns]"};
    join.step_numbers.push_back(whole<int64_t>(row, size_t{0}));
    join.measured.push_back(row.at(1).get<bool>() ? 1 : 0);
    join.measured_period_ns.push_back(whole<int64_t>(row, size_t{2}));
  }
  join.in_window.assign(collectives, 0);
  for (const auto& index : j.at("in_window")) {
    const size_t c = whole_value<size_t>(index, "in_window");
    if (c >= collectives) throw Invalid{"join: in_window names collective " + std::to_string(c) + " of " + std::to_string(collectives)};
    join.in_window[c] = 1;
  }
  join.predicted_step_ms = j.at("predicted_step_ms").get<double>();
  join.exact = j.at("exact").get<bool>();
  join.unchanged = join_model_from(j.at("unchanged"), collectives, join.step_numbers.size());
  join.fixed = join_model_from(j.at("fixed"), collectives, join.step_numbers.size());
  join.available = !join.step_numbers.empty();
  return join;
}

}  // namespace

void write_digest(const RankDigest& d, std::ostream& out) {
  // nlohmann::json's destructor is noexcept and allocates (a stack to free nested values without
  // recursion): a failed allocation there ends the process unless it runs in a shield.
  BadAllocShield shield;
  json collectives = json::array();
  for (const auto& c : d.collectives) {
    // Compact rows: the digest of a rank with thousands of collectives stays small.
    collectives.push_back({std::string(to_string(c.type)), c.group, c.seq, c.step, c.order, c.start_ns, c.end_ns,
                           c.bytes, c.group_size, c.on_device, c.before_ns, c.before_compute_ns,
                           c.before_data_loader_ns, c.before_copy_ns, c.before_host_ns});
  }
  json types = json::array();
  for (const auto& t : d.by_type) {
    types.push_back({{"type", std::string(to_string(t.type))},
                     {"count_per_step", t.count_per_step},
                     {"ms_per_step", t.ms_per_step},
                     {"bytes_per_step", t.bytes_per_step},
                     {"algbw_gbps", t.algbw_gbps},
                     {"busbw_gbps", t.busbw_gbps},
                     {"group_size", t.group_size}});
  }
  json findings = json::array();
  for (const auto& f : d.findings) findings.push_back(finding_json(f));
  json not_run = json::array();
  for (const auto& [rule, why] : d.coverage.not_run) not_run.push_back({rule, why});
  json doc = {{"format", kFormat},
              {"version", kVersion},
              {"schema_version", kSchemaVersion},
              {"path", d.path},
              {"rank", d.rank ? json(*d.rank) : json(nullptr)},
              {"rank_from_trace", d.rank_from_trace},
              {"world_size", d.world_size},
              {"backend", d.backend},
              {"device", d.device},
              {"has_gpu", d.has_gpu},
              {"step_count", d.step_count},
              {"step_note", d.step_note},
              {"gpu_busy_pct", d.gpu_busy_pct},
              {"warnings", d.warnings},
              {"partial", d.partial},
              {"coverage",
               {{"ran", d.coverage.ran},
                {"no_gpu", d.coverage.no_gpu},
                {"no_stacks", d.coverage.no_stacks},
                {"no_device_properties", d.coverage.no_device_properties},
                {"no_memory_events", d.coverage.no_memory_events},
                {"no_steady_state", d.coverage.no_steady_state},
                {"not_run", not_run}}},
              {"steady_steps", d.steady_steps},
              {"collectives_cut_step", d.collectives_cut_step},
              {"step_ms", d.step_ms},
              {"compute_ms", d.compute_ms},
              {"communication_ms", d.communication_ms},
              {"exposed_comm_ms", d.exposed_comm_ms},
              {"data_loader_ms", d.data_loader_ms},
              {"idle_ms", d.idle_ms},
              {"overlap_pct", d.overlap_pct},
              {"forwards_per_step", d.forwards_per_step},
              {"reduce_rounds_per_step", d.reduce_rounds_per_step},
              {"buffer_broadcasts_per_step", d.buffer_broadcasts_per_step},
              {"by_type", types},
              {"collective_columns",
               {"type", "group", "seq", "step", "order", "start_ns", "end_ns", "bytes", "group_size", "on_device",
                "before_ns", "before_compute_ns", "before_data_loader_ns", "before_copy_ns", "before_host_ns"}},
              {"collectives", collectives},
              {"findings", findings}};
  if (d.join.available) doc["join"] = join_json(d.join);
  out << doc.dump() << '\n';
}

std::variant<RankDigest, DigestError> parse_digest(std::string_view text, const std::string& label) {
  BadAllocShield shield;  // nlohmann::json's noexcept destructor allocates (write_digest)
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& error) {
    return DigestError{label + ": byte " + std::to_string(error.byte) + ": not JSON (expected a digest written by "
                       "`ptadvise check --digest-out`)"};
  } catch (const json::exception& error) {
    // A number too large for a double (1e700) fails the parse itself, as out_of_range, not parse_error.
    std::string what = error.what();
    if (auto at = what.find("] "); at != std::string::npos) what = what.substr(at + 2);
    return DigestError{label + ": not a rank digest: " + what};
  }
  try {
    if (!doc.is_object() || doc.value("format", std::string()) != kFormat) {
      throw Invalid{"not a ptadvise rank digest (no \"format\": \"" + std::string(kFormat) + "\")"};
    }
    const int version = whole<int>(doc, "version");
    if (version != kVersion) {
      throw Invalid{"digest version " + std::to_string(version) + "; this ptadvise reads version " +
                    std::to_string(kVersion) + " (write the digests with the same ptadvise)"};
    }
    RankDigest d;
    d.path = doc.at("path").get<std::string>();
    if (!doc.at("rank").is_null()) d.rank = whole<int>(doc, "rank");
    d.rank_from_trace = doc.at("rank_from_trace").get<bool>();
    d.world_size = whole<int>(doc, "world_size");
    d.backend = doc.at("backend").get<std::string>();
    d.device = doc.at("device").get<std::string>();
    d.has_gpu = doc.at("has_gpu").get<bool>();
    d.step_count = whole<size_t>(doc, "step_count");
    d.step_note = doc.at("step_note").get<std::string>();
    d.gpu_busy_pct = doc.at("gpu_busy_pct").get<double>();
    d.warnings = doc.at("warnings").get<std::vector<std::string>>();
    if (doc.contains("partial")) d.partial = doc.at("partial").get<std::string>();  // absent before format 1.2
    const json& coverage = doc.at("coverage");
    d.coverage.ran = whole<size_t>(coverage, "ran");
    d.coverage.no_gpu = whole<size_t>(coverage, "no_gpu");
    d.coverage.no_stacks = whole<size_t>(coverage, "no_stacks");
    d.coverage.no_device_properties = whole<size_t>(coverage, "no_device_properties");
    d.coverage.no_memory_events = coverage.contains("no_memory_events") ? whole<size_t>(coverage, "no_memory_events") : 0;  // absent before format 1.5
    d.coverage.no_steady_state = coverage.contains("no_steady_state") ? whole<size_t>(coverage, "no_steady_state") : 0;  // absent before format 1.1
    for (const auto& item : coverage.at("not_run")) {
      d.coverage.not_run.emplace_back(item.at(0).get<std::string>(), item.at(1).get<std::string>());
    }
    d.steady_steps = whole<size_t>(doc, "steady_steps");
    d.collectives_cut_step = doc.contains("collectives_cut_step") ? whole<int64_t>(doc, "collectives_cut_step") : -1;  // absent before format 1.4
    d.step_ms = doc.at("step_ms").get<double>();
    d.compute_ms = doc.at("compute_ms").get<double>();
    d.communication_ms = doc.at("communication_ms").get<double>();
    d.exposed_comm_ms = doc.at("exposed_comm_ms").get<double>();
    d.data_loader_ms = doc.at("data_loader_ms").get<double>();
    d.idle_ms = doc.at("idle_ms").get<double>();
    d.overlap_pct = doc.at("overlap_pct").get<double>();
    d.forwards_per_step = doc.at("forwards_per_step").get<double>();
    d.reduce_rounds_per_step = doc.at("reduce_rounds_per_step").get<double>();
    d.buffer_broadcasts_per_step = doc.at("buffer_broadcasts_per_step").get<double>();
    for (const auto& t : doc.at("by_type")) {
      CollectiveTypeStats s;
      s.type = type_from_string(t.at("type").get<std::string>());
      s.count_per_step = t.at("count_per_step").get<double>();
      s.ms_per_step = t.at("ms_per_step").get<double>();
      s.bytes_per_step = t.at("bytes_per_step").get<double>();
      s.algbw_gbps = t.at("algbw_gbps").get<double>();
      s.busbw_gbps = t.at("busbw_gbps").get<double>();
      s.group_size = whole<int32_t>(t, "group_size");
      d.by_type.push_back(s);
    }
    for (const auto& row : doc.at("collectives")) {
      if (!row.is_array() || row.size() != 15) throw Invalid{"a collective row does not have 15 columns"};
      CollectiveCall c;
      c.type = type_from_string(row.at(0).get<std::string>());
      c.group = row.at(1).get<std::string>();
      c.seq = whole<int64_t>(row, size_t{2});
      c.step = whole<int64_t>(row, size_t{3});
      c.order = whole<uint32_t>(row, size_t{4});
      c.start_ns = whole<int64_t>(row, size_t{5});
      c.end_ns = whole<int64_t>(row, size_t{6});
      c.bytes = whole<int64_t>(row, size_t{7});
      c.group_size = whole<int32_t>(row, size_t{8});
      c.on_device = row.at(9).get<bool>();
      c.before_ns = whole<int64_t>(row, size_t{10});
      c.before_compute_ns = whole<int64_t>(row, size_t{11});
      c.before_data_loader_ns = whole<int64_t>(row, size_t{12});
      c.before_copy_ns = whole<int64_t>(row, size_t{13});
      c.before_host_ns = whole<int64_t>(row, size_t{14});
      d.collectives.push_back(std::move(c));
    }
    for (const auto& f : doc.at("findings")) d.findings.push_back(finding_from(f));
    if (doc.contains("join")) d.join = join_from(doc.at("join"), d.collectives.size());  // absent before format 1.3
    return d;
  } catch (const Invalid& invalid) {
    return DigestError{label + ": " + invalid.message};
  } catch (const json::exception& error) {
    // out_of_range (a missing key) and type_error (a value of the wrong type) name what was expected.
    std::string what = error.what();
    if (auto at = what.find("] "); at != std::string::npos) what = what.substr(at + 2);
    return DigestError{label + ": not a complete rank digest: " + what};
  }
}

std::variant<RankDigest, DigestError> read_digest(const std::string& path) {
  // A digest is well under 1% of its trace (200 KB for 54 MB); the bound only stops a read of /dev/zero.
  constexpr size_t kMaxDigestBytes = size_t{256} << 20;
  std::string text;
  if (auto error = read_small_file(path, text, kMaxDigestBytes)) {
    return DigestError{path + ": cannot read the digest: " + *error};
  }
  return parse_digest(text, path);
}

}  // namespace ptadvise
