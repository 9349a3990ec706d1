// Internal to advisor/: what every command that evaluates rules on traces sets up the same way — the
// effective configuration, the kernel family table, one trace loaded behind the partial-trace gate — so
// that `check`, `diff` and `whatif` report the same findings for the same trace and configuration.
#pragma once

#include <future>
#include <optional>
#include <ostream>
#include <string>
#include <variant>

#include "ptadvise/advisor.h"

namespace ptadvise::check_detail {

// An input or usage error: one line, exit 2 (the command's own handler prints it).
struct Failure {
  std::string message;
};

// .ptadvise.yaml (given, or found upward from the working directory) with the command line on top
// (`fail_on`: check's --fail-on).
Config effective_config(const RuleOptions& options, const std::optional<std::string>& fail_on = std::nullopt);

// The shipped kernel family table extended by the configuration's and the command line's tables.
KernelClassifier kernel_classifier(const Config& config);

// The same table compiled on another thread (YAML and regular expressions: a quarter of a small trace's
// start-up), while the command loads its rules; kernel_classifier(compiling) waits for it and throws the
// Failure kernel_classifier(config) would.
using CompilingKernels = std::future<std::variant<KernelClassifier, KernelTableError>>;
CompilingKernels compile_kernel_classifier(const Config& config);
KernelClassifier kernel_classifier(CompilingKernels& compiling);

// One trace (the first of a directory's, with a warning), its warnings on `err`; a trace mostly lost is a
// Failure unless `accept_partial`.
// `arg_keys` as LoadOptions::arg_keys (args_to_keep).
Timeline load_one(const std::string& path, bool accept_partial, std::ostream& err,
                  std::shared_ptr<const ArgKeySet> arg_keys = nullptr);

}  // namespace ptadvise::check_detail
