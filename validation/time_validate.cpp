// Step-time validation: predicts every measured configuration of validation/data and writes a markdown report.
// Built and run by validation/run_time_validation.sh against the gpuplan_core library.
//   time_validate REPO_DIR [--fit]     (--fit refits validation/data/a100-megatron-calibration.json first)
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gpuplan/estimate.hpp"
#include "gpuplan/model_io.hpp"
#include "gpuplan/host.hpp"
#include "gpuplan/perf_fit.hpp"
#include "time_sets.hpp"

using namespace gpuplan;

namespace {

struct Row {
  int gpus, gbs, mbs, hidden, heads, layers, seq, tp, dp, pp;
  double ms;
  double pred = 0;
};

std::vector<Row> read_vtrain(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::vector<Row> rows;
  while (std::getline(f, line)) {
    if (line.find('#') != std::string::npos || line.empty()) continue;
    Row r{};
    char c;
    std::istringstream s(line);
    s >> r.gpus >> c >> r.gbs >> c >> r.mbs >> c >> r.hidden >> c >> r.heads >> c >> r.layers >> c >> r.seq >> c >> r.tp >>
        c >> r.dp >> c >> r.pp >> c >> r.ms;
    rows.push_back(r);
  }
  return rows;
}

EstimateInputs vtrain_inputs(const Row& r, const Fabric& fabric, const GpuSpec& gpu) {
  EstimateInputs in;
  ModelConfig m = model_from_catalog("gpt2");
  m.layers = r.layers;
  m.hidden = r.hidden;
  m.heads = r.heads;
  m.kv_heads = r.heads;
  m.head_dim = 0;
  m.ffn_hidden = 4LL * r.hidden;
  const std::int64_t pad = 128LL * r.tp;  // Megatron --make-vocab-size-divisible-by 128, times tp
  m.vocab = (50257 + pad - 1) / pad * pad;
  m.max_positions = r.seq;
  in.memory.model = m;
  in.memory.training.seq_len = r.seq;
  in.memory.training.micro_batch = r.mbs;
  in.memory.training.global_batch = r.gbs;
  in.memory.training.precision = Precision::fp16;
  in.memory.training.dropout = 0.1;  // Megatron GPT defaults (hidden and attention dropout 0.1)
  in.memory.training.grad_nan_check = false;  // Megatron-DeepSpeed: no NaN check of the gradients (Megatron-Core's DDP)
  in.memory.layout.tp = r.tp;
  in.memory.layout.pp = r.pp;
  in.memory.layout.dp = r.dp;
  in.memory.layout.recompute = Recompute::full;
  in.memory.layout.attention = Attention::eager;
  in.memory.overheads = default_overheads();
  in.memory.capacity_bytes = gpu.usable_memory_bytes;
  in.gpu = gpu;
  in.fabric = fabric;
  in.time.dp_overlap = false;  // no gradient bucketing
  return in;
}

struct Stats {
  double mape = 0, max_ape = 0, bias = 0, spearman = 0, pairwise = 0, pairwise10 = 0;
  int groups = 0;
};

Stats stats(const std::vector<Row>& rows) {
  Stats s;
  for (const auto& r : rows) {
    const double e = (r.pred - r.ms) / r.ms;
    s.mape += std::abs(e);
    s.bias += e;
    s.max_ape = std::max(s.max_ape, std::abs(e));
  }
  s.mape /= static_cast<double>(rows.size());
  s.bias /= static_cast<double>(rows.size());
  // Ranking among layouts of the same model, GPU count and global batch.
  std::map<std::tuple<int, int, int, int>, std::vector<const Row*>> groups;
  for (const auto& r : rows) groups[{r.gpus, r.gbs, r.hidden, r.layers}].push_back(&r);
  double sp = 0;
  long pairs = 0, right = 0, pairs10 = 0, right10 = 0;
  for (const auto& [key, g] : groups) {
    if (g.size() < 3) continue;
    std::vector<double> a, b;
    for (const Row* r : g) {
      a.push_back(r->ms);
      b.push_back(r->pred);
    }
    sp += validation::spearman(a, b);
    ++s.groups;
    for (std::size_t i = 0; i < g.size(); ++i)
      for (std::size_t j = i + 1; j < g.size(); ++j) {
        const bool ok = (g[i]->ms < g[j]->ms) == (g[i]->pred < g[j]->pred);
        ++pairs;
        right += ok;
        if (std::abs(g[i]->ms - g[j]->ms) > 0.1 * std::min(g[i]->ms, g[j]->ms)) {
          ++pairs10;
          right10 += ok;
        }
      }
  }
  s.spearman = s.groups > 0 ? sp / s.groups : 0;
  s.pairwise = pairs > 0 ? static_cast<double>(right) / static_cast<double>(pairs) : 0;
  s.pairwise10 = pairs10 > 0 ? static_cast<double>(right10) / static_cast<double>(pairs10) : 0;
  return s;
}

void predict(std::vector<Row>& rows, std::vector<EstimateInputs>& inputs, const PerfConstants& pc) {
  for (std::size_t i = 0; i < rows.size(); ++i) {
    inputs[i].perf = pc;
    rows[i].pred = estimate_step(inputs[i]).step_s * 1e3;
  }
}


// A published run's inputs: the model, sequence and batches, the layout's degrees and pipeline schedule, on
// enough nodes of `system`. Precision, recomputation, attention and overlap are each set's own.
EstimateInputs published_run(const HardwareCatalog& catalog, ModelConfig model, const char* system, int seq, int mbs,
                             int gbs, int gpus, int tp, int pp, int cp, int vpp) {
  EstimateInputs in;
  in.memory.model = std::move(model);
  in.memory.training.seq_len = seq;
  in.memory.training.micro_batch = mbs;
  in.memory.training.global_batch = gbs;
  in.memory.layout.gpus = gpus;
  in.memory.layout.tp = tp;
  in.memory.layout.pp = pp;
  in.memory.layout.cp = cp;
  in.memory.layout.vpp = vpp;
  in.memory.layout.schedule = vpp > 1 ? PpSchedule::interleaved : PpSchedule::one_f_one_b;
  in.memory.overheads = default_overheads();
  const Cluster cl = make_cluster(catalog, system, (gpus + 7) / 8);
  in.gpu = cl.gpu;
  in.memory.capacity_bytes = cl.gpu.usable_memory_bytes;
  in.fabric = fabric_from_cluster(cl);
  return in;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fmt::print(stderr, "usage: time_validate REPO_DIR [--fit]\n");
    return 2;
  }
  const std::string repo = argv[1];
  const bool fit = argc > 2 && std::string(argv[2]) == "--fit";
  const std::string calib_path = repo + "/validation/data/a100-megatron-calibration.json";

