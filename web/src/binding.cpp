// gpuplan's questions for JavaScript: a question's name and its request as JSON text in, the result as JSON text
// out, exactly what `gpuplan QUESTION --json` prints. Bad input comes back as {"error": {...}} naming the
// request's option, never as an exception across the boundary.
#include <emscripten.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "gpuplan/api.hpp"
#include "gpuplan/error.hpp"

// Search progress for the page: the worker's Module.onProgress(done, total), when set. A named JavaScript function
// (EM_JS) rather than inline EM_ASM, whose $0, $1 arguments are not C++ identifiers.
EM_JS(void, gpuplan_report_progress, (double done, double total), {
  if (Module.onProgress) Module.onProgress(done, total);
});

namespace {

namespace api = gpuplan::api;

void report_progress(std::uint64_t done, std::uint64_t total) {
  gpuplan_report_progress(static_cast<double>(done), static_cast<double>(total));
}

// The option of `question` an error's field names ("layout.tp" -> "tp"), for the page to mark that input.
std::string option_of(api::Question question, const std::string& field) {
  return api::rename_fields(question, field, [](const api::OptionInfo& o) { return std::string(o.name); });
}

nlohmann::ordered_json error_json(api::Question question, const gpuplan::InputError& e) {
  nlohmann::ordered_json error;
  error["field"] = option_of(question, e.field());
  error["given"] = e.given();
  error["accepted"] = e.accepted();
  // Errors that name no field (a parser's) carry their whole message.
  error["message"] = e.field().empty()
                         ? std::string(e.what())
                         : option_of(question, e.field()) + ": " + e.given() + "; accepted: " + e.accepted();
  return nlohmann::ordered_json{{"error", error}};
}

nlohmann::ordered_json answer(const char* question_name, const char* request_text) {
  const auto question = api::question_from_string(question_name);
  if (!question)
    return {{"error", {{"field", "question"}, {"given", question_name}, {"accepted", "model, memory, estimate, plan, "
                                                                                    "size, comm, topo, catalog"},
                       {"message", std::string("unknown question ") + question_name}}}};
  try {
    const auto request = nlohmann::json::parse(request_text, nullptr, false);
    if (request.is_discarded() || !request.is_object())
      return error_json(*question, gpuplan::InputError("request", "not a JSON object", "a JSON object of options"));
    return api::run_json(*question, request, report_progress);
  } catch (const gpuplan::InputError& e) {
    return error_json(*question, e);
  } catch (const std::exception& e) {
    return {{"error", {{"field", ""}, {"given", ""}, {"accepted", ""}, {"message", std::string("internal error: ") + e.what()}}}};
  }
}

}  // namespace

extern "C" {

// The result as JSON text, allocated with malloc: the caller frees it with gpuplan_free.
EMSCRIPTEN_KEEPALIVE char* gpuplan_answer(const char* question, const char* request_json) {
  const std::string text = answer(question, request_json).dump();
  char* out = static_cast<char*>(std::malloc(text.size() + 1));
  if (out != nullptr) std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

EMSCRIPTEN_KEEPALIVE void gpuplan_free(char* text) { std::free(text); }

}  // extern "C"
