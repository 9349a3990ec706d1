// The `check` pipeline: configuration -> rules -> traces -> findings -> suppressions -> ranking ->
// baseline -> outputs -> exit code. Shared by `ptadvise check` and `ptadvise run`.
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "format.h"
#include "progress.h"
#include "check_ranks.h"
#include "command_setup.h"
#include "ptadvise/advisor.h"
#include "ptadvise/io.h"
#include "ptadvise/loader.h"
#include "ptadvise/rules.h"

#ifndef PTADVISE_VERSION
#define PTADVISE_VERSION "0.1.0"
#endif

namespace ptadvise {

namespace {

using check_detail::Failure;
using check_detail::effective_config;
using check_detail::CompilingKernels;
using check_detail::compile_kernel_classifier;
using check_detail::kernel_classifier;
using check_detail::load_one;

constexpr int kClean = 0;
constexpr int kFailing = 1;
constexpr int kInputError = 2;

bool env_set(const char* name) {
  const char* value = std::getenv(name);
  return value && *value && std::string_view(value) != "0";
}

// --color wins; then NO_COLOR (no-color.org), then FORCE_COLOR / CLICOLOR_FORCE (force-color.org,
// bixense.com/clicolors), then whether stdout is a terminal.
bool use_color(const std::string& mode, const std::ostream& out) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color && *no_color) return false;
  if (env_set("FORCE_COLOR") || env_set("CLICOLOR_FORCE")) return true;
  const char* term = std::getenv("TERM");
  if (term && std::string_view(term) == "dumb") return false;
  return &out == &std::cout && isatty(STDOUT_FILENO) == 1;
}

// Columns to wrap text to: $COLUMNS when set, else the terminal's width, else 80 (pipes, files, CI).
size_t text_width(const std::ostream& out) {
  if (const char* env = std::getenv("COLUMNS"); env && *env) {
    char* end = nullptr;
    long value = std::strtol(env, &end, 10);
    if (end && *end == '\0' && value >= 20 && value <= 1000) return static_cast<size_t>(value);
  }
  winsize size{};
  if (&out == &std::cout && isatty(STDOUT_FILENO) == 1 && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 &&
      size.ws_col >= 20) {
    return size.ws_col;
  }
  return 80;
}

// OUT for one trace of several (`tagged`): `out.json` -> `out.rank1.json` (`.json.gz` kept together).
std::string per_trace_path(const std::string& path, const TraceReport& trace, size_t index, bool tagged) {
  if (!tagged) return path;
  std::string tag = trace.rank ? "rank" + std::to_string(*trace.rank) : "trace" + std::to_string(index);
  for (const char* ext : {".json.gz", ".json", ".gz"}) {
    std::string_view e(ext);
    if (path.size() > e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0) {
      return path.substr(0, path.size() - e.size()) + "." + tag + std::string(e);
    }
  }
  return path + "." + tag;
}

// Appends (for $GITHUB_STEP_SUMMARY, which other steps write too).
bool append_file(const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary | std::ios::app);
  file << text;
  file.close();
  return static_cast<bool>(file);
}

// Reports and baselines replace their file atomically: readers and a full disk never see half a file.
void write_output(const std::string& path, const std::string& text, const std::string& what) {
  if (auto error = write_file_atomically(path, text)) throw Failure{path + ": cannot write the " + what + ": " + *error};
}

// The paths of the configuration that the rules do not already check: the baseline must load and the
// source root must be a directory.
void validate_config_paths(const Config& config) {
  if (config.baseline) {
    auto loaded = load_baseline(*config.baseline);
    if (auto* error = std::get_if<ConfigError>(&loaded)) throw Failure{error->message};
  }
  std::error_code ec;
  if (config.source_root && !std::filesystem::is_directory(*config.source_root, ec)) {
    throw Failure{*config.source_root + ": source-root is not a directory"};
  }
}

std::vector<std::pair<OutputFormat, std::string>> parse_outputs(const CheckOptions& options) {
  std::vector<std::pair<OutputFormat, std::string>> outputs;
  for (const auto& [name, file] : options.outputs) {
    auto format = parse_output_format(name);
    if (!format) {
      throw Failure{"--output: unknown format '" + name + "' (expected text, json, sarif, github, junit, markdown or html)"};
    }
    if (file.empty()) throw Failure{"--output " + name + "=FILE: the file name is missing"};
    outputs.emplace_back(*format, file);
  }
  return outputs;
}