  const HardwareCatalog catalog = HardwareCatalog::builtin();
  const Cluster node = make_cluster(catalog, "dgx-a100", 1);
  const Fabric fabric = fabric_from_cluster(node);
  const GpuSpec gpu = node.gpu;
  // The same testbed's all-reduce tables (nccl-tests on one 8x A100 node, 2..8 GPUs) calibrate the comm model for
  // the calibrated predictions, as `gpuplan estimate --comm-calibration` does.
  const std::string comm_calib_path = repo + "/validation/data/a100-vtrain-comm-calibration.json";
  {
    std::vector<NcclTestsLog> logs;
    for (int g = 2; g <= 8; ++g) {
      const std::string name = fmt::format("tests/data/nccl-tests/a100-8gpu-allreduce/AR_GPU{}_1M_1024M_LUT.csv", g);
      logs.push_back(parse_nccl_tests(read_text_file(repo + "/" + name, "validation data"), name));
    }
    std::ofstream(comm_calib_path) << comm_calibration_json(calibrate_comm(logs, node.system.gpus_per_node)) << "\n";
  }
  Fabric fabric_cal = fabric;
  apply_comm_overrides(fabric_cal, read_text_file(comm_calib_path, "validation data"), "validation/data/a100-vtrain-comm-calibration.json");

  std::vector<Row> rows = read_vtrain(repo + "/validation/data/a100-megatron-single-node-steps.csv");
  std::vector<EstimateInputs> inputs, inputs_cal;
  for (const auto& r : rows) {
    inputs.push_back(vtrain_inputs(r, fabric, gpu));
    inputs_cal.push_back(vtrain_inputs(r, fabric_cal, gpu));
  }
  const PerfConstants base = perf_constants(gpu);
  predict(rows, inputs, base);
  const Stats uncal = stats(rows);
  const std::vector<Row> rows_uncal = rows;

