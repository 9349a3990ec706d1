// The job section of the reports (print_job.h).
#include "print_job.h"

#include <algorithm>

#include "format.h"

namespace ptadvise::job_print {

namespace {

using format::fixed;

std::string alignment_line(const JobTable& job) {
  std::string line = std::to_string(job.ranks) + " ranks";
  if (job.world_size > 1) line += " of " + std::to_string(job.world_size);
  if (!job.backend.empty()) line += ", " + job.backend;
  line += "; " + std::to_string(job.aligned_collectives) + " collectives matched on every rank (" +
          (job.by_sequence ? "by sequence number" : "by step and order") + ")";
  if (job.unmatched_collectives > 0) line += ", " + std::to_string(job.unmatched_collectives) + " not on every rank";
  line += "; compute imbalance " + fixed(job.compute_imbalance_pct, 1) + "%";
  if (job.folded_findings > 0) {
    line += "; " + std::to_string(job.folded_findings) + " per-rank finding" + (job.folded_findings == 1 ? "" : "s") +
            " shared by every rank shown once here";
  }
  return line;
}

std::string pad(std::string text, size_t width) {
  if (text.size() < width) text.insert(0, width - text.size(), ' ');
  return text;
}

}  // namespace

void text(const JobTable& job, std::ostream& out) {
  out << "  job: " << alignment_line(job) << "\n";
  out << "  per rank, ms per step:\n";
  const char* headers[] = {"rank", "step", "compute", "comm", "exposed", "overlap%", "wait", "loader", "idle", "last%"};
  out << "   ";
  for (const char* h : headers) out << pad(h, 9);
  out << "\n";
  for (const auto& row : job.rows) {
    out << "   " << pad(std::to_string(row.rank), 9) << pad(fixed(row.step_ms, 2), 9) << pad(fixed(row.compute_ms, 2), 9)
        << pad(fixed(row.communication_ms, 2), 9) << pad(fixed(row.exposed_comm_ms, 2), 9)
        << pad(fixed(row.overlap_pct, 1), 9) << pad(fixed(row.wait_ms, 2), 9) << pad(fixed(row.data_loader_ms, 2), 9)
        << pad(fixed(row.idle_ms, 2), 9) << pad(fixed(row.last_pct, 0), 9) << "\n";
  }
  if (!job.worst.empty()) {
    out << "  largest arrival skew:\n";
    for (const auto& s : job.worst) {
      out << "    " << s.collective << " #" << s.order << " of step " << s.step << ": skew " << fixed(s.skew_ms, 3)
          << " ms, last rank " << s.last_rank << ", the others waited " << fixed(s.wait_ms, 3) << " ms in total\n";
    }
  }
  out << "\n";
}

void markdown(const JobTable& job, std::ostream& out) {
  out << "_job: " << alignment_line(job) << "_\n\n";
  out << "| rank | step ms | compute | communication | exposed | overlap % | wait in collectives | data loader | idle | last % |\n"
         "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& row : job.rows) {
    out << "| " << row.rank << " | " << fixed(row.step_ms, 2) << " | " << fixed(row.compute_ms, 2) << " | "
        << fixed(row.communication_ms, 2) << " | " << fixed(row.exposed_comm_ms, 2) << " | "
        << fixed(row.overlap_pct, 1) << " | " << fixed(row.wait_ms, 2) << " | " << fixed(row.data_loader_ms, 2)
        << " | " << fixed(row.idle_ms, 2) << " | " << fixed(row.last_pct, 0) << " |\n";
  }
  out << "\n";
}

jsondoc::Json document(const JobTable& job) {
  using jsondoc::Json;
  using jsondoc::number;
  Json rows = Json::array();
  for (const auto& r : job.rows) {
    rows.push_back({{"rank", r.rank},
                    {"path", r.path},
                    {"step_ms", number(r.step_ms, 3)},
                    {"compute_ms", number(r.compute_ms, 3)},
                    {"communication_ms", number(r.communication_ms, 3)},
                    {"exposed_comm_ms", number(r.exposed_comm_ms, 3)},
                    {"overlap_pct", number(r.overlap_pct, 2)},
                    {"wait_ms", number(r.wait_ms, 3)},
                    {"data_loader_ms", number(r.data_loader_ms, 3)},
                    {"idle_ms", number(r.idle_ms, 3)},
                    {"last_pct", number(r.last_pct, 2)}});
  }
  Json worst = Json::array();
  for (const auto& s : job.worst) {
    worst.push_back({{"collective", s.collective},
                     {"step", s.step},
                     {"order", s.order},
                     {"skew_ms", number(s.skew_ms, 3)},
                     {"last_rank", s.last_rank},
                     {"wait_ms", number(s.wait_ms, 3)}});
  }
  Json out;
  out["directory"] = job.directory;
  out["ranks"] = job.ranks;
  out["world_size"] = job.world_size;
  out["backend"] = job.backend;
  out["aligned_collectives"] = job.aligned_collectives;
  out["unmatched_collectives"] = job.unmatched_collectives;
  out["matched_by"] = job.by_sequence ? "sequence" : "step-order";
  out["compute_imbalance_pct"] = number(job.compute_imbalance_pct, 2);
  out["folded_findings"] = job.folded_findings;
  out["per_rank"] = std::move(rows);
  out["largest_skew"] = std::move(worst);
  return out;
}

}  // namespace ptadvise::job_print
