// The job section of the reports (print_job.h).
#include "print_job.h"

#include <algorithm>
#include <vector>

#include "format.h"
#include "text_layout.h"

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

// Why the wait columns may disagree with the others (JobAnalysis::uncompared_steps).
std::string uncompared_note(const JobTable& job) {
  if (job.uncompared_steps == 0) return {};
  return "wait and last% leave out the " +
         (job.uncompared_steps == 1 ? std::string("step") : std::to_string(job.uncompared_steps) + " steps") +
         " whose collectives could not be compared (one not on every rank, or cut by the profiler's stop); the "
         "other columns are the ranks' own, over every step";
}

std::string right_aligned(std::string text, size_t width) {
  if (text.size() < width) text.insert(0, width - text.size(), ' ');
  return text;
}

// The joined replay in one sentence, or why there is none.
std::string prediction_line(const JobPrediction& p) {
  if (!p.available) return p.note.empty() ? std::string() : "none: " + p.note;
  std::string line = "measured " + fixed(p.measured_step_ms, 3) + " ms per step (slowest rank, " +
                     std::to_string(p.steps) + (p.steps == 1 ? " step" : " steps") + "), replayed " + fixed(p.replayed_step_ms, 3) +
                     " ms; after every rank's fixes " + fixed(p.predicted_step_ms, 3) + " ms (each rank replayed "
                     "alone: " + fixed(p.ranks_alone_step_ms, 3) + " ms); " + std::to_string(p.joined_collectives) +
                     " collectives end when their last rank arrives";
  if (!p.note.empty()) line += "; " + p.note;
  return line;
}

}  // namespace

void text(const JobTable& job, std::ostream& out, size_t width) {
  text::wrapped(out, "  job: ", 7, alignment_line(job), width, 4);
  // The note may name a rank's file: text from outside ptadvise.
  if (const std::string line = prediction_line(job.prediction); !line.empty()) {
    text::wrapped(out, "  joined replay: ", 16, format::visible(line), width, 4);
  }
  out << "  per rank, ms per step:\n";
  std::vector<std::vector<std::string>> table = {
      {"rank", "step", "compute", "comm", "exposed", "overlap%", "wait", "loader", "idle", "last%"}};
  for (const auto& row : job.rows) {
    table.push_back({std::to_string(row.rank), fixed(row.step_ms, 2), fixed(row.compute_ms, 2),
                     fixed(row.communication_ms, 2), fixed(row.exposed_comm_ms, 2), fixed(row.overlap_pct, 1),
                     fixed(row.wait_ms, 2), fixed(row.data_loader_ms, 2), fixed(row.idle_ms, 2), fixed(row.last_pct, 0)});
  }
  std::vector<size_t> widths(table.front().size(), 0);
  for (const auto& cells : table) {
    for (size_t c = 0; c < cells.size(); ++c) widths[c] = std::max(widths[c], cells[c].size() + (c == 0 ? 0 : 2));
  }
  for (const auto& cells : table) {
    out << "    ";
    for (size_t c = 0; c < cells.size(); ++c) out << right_aligned(cells[c], widths[c]);
    out << "\n";
  }
  if (const std::string note = uncompared_note(job); !note.empty()) text::wrapped(out, "  ", 2, note, width, 4);
  if (!job.worst.empty()) {
    out << "  largest arrival skew:\n";
    for (const auto& s : job.worst) {
      text::wrapped(out, "    ", 4,
                    s.collective + " #" + std::to_string(s.order) + " of step " + std::to_string(s.step) + ": skew " +
                        format::short_number(s.skew_ms) + " ms, last rank " + std::to_string(s.last_rank) +
                        ", the others waited " + format::short_number(s.wait_ms) + " ms",
                    width, 6);
    }
  }
  out << "\n";
}

void markdown(const JobTable& job, std::ostream& out) {
  out << "_job: " << alignment_line(job) << "_\n\n";
  if (const std::string line = prediction_line(job.prediction); !line.empty()) {
    out << "_joined replay: " << format::md_cell(line) << "_\n\n";
  }
  out << "| rank | step ms | compute | communication | exposed | overlap % | wait in collectives | data loader | idle | last % |\n"
         "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& row : job.rows) {
    out << "| " << row.rank << " | " << fixed(row.step_ms, 2) << " | " << fixed(row.compute_ms, 2) << " | "
        << fixed(row.communication_ms, 2) << " | " << fixed(row.exposed_comm_ms, 2) << " | "
        << fixed(row.overlap_pct, 1) << " | " << fixed(row.wait_ms, 2) << " | " << fixed(row.data_loader_ms, 2)
        << " | " << fixed(row.idle_ms, 2) << " | " << fixed(row.last_pct, 0) << " |\n";
  }
  out << "\n";
  if (const std::string note = uncompared_note(job); !note.empty()) out << "_" << note << "_\n\n";
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
  out["uncompared_steps"] = job.uncompared_steps;
  out["matched_by"] = job.by_sequence ? "sequence" : "step-order";
  out["compute_imbalance_pct"] = number(job.compute_imbalance_pct, 2);
  out["folded_findings"] = job.folded_findings;
  out["per_rank"] = std::move(rows);
  out["largest_skew"] = std::move(worst);
  const JobPrediction& p = job.prediction;
  Json whatif;
  whatif["available"] = p.available;
  if (p.available) {
    whatif["steps"] = p.steps;
    whatif["joined_collectives"] = p.joined_collectives;
    whatif["measured_step_ms"] = number(p.measured_step_ms, 3);
    whatif["replayed_step_ms"] = number(p.replayed_step_ms, 3);
    whatif["predicted_step_ms_all_fixes"] = number(p.predicted_step_ms, 3);
    whatif["ranks_alone_step_ms_all_fixes"] = number(p.ranks_alone_step_ms, 3);
  }
  whatif["note"] = p.note;
  out["whatif"] = std::move(whatif);
  return out;
}

}  // namespace ptadvise::job_print
