// data/comm.json -> CommConstants.
#include "comm/constants.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "gpuplan/error.hpp"
#include "gpuplan/names.hpp"
#include "util/embedded_data.hpp"

namespace gpuplan {

using nlohmann::json;

namespace {

// data/comm.json's name of each NCCL algorithm, in comm::Algorithm's order.
const char* kNcclAlgorithmKeys[comm::kNcclAlgorithms] = {"tree", "ring", "nvls", "nvls_tree"};

[[noreturn]] void reject(const std::string& field, const json& given, const std::string& accepted) {
  std::string shown = given.dump();
  if (shown.size() > 80) shown = shown.substr(0, 77) + "...";
  throw InputError(field, shown, accepted);
}

double number(const json& given, const std::string& field, double lo = 0, double hi = 1e9) {
  if (!given.is_number()) reject(field, given, fmt::format("a number from {} to {}", lo, hi));
  const double value = given.get<double>();
  if (!(value >= lo && value <= hi)) reject(field, given, fmt::format("a number from {} to {}", lo, hi));
  return value;
}

const json& member(const json& object, const char* key, const std::string& field) {
  if (!object.is_object() || !object.contains(key)) reject(field, object, fmt::format("an object with \"{}\"", key));
  return object.at(key);
}

template <std::size_t N>
std::array<double, N> numbers(const json& given, const std::string& field) {
  if (!given.is_array() || given.size() != N) reject(field, given, fmt::format("an array of {} numbers", N));
  std::array<double, N> out{};
  for (std::size_t i = 0; i < N; ++i) out[i] = number(given[i], field);
  return out;
}

AlgoProtoTable algorithm_protocol_table(const json& given, const std::string& field) {
  AlgoProtoTable table{};
  for (std::size_t a = 0; a < comm::kNcclAlgorithms; ++a) {
    const std::string row_field = field + "." + kNcclAlgorithmKeys[a];
    table.values[a] = numbers<comm::kProtocols>(member(given, kNcclAlgorithmKeys[a], field), row_field);
  }
  return table;
}

// The "value" of each named entry of the "constants" document, and the field name errors about it give.
class Entries {
 public:
  Entries(const json& document, const std::string& origin) : document_(document), origin_(origin) {}
  const json& value(const char* name) const {
    return member(member(document_, name, origin_ + ": constants"), "value", field(name));
  }
  std::string field(const char* name) const { return origin_ + ": constants." + std::string(name); }

