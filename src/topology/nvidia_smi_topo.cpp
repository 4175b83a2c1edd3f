// Parser for `nvidia-smi topo -m` (every driver format from 2016 on; see docs/topology.md).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "gpuplan/error.hpp"
#include "gpuplan/topology.hpp"
#include "topology/topo_text.hpp"

namespace gpuplan {

using namespace topo_text;

namespace {

constexpr int kMaxDevices = 1024;  // columns; far above any node (NVL72 has 72 GPUs), keeps n x n bounded
constexpr const char* kAcceptedCodes = "X, NV<n>, PIX, PXB, PHB, NODE, SYS, SOC";

bool numbered_label(std::string_view t, std::string_view prefix, int& index) {
  return t.size() > prefix.size() && t.substr(0, prefix.size()) == prefix &&
         parse_int(t.substr(prefix.size()), index);
}

// Codes nvidia-smi prints in a topo -m matrix.
bool is_nvidia_code(std::string_view t) {
  const PathCode c = classify_code(t);
  switch (c.type) {
    case PathType::self: return t == "X";
    case PathType::nvlink:
    case PathType::pix:
    case PathType::pxb:
    case PathType::phb:
    case PathType::node:
    case PathType::sys: return true;
    default: return false;
  }
}

// Values of the affinity columns: "0-47,96-143", "3", "N/A".
bool is_affinity_like(std::string_view t) {
  if (equals_ci(t, "N/A")) return true;
  if (t.empty()) return false;
  return std::all_of(t.begin(), t.end(), [](char c) { return (c >= '0' && c <= '9') || c == ',' || c == '-'; });
}

// "0-47,96-143", "0,2,4", "5": ranges and single cores separated by commas.
bool is_cpu_list(std::string_view t) {
  if (t.empty()) return false;
  std::size_t i = 0;
  while (true) {
    int a = 0;
    std::size_t j = i;
    while (j < t.size() && t[j] >= '0' && t[j] <= '9') ++j;
    if (j == i || !parse_int(t.substr(i, j - i), a)) return false;
    i = j;
    if (i < t.size() && t[i] == '-') {
      ++i;
      j = i;
      while (j < t.size() && t[j] >= '0' && t[j] <= '9') ++j;
      int b = 0;
      if (j == i || !parse_int(t.substr(i, j - i), b) || b < a) return false;
      i = j;
    }
    if (i == t.size()) return true;
    if (t[i] != ',') return false;
    ++i;
  }
}

bool is_comment_or_prompt(const std::string& trimmed) {
  return trimmed.starts_with('#') || trimmed.starts_with("$ ") || trimmed.starts_with("> ") ||
         trimmed.starts_with("```");
}

enum class AffinityColumn { cpu, numa, gpu_numa_id };

struct Row {
  std::string label;
  std::vector<std::string> codes;
  std::vector<std::string> values;  // after the codes
  bool clipped = false;             // ended before all columns
};

}  // namespace

PathCode classify_code(std::string_view code) {
  PathCode c;
  if (code == "X" || equals_ci(code, "SELF")) c.type = PathType::self;
  else if (code == "PIX") c.type = PathType::pix;
  else if (code == "PXB") c.type = PathType::pxb;
  else if (code == "PHB") c.type = PathType::phb;
  else if (code == "NODE") c.type = PathType::node;
  else if (code == "SYS" || code == "SOC") c.type = PathType::sys;
  else if (equals_ci(code, "XGMI")) {
    c.type = PathType::xgmi;
    c.links = 1;
  } else if (equals_ci(code, "PCIE")) c.type = PathType::pcie;
  else if (code.size() > 2 && code.substr(0, 2) == "NV") {
    int n = 0;
    if (parse_int(code.substr(2), n) && n > 0 && n <= 1000) {
      c.type = PathType::nvlink;
      c.links = n;
    }
  }
  return c;
}

int path_rank(PathType type) {
  switch (type) {
    case PathType::self: return 0;
    case PathType::nvlink: return 1;
    case PathType::xgmi: return 1;
    case PathType::pix: return 2;
    case PathType::pxb: return 3;
    case PathType::phb: return 4;
    case PathType::node: return 5;
    case PathType::pcie: return 6;
    case PathType::sys: return 7;
    case PathType::unknown: return 8;
  }
  return 8;
}

std::string describe_path(std::string_view code) {
  const PathCode c = classify_code(code);
  switch (c.type) {
    case PathType::self: return "the same device";
    case PathType::nvlink: return fmt::format("{} bonded NVLink{} ({})", c.links, c.links == 1 ? "" : "s", code);
    case PathType::xgmi: return "a direct xGMI link (XGMI)";
    case PathType::pix: return "PCIe through at most one switch (PIX)";
    case PathType::pxb: return "PCIe through several switches, not the CPU (PXB)";
    case PathType::phb: return "PCIe through the CPU's host bridge (PHB)";
    case PathType::node: return "PCIe through the CPU, across host bridges of one NUMA node (NODE)";
    case PathType::sys: return fmt::format("PCIe through the CPU ({})", code);
    case PathType::pcie: return "PCIe (PCIE)";
    case PathType::unknown: break;
  }
  return fmt::format("an unknown path ({})", code);
}

Topology parse_nvidia_smi_topo(std::string_view text) {
  const std::vector<std::string> lines = clean_lines(text);
  Topology topo;
  topo.format = "nvidia-smi topo -m";

  // Header: the first line whose first cell is GPU0 and whose second is not X (a GPU0 data row has X there).
  std::size_t header = lines.size();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string trimmed = trim(lines[i]);
    if (is_comment_or_prompt(trimmed)) continue;
    const auto t = tokens(trimmed);
    if (!t.empty() && t[0] == "GPU0" && (t.size() == 1 || t[1] != "X")) {
      header = i;
      break;
    }
  }
  if (header == lines.size()) {
    throw InputError("not an nvidia-smi topo -m output: no header line naming GPU0 (expected a line such as "
                     "'GPU0 GPU1 ... CPU Affinity' before the matrix)");
  }

