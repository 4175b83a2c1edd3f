#pragma once
// One request/result pair per question, the same for every front end: the gpuplan program, the Python module and
// the web page fill a request, call run, and show the result. Requests and results convert to and from JSON here
// (the keys `gpuplan ... --json` prints); errors are InputError naming the request field ("layout.tp") with what
// was given and what is accepted. Everything here is pure: files named in a request must have been read into it
// (gpuplan_host's load_files), and the search runs its workers one after another unless given a runner.
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "gpuplan/api/requests.hpp"
#include "gpuplan/api/results.hpp"
#include "gpuplan/plan.hpp"
#include "gpuplan/topology.hpp"

namespace gpuplan::api {

enum class Question { model, memory, estimate, plan, comm, calibrate, topo, catalog, size };
std::string_view to_string(Question question);                    // "memory"
std::optional<Question> question_from_string(std::string_view name);

// ---------------------------------------------------------------------------------------------------------------
// Options: every field of every request, for front ends that present them (flags, keywords, form fields).

enum class OptionKind { integer, number, text, flag, integer_list, text_list, file, file_list, model };

// The values a number (or each number of a list) may take; the ends are included unless marked open.
struct Bounds {
  double minimum = -std::numeric_limits<double>::infinity();
  double maximum = std::numeric_limits<double>::infinity();
  bool minimum_open = false, maximum_open = false;
  bool contains(double value) const;
  std::string describe(bool integer) const;   // "an integer from 1 to 65536", "a number > 0"
};

struct OptionInfo {
  std::string_view name;      // "tp": --tp, tp=, and the key of flat JSON
  std::string_view path;      // "layout.tp": the key of nested JSON, and the field InputError names
  OptionKind kind;
  std::string_view value;     // what to type: "INT", "NAME", "SIZE", "FILE", ...
  std::string_view help;      // what it is, its unit and its default
  std::string_view group;     // "Layout", "Training", ...
  bool negated = false;       // a flag that sets its field false (no_overheads -> hardware.overheads)
  bool positional = false;    // the command line also takes it without its flag
  Bounds bounds;              // integers and numbers: the values accepted
};

// Every option of a question, in the order --help lists them.
std::span<const OptionInfo> request_options(Question question);
// The option of `question` a request field belongs to; nullptr when no option has that path.
const OptionInfo* option_at_path(Question question, std::string_view path);
// A field named in an error ("layout.tp", or several: "layout.tp x layout.pp") with each request path replaced
// by what `rename` gives its option ("--tp"). Other words are kept. With `dotted_only` only paths with a dot are
// replaced (for free text, where a word such as "model" is just a word).
std::string rename_fields(Question question, std::string_view field,
                          const std::function<std::string(const OptionInfo&)>& rename, bool dotted_only = false);

// ---------------------------------------------------------------------------------------------------------------
// Answers

ModelResult run(const ModelRequest& request);
MemoryResult run(const MemoryRequest& request);
EstimateResult run(const EstimateRequest& request);
// `runner` null: the search's workers run one after another (gpuplan_host's ThreadRunner: on threads).
PlanResult run(const PlanRequest& request, ProgressCallback progress = {}, const ParallelRunner* runner = nullptr);
CommResult run(const CommRequest& request);
CalibrateResult run(const CalibrateRequest& request);
TopoResult run(const TopoRequest& request);
// The same for a topology already read (gpuplan_host's NVML discovery); the request's other options apply.
TopoResult run(const TopoRequest& request, const Topology& topology);
CatalogResult run(const CatalogRequest& request);
// One layout search per system and node count; `runner` runs the searches (null: one after another). Progress
// counts the searches done.
SizeResult run(const SizeRequest& request, ProgressCallback progress = {}, const ParallelRunner* runner = nullptr);

// Any question by name, request and result as JSON. The request is nested ({"layout": {"tp": 8}}) or flat
// ({"tp": 8}: option names at the top level), or both.
nlohmann::ordered_json run_json(Question question, const nlohmann::json& request, ProgressCallback progress = {},
                                const ParallelRunner* runner = nullptr);

// ---------------------------------------------------------------------------------------------------------------
// JSON. Requests: from nested or flat JSON (unknown keys are errors naming them), to nested JSON. Results: the
// JSON `gpuplan ... --json` prints, and back.

template <typename T>
T from_json(const nlohmann::json& json);
nlohmann::ordered_json to_json(const ModelRequest& request);
nlohmann::ordered_json to_json(const MemoryRequest& request);
nlohmann::ordered_json to_json(const EstimateRequest& request);
nlohmann::ordered_json to_json(const PlanRequest& request);
nlohmann::ordered_json to_json(const CommRequest& request);
nlohmann::ordered_json to_json(const CalibrateRequest& request);
nlohmann::ordered_json to_json(const TopoRequest& request);
nlohmann::ordered_json to_json(const CatalogRequest& request);
nlohmann::ordered_json to_json(const SizeRequest& request);

nlohmann::ordered_json to_json(const ModelResult& result);
nlohmann::ordered_json to_json(const MemoryResult& result);
nlohmann::ordered_json to_json(const EstimateResult& result);
nlohmann::ordered_json to_json(const PlanResult& result);
nlohmann::ordered_json to_json(const CommResult& result);
nlohmann::ordered_json to_json(const CalibrateResult& result);
nlohmann::ordered_json to_json(const TopoResult& result);
nlohmann::ordered_json to_json(const CatalogResult& result);
nlohmann::ordered_json to_json(const SizeResult& result);
// The calibration file as `--comm-calibration` reads it (what --out writes).
std::string calibration_file_text(const CalibrateResult& result);

// ---------------------------------------------------------------------------------------------------------------
// Text: what `gpuplan ...` prints without --json (src/report).

std::string to_text(const ModelResult& result);
std::string to_text(const MemoryResult& result, bool explain);
std::string to_text(const EstimateResult& result);
std::string to_text(const PlanResult& result);
std::string to_text(const CommResult& result);
std::string to_text(const CalibrateResult& result);
std::string to_text(const TopoResult& result);
std::string to_text(const CatalogResult& result);
// With `power`, the energy columns; with `explain`, why the curves bend.
std::string to_text(const SizeResult& result, bool power, bool explain);

}  // namespace gpuplan::api
