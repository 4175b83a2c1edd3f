// Calibration: fit latency and bus bandwidth per tier to nccl-tests rows, write and read the override file.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "comm/constants.hpp"
#include "gpuplan/comm.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/names.hpp"
#include "util/json_input.hpp"
#include "util/json_text.hpp"

namespace gpuplan {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

double ring_steps(Collective c, int n) {
  return c == Collective::allreduce ? 2.0 * (n - 1) : static_cast<double>(n - 1);
}

struct Point {
  double steps, x, t_us;   // t = a + b*steps + x/bus (x = size*factor in bytes, bus in bytes/us)
};

// Weighted least squares (weights 1/t: relative residuals) on the selected columns of [1, steps, x].
bool solve(const std::vector<Point>& pts, const std::array<bool, 3>& use, std::array<double, 3>& coef) {
  std::array<std::array<double, 4>, 3> m{};   // augmented normal equations
  std::array<int, 3> idx{};
  int k = 0;
  for (int j = 0; j < 3; ++j)
    if (use[j]) idx[k++] = j;
  for (const auto& p : pts) {
    const double w = 1.0 / (p.t_us * p.t_us);
    const std::array<double, 3> row = {1.0, p.steps, p.x};
    for (int a = 0; a < k; ++a) {
      for (int b = 0; b < k; ++b) m[a][b] += w * row[idx[a]] * row[idx[b]];
      m[a][3] += w * row[idx[a]] * p.t_us;
    }
  }
  // Gaussian elimination with partial pivoting on a k x k system.
  for (int c = 0; c < k; ++c) {
    int piv = c;
    for (int r = c + 1; r < k; ++r)
      if (std::fabs(m[r][c]) > std::fabs(m[piv][c])) piv = r;
    if (std::fabs(m[piv][c]) < 1e-300) return false;
    std::swap(m[c], m[piv]);
    for (int r = 0; r < k; ++r) {
      if (r == c) continue;
      const double f = m[r][c] / m[c][c];
      for (int q = c; q < 4; ++q) m[r][q] -= f * m[c][q];
    }
  }
  coef = {0, 0, 0};
  for (int a = 0; a < k; ++a) {
    // Column 3 holds the right-hand side after elimination.
    coef[idx[a]] = m[a][3] / m[a][a];
  }
  return true;
}

TierFit fit_tier(const std::vector<const NcclTestsLog*>& logs, const char* tier) {
  TierFit out;
  if (logs.empty()) return out;
  std::vector<Point> pts;
  std::set<double> steps_seen;
  for (const auto* l : logs) {
    out.sources.push_back(l->origin);
    const double factor = busbw_factor(l->collective, l->ranks);
    const double steps = ring_steps(l->collective, l->ranks);
    for (const auto& r : l->rows) {
      pts.push_back({steps, r.size_bytes * factor, r.time_us});
      steps_seen.insert(steps);
    }
  }
  if (pts.size() < 2)
    throw InputError(fmt::format("logs ({} tier)", tier), fmt::format("{} result row(s)", pts.size()),
                     "at least 2 sizes per tier to fit a latency and a bandwidth");
  // Full model when several rank counts give distinct step counts; drop negative terms and refit.
  std::array<bool, 3> use = {true, steps_seen.size() >= 2, true};
  std::array<double, 3> coef{};
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (!solve(pts, use, coef)) {
      if (use[1]) {
        use[1] = false;
        continue;
      }
      throw InputError(fmt::format("logs ({} tier)", tier), "rows from which no fit can be made",
                       "rows of several sizes");
    }
    bool again = false;
    if (use[1] && coef[1] < 0) use[1] = false, again = true;
    else if (use[0] && coef[0] < 0) use[0] = false, again = true;
    if (!again) break;
  }
  if (!(coef[2] > 0))
    throw InputError(fmt::format("logs ({} tier)", tier), "times that do not grow with the size",
                     "nccl-tests rows spanning sizes large enough to be bandwidth-bound (MiB to GiB)");
  out.fitted = true;
  out.files = static_cast<int>(logs.size());
  out.points = static_cast<int>(pts.size());
  out.calibration.latency_us = std::max(0.0, coef[0]);
  out.calibration.step_latency_us = std::max(0.0, coef[1]);
  out.calibration.bus_GBps = 1.0 / coef[2] / 1e3;   // bytes/us -> GB/s
  double sum = 0, worst = 0;
  for (const auto& p : pts) {
    const double pred = coef[0] + coef[1] * p.steps + coef[2] * p.x;
    const double e = std::fabs(pred - p.t_us) / p.t_us;
    sum += e;
    worst = std::max(worst, e);
  }
  out.mean_rel_error = sum / static_cast<double>(pts.size());
  out.max_rel_error = worst;
  return out;
}

[[noreturn]] void bad(const std::string& field, const json& v, const std::string& accepted) {
  std::string given = v.dump();
  if (given.size() > 80) given = given.substr(0, 77) + "...";
  throw InputError(field, given, accepted);
}

