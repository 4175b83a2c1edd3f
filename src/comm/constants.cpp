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

[[noreturn]] void bad(const std::string& field, const json& v, const std::string& accepted) {
  std::string given = v.dump();
  if (given.size() > 80) given = given.substr(0, 77) + "...";
  throw InputError(field, given, accepted);
}

double num(const json& v, const std::string& field, double lo = 0, double hi = 1e9) {
  if (!v.is_number()) bad(field, v, fmt::format("a number from {} to {}", lo, hi));
  const double d = v.get<double>();
  if (!(d >= lo && d <= hi)) bad(field, v, fmt::format("a number from {} to {}", lo, hi));
  return d;
}

const json& member(const json& obj, const char* key, const std::string& field) {
  if (!obj.is_object() || !obj.contains(key)) bad(field, obj, fmt::format("an object with \"{}\"", key));
  return obj.at(key);
}

template <std::size_t N>
std::array<double, N> triple(const json& v, const std::string& field) {
  if (!v.is_array() || v.size() != N) bad(field, v, fmt::format("an array of {} numbers", N));
  std::array<double, N> out{};
  for (std::size_t i = 0; i < N; ++i) out[i] = num(v[i], field);
  return out;
}

AlgoProtoTable table(const json& v, const std::string& field) {
  AlgoProtoTable t{};
  for (std::size_t a = 0; a < comm::kNcclAlgorithms; ++a) {
    const std::string f = field + "." + kNcclAlgorithmKeys[a];
    t.values[a] = triple<comm::kProtocols>(member(v, kNcclAlgorithmKeys[a], field), f);
  }
  return t;
}