 private:
  const json& document_;
  const std::string& origin_;
};

void decode_latencies(const Entries& entries, CommConstants& constants) {
  constants.base_latency_us =
      algorithm_protocol_table(entries.value("base_latency_us"), entries.field("base_latency_us"));
  constants.hw_latency_nvlink_us =
      algorithm_protocol_table(entries.value("hw_latency_nvlink_us"), entries.field("hw_latency_nvlink_us"));
  constants.hw_latency_pcie_us =
      algorithm_protocol_table(entries.value("hw_latency_pcie_us"), entries.field("hw_latency_pcie_us"));
  constants.hw_latency_net_us =
      algorithm_protocol_table(entries.value("hw_latency_net_us"), entries.field("hw_latency_net_us"));
  constants.latency_inter_us = number(entries.value("latency_inter_us"), entries.field("latency_inter_us"));
  {
    const json& overhead = entries.value("ring_net_overhead_us");
    const std::string field = entries.field("ring_net_overhead_us");
    constants.net_overhead_intel_us = number(member(overhead, "intel", field), field + ".intel");
    constants.net_overhead_amd_us = number(member(overhead, "amd", field), field + ".amd");
    constants.net_overhead_simple_factor = number(member(overhead, "simple_factor", field), field + ".simple_factor");
  }
  {
    const json& factor = entries.value("ring_simple_multinode_latency_factor");
    const std::string field = entries.field("ring_simple_multinode_latency_factor");
    constants.ring_simple_multinode_factor_pre_ampere =
        number(member(factor, "pre_ampere", field), field + ".pre_ampere");
    constants.ring_simple_multinode_factor =
        number(member(factor, "ampere_and_later", field), field + ".ampere_and_later");
  }
}

void decode_bus_fractions(const Entries& entries, CommConstants& constants) {
  const json& fractions = entries.value("protocol_bus_fraction");
  const std::string field = entries.field("protocol_bus_fraction");
  constants.ll_fraction = number(member(fractions, "ll", field), field + ".ll", 0, 1);
  constants.ll128_fraction = number(member(fractions, "ll128", field), field + ".ll128", 0, 1);
  constants.tree_fraction = number(member(fractions, "tree", field), field + ".tree", 0, 1);
  constants.tree_ll_divisor = number(member(fractions, "tree_ll_divisor", field), field + ".tree_ll_divisor", 1, 100);
  constants.tree_ll128_one_node =
      number(member(fractions, "tree_ll128_one_node", field), field + ".tree_ll128_one_node", 0, 1);
  constants.tree_ll128_multi_node =
      number(member(fractions, "tree_ll128_multi_node", field), field + ".tree_ll128_multi_node", 0, 1);
}

void decode_tree_correction(const Entries& entries, CommConstants& constants) {
  const json& per_protocol = entries.value("tree_correction");
  const std::string field = entries.field("tree_correction");
  if (!per_protocol.is_array() || per_protocol.size() != comm::kProtocols)
    reject(field, per_protocol, "an array of 3 arrays (LL, LL128, Simple)");
  for (std::size_t p = 0; p < comm::kProtocols; ++p) {
    if (!per_protocol[p].is_array() || per_protocol[p].empty())
      reject(field, per_protocol[p], "a non-empty array of factors");
    constants.tree_correction[p].clear();
    for (const auto& factor : per_protocol[p]) constants.tree_correction[p].push_back(number(factor, field, 0.01, 1));
  }
}

CommArchConstants arch_constants(const json& given, const std::string& field) {
  CommArchConstants arch;
  arch.min_sm = static_cast<int>(number(member(given, "min_sm", field), field + ".min_sm", 0, 1000));
  arch.ll_max_GBps = numbers<3>(member(given, "ll_max_GBps", field), field + ".ll_max_GBps");
  arch.per_channel_ring_ll128_GBps = number(member(given, "per_channel_ring_ll128_GBps", field), field);
  arch.per_channel_tree_ll128_GBps = numbers<3>(member(given, "per_channel_tree_ll128_GBps", field), field);
  arch.per_channel_tree_GBps = numbers<3>(member(given, "per_channel_tree_GBps", field), field);
  arch.per_channel_nvls_tree_GBps = numbers<3>(member(given, "per_channel_nvls_tree_GBps", field), field);
  arch.nvls_efficiency = number(member(given, "nvls_efficiency", field), field + ".nvls_efficiency", 0, 1);
  arch.channel_rung_intra_GBps = number(member(given, "channel_rung_intra_GBps", field), field, 0.01);
  arch.channel_rung_inter_GBps = number(member(given, "channel_rung_inter_GBps", field), field, 0.01);
  return arch;
}

void decode_arch(const Entries& entries, CommConstants& constants) {
  const json& per_arch = entries.value("arch");
  const std::string field = entries.field("arch");
  if (!per_arch.is_array() || per_arch.empty())
    reject(field, per_arch, "a non-empty array of per-architecture objects");
  constants.arch.clear();
  for (const auto& given : per_arch) constants.arch.push_back(arch_constants(given, field));
  std::sort(constants.arch.begin(), constants.arch.end(),
            [](const auto& a, const auto& b) { return a.min_sm < b.min_sm; });
}

void decode_channels_and_p2p(const Entries& entries, CommConstants& constants) {
  constants.channel_duplication =
      static_cast<int>(number(entries.value("channel_duplication"), entries.field("channel_duplication"), 1, 8));
  constants.nvls_channels =
      static_cast<int>(number(entries.value("nvls_channels"), entries.field("nvls_channels"), 2, 64));
  constants.nvls_measured_fraction =
      number(entries.value("nvls_measured_fraction"), entries.field("nvls_measured_fraction"), 0.01, 1);
  {
    const json& latency = entries.value("p2p_latency_us");
    const std::string field = entries.field("p2p_latency_us");
    constants.p2p_base_us = number(member(latency, "base", field), field + ".base");
    constants.p2p_nvlink_us = number(member(latency, "nvlink", field), field + ".nvlink");
    constants.p2p_pcie_us = number(member(latency, "pcie", field), field + ".pcie");
    constants.p2p_net_us = number(member(latency, "net", field), field + ".net");
  }
  constants.net_efficiency = number(entries.value("net_efficiency"), entries.field("net_efficiency"), 0.01, 1);
  constants.pcie_fallback_GBps =
      number(entries.value("pcie_fallback_GBps"), entries.field("pcie_fallback_GBps"), 0.01);
}

// {gpu: {collective: {bus_GBps, step_latency_us}}}; a file without the entry measures nothing.
void decode_measured(const json& document, const std::string& origin, CommConstants& constants) {
  constants.measured_intra_node.clear();
  if (!document.contains("measured_intra_node")) return;
  const std::string field = origin + ": constants.measured_intra_node";
  const json& gpus = member(document.at("measured_intra_node"), "value", field);
  if (!gpus.is_object()) reject(field, gpus, "an object {gpu: {collective: {bus_GBps, step_latency_us}}}");
  for (const auto& [gpu, collectives] : gpus.items()) {
    if (!collectives.is_object()) reject(field + "." + gpu, collectives, "an object {collective: {...}}");
    auto& slots = constants.measured_intra_node[gpu];
    for (const auto& [name, entry] : collectives.items()) {
      const std::string where = field + "." + gpu + "." + name;
      const std::optional<Collective> collective = collective_from_string(name);
      if (!collective) reject(where, name, "allreduce, allgather, reducescatter, alltoall, broadcast or sendrecv");
      TierCalibration& slot = slots[static_cast<std::size_t>(*collective)];
      slot.bus_GBps = number(member(entry, "bus_GBps", where), where + ".bus_GBps", 0.01, 1e6);
      slot.step_latency_us = number(member(entry, "step_latency_us", where), where + ".step_latency_us", 0, 1e6);
    }
  }
}

// Rebuilds the typed fields from the "constants" document (value of every entry), in data/comm.json's order:
// of several bad entries, the first is reported.
void decode(CommConstants& constants, const std::string& origin) {
  const Entries entries(constants.document, origin);
  decode_latencies(entries, constants);
  decode_bus_fractions(entries, constants);
  constants.tree_pattern_factor =
      number(entries.value("tree_pattern_factor"), entries.field("tree_pattern_factor"), 0, 1);
  decode_tree_correction(entries, constants);
  decode_arch(entries, constants);
  decode_channels_and_p2p(entries, constants);
  decode_measured(constants.document, origin, constants);
}

}  // namespace

const CommArchConstants& CommConstants::for_sm(int sm_version) const {
  const CommArchConstants* best = &arch.front();
  for (const auto& candidate : arch)
    if (candidate.min_sm <= sm_version) best = &candidate;
  return *best;
}

const TierCalibration* CommConstants::measured(std::string_view gpu, Collective collective) const {
  const auto it = measured_intra_node.find(gpu);
  if (it == measured_intra_node.end()) return nullptr;
  const TierCalibration& slot = it->second[static_cast<std::size_t>(collective)];
  return slot.bus_GBps > 0 ? &slot : nullptr;
}

std::shared_ptr<const CommConstants> builtin_comm_constants() {
  static const std::shared_ptr<const CommConstants> constants = [] {
    for (const auto& file : detail::embedded_files()) {
      if (file.path != "comm.json") continue;
      try {
        const json doc = json::parse(file.content);
        auto parsed = std::make_shared<CommConstants>();
        parsed->nccl_version = doc.at("nccl_version").get<std::string>();
        parsed->document = doc.at("constants");
        decode(*parsed, "builtin:comm.json");
        return std::shared_ptr<const CommConstants>(parsed);
      } catch (const std::exception& ex) {
        throw std::logic_error(std::string("built-in data/comm.json is broken: ") + ex.what());
      }
    }
    throw std::logic_error("built-in data/comm.json is missing");
  }();
  return constants;
}

std::shared_ptr<const CommConstants> patch_comm_constants(const CommConstants& base, const json& overrides,
                                                          const std::string& origin) {
  const std::string where = origin + ": comm.constants";
  if (!overrides.is_object()) reject(where, overrides, "an object {name: value} with names from data/comm.json");
  auto patched = std::make_shared<CommConstants>(base);
  std::vector<std::string> names;
  for (auto it = base.document.begin(); it != base.document.end(); ++it) names.push_back(it.key());
  for (auto it = overrides.begin(); it != overrides.end(); ++it) {
    const std::string& name = it.key();
    if (!name.empty() && name[0] == '_') continue;
    if (!base.document.contains(name)) {
      const std::string hint = did_you_mean(name, names);
      throw InputError(where + "." + name, "an unknown constant" + (hint.empty() ? "" : " (" + hint + ")"),
                       "a name from data/comm.json (docs/comm.md)");
    }
    json value = it.value();
    // Either the bare value or {"value": ..., "source": ...}.
    if (value.is_object() && value.contains("value")) value = value.at("value");
    json& slot = patched->document[name]["value"];
    if (slot.is_object() && value.is_object()) slot.merge_patch(value);
    else slot = value;
    patched->document[name]["source"] = "overridden by " + origin;
  }
  decode(*patched, origin);
  return patched;
}

}  // namespace gpuplan
