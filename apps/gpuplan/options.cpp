#include "options.hpp"

#include <algorithm>
#include <cctype>

namespace gpuplan::cli {

namespace {

bool has_flag(const api::OptionInfo& o) { return !o.positional || o.kind == api::OptionKind::model; }

std::string dashed(std::string_view name) {
  std::string out(name);
  std::replace(out.begin(), out.end(), '_', '-');
  return out;
}

std::string capitals(std::string_view name) {
  std::string out(name);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool is_list(api::OptionKind kind) {
  return kind == api::OptionKind::integer_list || kind == api::OptionKind::text_list ||
         kind == api::OptionKind::file_list;
}

void add_positional(CLI::App& command, const api::OptionInfo& o, const std::shared_ptr<nlohmann::json>& request) {
  const std::string key(o.name);
  command.add_option_function<std::string>(capitals(o.name), [request, key](const std::string& v) { (*request)[key] = v; },
                                           std::string(o.help))
      ->type_name(std::string(o.value));
}

void add_flag(CLI::App& command, const api::OptionInfo& o, const std::shared_ptr<nlohmann::json>& request) {
  const std::string key(o.name);
  const std::string flag = "--" + dashed(o.name);
  const std::string group(o.group);
  if (o.kind == api::OptionKind::flag) {
    command.add_flag_callback(flag, [request, key] { (*request)[key] = true; }, std::string(o.help))->group(group);
  } else if (is_list(o.kind)) {
    auto* option = command.add_option_function<std::vector<std::string>>(
        flag, [request, key](const std::vector<std::string>& v) { (*request)[key] = v; }, std::string(o.help));
    option->type_name(std::string(o.value))->group(group);
    if (o.kind != api::OptionKind::file_list) option->delimiter(',');
  } else {
    command.add_option_function<std::string>(flag, [request, key](const std::string& v) { (*request)[key] = v; },
                                             std::string(o.help))
        ->type_name(std::string(o.value))
        ->group(group);
  }
}

}  // namespace

std::string flag_of(const api::OptionInfo& o) { return has_flag(o) ? "--" + dashed(o.name) : capitals(o.name); }

void add_option(CLI::App& command, const api::OptionInfo& o, const std::shared_ptr<nlohmann::json>& request) {
  if (o.positional) add_positional(command, o, request);
  if (has_flag(o)) add_flag(command, o, request);
}

void add_options(CLI::App& command, api::Question question, const std::shared_ptr<nlohmann::json>& request) {
  for (const api::OptionInfo& o : api::request_options(question)) add_option(command, o, request);
}

InputError with_flags(const InputError& error, api::Question question) {
  if (error.field().empty()) return error;
  const auto flag = [](const api::OptionInfo& o) { return flag_of(o); };
  return InputError(api::rename_fields(question, error.field(), flag),
                    api::rename_fields(question, error.given(), flag, true),
                    api::rename_fields(question, error.accepted(), flag, true));
}

}  // namespace gpuplan::cli
