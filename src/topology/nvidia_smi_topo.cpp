// Parser for `nvidia-smi topo -m` (every driver format from 2016 on; see docs/topology.md).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "gpuplan/error.hpp"
#include "gpuplan/topology.hpp"
#include "topology/topo_text.hpp"

namespace gpuplan {

using namespace topo_text;

namespace {

constexpr int kMaxDevices = 1024;  // columns; far above any node (NVL72 has 72 GPUs), keeps n x n bounded
constexpr const char* kAcceptedCodes = "X, NV<n>, PIX, PXB, PHB, NODE, SYS, SOC";
// Largest NUMA node id read: Linux allows 1024 nodes at most (NODES_SHIFT 10); a list naming more is malformed.
constexpr int kMaxNumaNode = 1023;

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

// Codes of `nvidia-smi topo -p2p r|w|n|a|p`, from its legend: OK, chipset / GPU / topology not supported, not
// supported, disabled by regkey, unknown.
bool is_p2p_status_code(std::string_view t) {
  return t == "OK" || t == "CNS" || t == "GNS" || t == "TNS" || t == "NS" || t == "DR" || t == "U";
}

// Values of the affinity columns: "0-47,96-143", "3", "N/A".
bool is_affinity_like(std::string_view t) {
  if (equals_ci(t, "N/A")) return true;
  if (t.empty()) return false;
  return std::all_of(t.begin(), t.end(), [](char c) { return (c >= '0' && c <= '9') || c == ',' || c == '-'; });
}

// One comma-separated part of an affinity list: a single id (first == last) or an ascending range.
struct IdRange {
  int first = 0;
  int last = 0;
};

// The digits at t[i...] as an int, moving i past them; false when there are none or they overflow.
bool read_id(std::string_view t, std::size_t& i, int& id) {
  std::size_t j = i;
  while (j < t.size() && t[j] >= '0' && t[j] <= '9') ++j;
  if (j == i || !parse_int(t.substr(i, j - i), id)) return false;
  i = j;
  return true;
}

// "0-47,96-143", "0,3-9,11-17", "5": ids and ascending ranges separated by commas, as nvidia-smi prints the CPU and
// the NUMA affinity. nullopt for anything else ("-31,64-95" from a clipped copy, "9-3", "").
std::optional<std::vector<IdRange>> id_ranges(std::string_view t) {
  std::vector<IdRange> ranges;
  std::size_t i = 0;
  while (true) {
    IdRange range;
    if (!read_id(t, i, range.first)) return std::nullopt;
    range.last = range.first;
    if (i < t.size() && t[i] == '-') {
      ++i;
      if (!read_id(t, i, range.last) || range.last < range.first) return std::nullopt;
    }
    ranges.push_back(range);
    if (i == t.size()) return ranges;
    if (t[i] != ',') return std::nullopt;
    ++i;
  }
}

bool is_cpu_list(std::string_view t) { return id_ranges(t).has_value(); }

// NUMA node ids of a "NUMA Affinity" value, ascending and distinct; nullopt when it is not an id list or names a
// node past kMaxNumaNode (the expanded list must stay small whatever the input).
std::optional<std::vector<int>> numa_node_list(std::string_view t) {
  const std::optional<std::vector<IdRange>> ranges = id_ranges(t);
  if (!ranges) return std::nullopt;
  std::vector<int> nodes;
  for (const IdRange& range : *ranges) {
    if (range.last > kMaxNumaNode) return std::nullopt;
    for (int node = range.first; node <= range.last; ++node) nodes.push_back(node);
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
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

bool is_near_nic_path(std::string_view code) {
  // The legend's own dividing line: up to NODE the traffic stays within one NUMA node; SYS also crosses the SMP
  // interconnect between NUMA nodes, which GPUDirect RDMA traffic should not have to.
  return path_rank(classify_code(code).type) < path_rank(PathType::sys);
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

// ---------------------------------------------------------------------------------------------------------------
// `nvidia-smi topo -m`, read in order: the header, the matrix rows up to the Legend, the NIC Legend; then the GPU
// x GPU links, the GPUs' affinity fields and the NICs are assembled from them, with the checks of each part.

namespace {

// The header's columns: GPU0..GPUn-1, the NIC labels, then the affinity columns.
struct Columns {
  int gpus = 0;
  std::vector<std::string> nic_labels;
  std::vector<AffinityColumn> affinity;

  int devices() const { return gpus + static_cast<int>(nic_labels.size()); }
  // "GPU3" for a GPU column, the label for a NIC column.
  std::string device_name(int column) const {
    return column < gpus ? fmt::format("GPU{}", column) : nic_labels[column - gpus];
  }
  bool has_nic_column(const std::string& label) const {
    return std::find(nic_labels.begin(), nic_labels.end(), label) != nic_labels.end();
  }
};

// The matrix rows, up to the Legend.
struct MatrixRows {
  std::map<int, Row> gpus;   // by GPU index
  std::vector<Row> nics;     // in input order
  std::size_t end_line = 0;  // the first line after the matrix: the Legend, or the end of the input
};

// Header: the first line whose first cell is GPU0 and whose second is not X (a GPU0 data row has X there).
std::size_t find_header(const std::vector<std::string>& lines) {
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string trimmed = trim(lines[i]);
    if (is_comment_or_prompt(trimmed)) continue;
    const auto cells = tokens(trimmed);
    if (!cells.empty() && cells[0] == "GPU0" && (cells.size() == 1 || cells[1] != "X")) return i;
  }
  throw InputError("not an nvidia-smi topo -m output: no header line naming GPU0 (expected a line such as "
                   "'GPU0 GPU1 ... CPU Affinity' before the matrix)");
}

// `nvidia-smi topo -p2p` prints a matrix laid out like topo -m (GPU0 header, GPUi rows, X on the diagonal) whose
// cells say whether peer access works, not how the GPUs are connected. A GPU row of the matrix made of its codes
// identifies it, so that the error names the command to run rather than an unknown code 'OK'.
void reject_p2p_matrix(const std::vector<std::string>& lines, std::size_t header) {
  for (std::size_t li = header + 1; li < lines.size(); ++li) {
    const std::string trimmed = trim(lines[li]);
    if (starts_with_ci(trimmed, "Legend")) return;
    const auto cells = tokens(trimmed);
    int gpu = 0;
    if (cells.size() < 3 || !numbered_label(cells[0], "GPU", gpu)) continue;
    const auto codes = std::vector<std::string>(cells.begin() + 1, cells.end());
    const bool p2p_row = std::all_of(codes.begin(), codes.end(),
                                     [](const std::string& c) { return c == "X" || is_p2p_status_code(c); });
    const auto status = std::find_if(codes.begin(), codes.end(), [](const std::string& c) { return c != "X"; });
    if (p2p_row && status != codes.end()) {
      throw InputError(fmt::format("this is `nvidia-smi topo -p2p` output (peer-to-peer capability: row {} says "
                                   "'{}'), not `nvidia-smi topo -m`; run `nvidia-smi topo -m` for the link matrix",
                                   cells[0], *status));
    }
  }
}

// An affinity column name at head[k] ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID": the words are separate
// cells): appends it and moves k to its last word. False when head[k] starts no such name.
bool read_affinity_column(const std::vector<std::string>& head, std::size_t& k, std::vector<AffinityColumn>& affinity) {
  const bool next_is_affinity = k + 1 < head.size() && starts_with_ci("Affinity", head[k + 1]);
  if (equals_ci(head[k], "CPU")) {
    affinity.push_back(AffinityColumn::cpu);
    if (next_is_affinity) ++k;
    return true;
  }
  if (equals_ci(head[k], "NUMA")) {
    affinity.push_back(AffinityColumn::numa);
    if (next_is_affinity) ++k;
    return true;
  }
  if (equals_ci(head[k], "GPU") && k + 1 < head.size() && equals_ci(head[k + 1], "NUMA")) {
    affinity.push_back(AffinityColumn::gpu_numa_id);
    k += 1;
    if (k + 1 < head.size() && equals_ci(head[k + 1], "ID")) ++k;
    return true;
  }
  return false;
}

// Columns: GPU0..GPUn-1 in order, then NIC labels, then the affinity columns (multi-word names kept together).
Columns read_header(const std::vector<std::string>& head, std::vector<std::string>& warnings) {
  Columns columns;
  for (std::size_t k = 0; k < head.size(); ++k) {
    const std::string& name = head[k];
    int index = 0;
    if (read_affinity_column(head, k, columns.affinity)) {
      // Nothing else to do: the affinity values are read per GPU row.
    } else if (!columns.affinity.empty()) {
      warnings.push_back(fmt::format("header column '{}' after the affinity columns ignored", excerpt(name)));
    } else if (numbered_label(name, "GPU", index)) {
      if (!columns.nic_labels.empty() || index != columns.gpus) {
        throw InputError("nvidia-smi topo -m header", fmt::format("column '{}' at position {}", name, k + 1),
                         fmt::format("GPU columns numbered GPU0, GPU1, ... in order, before any NIC column "
                                     "(expected GPU{} here)", columns.gpus));
      }
      ++columns.gpus;
    } else {
      if (columns.has_nic_column(name)) {
        throw InputError("nvidia-smi topo -m header", fmt::format("column '{}' twice", excerpt(name)),
                         "each device named once");
      }
      columns.nic_labels.push_back(name);
    }
    if (columns.devices() > kMaxDevices) {
      throw InputError("nvidia-smi topo -m header", "more than 1024 device columns", "up to 1024 GPUs and NICs");
    }
  }
  return columns;
}

// One matrix row: a code per device column, then the values after them (affinity). A row may stop early (a
// clipped copy), but only after the GPU columns, and only a NIC row; a cell that is neither a code nor an
// affinity value is an unknown code.
Row read_row(const std::vector<std::string>& cells, bool is_gpu, const Columns& columns,
             std::vector<std::string>& warnings) {
  Row row;
  row.label = cells[0];
  std::size_t k = 1;
  while (k < cells.size() && static_cast<int>(row.codes.size()) < columns.devices() && is_nvidia_code(cells[k])) {
    row.codes.push_back(cells[k]);
    ++k;
  }
  const int have = static_cast<int>(row.codes.size());
  if (have < columns.devices()) {
    const std::string column = columns.device_name(have);
    if (k < cells.size()) {
      if (!is_affinity_like(cells[k])) {
        throw InputError(fmt::format("nvidia-smi topo -m: row {}, column {}: unknown connection code '{}'; "
                                     "accepted: {}", row.label, column, excerpt(cells[k]), kAcceptedCodes));
      }
      if (is_gpu || have < columns.gpus) {
        throw InputError(fmt::format("nvidia-smi topo -m: the matrix is not square: row {} has {} entries but the "
                                     "header names {} devices (next cell '{}' where column {} was expected); "
                                     "accepted: one code per device column",
                                     row.label, have, columns.devices(), excerpt(cells[k]), column));
      }
    }
    row.clipped = true;
  }
  // Codes beyond the header's columns: the header was clipped at the right.
  int extra = 0;
  while (k < cells.size() && is_nvidia_code(cells[k])) {
    ++extra;
    ++k;
  }
  if (extra > 0) {
    warnings.push_back(fmt::format("row {} has {} more entr{} than the header has columns: ignored "
                                   "(header clipped?)", row.label, extra, extra == 1 ? "y" : "ies"));
  }
  for (; k < cells.size(); ++k) row.values.push_back(cells[k]);
  return row;
}

// X on the diagonal and nowhere else: anything else means shifted columns.
void check_gpu_row(const Row& row, int gpu, const Columns& columns) {
  const int have = static_cast<int>(row.codes.size());
  if (have > gpu && row.codes[gpu] != "X") {
    throw InputError(fmt::format("nvidia-smi topo -m: row {}, column GPU{}: the diagonal entry is '{}'; "
                                 "accepted: X (columns shifted?)", row.label, gpu, row.codes[gpu]));
  }
  for (int j = 0; j < have; ++j) {
    if (j != gpu && row.codes[j] == "X") {
      throw InputError(fmt::format("nvidia-smi topo -m: row {}, column {}: X off the diagonal; accepted: X "
                                   "only where a device meets itself", row.label, columns.device_name(j)));
    }
  }
}

// Keeps the first row of each device; a repeated one (a copy pasted twice) is ignored with a warning.
void add_row(Row row, bool is_gpu, int gpu, const Columns& columns, MatrixRows& rows,
             std::vector<std::string>& warnings) {
  if (is_gpu) {
    check_gpu_row(row, gpu, columns);
    if (rows.gpus.count(gpu) != 0) {
      warnings.push_back(fmt::format("second row for GPU{} ignored", gpu));
      return;
    }
    rows.gpus.emplace(gpu, std::move(row));
    return;
  }
  if (std::any_of(rows.nics.begin(), rows.nics.end(), [&](const Row& r) { return r.label == row.label; })) {
    warnings.push_back(fmt::format("second row for {} ignored", excerpt(row.label)));
    return;
  }
  rows.nics.push_back(std::move(row));
}

// Rows, from after the header up to the Legend. A line that is neither a GPU row, a NIC row of the header nor a
// row of codes is skipped (with a warning unless it is a comment, a prompt or an ellipsis).
MatrixRows read_rows(const std::vector<std::string>& lines, std::size_t header, const Columns& columns,
                     std::vector<std::string>& warnings) {
  MatrixRows rows;
  std::size_t li = header + 1;
  for (; li < lines.size(); ++li) {
    const std::string trimmed = trim(lines[li]);
    if (trimmed.empty()) continue;
    if (starts_with_ci(trimmed, "Legend") || starts_with_ci(trimmed, "NIC Legend")) break;
    const auto cells = tokens(trimmed);
    int gpu = -1;
    const bool is_gpu = numbered_label(cells[0], "GPU", gpu);
    if (!is_gpu && !columns.has_nic_column(cells[0]) && !(cells.size() >= 2 && is_nvidia_code(cells[1]))) {
      if (!is_comment_or_prompt(trimmed) && trimmed != "..." && trimmed != "....") {
        warnings.push_back(fmt::format("line {} ignored: '{}'", li + 1, excerpt(trimmed)));
      }
      continue;
    }
    if (is_gpu && gpu >= columns.gpus) {
      throw InputError(fmt::format("nvidia-smi topo -m: the matrix is not square: row GPU{} but the header names "
                                   "{} GPU column{} (GPU0..GPU{}); accepted: one row per GPU column",
                                   gpu, columns.gpus, columns.gpus == 1 ? "" : "s", columns.gpus - 1));
    }
    add_row(read_row(cells, is_gpu, columns, warnings), is_gpu, gpu, columns, rows, warnings);
  }
  if (rows.gpus.empty()) {
    throw InputError("not an nvidia-smi topo -m output: the header names GPU0 but no GPU rows follow it");
  }
  rows.end_line = li;
  return rows;
}

// NIC Legend: "NIC0: mlx5_0", label to device name.
std::map<std::string, std::string> read_nic_legend(const std::vector<std::string>& lines, std::size_t from) {
  std::map<std::string, std::string> legend;
  for (std::size_t li = from; li < lines.size(); ++li) {
    const auto cells = tokens(lines[li]);
    if (cells.size() == 2 && cells[0].size() > 1 && cells[0].back() == ':' && cells[0].starts_with("NIC")) {
      legend[cells[0].substr(0, cells[0].size() - 1)] = cells[1];
    }
  }
  return legend;
}

// A pair given by one row only takes that code both ways; two rows that disagree are kept (SYS against SOC is the
// same path). Returns the pairs that neither row gives.
int mirror_gpu_links(Topology& topo) {
  const std::size_t gpus = topo.links.size();
  int unknown_pairs = 0;
  for (std::size_t i = 0; i < gpus; ++i) {
    for (std::size_t j = i + 1; j < gpus; ++j) {
      std::string& forward = topo.links[i][j];
      std::string& backward = topo.links[j][i];
      if (forward == "?" && backward != "?") forward = backward;
      else if (backward == "?" && forward != "?") backward = forward;
      else if (forward == "?") ++unknown_pairs;
      else if (forward != backward && !(classify_code(forward).type == PathType::sys &&
                                        classify_code(backward).type == PathType::sys)) {
        topo.warnings.push_back(fmt::format("GPU{}-GPU{}: row GPU{} says {} but row GPU{} says {} (the matrix is not "
                                            "symmetric; both kept)", i, j, i, forward, j, backward));
      }
    }
  }
  return unknown_pairs;
}

// GPU x GPU matrix: "X" on the diagonal, the rows' codes, "?" where the input does not say.
void fill_gpu_links(const Columns& columns, const MatrixRows& rows, Topology& topo) {
  const auto gpus = static_cast<std::size_t>(columns.gpus);
  for (std::size_t i = 0; i < gpus; ++i) {
    std::vector<std::string> row;
    for (std::size_t j = 0; j < gpus; ++j) row.emplace_back(i == j ? "X" : "?");
    topo.links.push_back(std::move(row));
  }
  for (const auto& [i, row] : rows.gpus) {
    for (std::size_t j = 0; j < gpus && j < row.codes.size(); ++j) topo.links[i][j] = row.codes[j];
  }
  std::vector<int> missing_rows;
  std::vector<int> clipped_rows;
  for (int i = 0; i < columns.gpus; ++i) {
    auto it = rows.gpus.find(i);
    if (it == rows.gpus.end()) missing_rows.push_back(i);
    else if (it->second.clipped && static_cast<int>(it->second.codes.size()) < columns.gpus) clipped_rows.push_back(i);
  }
  const int unknown_pairs = mirror_gpu_links(topo);
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
}

// "0", or on Grace systems "0,3-9,11-17": the node of the GPU's CPUs first, then the nodes of the GPU's memory.
// Keeps the whole list, and its first node as the one to bind the GPU's CPU threads to.
void read_numa_affinity(const std::string& value, TopoGpu& gpu, std::vector<std::string>& warnings) {
  if (equals_ci(value, "N/A")) return;
  std::optional<std::vector<int>> nodes = numa_node_list(value);
  if (!nodes) {
    warnings.push_back(fmt::format("GPU{}: NUMA affinity '{}' is not a list of NUMA nodes (up to {}): ignored",
                                   gpu.index, excerpt(value), kMaxNumaNode));
    return;
  }
  gpu.numa_node = nodes->front();
  gpu.numa_affinity = std::move(*nodes);
}

// A GPU row's values under the affinity columns. CPU lists that are not lists of cores are collected per value
// (malformed_cpu) so that one warning names every GPU with the same bad value.
void read_affinity_values(const Row& row, const std::vector<AffinityColumn>& affinity, TopoGpu& gpu,
                          std::map<std::string, std::vector<int>>& malformed_cpu, std::vector<std::string>& warnings) {
  for (std::size_t v = 0; v < row.values.size() && v < affinity.size(); ++v) {
    const std::string& value = row.values[v];
    switch (affinity[v]) {
      case AffinityColumn::cpu:
        if (equals_ci(value, "N/A")) break;
        if (is_cpu_list(value)) gpu.cpu_affinity = value;
        else malformed_cpu[value].push_back(gpu.index);
        break;
      case AffinityColumn::numa: read_numa_affinity(value, gpu, warnings); break;
      case AffinityColumn::gpu_numa_id: {
        int number = 0;
        if (parse_int(value, number)) {
          gpu.gpu_numa_id = number;
        } else if (!equals_ci(value, "N/A")) {
          warnings.push_back(
              fmt::format("GPU{}: GPU NUMA ID '{}' is not a number: ignored", gpu.index, excerpt(value)));
        }
        break;
      }
    }
  }
  if (row.values.size() > affinity.size() && !affinity.empty()) {
    warnings.push_back(fmt::format("row GPU{}: {} value(s) after the affinity columns ignored", gpu.index,
                                   row.values.size() - affinity.size()));
  }
}

// A GPU whose CPU affinity differs from every other GPU of its NUMA node, where those agree: likely clipped.
void warn_odd_cpu_affinity(Topology& topo) {
  std::map<int, std::vector<int>> by_numa;
  for (const auto& gpu : topo.gpus) {
    if (gpu.numa_node && !gpu.cpu_affinity.empty()) by_numa[*gpu.numa_node].push_back(gpu.index);
  }
  for (const auto& [node, gpus] : by_numa) {
    if (gpus.size() < 3) continue;  // two GPUs that differ: no majority to tell which is right
    std::map<std::string, int> counts;
    for (int i : gpus) ++counts[topo.gpus[i].cpu_affinity];
    if (counts.size() < 2) continue;
    const auto common = std::max_element(counts.begin(), counts.end(),
                                         [](const auto& a, const auto& b) { return a.second < b.second; });
    if (common->second != static_cast<int>(gpus.size()) - 1) continue;
    for (int i : gpus) {
      if (topo.gpus[i].cpu_affinity != common->first) {
        topo.warnings.push_back(fmt::format("GPU{}: CPU affinity '{}' differs from '{}' on the other GPUs of NUMA node "
                                            "{} (clipped copy?)", i, topo.gpus[i].cpu_affinity, common->first, node));
      }
    }
  }
}

// GPUs and their affinity fields.
void fill_gpus(const Columns& columns, const MatrixRows& rows, Topology& topo) {
  bool warned_no_affinity_columns = false;
  std::map<std::string, std::vector<int>> malformed_cpu;
  for (int i = 0; i < columns.gpus; ++i) {
    TopoGpu gpu;
    gpu.index = i;
    auto it = rows.gpus.find(i);
    if (it != rows.gpus.end()) {
      const Row& row = it->second;
      if (columns.affinity.empty() && !row.values.empty() && !warned_no_affinity_columns) {
        topo.warnings.push_back("values after the matrix but no affinity columns in the header: ignored");
        warned_no_affinity_columns = true;
      }
      read_affinity_values(row, columns.affinity, gpu, malformed_cpu, topo.warnings);
    }
    topo.gpus.push_back(std::move(gpu));
  }
  for (const auto& [value, gpus] : malformed_cpu) {
    topo.warnings.push_back(fmt::format("GPU{} {}: CPU affinity '{}' is not a list of cores (clipped copy?): ignored",
                                        gpus.size() == 1 ? "" : "s", format_gpu_set(gpus), excerpt(value)));
  }
  warn_odd_cpu_affinity(topo);
}

// NIC labels: header columns first, then rows the header lacks (a copy clipped at the right keeps the NIC rows).
std::vector<std::string> nic_labels(const Columns& columns, const MatrixRows& rows, Topology& topo) {
  std::vector<std::string> labels = columns.nic_labels;
  std::string rows_only;
  for (const Row& row : rows.nics) {
    if (!columns.has_nic_column(row.label)) {
      labels.push_back(row.label);
      rows_only += (rows_only.empty() ? "" : ", ") + excerpt(row.label);
    }
  }
  if (!rows_only.empty()) {
    topo.warnings.push_back(fmt::format("NIC rows {} have no column in the header (copy clipped at the right): "
                                        "GPU-NIC distances taken from the NIC rows", rows_only));
  }
  return labels;
}

// A NIC's code to each GPU: from the GPU rows' NIC column when the header has one, else from the NIC's own row.
std::vector<std::string> nic_gpu_codes(std::size_t nic, const std::string& label, const Columns& columns,
                                       const MatrixRows& rows) {
  const Row* nic_row = nullptr;
  for (const Row& row : rows.nics) {
    if (row.label == label) {
      nic_row = &row;
      break;
    }
  }
  std::vector<std::string> codes(static_cast<std::size_t>(columns.gpus), "?");
  for (int i = 0; i < columns.gpus; ++i) {
    auto gpu_row = rows.gpus.find(i);
    const std::size_t column = static_cast<std::size_t>(columns.gpus) + nic;
    if (nic < columns.nic_labels.size() && gpu_row != rows.gpus.end() && column < gpu_row->second.codes.size()) {
      codes[i] = gpu_row->second.codes[column];
    } else if (nic_row != nullptr && static_cast<std::size_t>(i) < nic_row->codes.size()) {
      codes[i] = nic_row->codes[i];
    }
    if (classify_code(codes[i]).type == PathType::self) {
      throw InputError(fmt::format("nvidia-smi topo -m: row {}, column GPU{}: X between a NIC and a GPU; accepted: "
                                   "{} other than X", excerpt(label), i, kAcceptedCodes));
    }
  }
  return codes;
}

void fill_nics(const Columns& columns, const MatrixRows& rows, const std::map<std::string, std::string>& legend,
               Topology& topo) {
  const std::vector<std::string> labels = nic_labels(columns, rows, topo);
  for (std::size_t c = 0; c < labels.size(); ++c) {
    TopoNic nic;
    nic.label = labels[c];
    auto named = legend.find(nic.label);
    nic.name = named != legend.end() ? named->second : nic.label;
    if (named == legend.end() && nic.label.starts_with("NIC")) {
      topo.warnings.push_back(fmt::format("{} is not in the NIC Legend: device name unknown", excerpt(nic.label)));
    }
    nic.gpu_codes = nic_gpu_codes(c, nic.label, columns, rows);
    topo.nics.push_back(std::move(nic));
  }
}

}  // namespace

Topology parse_nvidia_smi_topo(std::string_view text) {
  const std::vector<std::string> lines = clean_lines(text);
  Topology topo;
  topo.format = "nvidia-smi topo -m";
  const std::size_t header = find_header(lines);
  reject_p2p_matrix(lines, header);
  const Columns columns = read_header(tokens(lines[header]), topo.warnings);
  const MatrixRows rows = read_rows(lines, header, columns, topo.warnings);
  const std::map<std::string, std::string> legend = read_nic_legend(lines, rows.end_line);
  fill_gpu_links(columns, rows, topo);
  fill_gpus(columns, rows, topo);
  fill_nics(columns, rows, legend, topo);
  return topo;
}

}  // namespace gpuplan