// Rebuilds the typed fields from the "constants" document (value of every entry).
void decode(CommConstants& c, const std::string& origin) {
  const json& d = c.document;
  auto value = [&](const char* name) -> const json& {
    const std::string f = origin + ": constants." + name;
    return member(member(d, name, origin + ": constants"), "value", f);
  };
  auto field = [&](const char* name) { return origin + ": constants." + std::string(name); };
  c.base_latency_us = table(value("base_latency_us"), field("base_latency_us"));
  c.hw_latency_nvlink_us = table(value("hw_latency_nvlink_us"), field("hw_latency_nvlink_us"));
  c.hw_latency_pcie_us = table(value("hw_latency_pcie_us"), field("hw_latency_pcie_us"));
  c.hw_latency_net_us = table(value("hw_latency_net_us"), field("hw_latency_net_us"));
  c.latency_inter_us = num(value("latency_inter_us"), field("latency_inter_us"));
  {
    const json& v = value("ring_net_overhead_us");
    const std::string f = field("ring_net_overhead_us");
    c.net_overhead_intel_us = num(member(v, "intel", f), f + ".intel");
    c.net_overhead_amd_us = num(member(v, "amd", f), f + ".amd");
    c.net_overhead_simple_factor = num(member(v, "simple_factor", f), f + ".simple_factor");
  }
  {
    const json& v = value("ring_simple_multinode_latency_factor");
    const std::string f = field("ring_simple_multinode_latency_factor");
    c.ring_simple_multinode_factor_pre_ampere = num(member(v, "pre_ampere", f), f + ".pre_ampere");
    c.ring_simple_multinode_factor = num(member(v, "ampere_and_later", f), f + ".ampere_and_later");
  }
  {
    const json& v = value("protocol_bus_fraction");
    const std::string f = field("protocol_bus_fraction");
    c.ll_fraction = num(member(v, "ll", f), f + ".ll", 0, 1);
    c.ll128_fraction = num(member(v, "ll128", f), f + ".ll128", 0, 1);
    c.tree_fraction = num(member(v, "tree", f), f + ".tree", 0, 1);
    c.tree_ll_divisor = num(member(v, "tree_ll_divisor", f), f + ".tree_ll_divisor", 1, 100);
    c.tree_ll128_one_node = num(member(v, "tree_ll128_one_node", f), f + ".tree_ll128_one_node", 0, 1);
    c.tree_ll128_multi_node = num(member(v, "tree_ll128_multi_node", f), f + ".tree_ll128_multi_node", 0, 1);
  }
  c.tree_pattern_factor = num(value("tree_pattern_factor"), field("tree_pattern_factor"), 0, 1);
  {
    const json& v = value("tree_correction");
    const std::string f = field("tree_correction");
    if (!v.is_array() || v.size() != comm::kProtocols) bad(f, v, "an array of 3 arrays (LL, LL128, Simple)");
    for (std::size_t p = 0; p < comm::kProtocols; ++p) {
      if (!v[p].is_array() || v[p].empty()) bad(f, v[p], "a non-empty array of factors");
      c.tree_correction[p].clear();
      for (const auto& x : v[p]) c.tree_correction[p].push_back(num(x, f, 0.01, 1));
    }
  }
  {
    const json& v = value("arch");
    const std::string f = field("arch");
    if (!v.is_array() || v.empty()) bad(f, v, "a non-empty array of per-architecture objects");
    c.arch.clear();
    for (const auto& a : v) {
      CommArchConstants x;
      x.min_sm = static_cast<int>(num(member(a, "min_sm", f), f + ".min_sm", 0, 1000));
      x.ll_max_GBps = triple<3>(member(a, "ll_max_GBps", f), f + ".ll_max_GBps");
      x.per_channel_ring_ll128_GBps = num(member(a, "per_channel_ring_ll128_GBps", f), f);
      x.per_channel_tree_ll128_GBps = triple<3>(member(a, "per_channel_tree_ll128_GBps", f), f);
      x.per_channel_tree_GBps = triple<3>(member(a, "per_channel_tree_GBps", f), f);
      x.per_channel_nvls_tree_GBps = triple<3>(member(a, "per_channel_nvls_tree_GBps", f), f);
      x.nvls_efficiency = num(member(a, "nvls_efficiency", f), f + ".nvls_efficiency", 0, 1);
      x.channel_rung_intra_GBps = num(member(a, "channel_rung_intra_GBps", f), f, 0.01);
      x.channel_rung_inter_GBps = num(member(a, "channel_rung_inter_GBps", f), f, 0.01);
      c.arch.push_back(x);
    }
    std::sort(c.arch.begin(), c.arch.end(), [](const auto& a, const auto& b) { return a.min_sm < b.min_sm; });
  }
  c.channel_duplication = static_cast<int>(num(value("channel_duplication"), field("channel_duplication"), 1, 8));
  c.nvls_channels = static_cast<int>(num(value("nvls_channels"), field("nvls_channels"), 2, 64));
  {
    const json& v = value("p2p_latency_us");
    const std::string f = field("p2p_latency_us");
    c.p2p_base_us = num(member(v, "base", f), f + ".base");
    c.p2p_nvlink_us = num(member(v, "nvlink", f), f + ".nvlink");
    c.p2p_pcie_us = num(member(v, "pcie", f), f + ".pcie");
    c.p2p_net_us = num(member(v, "net", f), f + ".net");
  }
  c.pcie_fallback_GBps = num(value("pcie_fallback_GBps"), field("pcie_fallback_GBps"), 0.01);
}

}  // namespace

const CommArchConstants& CommConstants::for_sm(int sm_version) const {
  const CommArchConstants* best = &arch.front();
  for (const auto& a : arch)
    if (a.min_sm <= sm_version) best = &a;
  return *best;
}

std::shared_ptr<const CommConstants> builtin_comm_constants() {
  static const std::shared_ptr<const CommConstants> constants = [] {
    for (const auto& f : detail::embedded_files()) {
      if (f.path != "comm.json") continue;
      try {
        const json doc = json::parse(f.content);
        auto c = std::make_shared<CommConstants>();
        c->nccl_version = doc.at("nccl_version").get<std::string>();
        c->document = doc.at("constants");
        decode(*c, "builtin:comm.json");
        return std::shared_ptr<const CommConstants>(c);
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
  if (!overrides.is_object()) bad(where, overrides, "an object {name: value} with names from data/comm.json");
  auto c = std::make_shared<CommConstants>(base);
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
    json& slot = c->document[name]["value"];
    if (slot.is_object() && value.is_object()) slot.merge_patch(value);
    else slot = value;
    c->document[name]["source"] = "overridden by " + origin;
  }
  decode(*c, origin);
  return c;
}

}  // namespace gpuplan
