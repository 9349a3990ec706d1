// Kernel classification as data: a YAML table (data/kernel_families.yaml, documented in
// docs/KERNEL_FAMILIES.md) sorts GPU kernel names into families — matrix work on Tensor/Matrix Cores,
// matrix work without them, communication, copies, elementwise, reductions, the rest. Users extend the
// shipped table with their own (config key `kernel_families:`, `--kernel-families FILE`); their rules
// are tried first. Each distinct interned name is matched once, in time linear in its length (RE2::Set).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ptadvise/timeline.h"

namespace ptadvise {

enum class KernelFamily : uint8_t {
  MatmulTensorCore,  // GEMM/convolution/attention on Tensor Cores (NVIDIA) or Matrix Cores (AMD MFMA)
  MatmulSimt,        // GEMM/convolution on the ordinary FP32 units (sgemm, SIMT, gemv)
  Communication,     // collectives and point-to-point kernels: NCCL, RCCL, NVSHMEM/DeepEP
  Copy,              // device-side data movement: copies, transposes, layout conversions, concatenation
  Elementwise,       // pointwise kernels (PyTorch's elementwise kernels, Triton pointwise, fills)
  Reduction,         // reductions and normalisations (sums, softmax, norms, Triton reductions)
  Other,             // everything else, and names no rule matches
};
inline constexpr size_t kKernelFamilyCount = 7;
// "matmul-tensor-core", "matmul-simt", "communication", "copy", "elementwise", "reduction", "other"
std::string_view to_string(KernelFamily family);
std::optional<KernelFamily> parse_kernel_family(std::string_view text);
inline bool is_matmul(KernelFamily family) {
  return family == KernelFamily::MatmulTensorCore || family == KernelFamily::MatmulSimt;
}

struct KernelTableError {
  std::string message;  // one line: file:line:column: what was expected
};

// One row of a table: names matching any of its patterns belong to `family` (first matching row wins).
struct KernelFamilyRule {
  KernelFamily family = KernelFamily::Other;
  std::vector<std::string> globs;    // '*' any run, '?' one character; the whole name must match
  std::vector<std::string> regexes;  // RE2, searched anywhere in the name unless anchored
  std::vector<std::string> examples; // real kernel names the row must classify as `family` (checked at load)
  std::string why;                   // one line for the documentation
  std::string origin;                // file:line of the row
};

class KernelClassifier {
 public:
  KernelClassifier();
  ~KernelClassifier();
  KernelClassifier(KernelClassifier&&) noexcept;
  KernelClassifier& operator=(KernelClassifier&&) noexcept;

  // The table shipped with ptadvise (data/kernel_families.yaml, compiled into the program).
  static const KernelClassifier& builtin();
  // Parses a table given as text; `file` names it in messages. Every row's examples must classify as the
  // row's family under this table alone, else that is an error too.
  static std::variant<KernelClassifier, KernelTableError> parse(std::string_view yaml, const std::string& file);
  static std::variant<KernelClassifier, KernelTableError> load(const std::string& path);
  // This table with `first`'s rows tried before its own (a user's table extends the shipped one).
  std::variant<KernelClassifier, KernelTableError> extended_by(const KernelClassifier& first) const;

  KernelFamily classify(std::string_view kernel_name) const;
  // The row that decides `kernel_name` (nullptr: none matches, the family is Other).
  const KernelFamilyRule* rule_for(std::string_view kernel_name) const;
  const std::vector<KernelFamilyRule>& rules() const { return rules_; }

 private:
  struct Compiled;
  std::vector<KernelFamilyRule> rules_;
  std::vector<uint32_t> pattern_rule_;  // RE2::Set pattern index -> row
  std::unique_ptr<Compiled> compiled_;
  static std::variant<KernelClassifier, KernelTableError> compile(std::vector<KernelFamilyRule> rules, bool check_examples);
};

// The family of every kernel name of one timeline, indexed by StringId (names that no kernel event
// carries stay Other). Each distinct name is classified once however many events carry it.
std::vector<KernelFamily> classify_kernels(const KernelClassifier& classifier, const Timeline& timeline);

// The table the program uses: the shipped one extended by the user's tables (given in order; later
// files are tried before earlier ones, so the most specific one wins). Errors name the file and line.
std::variant<KernelClassifier, KernelTableError> kernel_classifier_with(const std::vector<std::string>& user_tables);

}  // namespace ptadvise