void check_keys(const json& obj, const std::string& where, const std::vector<std::string>& keys) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string& k = it.key();
    if (!k.empty() && k[0] == '_') continue;
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
      const std::string hint = did_you_mean(k, keys);
      std::string list;
      for (const auto& x : keys) list += (list.empty() ? "" : ", ") + x;
      throw InputError(where + "." + k, "an unknown key" + (hint.empty() ? "" : " (" + hint + ")"), list);
    }
  }
}

TierCalibration read_tier(const json& v, const std::string& where) {
  if (!v.is_object()) bad(where, v, "an object with bus_GBps, latency_us, step_latency_us");
  check_keys(v, where, {"bus_GBps", "latency_us", "step_latency_us", "fit", "sources"});
  TierCalibration t;
  auto num = [&](const char* key, double hi) {
    if (!v.contains(key) || v.at(key).is_null()) return 0.0;
    const json& x = v.at(key);
    if (!x.is_number() || !(x.get<double>() >= 0) || x.get<double>() > hi)
      bad(where + "." + key, x, fmt::format("a number from 0 to {}", hi));
    return x.get<double>();
  };
  t.bus_GBps = num("bus_GBps", 1e6);
  t.latency_us = num("latency_us", 1e7);
  t.step_latency_us = num("step_latency_us", 1e6);
  return t;
}

}  // namespace

CommCalibration calibrate_comm(const std::vector<NcclTestsLog>& logs, int gpus_per_node) {
  if (logs.empty()) throw InputError("logs", "no files", "one or more nccl-tests output files");
  std::vector<const NcclTestsLog*> intra, inter;
  for (const auto& l : logs) {
    if (l.collective == Collective::sendrecv || l.collective == Collective::broadcast)
      throw InputError(l.origin, fmt::format("a {} output", to_string(l.collective)),
                       "all_reduce_perf, all_gather_perf, reduce_scatter_perf or alltoall_perf output");
    const bool across = l.hosts > 1 || (gpus_per_node > 0 && l.ranks > gpus_per_node);
    (across ? inter : intra).push_back(&l);
  }
  CommCalibration c;
  c.intra = fit_tier(intra, "intra-node");
  c.inter = fit_tier(inter, "inter-node");
  return c;
}

std::string comm_calibration_json(const CommCalibration& cal) {
  ordered_json comm;
  comm["_comment"] = "Fitted by gpuplan comm --calibrate: t = latency_us + steps x step_latency_us + size x factor / "
                     "bus_GBps per tier (docs/comm.md). Use with --comm-calibration.";
  std::vector<std::string> all;
  auto tier = [&](const TierFit& t) {
    ordered_json j;
    j["bus_GBps"] = t.calibration.bus_GBps;
    j["latency_us"] = t.calibration.latency_us;
    j["step_latency_us"] = t.calibration.step_latency_us;
    j["fit"] = {{"rows", t.points}, {"files", t.files}, {"mean_rel_error", t.mean_rel_error},
                {"max_rel_error", t.max_rel_error}};
    j["sources"] = t.sources;
    for (const auto& s : t.sources) all.push_back(s);
    return j;
  };
  if (cal.intra.fitted) comm["intra"] = tier(cal.intra);
  if (cal.inter.fitted) comm["inter"] = tier(cal.inter);
  comm["sources"] = all;
  ordered_json doc;
  doc["comm"] = comm;
  return gpuplan::detail::json_text(doc, 2) + "\n";
}

void apply_comm_overrides(Fabric& fabric, std::string_view json_text, std::string_view origin_view) {
  const std::string origin(origin_view);
  const json doc = detail::parse_json_input(json_text, origin, "a JSON object with a \"comm\" section");
  if (!doc.is_object() || !doc.contains("comm"))
    throw InputError(origin, doc.is_object() ? "an object without a \"comm\" section" : std::string(doc.type_name()),
                     "a JSON object with a \"comm\" section (as gpuplan comm --calibrate --out writes)");
  const json& comm = doc.at("comm");
  const std::string where = origin + ": comm";
  if (!comm.is_object()) bad(where, comm, "an object with intra, inter, constants, sources");
  check_keys(comm, where, {"intra", "inter", "constants", "sources"});
  Fabric next = fabric;
  if (comm.contains("intra")) next.intra = read_tier(comm.at("intra"), where + ".intra");
  if (comm.contains("inter")) next.inter = read_tier(comm.at("inter"), where + ".inter");
  if (comm.contains("constants")) {
    const CommConstants& base = fabric.constants ? *fabric.constants : *builtin_comm_constants();
    next.constants = patch_comm_constants(base, comm.at("constants"), origin);
  }
  if (comm.contains("sources")) {
    const json& s = comm.at("sources");
    if (!s.is_array()) bad(where + ".sources", s, "an array of file names");
    for (const auto& x : s) {
      if (!x.is_string()) bad(where + ".sources", x, "a file name (string)");
      next.calibration_sources.push_back(x.get<std::string>());
    }
  }
  if (next.calibration_sources.empty() && (comm.contains("intra") || comm.contains("inter")))
    next.calibration_sources.push_back(origin);
  fabric = std::move(next);
}

}  // namespace gpuplan