  const FitParameter params[] = {
      // Bounds keep each constant physical (published ranges), so the fit cannot trade one mechanism for another.
      // The host time per kernel spans an order of magnitude between frameworks: it is scanned before the descent.
      {"memory_bound_efficiency", &PerfConstants::memory_bound_efficiency, 0.5, 0.9},
      {"kernel_overhead_s", &PerfConstants::kernel_overhead_s, 1e-6, 2e-5},
      {"host_op_s", &PerfConstants::host_op_s, 1e-6, 1e-4, 1e-5, 1e-4, 5e-6},
      {"step_overhead_s", &PerfConstants::step_overhead_s, 0.0, 0.05},
  };
  if (fit) {
    // The fit of gpuplan calibrate (gpuplan/perf_fit.hpp) on MAPE, with this set's own constants.
    std::vector<MeasuredRun> runs;
    for (std::size_t i = 0; i < rows.size(); ++i) runs.push_back({"", inputs_cal[i], rows[i].ms / 1e3});
    const PerfConstants c = fit_perf_constants(runs, base, params);
    std::vector<std::pair<std::string, double>> values;
    for (const auto& p : params) values.emplace_back(p.key, c.*(p.member));
    std::ofstream(calib_path) << perf_overlay_json(
        gpu.name, values, "fitted to VIA-Research/vTrain data/ground_truth_single.csv (A100, Megatron-DeepSpeed)",
        "Calibration of data/perf.json's constants on the 1,440 vTrain single-node A100 step times "
        "(validation/data/a100-megatron-single-node-steps.csv), by validation/run_time_validation.sh --fit "
        "(scan of host_op_s, then coordinate descent on MAPE). Use with: gpuplan estimate --perf "
        "validation/data/a100-megatron-calibration.json");
  }
  const PerfConstants cal = perf_constants(gpu, {{calib_path, read_text_file(calib_path, "validation data")}});
  predict(rows, inputs_cal, cal);
  const Stats calst = stats(rows);

  // Published multi-node runs: Narayanan et al. SC'21 Table 1.
  struct Pub {
    std::string model;
    int gpus, tp, pp, vpp, mbs, gbs;
    bool overlap;
    double tflops, pred_uncal = 0, pred_cal = 0;
  };
  std::vector<Pub> pubs;
  {
    for (const auto& c : validation::csv_records(repo + "/validation/data/narayanan-sc21-table1.csv")) {
      pubs.push_back({c[0], std::stoi(c[1]), std::stoi(c[2]), std::stoi(c[3]), std::stoi(c[4]), std::stoi(c[5]),
                      std::stoi(c[6]), c[7] == "torch", std::stod(c[8])});
    }
  }
  auto pub_predict = [&](const Pub& p, const PerfConstants& pc) {
    EstimateInputs in = published_run(catalog, model_from_catalog(p.model), "dgx-a100", 2048, p.mbs, p.gbs, p.gpus,
                                      p.tp, p.pp, 1, p.vpp);
    in.memory.training.precision = Precision::fp16;
    // examples/sc21/CONFIG.sh passes --fp16 without --accumulate-allreduce-grads-in-fp32 (which torch DDP could
    // not take): the gradients accumulate and all-reduce in fp16.
    in.memory.training.grad_dtype = DType::fp16;
    in.memory.training.dropout = 0.1;
    in.memory.layout.recompute = Recompute::full;
    in.memory.layout.attention = Attention::eager;
    in.memory.training.grad_nan_check = false;  // Megatron-LM of 2021: the check came with Megatron-Core's DDP
    in.time.dp_overlap = p.overlap;
    // The interleaved schedule of 2021 waited for each batched send/recv: overlap_p2p_comm came later, with
    // Megatron-Core's schedules.
    in.time.pp_overlap = false;
    in.perf = pc;
    return estimate_step(in).hardware_tflops_per_gpu;
  };
  double pub_mape_u = 0, pub_mape_c = 0;
  for (auto& p : pubs) {
    p.pred_uncal = pub_predict(p, base);
    p.pred_cal = pub_predict(p, cal);
    pub_mape_u += std::abs(p.pred_uncal - p.tflops) / p.tflops;
    pub_mape_c += std::abs(p.pred_cal - p.tflops) / p.tflops;
  }
  pub_mape_u /= static_cast<double>(pubs.size());
  pub_mape_c /= static_cast<double>(pubs.size());

