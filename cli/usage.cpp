#include "usage.h"

#include <CLI/CLI.hpp>

#include <algorithm>

#include "ptadvise/rules.h"

namespace ptadvise::cli {

namespace {

std::vector<std::string> app_option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* option : app.get_options()) {
    for (const auto& name : option->get_lnames()) names.push_back("--" + name);
    for (const auto& name : option->get_snames()) names.push_back("-" + name);
  }
  return names;
}

}  // namespace

std::string nearest(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::string::npos;
  for (const auto& candidate : candidates) {
    size_t distance = edit_distance(word, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  // A typo: at most 2 edits, and fewer than half of the word.
  if (best_distance == 0 || best_distance > 2 || 2 * best_distance >= word.size()) return {};
  return best;
}

std::string unknown_argument(CLI::App& app, int argc, const char* const* argv) {
  std::vector<std::string> commands;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) commands.push_back(sub->get_name());
  CLI::App* current = &app;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg.starts_with("-")) {
      std::string name(arg.substr(0, arg.find('=')));
      std::vector<std::string> known = app_option_names(*current);
      if (std::find(known.begin(), known.end(), name) != known.end()) continue;
      std::string where = current == &app ? "" : " for `" + current->get_name() + "`";
      std::string guess = nearest(name, known);
      return "unknown option '" + name + "'" + where + (guess.empty() ? "" : " (did you mean `" + guess + "`?)");
    }
    if (current == &app) {
      if (std::find(commands.begin(), commands.end(), arg) != commands.end()) {
        current = app.get_subcommand(std::string(arg));
        continue;
      }
      std::string guess = nearest(arg, commands);
      return "unknown command '" + std::string(arg) + "'" + (guess.empty() ? "" : " (did you mean `" + guess + "`?)");
    }
  }
  return {};
}

}  // namespace ptadvise::cli