  // Columns: GPU0..GPUn-1, NIC labels, then the affinity columns (multi-word names kept together).
  const auto head = tokens(lines[header]);
  std::vector<std::string> nic_labels;
  std::vector<AffinityColumn> affinity;
  int ngpu = 0;
  for (std::size_t k = 0; k < head.size(); ++k) {
    const std::string& h = head[k];
    int idx = 0;
    if (equals_ci(h, "CPU")) {
      affinity.push_back(AffinityColumn::cpu);
      if (k + 1 < head.size() && starts_with_ci("Affinity", head[k + 1])) ++k;
    } else if (equals_ci(h, "NUMA")) {
      affinity.push_back(AffinityColumn::numa);
      if (k + 1 < head.size() && starts_with_ci("Affinity", head[k + 1])) ++k;
    } else if (equals_ci(h, "GPU") && k + 1 < head.size() && equals_ci(head[k + 1], "NUMA")) {
      affinity.push_back(AffinityColumn::gpu_numa_id);
      k += 1;
      if (k + 1 < head.size() && equals_ci(head[k + 1], "ID")) ++k;
    } else if (!affinity.empty()) {
      topo.warnings.push_back(fmt::format("header column '{}' after the affinity columns ignored", excerpt(h)));
    } else if (numbered_label(h, "GPU", idx)) {
      if (!nic_labels.empty() || idx != ngpu) {
        throw InputError("nvidia-smi topo -m header", fmt::format("column '{}' at position {}", h, k + 1),
                         fmt::format("GPU columns numbered GPU0, GPU1, ... in order, before any NIC column "
                                     "(expected GPU{} here)", ngpu));
      }
      ++ngpu;
    } else {
      if (std::find(nic_labels.begin(), nic_labels.end(), h) != nic_labels.end()) {
        throw InputError("nvidia-smi topo -m header", fmt::format("column '{}' twice", excerpt(h)),
                         "each device named once");
      }
      nic_labels.push_back(h);
    }
    if (ngpu + static_cast<int>(nic_labels.size()) > kMaxDevices) {
      throw InputError("nvidia-smi topo -m header", "more than 1024 device columns", "up to 1024 GPUs and NICs");
    }
  }
  const int ndev = ngpu + static_cast<int>(nic_labels.size());