  // Published multi-node runs: Korthikanti et al. 2022 (arXiv 2205.05198) Table 5, iteration time in seconds.
  struct Kor {
    std::string model;
    int heads, hidden, layers, tp, pp, vpp, gpus, gbs, mbs;
    bool selective;
    double seconds, pred_uncal = 0, pred_cal = 0;
  };
  std::vector<Kor> kors;
  {
    for (const auto& c : validation::csv_records(repo + "/validation/data/korthikanti-2022-table5.csv")) {
      kors.push_back({c[0], std::stoi(c[1]), std::stoi(c[2]), std::stoi(c[3]), std::stoi(c[4]), std::stoi(c[5]),
                      std::stoi(c[6]), std::stoi(c[7]), std::stoi(c[8]), std::stoi(c[9]), c[10] == "selective",
                      std::stod(c[11])});
    }
  }
  auto kor_predict = [&](const Kor& k, const PerfConstants& pc) {
    ModelConfig m = model_from_catalog("megatron-gpt-1t");  // GPT-2 style, vocabulary 51200
    m.name = "gpt-" + k.model;
    m.hidden = k.hidden;
    m.layers = k.layers;
    m.heads = k.heads;
    m.kv_heads = k.heads;
    m.head_dim = 0;
    m.ffn_hidden = 4LL * k.hidden;
    m.vocab = 51200;
    EstimateInputs in = published_run(catalog, std::move(m), "dgx-a100", 2048, k.mbs, k.gbs, k.gpus, k.tp, k.pp, 1, k.vpp);
    in.memory.training.precision = Precision::fp16;
    in.memory.training.dropout = 0.1;
    in.memory.layout.recompute = k.selective ? Recompute::selective : Recompute::full;
    in.memory.layout.sequence_parallel = k.selective;
    in.memory.layout.attention = Attention::eager;
    in.time.dp_overlap = false;  // "we do not use any overlapping of gradient all-reduces" (section 6.3)
    in.time.pp_overlap = false;  // Megatron-LM of 2022: blocking batched send/recv (as Narayanan's above)
    in.memory.training.grad_nan_check = false;  // Megatron-LM of 2022: the check came with Megatron-Core's DDP
    in.perf = pc;
    return estimate_step(in).step_s;
  };
  double kor_mape_u = 0, kor_mape_c = 0;
  for (auto& k : kors) {
    k.pred_uncal = kor_predict(k, base);
    k.pred_cal = kor_predict(k, cal);
    kor_mape_u += std::abs(k.pred_uncal - k.seconds) / k.seconds;
    kor_mape_c += std::abs(k.pred_cal - k.seconds) / k.seconds;
  }
  kor_mape_u /= static_cast<double>(kors.size());
  kor_mape_c /= static_cast<double>(kors.size());