int run(const CheckOptions& options, std::ostream& out, std::ostream& err) {
  Config config = effective_config(options, options.fail_on);
  std::vector<std::string> directories{default_rules_directory()};
  directories.insert(directories.end(), config.rule_directories.begin(), config.rule_directories.end());
  // The kernel family tables are compiled while the rules are; their errors still come where they did.
  CompilingKernels compiling_kernels = compile_kernel_classifier(config);
  auto loaded_job_rules = load_job_rules(directories);
  if (auto* error = std::get_if<JobRuleError>(&loaded_job_rules)) throw Failure{error->message};
  const JobRuleSet& job_rules = std::get<JobRuleSet>(loaded_job_rules);
  // Job rules are selected, ignored and overridden by the same configuration as the per-trace rules.
  auto loaded_rules = load_selected_rules(config, job_rules.infos());  // fails closed: no rule to run is an error
  if (auto* error = std::get_if<ConfigError>(&loaded_rules)) throw Failure{error->message};
  const RuleSet& rules = std::get<SelectedRules>(loaded_rules).rules;
  const EvaluateOptions& selection = std::get<SelectedRules>(loaded_rules).selection;
  if (options.show_config) {
    validate_config_paths(config);  // what is printed is what a run would use, so it must load
    print_config(config, out);
    return kClean;
  }
  auto stdout_format = parse_output_format(options.format);
  if (!stdout_format) {
    throw Failure{"--format: unknown format '" + options.format +
                  "' (expected text, json, sarif, github, junit, markdown or html)"};
  }
  auto outputs = parse_outputs(options);
  if (options.color != "auto" && options.color != "always" && options.color != "never") {
    throw Failure{"--color: expected auto, always or never, got '" + options.color + "'"};
  }
  if (options.traces.empty()) throw Failure{"no trace given (usage: ptadvise check TRACE...)"};
  std::string baseline_path = options.baseline_path.empty() ? config.baseline.value_or("") : options.baseline_path;
  if (options.prune_baseline && baseline_path.empty()) throw Failure{"--prune-baseline needs --baseline FILE"};

  const KernelClassifier kernels = kernel_classifier(compiling_kernels);

  std::optional<Baseline> baseline;
  if (!baseline_path.empty()) {
    auto loaded = load_baseline(baseline_path);
    if (auto* error = std::get_if<ConfigError>(&loaded)) throw Failure{error->message};
    baseline = std::get<Baseline>(std::move(loaded));
  }

  std::error_code cwd_error;
  const std::string source_root = config.source_root.value_or(std::filesystem::current_path(cwd_error).string());
  size_t suppressed = 0;
  const EvaluateOptions& evaluate_options = selection;

  // Each rank is reduced to its report and its digest; job analysis works on digests only, so `merge`
  // of written digests gives the same job findings as checking the traces together.
  std::vector<TraceReport> traces;
  std::vector<RankDigest> digests;
  if (options.inputs_are_digests) {
    for (const auto& path : options.traces) {
      auto digest = read_digest(path);
      if (auto* error = std::get_if<DigestError>(&digest)) throw Failure{error->message};
      digests.push_back(std::get<RankDigest>(std::move(digest)));
      // The digest of a partial trace passed check's gate only under --accept-partial: merge asks again.
      if (!digests.back().partial.empty() && !options.accept_partial) {
        throw Failure{path + ": digest of a partial trace: " + digests.back().partial};
      }
      traces.push_back(check_detail::trace_from_digest(digests.back()));
      for (const auto& warning : traces.back().warnings) err << "ptadvise: warning: " << format::visible(warning) << "\n";
    }
  } else {
    auto listed = list_trace_inputs(options.traces);
    if (auto* failure = std::get_if<LoadError>(&listed)) throw Failure{failure->message};
    const std::vector<TraceInput>& inputs = std::get<std::vector<TraceInput>>(listed);
    std::vector<std::string> files;
    for (const TraceInput& input : inputs) files.push_back(input.path);
    Progress progress(progress_wanted());
    const check_detail::RankCheck check{rules, evaluate_options, kernels, source_root, options.accept_partial,
                                        options.whatif, !options.annotate_path.empty()};
    auto results = check_detail::check_files(files, check, options.threads, progress);
    size_t left_out = 0;
    for (size_t i = 0; i < results.size(); ++i) {
      auto& result = results[i];
      if (left_out_of_directory(inputs[i], result.not_a_trace)) {
        err << "ptadvise: warning: " << format::visible(result.error) << "; skipped\n";
        ++left_out;
        continue;
      }
      if (!result.error.empty()) throw Failure{result.error};
      for (const auto& warning : result.trace.warnings) err << "ptadvise: warning: " << format::visible(warning) << "\n";
      suppressed += result.suppressed;
      traces.push_back(std::move(result.trace));
      digests.push_back(std::move(result.digest));
    }
    if (traces.empty()) throw Failure{no_trace_left(left_out).message};
  }
  if (!options.digest_out.empty()) {
    for (size_t i = 0; i < digests.size(); ++i) {
      std::ostringstream text;
      write_digest(digests[i], text);
      const std::string path = per_trace_path(options.digest_out, traces[i], i, digests.size() > 1);
      write_output(path, text.str(), "digest");
    }
  }

  Report report;
  report.tool_version = PTADVISE_VERSION;
  report.fail_on = config.fail_on.value_or(Severity::Warning);
  report.source_root = source_root;
  report.suppressed = suppressed;
  for (const auto& rule : rules.infos()) {
    const auto& skip = selection.skip;
    if (std::find(skip.begin(), skip.end(), rule.id) != skip.end()) continue;
    RuleInfo info = rule;
    auto severity = selection.severities.find(rule.id);
    if (severity != selection.severities.end()) info.severity = severity->second;
    report.rules.push_back(std::move(info));
  }
  for (const auto& rule : job_rules.infos()) {
    const EvaluateOptions& options_selected = selection;
    if (std::find(options_selected.skip.begin(), options_selected.skip.end(), rule.id) != options_selected.skip.end()) continue;
    RuleInfo info = rule;
    auto severity = options_selected.severities.find(rule.id);
    if (severity != options_selected.severities.end()) info.severity = severity->second;
    report.rules.push_back(std::move(info));
  }
  for (auto& trace : traces) check_detail::finish_trace(trace, report.source_root, report.suppressed);
  report.traces = check_detail::report_jobs(std::move(traces), digests, job_rules, evaluate_options, err);

  std::vector<Finding> all;
  for (const auto& trace : report.traces) all.insert(all.end(), trace.findings.begin(), trace.findings.end());
  if (!options.write_baseline_path.empty()) {
    std::ostringstream text;
    Baseline written = make_baseline(all);
    write_baseline(written, text);
    write_output(options.write_baseline_path, text.str(), "baseline");
    err << "ptadvise: wrote " << written.entries.size() << " baseline entries to " << options.write_baseline_path
        << "\n";
    baseline = std::move(written);  // everything just accepted: this run passes
  }
  if (baseline) {
    report.has_baseline = true;
    BaselineMatch match = match_baseline(*baseline, all);
    size_t k = 0;
    for (auto& trace : report.traces) {
      trace.new_finding.clear();
      for (size_t i = 0; i < trace.findings.size(); ++i) trace.new_finding.push_back(!match.in_baseline[k++]);
    }
    report.stale = match.stale;
    if (options.prune_baseline && !match.stale.empty()) {
      Baseline pruned = *baseline;
      std::erase_if(pruned.entries, [&](const BaselineEntry& entry) {
        return std::any_of(match.stale.begin(), match.stale.end(),
                           [&](const BaselineEntry& s) { return s.fingerprint == entry.fingerprint; });
      });
      std::ostringstream text;
      write_baseline(pruned, text);
      write_output(baseline_path, text.str(), "pruned baseline");
      err << "ptadvise: removed " << match.stale.size() << " stale entries from " << baseline_path << "\n";
      report.stale.clear();
    }
  } else {
    for (auto& trace : report.traces) trace.new_finding.assign(trace.findings.size(), true);
  }

  if (!options.annotate_path.empty()) {
    std::set<std::string> written;  // two traces of the same rank must not overwrite each other
    std::map<std::string, int> world_sizes;
    for (const RankDigest& digest : digests) world_sizes[digest.path] = digest.world_size;
    for (size_t i = 0; i < report.traces.size(); ++i) {
      const TraceReport& trace = report.traces[i];
      if (trace.job) continue;  // a job's entry has no trace file of its own
      // A rank of a larger job names its rank even when checked alone: every rank of a job may run
      // `check --annotate OUT` (the torch.profiler hook does), and none overwrites another's file.
      const bool job_rank = trace.rank && world_sizes[trace.path] > 1;
      const bool tagged = job_rank || report.traces.size() > 1;
      std::string path = per_trace_path(options.annotate_path, trace, i, tagged);
      if (!written.insert(path).second) {
        TraceReport unranked = trace;
        unranked.rank.reset();
        path = per_trace_path(options.annotate_path, unranked, i, tagged);
        written.insert(path);
      }
      if (auto error = write_annotated_trace(trace.path, trace.findings, path, &trace.prediction)) throw Failure{error->message};
    }
  }

  PrintOptions print;
  print.color = use_color(options.color, out);
  print.detail = options.detail;
  print.width = text_width(out);
  bool github = *stdout_format == OutputFormat::Github;
  for (const auto& [format, file] : outputs) {
    std::ostringstream text;
    PrintOptions file_print;  // files never get colour; their text is 80 columns wide
    file_print.detail = options.detail;
    print_report(report, format, text, file_print);
    write_output(file, text.str(), std::string(to_string(format)) + " report");
    github = github || format == OutputFormat::Github;
  }
  print_report(report, *stdout_format, out, print);
  if (github) {
    const char* summary_path = std::getenv("GITHUB_STEP_SUMMARY");
    if (summary_path && *summary_path) {
      std::ostringstream text;
      print_markdown(report, text);
      if (!append_file(summary_path, text.str())) err << "ptadvise: warning: cannot append to $GITHUB_STEP_SUMMARY\n";
    }
  }
  out.flush();
  if (options.exit_zero) return kClean;
  return report.failing_count() > 0 ? kFailing : kClean;
}

