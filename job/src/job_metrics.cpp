// The metrics job rules compare: one row for the job, one per rank, one per collective type.
#include "job_metrics.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

namespace ptadvise::job_detail {

namespace {

const double kNan = std::numeric_limits<double>::quiet_NaN();

double pct(double part, double whole) { return whole > 0 ? 100.0 * part / whole : kNan; }

double median(std::vector<double> values) {
  if (values.empty()) return kNan;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

std::string upper(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

std::optional<double> link_peak_gbps(const std::string& device) {
  const std::string name = upper(device);
  if (name.empty()) return std::nullopt;
  // Boards on PCIe only: the slot is the link (Gen4 x16 32 GB/s, Gen5 x16 64 GB/s per direction).
  if (name.find("PCIE") != std::string::npos) return name.find("H100") != std::string::npos ? 64.0 : 32.0;
  // NVLink per GPU and direction: links x 25 GB/s (NVLink 2-4), 50 GB/s (NVLink 5); AMD Infinity Fabric.
  struct Entry {
    const char* family;
    double gbps;
  };
  static const Entry table[] = {{"GB200", 900}, {"B200", 900}, {"H800", 200}, {"H100", 450}, {"H200", 450},
                                {"A800", 200},  {"A100", 300}, {"V100", 150}, {"MI300", 448}, {"MI250", 400}};
  for (const auto& entry : table) {
    if (name.find(entry.family) != std::string::npos) return entry.gbps;
  }
  return std::nullopt;
}

const std::vector<std::string>& metric_names(RowKind kind) {
  static const std::vector<std::string> job{"ranks",          "world_size",         "step_ms",
                                            "compute_imbalance_pct", "compute_max_ms", "compute_min_ms",
                                            "compute_median_ms", "compute_excess_ms", "compute_excess_pct",
                                            "slowest_rank",   "exposed_comm_ms",    "exposed_comm_pct",
                                            "wait_ms",        "wait_pct",           "aligned_collectives"};
  static const std::vector<std::string> rank{
      "rank",           "ranks",           "step_ms",          "compute_ms",       "communication_ms",
      "communication_pct", "exposed_comm_ms", "exposed_comm_pct", "overlap_pct",   "data_loader_ms",
      "idle_ms",        "wait_ms",         "wait_pct",         "last_pct",         "late_ms",
      "caused_wait_ms", "caused_wait_pct", "caused_wait_share_pct", "straggler_steps_pct", "late_cause_ms", "exposed_transfer_ms",
      "exposed_transfer_pct", "allreduce_ms", "extra_reduce_ms", "broadcast_transfer_ms", "broadcast_transfer_pct",    "forwards_per_step", "reduce_rounds_per_step",
      "buffer_broadcasts_per_step", "broadcast_ms", "broadcast_pct", "aligned_collectives"};
  static const std::vector<std::string> type{"ranks",       "count_per_step",  "ms_per_step", "pct_of_step",
                                             "mib_per_call", "algbw_gbps",     "busbw_gbps",  "link_peak_gbps",
                                             "busbw_pct_of_peak", "excess_ms"};
  return kind == RowKind::Job ? job : kind == RowKind::Rank ? rank : type;
}

std::vector<Row> rows(RowKind kind, const JobAnalysis& job, const std::vector<const RankDigest*>& ranks) {
  std::vector<Row> out;
  const double n = static_cast<double>(ranks.size());
  if (kind == RowKind::Job) {
    Row row;
    row.ranks = job.ranks;
    row.site = "job";
    double exposed = 0, wait = 0;
    for (size_t r = 0; r < ranks.size(); ++r) {
      exposed += ranks[r]->exposed_comm_ms;
      wait += job.per_rank[r].wait_ms;
    }
    exposed /= std::max(n, 1.0);
    wait /= std::max(n, 1.0);
    row.values = {{"ranks", n},
                  {"world_size", job.world_size},
                  {"step_ms", job.step_ms},
                  {"compute_imbalance_pct", job.compute_imbalance_pct},
                  {"compute_max_ms", job.compute_max_ms},
                  {"compute_min_ms", job.compute_min_ms},
                  {"compute_median_ms", job.compute_median_ms},
                  {"compute_excess_ms", job.compute_max_ms - job.compute_median_ms},
                  {"compute_excess_pct", pct(job.compute_max_ms - job.compute_median_ms, job.step_ms)},
                  {"slowest_rank", job.slowest_compute_rank},
                  {"exposed_comm_ms", exposed},
                  {"exposed_comm_pct", pct(exposed, job.step_ms)},
                  {"wait_ms", wait},
                  {"wait_pct", pct(wait, job.step_ms)},
                  {"aligned_collectives", static_cast<double>(job.aligned_collectives)}};
    out.push_back(std::move(row));
    return out;
  }
  if (kind == RowKind::Rank) {
    for (size_t r = 0; r < ranks.size(); ++r) {
      const RankDigest& d = *ranks[r];
      const RankJobStats& s = job.per_rank[r];
      Row row;
      row.ranks = {s.rank};
      row.site = "rank";
      double broadcast = 0, allreduce = 0;
      for (const auto& t : d.by_type) {
        if (t.type == CollectiveType::Broadcast) broadcast += t.ms_per_step;
        if (t.type == CollectiveType::AllReduce) allreduce += t.ms_per_step;
      }
      auto waited = [&](CollectiveType type) {
        auto it = s.wait_by_type.find(type);
        return it == s.wait_by_type.end() ? 0.0 : it->second;
      };
      // Communication that is exposed for its own sake, not because a late rank kept the others waiting.
      // The rank's exposed time is over every steady step and holds only the collectives it recorded: its
      // wait is taken over the same steps (the steps left out of wait_ms hold none of the waits summed).
      const double every_step = static_cast<double>(std::max<size_t>(d.steady_steps, 1));
      const double wait_every_step =
          s.compared_steps > 0 ? s.wait_ms * static_cast<double>(s.compared_steps) / every_step : s.wait_ms;
      const double transfer = std::max(d.exposed_comm_ms - wait_every_step, 0.0);
      const double broadcast_transfer = std::max(broadcast - waited(CollectiveType::Broadcast), 0.0);
      const double rounds = d.reduce_rounds_per_step;
      row.values = {{"rank", s.rank},
                    {"ranks", n},
                    {"step_ms", d.step_ms},
                    {"compute_ms", d.compute_ms},
                    {"communication_ms", d.communication_ms},
                    {"communication_pct", pct(d.communication_ms, d.step_ms)},
                    {"exposed_comm_ms", d.exposed_comm_ms},
                    {"exposed_comm_pct", pct(d.exposed_comm_ms, d.step_ms)},
                    {"overlap_pct", d.communication_ms > 0 ? d.overlap_pct : kNan},
                    {"data_loader_ms", d.data_loader_ms},
                    {"idle_ms", d.idle_ms},
                    {"wait_ms", ranks.size() > 1 ? s.wait_ms : kNan},
                    {"wait_pct", ranks.size() > 1 ? pct(s.wait_ms, d.step_ms) : kNan},
                    {"last_pct", ranks.size() > 1 && job.aligned_collectives > 0 ? s.last_pct : kNan},
                    {"late_ms", s.late_ms},
                    {"caused_wait_ms", s.caused_wait_ms},
                    {"caused_wait_pct", pct(s.caused_wait_ms, job.step_ms)},
                    {"caused_wait_share_pct", ranks.size() > 1 ? s.caused_wait_share_pct : kNan},
                    {"straggler_steps_pct", ranks.size() > 1 ? s.straggler_steps_pct : kNan},
                    {"exposed_transfer_ms", transfer},
                    {"exposed_transfer_pct", pct(transfer, d.step_ms)},
                    {"allreduce_ms", allreduce},
                    {"extra_reduce_ms", rounds > 1 ? allreduce * (rounds - 1) / rounds : 0.0},
                    {"broadcast_transfer_ms", broadcast_transfer},
                    {"broadcast_transfer_pct", pct(broadcast_transfer, d.step_ms)},
                    {"late_cause_ms", s.late_cause_ms},
                    {"forwards_per_step", d.forwards_per_step},
                    {"reduce_rounds_per_step", d.reduce_rounds_per_step},
                    {"buffer_broadcasts_per_step", d.buffer_broadcasts_per_step},
                    {"broadcast_ms", broadcast},
                    {"broadcast_pct", pct(broadcast, d.step_ms)},
                    {"aligned_collectives", static_cast<double>(job.aligned_collectives)}};
      row.texts["cause"] = s.late_cause.empty() ? "unknown" : s.late_cause;
      out.push_back(std::move(row));
    }
    return out;
  }
  // Collective types: one row per type, over the ranks that have it.
  std::map<CollectiveType, std::vector<size_t>> by_type;
  for (size_t r = 0; r < ranks.size(); ++r) {
    for (size_t t = 0; t < ranks[r]->by_type.size(); ++t) by_type[ranks[r]->by_type[t].type].push_back(r);
  }
  for (const auto& [type, members] : by_type) {
    Row row;
    row.site = std::string(to_string(type));
    row.texts["type"] = std::string(to_string(type));
    std::vector<double> count, ms, bytes, alg, bus, peaks, steps;
    for (size_t r : members) {
      row.ranks.push_back(job.per_rank[r].rank);
      for (const auto& t : ranks[r]->by_type) {
        if (t.type != type) continue;
        count.push_back(t.count_per_step);
        ms.push_back(t.ms_per_step);
        steps.push_back(ranks[r]->step_ms);
        if (t.busbw_gbps > 0) {
          alg.push_back(t.algbw_gbps);
          bus.push_back(t.busbw_gbps);
          bytes.push_back(t.count_per_step > 0 ? t.bytes_per_step / t.count_per_step : 0);
        }
      }
      if (auto peak = link_peak_gbps(ranks[r]->device)) peaks.push_back(*peak);
    }
    std::sort(row.ranks.begin(), row.ranks.end());
    const double busbw = median(bus);
    const double peak = peaks.empty() ? kNan : *std::min_element(peaks.begin(), peaks.end());
    row.values = {{"ranks", static_cast<double>(members.size())},
                  {"count_per_step", median(count)},
                  {"ms_per_step", median(ms)},
                  {"pct_of_step", pct(median(ms), median(steps))},
                  {"mib_per_call", bytes.empty() ? kNan : median(bytes) / (1024.0 * 1024.0)},
                  {"algbw_gbps", median(alg)},
                  {"busbw_gbps", busbw},
                  {"link_peak_gbps", peak},
                  {"busbw_pct_of_peak", std::isnan(busbw) || std::isnan(peak) ? kNan : 100.0 * busbw / peak},
                  // What the collectives would give back at half the link's peak (nccl-tests reaches ~80%).
                  {"excess_ms", std::isnan(busbw) || std::isnan(peak) ? kNan
                                : std::max(median(ms) * (1.0 - busbw / (0.5 * peak)), 0.0)}};
    out.push_back(std::move(row));
  }
  return out;
}

Row fold_rows(const std::vector<Row>& rows) {
  Row folded;
  if (rows.empty()) return folded;
  folded.site = rows.front().site;
  folded.texts = rows.front().texts;
  for (const auto& row : rows) folded.ranks.insert(folded.ranks.end(), row.ranks.begin(), row.ranks.end());
  std::sort(folded.ranks.begin(), folded.ranks.end());
  for (const auto& [name, value] : rows.front().values) {
    double sum = 0;
    for (const auto& row : rows) {
      auto it = row.values.find(name);
      sum += it == row.values.end() ? 0 : it->second;
    }
    folded.values[name] = sum / static_cast<double>(rows.size());
  }
  return folded;
}

}  // namespace ptadvise::job_detail
