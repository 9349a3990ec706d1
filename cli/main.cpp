#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cstdio>
#include <exception>
#include <iostream>
#include <new>
#include <stdexcept>
#include <string>

#include "commands.h"
#include "ptadvise/bad_alloc_shield.h"
#include "ptadvise/huge_pages.h"
#include "ptadvise/io.h"
#include "ptadvise/visible_text.h"
#include "usage.h"

// Sanitizer builds (CI runs the suite under ASan + UBSan): a memory error or undefined behaviour exits 86,
// distinct from 1 (findings) and 2 (bad input), so that a test expecting "findings" cannot pass on a crash.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PTADVISE_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define PTADVISE_SANITIZED 1
#endif
#ifdef PTADVISE_SANITIZED
extern "C" const char* __asan_default_options() { return "exitcode=86"; }
extern "C" const char* __ubsan_default_options() { return "halt_on_error=1:exitcode=86:print_stacktrace=1"; }
#endif

namespace ptadvise::cli {

int& exit_code() {
  static int code = kExitClean;
  return code;
}

// Messages name files and quote other processes' notes: one line each, control characters made visible.
void print_error(std::string_view message) { std::cerr << "ptadvise: error: " << ptadvise::visible_text(message) << '\n'; }
void print_warning(std::string_view message) {
  std::cerr << "ptadvise: warning: " << ptadvise::visible_text(message) << '\n';
}

bool parse_output_options(const std::vector<std::string>& outputs, std::vector<std::pair<std::string, std::string>>& parsed) {
  for (const auto& output : outputs) {
    auto equals = output.find('=');
    if (equals == std::string::npos) {
      print_error("--output: expected FORMAT=FILE, got '" + output + "'");
      exit_code() = kExitInputError;
      return false;
    }
    parsed.emplace_back(output.substr(0, equals), output.substr(equals + 1));
  }
  return true;
}

}  // namespace ptadvise::cli

namespace {

// Allocation-free: the message must get out when memory is what ran out.
constexpr char kOutOfMemory[] =
    "ptadvise: error: out of memory (the input needs more memory than this process may use; see "
    "PTADVISE_MEMORY_LIMIT in docs/TRACE_LOADING.md)\n";

// Memory ran out inside code that cannot be unwound (RE2, yaml-cpp, a noexcept destructor: a
// BadAllocShield), past the reserve set aside for it: the same
// line, the outputs' temporary files removed, and the exit code of every other out-of-memory end.
void exit_out_of_memory() noexcept {
  std::fflush(stdout);
  ptadvise::remove_uncommitted_outputs();
  ssize_t ignored = ::write(STDERR_FILENO, kOutOfMemory, sizeof kOutOfMemory - 1);
  (void)ignored;
  ::_exit(ptadvise::cli::kExitInputError);
}

// An environment setting the program cannot use: an input error, said before any work (a mistyped
// PTADVISE_MEMORY_LIMIT must not fall back to the measured budget unnoticed).
struct EnvironmentError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check_environment() {
  const char* limit = std::getenv("PTADVISE_MEMORY_LIMIT");
  if (limit != nullptr && *limit != '\0' && !ptadvise::parse_byte_size(limit)) {
    throw EnvironmentError("PTADVISE_MEMORY_LIMIT: expected a size such as 8GiB, 512MB or 1000000 (bytes), got '" +
                           std::string(limit) + "'");
  }
}

int run_cli(int argc, char** argv) {
  using namespace ptadvise::cli;
  CLI::App app{
      "ptadvise finds the known performance mistakes of PyTorch training runs in profiler traces,\n"
      "estimates what each one costs per step, ranks them and tells you the fix."};
  app.name("ptadvise");
  add_version_flag(app);
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 clean, 1 findings at or above --fail-on, 2 usage/config/rule/trace input error,\n"
      "3 capture failure, 4 internal error. `ptadvise COMMAND --help` tells more; `ptadvise explain RULE` documents a rule.\n"
      "Environment: PTADVISE_MEMORY_LIMIT (e.g. 8GiB) replaces the measured memory budget: a trace or inflated\n"
      ".json.gz beyond it exits 2 (docs/TRACE_LOADING.md); PTADVISE_RULES_DIR, PTADVISE_DATA_DIR (docs/INSTALL.md).");
  add_check_command(app);
  add_summary_command(app);
  add_rules_commands(app);
  add_diff_command(app);
  add_run_command(app);
  add_report_command(app);
  add_whatif_command(app);
  add_merge_command(app);
  add_generate_commands(app);  // last: they describe the commands above
  app.parse_complete_callback(check_environment);  // after --help and --version, before any command runs
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const EnvironmentError& e) {
    print_error(e.what());
    return kExitInputError;
  } catch (const CLI::ParseError& e) {
    // One line in the shape of every other error, with the probable intent, then where to read more.
    std::string message = unknown_argument(app, argc, argv);
    if (message.empty()) message = e.what();
    if (!message.empty() && message.back() == '\n') message.pop_back();
    print_error(message);
    std::cerr << "Run `ptadvise --help` or `ptadvise COMMAND --help` for usage.\n";
    return kExitInputError;
  }
  std::fflush(stdout);
  return exit_code();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ptadvise::cli;
  ptadvise::use_huge_pages(argv);
  ptadvise::reuse_freed_memory();
  ptadvise::set_out_of_memory_exit(exit_out_of_memory);
  try {
    return run_cli(argc, argv);
  } catch (const std::bad_alloc& e) {
    // Whatever ran out (a trace too large for the memory limit, a hostile input): one line, exit 2. A
    // structure stopped at its budget says which, and how to go on.
    std::fflush(stdout);
    if (const auto* budget = dynamic_cast<const ptadvise::BudgetExceeded*>(&e)) {
      print_error(budget->what());
    } else {
      std::fputs(kOutOfMemory, stderr);
    }
    return kExitInputError;
  } catch (const std::exception& e) {
    // A broken invariant (a bug, not the input's fault): one line and its own exit code, never an abort
    // that a CI gate could read as a crash of the program under test, and never a verdict on the trace.
    print_error(std::string("internal error: ") + e.what() + " (please report it with the command line)");
    return kExitInternalError;
  }
}