  // Published H100 runs: NVIDIA DGX Cloud Benchmarking recipes (NeMo / Megatron-Core), step time in seconds.
  struct Dgxc {
    std::string model, release;
    int gpus, seq, gbs, mbs, tp, pp, cp, vpp;
    std::string recompute, tp_overlap;
    double seconds;
    std::string loss, tp_overlap_sms, attention_backend;
    double pred = 0;
    double memory_gb = 0, capacity_gb = 0;
  };
  std::vector<Dgxc> dgxcs;
  for (const auto& c : validation::csv_records(repo + "/validation/data/dgxc-h100-bf16.csv"))
    dgxcs.push_back({c[0], c[1], std::stoi(c[2]), std::stoi(c[3]), std::stoi(c[4]), std::stoi(c[5]), std::stoi(c[6]),
                     std::stoi(c[7]), std::stoi(c[8]), std::stoi(c[9]), c[10], c[11], std::stod(c[12]), c.at(15),
                     c.at(16), c.at(17)});
  double dgxc_mape = 0;
  for (auto& d : dgxcs) {
    EstimateInputs in = published_run(catalog, model_from_catalog(d.model), "dgx-h100", d.seq, d.mbs, d.gbs, d.gpus,
                                      d.tp, d.pp, d.cp, d.vpp);
    in.memory.training.precision = Precision::bf16;
    // Gradients reduced in bf16: the GPT-3 recipe yaml sets optim.grad_sync_dtype: bf16 (nemo_megatron/
    // gpt3_175b_hydra.yaml), and the Llama runs' NeMo performance recipes set grad_reduce_in_fp32 = False (shared/
    // data/frameworks/examples/nemo/llama3_{8b,70b}.py, pretrain_performance_optimizations). With fp32 gradients
    // the 8B run on 8 GPUs and the 405B runs would not fit in 80 GB.
    in.memory.training.grad_dtype = DType::bf16;
    if (d.model == "gpt3-175b") {
      // GPT-3's yaml keeps hidden and attention dropout at 0.1; the Llama models have none.
      in.memory.training.dropout = 0.1;
    }
    // The SMs of TP overlap where the recipe states them (GPT-3's yaml; the CSV's comment derives the count).
    if (!d.tp_overlap_sms.empty()) in.time.tp_overlap_sms = std::stod(d.tp_overlap_sms);
    // The loss column: NeMo 2.0's fused cross-entropy for the Llama runs, Megatron-LM's unfused one for GPT-3.
    in.memory.training.loss = d.loss == "fused-native" ? Loss::fused_native : Loss::unfused;
    in.memory.layout.sequence_parallel = d.tp > 1;
    in.memory.layout.zero = 1;  // distributed optimizer
    // Unknown settings (empty fields) take NeMo's launcher defaults: no recomputation, TP overlap on.
    in.memory.layout.recompute = d.recompute == "full" ? Recompute::full
                                 : d.recompute == "selective" ? Recompute::selective : Recompute::none;
    in.memory.layout.attention = Attention::flash;
    // The kernel each launch script asks Transformer Engine for (NVTE_FUSED_ATTN; the CSV's comment).
    in.memory.layout.attention_backend =
        d.attention_backend == "flash" ? AttentionBackend::flash : AttentionBackend::fused;
    in.time.tp_overlap = d.tp_overlap != "off";
    in.time.dp_overlap = true;
    const StepEstimate e = estimate_step(in);
    d.pred = e.step_s;
    d.memory_gb = static_cast<double>(e.memory.worst().total) / 1e9;
    d.capacity_gb = static_cast<double>(e.memory.capacity_bytes) / 1e9;
    dgxc_mape += std::abs(d.pred - d.seconds) / d.seconds;
  }
  dgxc_mape /= static_cast<double>(dgxcs.size());

  // Every held-out set as measured/predicted rows, for the same statistics.
  std::vector<validation::ValidationSet> sets;
  {
    validation::ValidationSet n{"Narayanan SC'21 Table 1 (A100, Selene)", "TFLOP/s", "validation/data/narayanan-sc21-table1.csv", {}, {}};
    for (const auto& p : pubs) n.rows.push_back({p.model, p.model, p.tflops, p.pred_uncal});   // one run per model
    validation::ValidationSet k{"Korthikanti et al. 2022 Table 5 (A100, Selene)", "s", "validation/data/korthikanti-2022-table5.csv", {}, {}};
    for (const auto& x : kors) k.rows.push_back({x.model, x.model + " " + std::to_string(x.gpus), x.seconds, x.pred_uncal});
    validation::ValidationSet d{"NVIDIA DGX Cloud benchmarks, H100 BF16", "s", "validation/data/dgxc-h100-bf16.csv", {}, {}};
    for (const auto& x : dgxcs) d.rows.push_back({x.model, x.model + " " + std::to_string(x.gpus), x.seconds, x.pred});
    sets = {n, k, d, validation::nemo_h100_fp8_runs(repo), validation::torchtitan_runs(repo),
            validation::b200_megatron_runs(repo), validation::b200_further_runs(repo), validation::published_busbw(repo)};
  }

