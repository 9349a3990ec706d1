// The job section of the reports (print_job.h).
#include "print_job.h"

#include <algorithm>

#include "format.h"

namespace ptadvise::job_print {

namespace {

using format::fixed;
using format::jstr;

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

void json(const JobTable& job, std::ostream& out, const std::string& indent) {
  const std::string in = indent + "  ";
  out << "{\n";
  out << in << "\"directory\": " << jstr(job.directory) << ",\n";
  out << in << "\"ranks\": " << job.ranks << ",\n";
  out << in << "\"world_size\": " << job.world_size << ",\n";
  out << in << "\"backend\": " << jstr(job.backend) << ",\n";
  out << in << "\"aligned_collectives\": " << job.aligned_collectives << ",\n";
  out << in << "\"unmatched_collectives\": " << job.unmatched_collectives << ",\n";
  out << in << "\"matched_by\": " << jstr(job.by_sequence ? "sequence" : "step-order") << ",\n";
  out << in << "\"compute_imbalance_pct\": " << fixed(job.compute_imbalance_pct, 2) << ",\n";
  out << in << "\"folded_findings\": " << job.folded_findings << ",\n";
  out << in << "\"per_rank\": [";
  for (size_t i = 0; i < job.rows.size(); ++i) {
    const auto& r = job.rows[i];
    out << (i ? ",\n" : "\n") << in << "  {\"rank\": " << r.rank << ", \"path\": " << jstr(r.path)
        << ", \"step_ms\": " << fixed(r.step_ms, 3) << ", \"compute_ms\": " << fixed(r.compute_ms, 3)
        << ", \"communication_ms\": " << fixed(r.communication_ms, 3)
        << ", \"exposed_comm_ms\": " << fixed(r.exposed_comm_ms, 3) << ", \"overlap_pct\": " << fixed(r.overlap_pct, 2)
        << ", \"wait_ms\": " << fixed(r.wait_ms, 3) << ", \"data_loader_ms\": " << fixed(r.data_loader_ms, 3)
        << ", \"idle_ms\": " << fixed(r.idle_ms, 3) << ", \"last_pct\": " << fixed(r.last_pct, 2) << "}";
  }
  out << (job.rows.empty() ? "],\n" : "\n" + in + "],\n");
  out << in << "\"largest_skew\": [";
  for (size_t i = 0; i < job.worst.size(); ++i) {
    const auto& s = job.worst[i];
    out << (i ? ", " : "") << "{\"collective\": " << jstr(s.collective) << ", \"step\": " << s.step
        << ", \"order\": " << s.order << ", \"skew_ms\": " << fixed(s.skew_ms, 3) << ", \"last_rank\": " << s.last_rank
        << ", \"wait_ms\": " << fixed(s.wait_ms, 3) << "}";
  }
  out << "]\n" << indent << "}";
}

}  // namespace ptadvise::job_print
