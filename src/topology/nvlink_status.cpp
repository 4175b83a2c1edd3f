// Parser for `nvidia-smi nvlink -s` / `nvidia-smi nvlink --status`.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "gpuplan/error.hpp"
#include "gpuplan/topology.hpp"
#include "topology/topo_text.hpp"
#include "util/from_chars.hpp"

namespace gpuplan {

using namespace topo_text;

const NvlinkGpuStatus* NvlinkStatus::find(int gpu) const {
  for (const auto& g : gpus) {
    if (g.gpu == gpu) return &g;
  }
  return nullptr;
}

namespace {

// "GPU 3: Tesla V100-SXM2-32GB (UUID: ...)" -> 3 and the name.
bool gpu_line(const std::string& line, int& index, std::string& name) {
  if (!line.starts_with("GPU ")) return false;
  const auto colon = line.find(':');
  if (colon == std::string::npos || !parse_int(trim(std::string_view(line).substr(4, colon - 4)), index)) return false;
  std::string rest = trim(std::string_view(line).substr(colon + 1));
  const auto uuid = rest.find("(UUID");
  if (uuid != std::string::npos) rest = trim(std::string_view(rest).substr(0, uuid));
  name = rest;
  return true;
}

// "Link 0: 26.562 GB/s" or "Link 3: <inactive>". rate < 0 means inactive.
bool link_line(const std::string& line, int& link, double& rate, bool& malformed) {
  malformed = false;
  if (!line.starts_with("Link ")) return false;
  const auto colon = line.find(':');
  if (colon == std::string::npos || !parse_int(trim(std::string_view(line).substr(5, colon - 5)), link)) return false;
  const std::string rest = trim(std::string_view(line).substr(colon + 1));
  if (starts_with_ci(rest, "<inactive>") || starts_with_ci(rest, "inactive")) {
    rate = -1;
    return true;
  }
  const auto t = tokens(rest);
  double v = 0;
  if (t.size() >= 2 && equals_ci(t[1], "GB/s")) {
    const auto [ptr, ec] = detail::from_chars_double(t[0].data(), t[0].data() + t[0].size(), v);
    if (ec == std::errc() && ptr == t[0].data() + t[0].size() && std::isfinite(v) && v > 0 && v < 1e4) {
      rate = v;
      return true;
    }
  }
  malformed = true;
  return true;
}

}  // namespace

NvlinkStatus parse_nvlink_status(std::string_view text) {
  NvlinkStatus st;
  const auto lines = clean_lines(text);
  NvlinkGpuStatus* cur = nullptr;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string line = trim(lines[i]);
    int index = 0;
    std::string name;
    int link = 0;
    double rate = 0;
    bool malformed = false;
    if (gpu_line(line, index, name)) {
      if (st.find(index) != nullptr) {
        throw InputError("nvidia-smi nvlink -s", fmt::format("GPU {} listed twice (line {})", index, i + 1),
                         "each GPU once");
      }
      st.gpus.push_back(NvlinkGpuStatus{index, name, 0, 0, {}, 0});
      cur = &st.gpus.back();
    } else if (link_line(line, link, rate, malformed)) {
      if (cur == nullptr) continue;  // links before any GPU line: not ours
      if (malformed) {
        throw InputError("nvidia-smi nvlink -s", fmt::format("line {}: '{}'", i + 1, excerpt(line)),
                         "'Link <n>: <rate> GB/s' or 'Link <n>: <inactive>'");
      }
      ++cur->links_listed;
      if (rate < 0) {
        cur->inactive_links.push_back(link);
      } else {
        if (cur->links_active > 0 && std::fabs(rate - cur->per_link_GBps) > 1e-6) {
          st.warnings.push_back(fmt::format("GPU {}: links run at different rates ({} and {} GB/s): the larger is used",
                                            cur->gpu, cur->per_link_GBps, rate));
        }
        ++cur->links_active;
        cur->per_link_GBps = std::max(cur->per_link_GBps, rate);
      }
    }
  }
  st.gpus.erase(std::remove_if(st.gpus.begin(), st.gpus.end(), [](const auto& g) { return g.links_listed == 0; }),
                st.gpus.end());
  if (st.gpus.empty()) {
    throw InputError("not an nvidia-smi nvlink -s output: no line 'GPU <i>: <name>' followed by 'Link <n>: <rate> "
                     "GB/s' lines");
  }
  std::vector<int> seen;
  for (const auto& g : st.gpus) seen.push_back(g.gpu);
  std::sort(seen.begin(), seen.end());
  std::vector<int> gaps;
  for (int k = 0, s = 0; k < seen.back() && gaps.size() < 1024; ++k) {
    while (s < static_cast<int>(seen.size()) && seen[s] < k) ++s;
    if (s >= static_cast<int>(seen.size()) || seen[s] != k) gaps.push_back(k);
  }
  if (!gaps.empty()) {
    st.warnings.push_back(fmt::format("GPU{} {} not listed (output elided?): their links are unknown",
                                      gaps.size() == 1 ? "" : "s", format_gpu_set(gaps)));
  }
  for (const auto& g : st.gpus) {
    if (!g.inactive_links.empty()) {
      std::string ls;
      for (int l : g.inactive_links) ls += (ls.empty() ? "" : ", ") + std::to_string(l);
      st.warnings.push_back(fmt::format("GPU {}: link{} {} inactive ({} of {} links active)", g.gpu,
                                        g.inactive_links.size() == 1 ? "" : "s", ls, g.links_active, g.links_listed));
    }
  }
  return st;
}

}  // namespace gpuplan