  // Rows, up to the Legend.
  std::map<int, Row> gpu_rows;
  std::vector<Row> nic_rows;
  std::size_t li = header + 1;
  for (; li < lines.size(); ++li) {
    const std::string trimmed = trim(lines[li]);
    if (trimmed.empty()) continue;
    if (starts_with_ci(trimmed, "Legend") || starts_with_ci(trimmed, "NIC Legend")) break;
    const auto t = tokens(trimmed);
    int gidx = -1;
    const bool is_gpu = numbered_label(t[0], "GPU", gidx);
    const bool known_nic = std::find(nic_labels.begin(), nic_labels.end(), t[0]) != nic_labels.end();
    if (!is_gpu && !known_nic && !(t.size() >= 2 && is_nvidia_code(t[1]))) {
      if (!is_comment_or_prompt(trimmed) && trimmed != "..." && trimmed != "....") {
        topo.warnings.push_back(fmt::format("line {} ignored: '{}'", li + 1, excerpt(trimmed)));
      }
      continue;
    }
    if (is_gpu && gidx >= ngpu) {
      throw InputError(fmt::format("nvidia-smi topo -m: the matrix is not square: row GPU{} but the header names "
                                   "{} GPU column{} (GPU0..GPU{}); accepted: one row per GPU column",
                                   gidx, ngpu, ngpu == 1 ? "" : "s", ngpu - 1));
    }
    Row row;
    row.label = t[0];
    // A NIC row's own column, when the header has it.
    std::size_t k = 1;
    while (k < t.size() && static_cast<int>(row.codes.size()) < ndev && is_nvidia_code(t[k])) {
      row.codes.push_back(t[k]);
      ++k;
    }
    const int have = static_cast<int>(row.codes.size());
    if (have < ndev) {
      const std::string column = have < ngpu ? fmt::format("GPU{}", have) : nic_labels[have - ngpu];
      if (k < t.size()) {
        if (!is_affinity_like(t[k])) {
          throw InputError(fmt::format("nvidia-smi topo -m: row {}, column {}: unknown connection code '{}'; "
                                       "accepted: {}", row.label, column, excerpt(t[k]), kAcceptedCodes));
        }
        if (is_gpu || have < ngpu) {
          throw InputError(fmt::format("nvidia-smi topo -m: the matrix is not square: row {} has {} entries but the "
                                       "header names {} devices (next cell '{}' where column {} was expected); "
                                       "accepted: one code per device column",
                                       row.label, have, ndev, excerpt(t[k]), column));
        }
      }
      row.clipped = true;
    }
    // Codes beyond the header's columns: the header was clipped at the right.
    int extra = 0;
    while (k < t.size() && is_nvidia_code(t[k])) {
      ++extra;
      ++k;
    }
    if (extra > 0) {
      topo.warnings.push_back(fmt::format("row {} has {} more entr{} than the header has columns: ignored "
                                          "(header clipped?)", row.label, extra, extra == 1 ? "y" : "ies"));
    }
    for (; k < t.size(); ++k) row.values.push_back(t[k]);
    if (is_gpu) {
      if (have > gidx && row.codes[gidx] != "X") {
        throw InputError(fmt::format("nvidia-smi topo -m: row {}, column GPU{}: the diagonal entry is '{}'; "
                                     "accepted: X (columns shifted?)", row.label, gidx, row.codes[gidx]));
      }
      for (int j = 0; j < have; ++j) {
        if (j != gidx && row.codes[j] == "X") {
          const std::string column = j < ngpu ? fmt::format("GPU{}", j) : nic_labels[j - ngpu];
          throw InputError(fmt::format("nvidia-smi topo -m: row {}, column {}: X off the diagonal; accepted: X "
                                       "only where a device meets itself", row.label, column));
        }
      }
      if (gpu_rows.count(gidx) != 0) {
        topo.warnings.push_back(fmt::format("second row for GPU{} ignored", gidx));
        continue;
      }
      gpu_rows.emplace(gidx, std::move(row));
    } else {
      if (std::any_of(nic_rows.begin(), nic_rows.end(), [&](const Row& r) { return r.label == row.label; })) {
        topo.warnings.push_back(fmt::format("second row for {} ignored", excerpt(row.label)));
        continue;
      }
      nic_rows.push_back(std::move(row));
    }
  }
  if (gpu_rows.empty()) {
    throw InputError("not an nvidia-smi topo -m output: the header names GPU0 but no GPU rows follow it");
  }

