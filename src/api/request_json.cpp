// The option tables of the questions, and requests to and from JSON.
#include <array>
#include <cctype>

#include "api/fields.hpp"
#include "api/launch_beside.hpp"
#include "api/launch_request.hpp"

namespace gpuplan::api {

namespace {

constexpr std::array<std::pair<Question, std::string_view>, 9> kQuestions = {{{Question::model, "model"},
                                                                               {Question::memory, "memory"},
                                                                               {Question::estimate, "estimate"},
                                                                               {Question::plan, "plan"},
                                                                               {Question::comm, "comm"},
                                                                               {Question::calibrate, "calibrate"},
                                                                               {Question::topo, "topo"},
                                                                               {Question::catalog, "catalog"},
                                                                               {Question::size, "size"}}};

template <typename Request>
std::vector<OptionInfo> options_of() {
  static Request request;  // the fields point into it; only their descriptions are kept
  std::vector<OptionInfo> out;
  const detail::FieldList fields = detail::fields_of(request);
  for (const auto& f : fields.fields()) out.push_back(f.info);
  return out;
}

const std::vector<OptionInfo>& options_table(Question q) {
  static const std::array<std::vector<OptionInfo>, 9> tables = {
      options_of<ModelRequest>(),     options_of<MemoryRequest>(),    options_of<EstimateRequest>(),
      options_of<PlanRequest>(),      options_of<CommRequest>(),      options_of<CalibrateRequest>(),
      options_of<TopoRequest>(),      options_of<CatalogRequest>(),   options_of<SizeRequest>()};
  return tables[static_cast<std::size_t>(q)];
}

// The request's launch file first (when it has one), then what was given: given options win over the file's.
template <typename Request>
Request request_from(const nlohmann::json& document, std::optional<Question> question = std::nullopt) {
  Request request;
  const detail::FieldList fields = detail::fields_of(request);
  nlohmann::json from_file;
  if (question) {
    from_file = detail::launch_options(*question, document);
    if (!from_file.empty()) detail::read_fields(fields, from_file);
  }
  detail::read_fields(fields, document);
  if constexpr (requires { request.launch.changed_beside; }) {
    detail::release_file_gpus(fields, from_file, document);
    request.launch.changed_beside = detail::changed_beside(from_file, request);
    if (!from_file.empty()) request.launch.file_fields = detail::file_fields(fields, from_file, document);
  }
  return request;
}

template <typename Request>
nlohmann::ordered_json request_to(const Request& request) {
  Request copy = request;  // the field list points into a request it may fill; this one it only reads
  return detail::write_fields(detail::fields_of(copy));
}

bool path_character(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.'; }

}  // namespace

std::string_view to_string(Question question) { return kQuestions[static_cast<std::size_t>(question)].second; }

std::optional<Question> question_from_string(std::string_view name) {
  for (const auto& [q, n] : kQuestions)
    if (n == name) return q;
  return std::nullopt;
}

std::span<const OptionInfo> request_options(Question question) { return options_table(question); }

const OptionInfo* option_at_path(Question question, std::string_view path) {
  const OptionInfo* found = nullptr;
  for (const auto& o : options_table(question))
    if (o.path == path && (found == nullptr || found->negated)) found = &o;
  return found;
}

std::string rename_fields(Question question, std::string_view field,
                          const std::function<std::string(const OptionInfo&)>& rename, bool dotted_only) {
  std::string out;
  std::size_t i = 0;
  while (i < field.size()) {
    std::size_t end = i;
    while (end < field.size() && path_character(field[end])) ++end;
    if (end == i) {
      out += field[i++];
      continue;
    }
    const std::string_view word = field.substr(i, end - i);
    // Part of a hyphenated name or a path ("gpus.my-gpu", "/data/tp"): not an option, even where it spells one.
    const bool joined = (i > 0 && (field[i - 1] == '-' || field[i - 1] == '/')) ||
                        (end < field.size() && (field[end] == '-' || field[end] == '/'));
    const bool skip = joined || (dotted_only && word.find('.') == std::string_view::npos);
    const OptionInfo* option = skip ? nullptr : option_at_path(question, word);
    out += option != nullptr ? rename(*option) : std::string(word);
    i = end;
  }
  return out;
}

template <> ModelRequest from_json<ModelRequest>(const nlohmann::json& j) { return request_from<ModelRequest>(j); }
template <> MemoryRequest from_json<MemoryRequest>(const nlohmann::json& j) {
  return request_from<MemoryRequest>(j, Question::memory);
}
template <> EstimateRequest from_json<EstimateRequest>(const nlohmann::json& j) {
  return request_from<EstimateRequest>(j, Question::estimate);
}
template <> PlanRequest from_json<PlanRequest>(const nlohmann::json& j) {
  return request_from<PlanRequest>(j, Question::plan);
}
template <> CommRequest from_json<CommRequest>(const nlohmann::json& j) { return request_from<CommRequest>(j); }
template <> CalibrateRequest from_json<CalibrateRequest>(const nlohmann::json& j) {
  return request_from<CalibrateRequest>(j);
}
template <> TopoRequest from_json<TopoRequest>(const nlohmann::json& j) { return request_from<TopoRequest>(j); }
template <> CatalogRequest from_json<CatalogRequest>(const nlohmann::json& j) {
  return request_from<CatalogRequest>(j);
}
template <> SizeRequest from_json<SizeRequest>(const nlohmann::json& j) { return request_from<SizeRequest>(j); }

nlohmann::ordered_json to_json(const ModelRequest& r) { return request_to(r); }
nlohmann::ordered_json to_json(const MemoryRequest& r) { return request_to(r); }
nlohmann::ordered_json to_json(const EstimateRequest& r) { return request_to(r); }
nlohmann::ordered_json to_json(const PlanRequest& r) { return request_to(r); }
nlohmann::ordered_json to_json(const CommRequest& r) { return request_to(r); }
nlohmann::ordered_json to_json(const CalibrateRequest& r) { return request_to(r); }
nlohmann::ordered_json to_json(const TopoRequest& r) { return request_to(r); }
nlohmann::ordered_json to_json(const CatalogRequest& r) { return request_to(r); }
nlohmann::ordered_json to_json(const SizeRequest& r) { return request_to(r); }

}  // namespace gpuplan::api