  std::string md;
  md += "# Step-time validation\n\nRegenerate with `validation/run_time_validation.sh` (add `--fit` to refit the calibration).\n";
  md += "Predictions use `estimate_step` with the communication model of src/comm as built.\n\n";
  md += "## Summary\n\n| set | configurations | constants | MAPE | max error | mean signed error | Spearman (mean per group) | pairwise order | pairwise order, >10% apart |\n|---|---|---|---|---|---|---|---|---|\n";
  auto line = [&](const char* set, std::size_t n, const char* which, const Stats& s) {
    md += fmt::format("| {} | {} | {} | {:.1f}% | {:.1f}% | {:+.1f}% | {:.3f} ({} groups) | {:.1f}% | {:.1f}% |\n", set, n, which,
                      100 * s.mape, 100 * s.max_ape, 100 * s.bias, s.spearman, s.groups, 100 * s.pairwise, 100 * s.pairwise10);
  };
  line("vTrain A100 single node", rows.size(), "data/perf.json (published)", uncal);
  line("vTrain A100 single node", rows.size(), "calibrated", calst);
  for (const auto& set : sets) {
    const validation::SetStats st = validation::set_stats(set.rows);
    md += fmt::format("| {} | {} | data/perf.json (published) | {:.1f}% | {:.1f}% | {:+.1f}% | {} | | |\n", set.name,
                      set.rows.size(), 100 * st.mape, 100 * st.max_error, 100 * st.bias,
                      st.groups > 0 ? fmt::format("{:.3f} ({} group{})", st.spearman, st.groups, st.groups == 1 ? "" : "s")
                                    : "no group of 3");
  }
  md += fmt::format("| Narayanan SC'21 Table 1 | {} | calibrated on vTrain | {:.1f}% | | | | | |\n", pubs.size(), 100 * pub_mape_c);
  md += fmt::format("| Korthikanti et al. 2022 Table 5 | {} | calibrated on vTrain | {:.1f}% | | | | | |\n\n", kors.size(), 100 * kor_mape_c);
  md += "Errors are (predicted - measured) / measured: negative is predicted too fast (for TFLOP/s and GB/s, too slow). "
        "Spearman is the rank correlation of predicted and measured inside each group of at least 3 runs of one model "
        "and GPU count (the layouts `plan` has to order), averaged over the groups. The targets: MAPE <= 5%, "
        "|mean signed error| <= 3%, Spearman >= 0.9 on every set.\n\n";
  auto by = [&](const char* what, auto key) {
    std::map<int, std::pair<std::vector<Row>, std::vector<Row>>> g;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      g[key(rows[i])].first.push_back(rows_uncal[i]);
      g[key(rows[i])].second.push_back(rows[i]);
    }
    for (const auto& [k, v] : g) {
      const Stats su = stats(v.first), sc = stats(v.second);
      md += fmt::format("| {} = {} | {} | {:.1f}% ({:+.1f}%) | {:.1f}% ({:+.1f}%) |\n", what, k, v.first.size(), 100 * su.mape,
                        100 * su.bias, 100 * sc.mape, 100 * sc.bias);
    }
  };
  md += "vTrain single node by group: MAPE (mean signed error)\n\n| group | configurations | published | calibrated |\n|---|---|---|---|\n";
  by("GPUs", [](const Row& r) { return r.gpus; });
  by("hidden", [](const Row& r) { return r.hidden; });
  by("tp", [](const Row& r) { return r.tp; });
  by("pp", [](const Row& r) { return r.pp; });
  by("dp", [](const Row& r) { return r.dp; });
  by("micro batch", [](const Row& r) { return r.mbs; });
  md += "\nCalibrated constants (validation/data/a100-megatron-calibration.json; the calibrated vTrain predictions also use "
        "validation/data/a100-vtrain-comm-calibration.json, fitted to the same testbed's nccl-tests all-reduce tables "
        "tests/data/nccl-tests/a100-8gpu-allreduce; Narayanan's Selene runs keep the uncalibrated comm model):\n\n";
  for (const auto& p : params) md += fmt::format("- {}: {:.4g} (published default {:.4g})\n", p.key, cal.*(p.member), base.*(p.member));
  md += "\n## Narayanan et al. SC'21 Table 1 (A100 80GB, Selene), hardware TFLOP/s per GPU\n\n";
  md += "| model | GPUs | tp | pp | vpp | micro batch | global batch | measured | predicted (published constants) | error | predicted (calibrated) | error |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& p : pubs)
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {:.0f} | {:.1f} | {:+.1f}% | {:.1f} | {:+.1f}% |\n", p.model, p.gpus, p.tp, p.pp,
                      p.vpp, p.mbs, p.gbs, p.tflops, p.pred_uncal, 100 * (p.pred_uncal - p.tflops) / p.tflops, p.pred_cal,
                      100 * (p.pred_cal - p.tflops) / p.tflops);
  md += "\n## Korthikanti et al. 2022 Table 5 (A100 80GB, Selene), iteration time in seconds\n\n";
  md += "Held out, never fitted. full = full recomputation without sequence parallelism, selective = sequence parallelism + "
        "selective recomputation; data parallel size 1 except the 2240-GPU run (section 6.3); eager attention, no gradient-reduction overlap.\n\n";
  md += "| model | GPUs | tp | pp | vpp | micro batch | global batch | recompute | measured | predicted (published constants) | error | predicted (calibrated) | error |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& k : kors)
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {:.2f} | {:.2f} | {:+.1f}% | {:.2f} | {:+.1f}% |\n", k.model, k.gpus, k.tp, k.pp, k.vpp,
                      k.mbs, k.gbs, k.selective ? "selective + SP" : "full", k.seconds, k.pred_uncal,
                      100 * (k.pred_uncal - k.seconds) / k.seconds, k.pred_cal, 100 * (k.pred_cal - k.seconds) / k.seconds);
  md += "\n## NVIDIA DGX Cloud Benchmarking recipes (H100 SXM 80GB, BF16, NeMo), step time in seconds\n\n";
  md += "Held out, never fitted (the calibration is A100-only). Source and recipe settings: validation/data/dgxc-h100-bf16.csv. "
        "All runs: sequence parallelism with TP, distributed optimizer, flash attention, overlapped gradient reduction in "
        "bf16 (GPT-3's yaml: grad_sync_dtype bf16; NeMo's Llama performance recipes: grad_reduce_in_fp32 False); GPT-3 "
        "with its yaml's dropout 0.1 and Megatron-LM's unfused cross-entropy; the Llama runs with NeMo 2.0's fused "
        "one (GPTConfig cross_entropy_loss_fusion True, Megatron's native implementation). "
        "Recompute and TP overlap marked (assumed) are not published for the Llama 3.1 runs; NeMo's launcher defaults are "
        "used (none, on). The memory column is gpuplan's worst-stage estimate against the usable memory.\n\n";
  md += "| model | release | GPUs | seq | global batch | tp | pp | cp | vpp | recompute | TP overlap | measured | predicted | error | memory (GB) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& d : dgxcs)
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2f} | {:.2f} | {:+.1f}% | {:.1f} of {:.1f} |\n", d.model, d.release,
                      d.gpus, d.seq, d.gbs, d.tp, d.pp, d.cp, d.vpp, d.recompute.empty() ? "none (assumed)" : d.recompute,
                      d.tp_overlap.empty() ? "on (assumed)" : d.tp_overlap, d.seconds, d.pred, 100 * (d.pred - d.seconds) / d.seconds,
                      d.memory_gb, d.capacity_gb);
  for (std::size_t i = 3; i < sets.size(); ++i) md += validation::set_table(sets[i]);
  md += "\n## vTrain A100 single node: every configuration (iteration time, ms)\n\n";
  md += "| GPUs | global batch | micro batch | hidden | layers | tp | dp | pp | measured | predicted (published) | error | predicted (calibrated) | error |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {:.1f} | {:.1f} | {:+.1f}% | {:.1f} | {:+.1f}% |\n", r.gpus, r.gbs, r.mbs,
                      r.hidden, r.layers, r.tp, r.dp, r.pp, r.ms, rows_uncal[i].pred, 100 * (rows_uncal[i].pred - r.ms) / r.ms,
                      r.pred, 100 * (r.pred - r.ms) / r.ms);
  }
  std::ofstream(repo + "/validation/time_report.md") << md;
  fmt::print("vTrain: published MAPE {:.1f}% pairwise {:.1f}% spearman {:.3f}; calibrated MAPE {:.1f}% pairwise {:.1f}% spearman {:.3f}\n",
             100 * uncal.mape, 100 * uncal.pairwise, uncal.spearman, 100 * calst.mape, 100 * calst.pairwise, calst.spearman);
  fmt::print("Narayanan Table 1: published MAPE {:.1f}%, calibrated {:.1f}%\n", 100 * pub_mape_u, 100 * pub_mape_c);
  for (const auto& p : pubs) fmt::print("  {} measured {} pred {:.1f} / {:.1f}\n", p.model, p.tflops, p.pred_uncal, p.pred_cal);
  fmt::print("Korthikanti Table 5: published MAPE {:.1f}%, calibrated {:.1f}%\n", 100 * kor_mape_u, 100 * kor_mape_c);
  fmt::print("DGX Cloud H100 BF16: published MAPE {:.1f}%\n", 100 * dgxc_mape);
  return 0;
}