  // NIC Legend: "NIC0: mlx5_0".
  std::map<std::string, std::string> legend;
  for (; li < lines.size(); ++li) {
    const auto t = tokens(lines[li]);
    if (t.size() == 2 && t[0].size() > 1 && t[0].back() == ':' && t[0].starts_with("NIC")) {
      legend[t[0].substr(0, t[0].size() - 1)] = t[1];
    }
  }

  // GPU x GPU matrix.
  const auto n = static_cast<std::size_t>(ngpu);
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::string> row;
    for (std::size_t j = 0; j < n; ++j) row.emplace_back(i == j ? "X" : "?");
    topo.links.push_back(std::move(row));
  }
  for (const auto& [i, row] : gpu_rows) {
    for (std::size_t j = 0; j < n && j < row.codes.size(); ++j) topo.links[i][j] = row.codes[j];
  }
  std::vector<int> missing_rows;
  std::vector<int> clipped_rows;
  for (int i = 0; i < ngpu; ++i) {
    auto it = gpu_rows.find(i);
    if (it == gpu_rows.end()) missing_rows.push_back(i);
    else if (it->second.clipped && static_cast<int>(it->second.codes.size()) < ngpu) clipped_rows.push_back(i);
  }
  int unknown_pairs = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      std::string& a = topo.links[i][j];
      std::string& b = topo.links[j][i];
      if (a == "?" && b != "?") a = b;
      else if (b == "?" && a != "?") b = a;
      else if (a == "?") ++unknown_pairs;
      else if (a != b && !(classify_code(a).type == PathType::sys && classify_code(b).type == PathType::sys)) {
        topo.warnings.push_back(fmt::format("GPU{}-GPU{}: row GPU{} says {} but row GPU{} says {} (the matrix is not "
                                            "symmetric; both kept)", i, j, i, a, j, b));
      }
    }
  }
  if (!missing_rows.empty()) {
    topo.warnings.push_back(fmt::format("no row for GPU(s) {} (output cut off?): links taken from the other rows",
                                        format_gpu_set(missing_rows)));
  }
  if (!clipped_rows.empty()) {
    topo.warnings.push_back(fmt::format("rows of GPU(s) {} stop before the last GPU column (clipped copy?)",
                                        format_gpu_set(clipped_rows)));
  }
  if (unknown_pairs > 0) {
    topo.warnings.push_back(fmt::format("{} GPU pair{} without a code in the input: shown as ?", unknown_pairs,
                                        unknown_pairs == 1 ? "" : "s"));
  }

  // GPUs and their affinity fields.
  std::vector<int> gpus_missing_affinity;
  std::map<std::string, std::vector<int>> malformed_cpu;
  for (int i = 0; i < ngpu; ++i) {
    TopoGpu g;
    g.index = i;
    auto it = gpu_rows.find(i);
    if (it != gpu_rows.end()) {
      const Row& row = it->second;
      if (affinity.empty() && !row.values.empty()) {
        if (gpus_missing_affinity.empty()) {
          topo.warnings.push_back("values after the matrix but no affinity columns in the header: ignored");
        }
        gpus_missing_affinity.push_back(i);
      }
      for (std::size_t v = 0; v < row.values.size() && v < affinity.size(); ++v) {
        const std::string& val = row.values[v];
        switch (affinity[v]) {
          case AffinityColumn::cpu:
            if (equals_ci(val, "N/A")) break;
            if (is_cpu_list(val)) g.cpu_affinity = val;
            else malformed_cpu[val].push_back(i);
            break;
          case AffinityColumn::numa:
          case AffinityColumn::gpu_numa_id: {
            int x = 0;
            if (parse_int(val, x)) {
              (affinity[v] == AffinityColumn::numa ? g.numa_node : g.gpu_numa_id) = x;
            } else if (!equals_ci(val, "N/A")) {
              topo.warnings.push_back(fmt::format("GPU{}: {} '{}' is not a number: ignored", i,
                                                  affinity[v] == AffinityColumn::numa ? "NUMA affinity" : "GPU NUMA ID",
                                                  excerpt(val)));
            }
            break;
          }
        }
      }
      if (row.values.size() > affinity.size() && !affinity.empty()) {
        topo.warnings.push_back(fmt::format("row GPU{}: {} value(s) after the affinity columns ignored", i,
                                            row.values.size() - affinity.size()));
      }
    }
    topo.gpus.push_back(std::move(g));
  }
  for (const auto& [val, gs] : malformed_cpu) {
    topo.warnings.push_back(fmt::format("GPU{} {}: CPU affinity '{}' is not a list of cores (clipped copy?): ignored",
                                        gs.size() == 1 ? "" : "s", format_gpu_set(gs), excerpt(val)));
  }
  // A GPU whose CPU affinity differs from every other GPU of its NUMA node, where those agree: likely clipped.
  std::map<int, std::vector<int>> by_numa;
  for (const auto& g : topo.gpus) {
    if (g.numa_node && !g.cpu_affinity.empty()) by_numa[*g.numa_node].push_back(g.index);
  }
  for (const auto& [node, gs] : by_numa) {
    if (gs.size() < 3) continue;
    std::map<std::string, int> counts;
    for (int i : gs) ++counts[topo.gpus[i].cpu_affinity];
    if (counts.size() < 2) continue;
    const auto best = std::max_element(counts.begin(), counts.end(),
                                       [](const auto& a, const auto& b) { return a.second < b.second; });
    if (best->second != static_cast<int>(gs.size()) - 1) continue;
    for (int i : gs) {
      if (topo.gpus[i].cpu_affinity != best->first) {
        topo.warnings.push_back(fmt::format("GPU{}: CPU affinity '{}' differs from '{}' on the other GPUs of NUMA node "
                                            "{} (clipped copy?)", i, topo.gpus[i].cpu_affinity, best->first, node));
      }
    }
  }

  // NICs: header columns first, then rows the header lacks (clipped at the right).
  auto nic_row = [&](const std::string& label) -> const Row* {
    for (const Row& r : nic_rows) {
      if (r.label == label) return &r;
    }
    return nullptr;
  };
  std::vector<std::string> all_nics = nic_labels;
  std::vector<std::string> rows_only;
  for (const Row& r : nic_rows) {
    if (std::find(nic_labels.begin(), nic_labels.end(), r.label) == nic_labels.end()) {
      all_nics.push_back(r.label);
      rows_only.push_back(r.label);
    }
  }
  if (!rows_only.empty()) {
    std::string names;
    for (const auto& s : rows_only) names += (names.empty() ? "" : ", ") + excerpt(s);
    topo.warnings.push_back(fmt::format("NIC rows {} have no column in the header (copy clipped at the right): "
                                        "GPU-NIC distances taken from the NIC rows", names));
  }
  for (std::size_t c = 0; c < all_nics.size(); ++c) {
    TopoNic nic;
    nic.label = all_nics[c];
    auto lg = legend.find(nic.label);
    nic.name = lg != legend.end() ? lg->second : nic.label;
    if (lg == legend.end() && nic.label.starts_with("NIC")) {
      topo.warnings.push_back(fmt::format("{} is not in the NIC Legend: device name unknown", excerpt(nic.label)));
    }
    nic.gpu_codes.assign(n, "?");
    const Row* r = nic_row(nic.label);
    for (int i = 0; i < ngpu; ++i) {
      auto it = gpu_rows.find(i);
      const std::size_t col = static_cast<std::size_t>(ngpu) + c;
      if (c < nic_labels.size() && it != gpu_rows.end() && col < it->second.codes.size()) {
        nic.gpu_codes[i] = it->second.codes[col];
      } else if (r != nullptr && static_cast<std::size_t>(i) < r->codes.size()) {
        nic.gpu_codes[i] = r->codes[i];
      }
      if (classify_code(nic.gpu_codes[i]).type == PathType::self) {
        throw InputError(fmt::format("nvidia-smi topo -m: row {}, column GPU{}: X between a NIC and a GPU; accepted: "
                                     "{} other than X", excerpt(nic.label), i, kAcceptedCodes));
      }
    }
    topo.nics.push_back(std::move(nic));
  }
  return topo;
}

}  // namespace gpuplan