int diff(const DiffOptions& options, std::ostream& out, std::ostream& err) {
  if (options.format != "text" && options.format != "json" && options.format != "markdown") {
    throw Failure{"--format: expected text, json or markdown, got '" + options.format + "'"};
  }
  // NaN would never fail the gate, inf never either while printing as 0 in JSON.
  if (!(options.max_regression_pct >= 0) || !std::isfinite(options.max_regression_pct)) {
    throw Failure{"--max-regression: expected a finite percentage >= 0"};
  }
  Config config = effective_config(options);
  CompilingKernels compiling_kernels = compile_kernel_classifier(config);
  auto loaded_rules = load_selected_rules(config);
  const KernelClassifier kernels = kernel_classifier(compiling_kernels);  // its error first, as before
  if (auto* error = std::get_if<ConfigError>(&loaded_rules)) throw Failure{error->message};
  const RuleSet& rules = std::get<SelectedRules>(loaded_rules).rules;

  const auto arg_keys = args_to_keep(&rules);
  Timeline base = load_one(options.base_trace, options.accept_partial, err, arg_keys);
  Timeline next = load_one(options.new_trace, options.accept_partial, err, arg_keys);
  Analysis base_analysis = analyze(base, kernels);
  Analysis next_analysis = analyze(next, kernels);
  const auto& evaluate_options = std::get<SelectedRules>(loaded_rules).selection;
  DiffReport report = diff_analyses(base_analysis, evaluate(rules, base_analysis, evaluate_options), next_analysis,
                                    evaluate(rules, next_analysis, evaluate_options), options.top);
  report.max_regression_pct = options.max_regression_pct;
  if (options.format == "json") {
    print_diff_json(report, out);
  } else if (options.format == "markdown") {
    print_diff_markdown(report, out);
  } else {
    print_diff_text(report, out, text_width(out));
  }
  out.flush();
  return report.regressed() ? kFailing : kClean;
}

}  // namespace

int run_diff(const DiffOptions& options, std::ostream& out, std::ostream& err) {
  try {
    return diff(options, out, err);
  } catch (const Failure& failure) {
    err << "ptadvise: error: " << format::visible(failure.message) << "\n";
    return kInputError;
  }
}

int run_check(const CheckOptions& options, std::ostream& out, std::ostream& err) {
  try {
    return run(options, out, err);
  } catch (const Failure& failure) {
    err << "ptadvise: error: " << format::visible(failure.message) << "\n";
    return kInputError;
  }
}

}  // namespace ptadvise
