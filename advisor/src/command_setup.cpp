// The set-up shared by the commands that evaluate rules on traces (command_setup.h).
#include "command_setup.h"

#include <filesystem>

#include "format.h"
#include "progress.h"
#include "ptadvise/loader.h"

namespace ptadvise::check_detail {

// The shipped kernel family table extended by the configuration's and the command line's tables.
namespace {

KernelClassifier classifier_or_failure(std::variant<KernelClassifier, KernelTableError> classifier) {
  if (auto* error = std::get_if<KernelTableError>(&classifier)) throw Failure{error->message};
  return std::move(std::get<KernelClassifier>(classifier));
}

}  // namespace

KernelClassifier kernel_classifier(const Config& config) {
  return classifier_or_failure(kernel_classifier_with(config.kernel_families));
}

CompilingKernels compile_kernel_classifier(const Config& config) {
  // launch::deferred too: without a thread to be had, it is compiled when waited for.
  return std::async(std::launch::async | std::launch::deferred,
                    [tables = config.kernel_families] { return kernel_classifier_with(tables); });
}

KernelClassifier kernel_classifier(CompilingKernels& compiling) { return classifier_or_failure(compiling.get()); }

Config effective_config(const RuleOptions& options, const std::optional<std::string>& fail_on) {
  Config config;
  std::string path = options.config_path;
  if (path.empty()) {
    std::error_code ec;
    path = find_config(std::filesystem::current_path(ec).string());
  }
  if (!path.empty()) {
    auto loaded = load_config(path);
    if (auto* error = std::get_if<ConfigError>(&loaded)) throw Failure{error->message};
    config = std::get<Config>(std::move(loaded));
  }
  if (!options.select.empty()) config.select = options.select;
  config.ignore.insert(config.ignore.end(), options.ignore.begin(), options.ignore.end());
  for (const auto& selector : options.select) config.positions["select\x1f" + selector] = "command line";
  for (const auto& selector : options.ignore) config.positions["ignore\x1f" + selector] = "command line";
  if (fail_on) {
    auto severity = parse_severity(*fail_on);
    if (!severity) throw Failure{"--fail-on: expected info, warning or error, got '" + *fail_on + "'"};
    config.fail_on = severity;
  }
  if (options.source_root) config.source_root = *options.source_root;
  for (const auto& dir : options.rule_directories) config.rule_directories.push_back(dir);
  for (const auto& table : options.kernel_family_tables) config.kernel_families.push_back(table);
  return config;
}

Timeline load_one(const std::string& path, bool accept_partial, std::ostream& err,
                  std::shared_ptr<const ArgKeySet> arg_keys) {
  auto loaded = load_traces_with_progress({path}, std::move(arg_keys));
  if (auto* error = std::get_if<LoadError>(&loaded)) throw Failure{error->message};
  auto& timelines = std::get<std::vector<Timeline>>(loaded);
  if (timelines.empty()) throw Failure{path + ": no trace found"};
  for (const auto& warning : timelines.front().stats.warnings) err << "ptadvise: warning: " << format::visible(warning) << "\n";
  if (auto partial = partial_trace_problem(timelines.front())) {
    if (!accept_partial) throw Failure{*partial};
    err << "ptadvise: warning: " << format::visible(*partial) << "\n";
  }
  if (timelines.size() > 1) {
    err << "ptadvise: warning: " << format::visible(path) << ": " << timelines.size() << " traces; using the first ("
        << format::visible(timelines.front().path) << ")\n";
  }
  return std::move(timelines.front());
}

}  // namespace ptadvise::check_detail
