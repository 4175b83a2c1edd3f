// The memory result: the worst stage (or every stage) by component, with each term and its source, and the
// suggestions when it does not fit.
#include <fmt/format.h>

#include <algorithm>

#include "api/builders.hpp"
#include "framework/rules.hpp"

namespace gpuplan::api::detail {

namespace {

StageReport stage_report(const StageMemory& st, bool activations_known) {
  StageReport s;
  s.weights = st.weights;
  s.master_weights = st.master_weights;
  s.gradients = st.gradients;
  s.optimizer_states = st.optimizer_states;
  if (activations_known) {
    s.activations = st.activations;
    s.logits = st.logits;
  }
  s.comm_buffers = st.comm_buffers;
  s.runtime = st.runtime;
  s.total = st.total;
  s.wgrad_buffers = st.wgrad_buffers;
  s.allocated_peak = st.allocated_peak;
  s.reserved_peak = st.reserved_peak;
  s.outside_torch = st.outside_torch;
  s.peak_phase = st.peak_phase;
  s.phases = MemoryPhases{st.forward_peak, st.backward_peak, st.optimizer_peak};
  s.stage = st.stage;
  s.layers = st.layers;
  s.in_flight_microbatches = st.in_flight;
  if (st.host > 0) s.offloaded_to_host = st.host;
  if (st.nvme > 0) s.offloaded_to_nvme = st.nvme;
  if (!st.terms.empty()) {
    s.terms.emplace();
    for (const auto& t : st.terms)
      s.terms->push_back(MemoryTerm{t.component, t.name, static_cast<std::int64_t>(t.bytes + 0.5), t.source});
  }
  return s;
}

SuggestionReport suggestion_report(const Suggestion& f) {
  return SuggestionReport{f.change,          f.description, f.new_total, f.fits, f.extra_compute_fraction,
                          f.extra_comm_bytes_per_step, f.extra_gpus, f.cost};
}

// With something kept there: the per-node need, and the capacity when it is known.
NodeStorageReport storage_report(std::int64_t offloaded, const StorageCheck& c, std::optional<std::int64_t> pinned) {
  NodeStorageReport s;
  s.total = offloaded;
  if (c.per_gpu_bytes <= 0) return s;
  s.pinned_buffers = pinned;
  s.per_gpu = c.per_gpu_bytes;
  if (c.gpus_per_node > 0) {
    s.gpus_per_node = c.gpus_per_node;
    s.needed_per_node = c.needed_per_node_bytes;
  }
  if (c.checked) s.capacity_per_node = c.capacity_per_node_bytes;
  s.fits = c.fits;
  return s;
}

std::optional<std::vector<std::string>> shortfalls(const MemoryReport& r) {
  if (r.fits) return std::nullopt;
  std::vector<std::string> out;
  if (!r.gpu_fits) out.emplace_back("gpu memory");
  if (!r.host.fits) out.emplace_back("host memory");
  if (!r.nvme.fits) out.emplace_back("nvme");
  return out;
}

}  // namespace

MemoryResult memory_result(const MemoryInputs& in, const MemoryReport& r, const std::vector<Suggestion>& fixes,
                           bool all_stages) {
  MemoryResult m;
  const StageMemory& w = r.worst();
  m.per_gpu = stage_report(w, r.activations_known);
  std::int64_t pinned = 0;
  for (const auto& st : r.stages) pinned = std::max(pinned, st.host_buffers);
  m.host = storage_report(w.host, r.host, pinned);
  m.nvme = storage_report(w.nvme, r.nvme, std::nullopt);
  m.does_not_fit = shortfalls(r);
  if (!in.node.origin.empty()) m.node = in.node.origin;
  m.capacity = r.capacity_bytes;
  m.usable = r.usable_bytes;
  m.memory_margin = in.memory_margin;
  m.headroom = r.usable_bytes - w.total;
  m.gpu = in.gpu;
  m.gpu_assumed = in.gpu_assumed;
  m.fits = r.fits;
  m.stage = r.worst_stage;
  m.activations_known = r.activations_known;
  m.params.total = static_cast<std::int64_t>(r.params_total + 0.5);
  if (r.vocab_padded > 0) m.vocab_padded = r.vocab_padded;
  m.layout = LayoutSummary{r.gpus,          r.dp,           in.layout.tp,
                           in.layout.pp,    in.layout.cp,   in.layout.ep,
                           in.layout.zero,  r.microbatches, to_string(in.layout.cp_comm),
                           in.layout.cp_a2a};
  m.training = TrainingSummary{in.model ? in.model->name : std::string(), to_string(in.training.precision),
                               to_string(in.training.optimizer), in.training.seq_len, in.training.micro_batch,
                               in.training.fp8_param_gather};
  if (all_stages) {
    m.stages.emplace();
    for (const auto& st : r.stages) m.stages->push_back(stage_report(st, r.activations_known));
  }
  for (const auto& f : fixes) m.suggestions.push_back(suggestion_report(f));
  m.warnings = job_warnings(in);
  m.notes = in.notes;
  const framework::Release& release = framework::release_of(in.layout.framework);
  m.framework = FrameworkReport{std::string(framework::name_of(in.layout.framework)),
                                std::string(release.name) + " " + std::string(release.version), in.framework_rewrites};
  return m;
}

std::optional<std::string> sequence_warning(const ModelConfig& model, std::int64_t seq_len) {
  if (model.max_positions <= 0 || seq_len <= model.max_positions) return std::nullopt;
  const std::string why = model.positions == PositionKind::learned
                              ? "its learned position table has no rows beyond them"
                              : "that runs beyond the positions the model was trained for";
  return fmt::format("the sequence ({} tokens) is longer than {}'s maximum positions ({}): {}", seq_len, model.name,
                     model.max_positions, why);
}

std::vector<std::string> job_warnings(const MemoryInputs& in) {
  std::vector<std::string> out;
  if (in.model)
    if (auto w = sequence_warning(*in.model, in.training.seq_len)) out.push_back(std::move(*w));
  return out;
}

MemoryResult memory_result(const MemoryInputs& in, bool all_stages) {
  const MemoryReport report = estimate_memory(in, true);
  const std::vector<Suggestion> fixes = report.fits ? std::vector<Suggestion>{} : suggest_fixes(in);
  return memory_result(in, report, fixes, all_stages);
}

TimeReport time_report(const StepEstimate& e) {
  TimeReport t;
  t.step_s = e.step_s;
  for (const auto& [name, seconds] : e.breakdown) t.breakdown.emplace_back(std::string(name), seconds);
  return t;
}

}  // namespace gpuplan::api::detail
