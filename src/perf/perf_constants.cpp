// Constants of the compute model, read from the embedded data/perf.json and optional overlays of the same schema.
#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "gpuplan/error.hpp"
#include "gpuplan/estimate.hpp"
#include "perf/gemm_table.hpp"
#include "util/embedded_data.hpp"

namespace gpuplan {

namespace {

struct Field {
  const char* key;
  double PerfConstants::*member;
  double min;
  double max;
};

constexpr Field kFields[] = {
    {"gemm_max_efficiency", &PerfConstants::gemm_max_efficiency, 0.01, 1.0},
    {"fp8_gemm_max_efficiency", &PerfConstants::fp8_gemm_max_efficiency, 0.0, 1.0},
    {"fp8_split_accumulation_slowdown", &PerfConstants::fp8_split_accumulation_slowdown, 1.0, 4.0},
    {"gemm_memory_efficiency", &PerfConstants::gemm_memory_efficiency, 0.01, 1.0},
    {"roofline_sharpness", &PerfConstants::roofline_sharpness, 1.0, 64.0},
    {"gemm_tile_m", &PerfConstants::gemm_tile_m, 1.0, 4096.0},
    {"gemm_tile_n", &PerfConstants::gemm_tile_n, 1.0, 4096.0},
    {"sm_count", &PerfConstants::sm_count, 1.0, 10000.0},
    {"flash_attention_efficiency", &PerfConstants::flash_attention_efficiency, 0.01, 1.0},
    {"flash_attention_half_length", &PerfConstants::flash_attention_half_length, 0.0, 1e7},
    {"sdpa_attention_efficiency", &PerfConstants::sdpa_attention_efficiency, 0.0, 1.0},
    {"memory_bound_efficiency", &PerfConstants::memory_bound_efficiency, 0.01, 1.0},
    {"kernel_overhead_s", &PerfConstants::kernel_overhead_s, 0.0, 1e-2},
    {"host_op_s", &PerfConstants::host_op_s, 0.0, 1e-2},
    {"optimizer_bytes_per_param", &PerfConstants::optimizer_bytes_per_param, 0.0, 1000.0},
    {"host_link_efficiency", &PerfConstants::host_link_efficiency, 0.01, 1.0},
    {"cpu_adam_params_per_s", &PerfConstants::cpu_adam_params_per_s, 1.0, 1e15},
    {"dp_bucket_elements", &PerfConstants::dp_bucket_elements, 1.0, 1e13},
    {"dp_bucket_elements_per_rank", &PerfConstants::dp_bucket_elements_per_rank, 0.0, 1e13},
    {"step_overhead_s", &PerfConstants::step_overhead_s, 0.0, 1e3},
    {"overlap_slowdown", &PerfConstants::overlap_slowdown, 0.0, 1.0},
    {"gpu_speed_spread", &PerfConstants::gpu_speed_spread, 0.0, 0.5},
    {"tp_overlap_reserved_sms", &PerfConstants::tp_overlap_reserved_sms, 0.0, 1000.0},
    {"measured_gemm_efficiency", &PerfConstants::measured_gemm_efficiency, 0.0, 1.0},
    {"nvme_optimizer_overlap", &PerfConstants::nvme_optimizer_overlap, 0.0, 1.0},
    {"collective_call_s", &PerfConstants::collective_call_s, 0.0, 1e-2},
    {"permute_efficiency", &PerfConstants::permute_efficiency, 0.0, 1.0},
    {"cross_entropy_efficiency", &PerfConstants::cross_entropy_efficiency, 0.0, 1.0},
    {"te_cross_entropy_efficiency", &PerfConstants::te_cross_entropy_efficiency, 0.0, 1.0},
    {"compute_efficiency_scale", &PerfConstants::compute_efficiency_scale, 0.1, 2.0},
    {"comm_intra_efficiency", &PerfConstants::comm_intra_efficiency, 0.01, 1.0},
    {"comm_inter_efficiency", &PerfConstants::comm_inter_efficiency, 0.01, 1.0},
    {"microbatch_host_s", &PerfConstants::microbatch_host_s, 0.0, 10.0},
};

// Where the constants whose source the output names record it; nullptr for the others.
std::string* origin_field(PerfConstants& c, double PerfConstants::*member) {
  if (member == &PerfConstants::flash_attention_efficiency) return &c.flash_attention_origin;
  if (member == &PerfConstants::gemm_max_efficiency) return &c.gemm_max_origin;
  if (member == &PerfConstants::fp8_gemm_max_efficiency) return &c.fp8_gemm_origin;
  if (member == &PerfConstants::sdpa_attention_efficiency) return &c.sdpa_attention_origin;
  return nullptr;
}

// One section ({"key": {"value": v, "source": s}} or {"key": v}) applied onto `c`.
void apply_section(PerfConstants& c, const nlohmann::json& section, const std::string& origin, const std::string& where) {
  if (!section.is_object()) throw InputError(origin + ": " + where, section.dump(), "an object of constants");
  for (const auto& [key, entry] : section.items()) {
    if (!key.empty() && key[0] == '_') continue;
    const Field* field = nullptr;
    for (const auto& f : kFields)
      if (key == f.key) field = &f;
    if (field == nullptr) {
      std::string names;
      for (const auto& f : kFields) names += (names.empty() ? "" : ", ") + std::string(f.key);
      throw InputError(origin + ": " + where + "." + key, "unknown constant", names);
    }
    const nlohmann::json& v = entry.is_object() && entry.contains("value") ? entry.at("value") : entry;
    if (!v.is_number())
      throw InputError(origin + ": " + where + "." + key, v.dump(), "a number or {\"value\": number, \"source\": text}");
    const double x = v.get<double>();
    if (!(x >= field->min && x <= field->max))
      throw InputError(origin + ": " + where + "." + key, fmt::format("{}", x),
                       fmt::format("a number from {} to {}", field->min, field->max));
    c.*(field->member) = x;
    if (std::string* origin_of = origin_field(c, field->member))
      *origin_of = origin + ": " + where + "." + key +
                   (entry.is_object() && entry.contains("source") && entry.at("source").is_string()
                        ? " (" + entry.at("source").get<std::string>() + ")"
                        : "");
  }
}

// The sections of `j` for the GPU's architecture and for the GPU itself, in that order.
void apply_gpu_sections(PerfConstants& c, const nlohmann::json& j, const GpuSpec& gpu, const std::string& origin) {
  if (j.contains("architectures") && j.at("architectures").contains(gpu.architecture))
    apply_section(c, j.at("architectures").at(gpu.architecture), origin, "architectures." + gpu.architecture);
  if (j.contains("gpus") && j.at("gpus").contains(gpu.name))
    apply_section(c, j.at("gpus").at(gpu.name), origin, "gpus." + gpu.name);
}

void apply_file(PerfConstants& c, const nlohmann::json& j, const GpuSpec& gpu, const std::string& origin) {
  if (!j.is_object()) throw InputError(origin, "not a JSON object", "an object with defaults/architectures/gpus");
  for (const auto& [key, value] : j.items())
    if (key != "defaults" && key != "architectures" && key != "gpus" && (key.empty() || key[0] != '_'))
      throw InputError(origin + ": " + key, "unknown section", "defaults, architectures, gpus");
  if (j.contains("defaults")) apply_section(c, j.at("defaults"), origin, "defaults");
  apply_gpu_sections(c, j, gpu, origin);
}

const nlohmann::json& builtin_perf_json() {
  static const nlohmann::json j = [] {
    for (const auto& f : detail::embedded_files())
      if (f.path == "perf.json") return nlohmann::json::parse(f.content);
    throw std::logic_error("data/perf.json is not embedded");
  }();
  return j;
}

// The built-in defaults section, applied once: every estimate starts from it, and only the GPU's own sections
// differ between calls.
const PerfConstants& builtin_defaults() {
  static const PerfConstants c = [] {
    PerfConstants d;
    apply_section(d, builtin_perf_json().at("defaults"), "builtin:perf.json", "defaults");
    return d;
  }();
  return c;
}

// The defaults' flash-attention figure was measured on A100 (FlashAttention-2): for another architecture without
// an entry of its own it is an assumption, and the output says so.
std::string constant_attention_source(const PerfConstants& c, const GpuSpec& gpu) {
  const bool defaults = c.flash_attention_origin.rfind("builtin:perf.json: defaults.", 0) == 0;
  if (defaults && gpu.architecture != "ampere")
    return "assumed: data/perf.json defaults.flash_attention_efficiency, FlashAttention-2 as measured on A100 (no "
           "attention measurement for " + gpu.name + " or its architecture " + gpu.architecture + ")";
  return c.flash_attention_origin;
}

// A measured table's attention entries are Transformer Engine's fused attention; PyTorch's scaled_dot_product_attention
// runs other kernels (sdpa_attention_efficiency), or the flash-attention constant where that is not set.
std::string attention_source(const PerfConstants& c, const GpuSpec& gpu) {
  if (c.gemm_table && !c.gemm_table->attention.empty()) return c.gemm_table->source;
  return constant_attention_source(c, gpu);
}

std::string sdpa_attention_source(const PerfConstants& c, const GpuSpec& gpu) {
  if (c.sdpa_attention_efficiency > 0)
    return "PyTorch scaled_dot_product_attention (FlashAttention-2 kernels): " + c.sdpa_attention_origin;
  return "PyTorch scaled_dot_product_attention at flash_attention_efficiency: " + constant_attention_source(c, gpu);
}

// A GEMM efficiency set for this very GPU (data/perf.json's gpus section) or by the user's overlay is its own;
// the defaults' and an architecture's are assumptions for this GPU.
std::string gemm_source(const PerfConstants& c) {
  const std::string& origin = c.gemm_max_origin;
  const bool own = origin.find(": gpus.") != std::string::npos || origin.rfind("builtin:perf.json", 0) != 0;
  return own ? "gemm_max_efficiency with wave quantization, " + origin : "";
}

}  // namespace

PerfConstants perf_constants(const GpuSpec& gpu, const std::vector<std::pair<std::string, std::string>>& overlays) {
  PerfConstants c = builtin_defaults();
  apply_gpu_sections(c, builtin_perf_json(), gpu, "builtin:perf.json");
  c.source = "builtin:perf.json";
  c.gemm_table = perf::builtin_gemm_table(gpu.name);
  for (const auto& [origin, text] : overlays) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for numbers such as 1e405
      throw InputError(origin, "not valid JSON", std::string("a perf constants file (") + e.what() + ")");
    }
    apply_file(c, j, gpu, origin);
    c.source += " + " + origin;
  }
  if (c.measured_gemm_efficiency == 0) c.gemm_table = nullptr;
  c.attention_efficiency_source = attention_source(c, gpu);
  c.sdpa_attention_efficiency_source = sdpa_attention_source(c, gpu);
  c.gemm_constant_source = gemm_source(c);
  check_reserved_sms(c.tp_overlap_reserved_sms, c, gpu, "tp_overlap_reserved_sms");
  return c;
}

