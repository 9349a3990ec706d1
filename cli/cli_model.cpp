#include <CLI/CLI.hpp>

#include "cli_model.h"

namespace ptadvise::cli {

namespace {

// "TEXT:{text,json}" (an IsMember validator's description) -> {"text", "json"}.
std::vector<std::string> choices_of(const std::string& type_name) {
  std::vector<std::string> choices;
  size_t open = type_name.find('{');
  size_t close = type_name.find('}', open);
  if (open == std::string::npos || close == std::string::npos) return choices;
  std::string list = type_name.substr(open + 1, close - open - 1);
  for (size_t start = 0; start <= list.size();) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    if (comma > start) choices.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return choices;
}

// "TEXT:{text,json}" -> "TEXT"; "DIR" stays.
std::string value_name_of(const std::string& type_name) {
  return type_name.substr(0, type_name.find(':'));
}

void add_options(const CLI::App& app, std::vector<CliOption>& options, std::vector<std::string>* positionals) {
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_group().empty()) continue;  // hidden
    if (!option->nonpositional()) {
      if (positionals != nullptr) positionals->push_back(option->get_name(true));
      continue;
    }
    CliOption described;
    for (const auto& name : option->get_lnames()) described.names.push_back("--" + name);
    for (const auto& name : option->get_snames()) described.names.push_back("-" + name);
    described.description = option->get_description();
    if (!option->get_type_name().empty()) {  // as CLI11's help: flags have no type name
      described.value_name = value_name_of(option->get_type_name());
      described.choices = choices_of(option->get_type_name());
    }
    options.push_back(std::move(described));
  }
}

}  // namespace

CliModel describe_cli(const CLI::App& app) {
  CliModel model;
  model.name = app.get_name();
  model.description = app.get_description();
  model.footer = app.get_footer();
  add_options(app, model.options, nullptr);
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); })) {
    CliCommand command;
    command.name = sub->get_name();
    command.description = sub->get_description();
    command.footer = sub->get_footer() == model.footer ? std::string() : sub->get_footer();  // not inherited
    add_options(*sub, command.options, &command.positionals);
    model.commands.push_back(std::move(command));
  }
  return model;
}

}  // namespace ptadvise::cli
