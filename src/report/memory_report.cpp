#include <fmt/format.h>

#include "gpuplan/report.hpp"

namespace gpuplan {

namespace {

struct Component {
  const char* key;
  const char* label;
  bytes_t StageMemory::*field;
};
constexpr Component kComponents[] = {
    {"weights", "weights", &StageMemory::weights},
    {"master_weights", "fp32 master weights", &StageMemory::master_weights},
    {"gradients", "gradients", &StageMemory::gradients},
    {"optimizer_states", "optimizer states", &StageMemory::optimizer_states},
    {"activations", "activations", &StageMemory::activations},
    {"logits", "logits and loss", &StageMemory::logits},
    {"comm_buffers", "communication buffers", &StageMemory::comm_buffers},
    {"runtime", "runtime (context, NCCL, allocator)", &StageMemory::runtime},
};

nlohmann::json stage_json(const StageMemory& st, bool activations_known) {
  nlohmann::json j;
  for (const auto& c : kComponents) j[c.key] = st.*c.field;
  if (!activations_known) {
    j["activations"] = nullptr;
    j["logits"] = nullptr;
  }
  j["total"] = st.total;
  j["peak_phase"] = st.peak_phase;
  j["phases"] = {{"forward_end", st.forward_peak}, {"backward", st.backward_peak}, {"optimizer_step", st.optimizer_peak}};
  j["stage"] = st.stage;
  j["layers"] = st.layers;
  j["in_flight_microbatches"] = st.in_flight;
  if (!st.terms.empty()) {
    auto& terms = j["terms"];
    for (const auto& t : st.terms)
      terms.push_back({{"component", t.component}, {"name", t.name}, {"bytes", static_cast<bytes_t>(t.bytes + 0.5)},
                       {"source", t.source}});
  }
  return j;
}

std::string gb(bytes_t b) { return format_bytes(static_cast<double>(b)); }

}  // namespace

nlohmann::json memory_json(const MemoryInputs& in, const MemoryReport& r, const std::vector<Suggestion>& fixes,
                           bool all_stages) {
  nlohmann::json j;
  const StageMemory& w = r.worst();
  j["per_gpu"] = stage_json(w, r.activations_known);
  j["host"] = {{"total", w.host}};
  j["nvme"] = {{"total", w.nvme}};
  j["capacity"] = r.capacity_bytes;
  j["fits"] = r.fits;
  j["stage"] = r.worst_stage;
  j["activations_known"] = r.activations_known;
  j["params"] = {{"total", static_cast<std::int64_t>(r.params_total + 0.5)}};
  j["layout"] = {{"gpus", r.gpus}, {"dp", r.dp}, {"tp", in.layout.tp}, {"pp", in.layout.pp}, {"cp", in.layout.cp},
                 {"ep", in.layout.ep}, {"zero", in.layout.zero}, {"microbatches", r.microbatches}};
  if (all_stages) {
    auto& stages = j["stages"];
    stages = nlohmann::json::array();
    for (const auto& st : r.stages) stages.push_back(stage_json(st, r.activations_known));
  }
  auto& s = j["suggestions"];
  s = nlohmann::json::array();
  for (const auto& f : fixes)
    s.push_back({{"change", f.change}, {"description", f.description}, {"new_total", f.new_total}, {"fits", f.fits},
                 {"extra_compute_fraction", f.extra_compute_fraction},
                 {"extra_comm_bytes_per_step", f.extra_comm_bytes_per_step}, {"extra_gpus", f.extra_gpus},
                 {"cost", f.cost}});
  return j;
}

std::string memory_text(const MemoryInputs& in, const MemoryReport& r, const std::vector<Suggestion>& fixes,
                        bool all_stages, bool explain) {
  std::string out;
  const std::string name = in.model ? in.model->name : fmt::format("{:.4g} parameters", in.params);
  out += fmt::format("Model {} ({:.4g} B parameters) on {} GPUs: tp {} x pp {} x cp {} x dp {}{}, ZeRO {}\n", name,
                     r.params_total / 1e9, r.gpus, in.layout.tp, in.layout.pp, in.layout.cp, r.dp,
                     in.layout.ep > 1 ? fmt::format(" (ep {})", in.layout.ep) : "", in.layout.zero);
  out += fmt::format("Training: {} precision, {} optimizer, sequence {}, micro-batch {}, {} microbatches per step\n\n",
                     to_string(in.training.precision), to_string(in.training.optimizer), in.training.seq_len,
                     in.training.micro_batch, r.microbatches);
  auto table = [&](const StageMemory& st) {
    out += fmt::format("Pipeline stage {} ({} layers, {} microbatches in flight), per GPU:\n", st.stage, st.layers,
                       st.in_flight);
    for (const auto& c : kComponents) {
      const bool unknown = !r.activations_known && (c.field == &StageMemory::activations || c.field == &StageMemory::logits);
      out += fmt::format("  {:<36} {:>24}\n", c.label, unknown ? "unknown (no architecture)" : gb(st.*c.field));
      if (c.field == &StageMemory::optimizer_states)
        out += fmt::format("  {:<36} {:>24}\n", "= model states",
                           gb(st.weights + st.master_weights + st.gradients + st.optimizer_states));
    }
    out += fmt::format("  {:<36} {:>24}   peak at {}\n", "total (peak over the step)", gb(st.total), st.peak_phase);
    out += fmt::format("  {:<36} forward end {}, backward {}, optimizer step {}\n", "phases", gb(st.forward_peak),
                       gb(st.backward_peak), gb(st.optimizer_peak));
    if (st.host > 0) out += fmt::format("  {:<36} {:>24}\n", "offloaded to host memory", gb(st.host));
    if (st.nvme > 0) out += fmt::format("  {:<36} {:>24}\n", "offloaded to NVMe", gb(st.nvme));
    if (explain) {
      out += "  Terms:\n";
      for (const auto& t : st.terms)
        out += fmt::format("    {:<17} {:<62} {:>22}  [{}]\n", t.component, t.name, format_bytes(t.bytes), t.source);
    }
    out += "\n";
  };
  if (all_stages) for (const auto& st : r.stages) table(st);
  else table(r.worst());
  const StageMemory& w = r.worst();
  out += fmt::format("Worst stage: {}. Needs {} of {} per GPU: {}.\n", r.worst_stage, gb(w.total), gb(r.capacity_bytes),
                     r.fits ? "fits" : "does NOT fit");
  if (!r.fits) {
    bool any = false;
    for (const auto& f : fixes) any = any || f.fits;
    out += any ? "Cheapest single changes that make it fit:\n" : "No single change makes it fit; the closest:\n";
    int shown = 0;
    for (const auto& f : fixes) {
      if (any && !f.fits) continue;
      if (++shown > 8) break;
      out += fmt::format("  {:<24} -> {} per GPU. Cost: {}. ({})\n", f.change, gb(f.new_total), f.cost, f.description);
    }
  }
  return out;
}

}  // namespace gpuplan