void check_reserved_sms(double reserved_sms, const PerfConstants& constants, const GpuSpec& gpu,
                        const std::string& field) {
  if (reserved_sms >= constants.sm_count)
    throw InputError(field, fmt::format("{:g}", reserved_sms),
                     fmt::format("fewer SMs than {} has (sm_count {:g})", gpu.name, constants.sm_count));
}

std::string PerfConstants::fp8_gemm_efficiency_source() const {
  const std::string layers =
      fp8_gemm_max_efficiency > 0
          ? "fp8 GEMMs: fp8_gemm_max_efficiency with wave quantization, " + fp8_gemm_origin
          : "fp8 GEMMs: assumed: gemm_max_efficiency of the fp8 peak (data/perf.json; no fp8 GEMM measurement for "
            "this GPU)";
  const std::string gradients =
      fp8_split_accumulation_slowdown > 1
          ? fmt::format("; their input- and weight-gradient GEMMs with the split accumulator, {:g}x the math time "
                        "(fp8_split_accumulation_slowdown, data/perf.json)",
                        fp8_split_accumulation_slowdown)
          : "";
  return layers + gradients + "; attention core, output layer and router in bf16: " + gemm_efficiency_source();
}

const std::string& PerfConstants::gemm_efficiency_source() const {
  static const std::string assumed =
      "assumed: gemm_max_efficiency with wave quantization (data/perf.json; no per-shape measurement for this GPU)";
  if (gemm_table) return gemm_table->source;
  return gemm_constant_source.empty() ? assumed : gemm_constant_source;
}

}  // namespace gpuplan
