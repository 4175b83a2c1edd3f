// The page's scenarios, each as the URL a user would share and the `gpuplan` command that asks the same question.
// Both are written out here by hand, so that the page's own mapping of its form to requests is under test too.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const CONFIG_PATH = join(repo, "tests/data/hf-configs/mistralai--Mixtral-8x7B-v0.1/config.json");
export const TOPO_PATH = join(repo, "tests/data/topo/11_hgx-h100_nv18_8nic_full-legend_nic-legend.txt");
const config = readFileSync(CONFIG_PATH, "utf8");
const topology = readFileSync(TOPO_PATH, "utf8");

// The page's initial form, spelled as command-line options (web/src/state.js).
const TRAINING = ["--seq-len", "8192", "--global-batch", "512", "--precision", "bf16", "--optimizer", "adam"];

function layout({ tp = 8, pp = 4, vpp = 1, cp = 1, cpComm = "p2p", ep = 1, micro = 1, zero = 1, recompute = "selective",
                  attention = "auto", offload = "none", sp = true }) {
  const args = ["--micro-batch", micro, "--tp", tp, "--pp", pp, "--vpp", vpp, "--cp", cp, "--cp-comm-type", cpComm,
                "--ep", ep, "--zero", zero, "--recompute", recompute, "--attention-backend", attention,
                "--offload", offload];
  if (sp) args.push("--sequence-parallel");
  return [...args.map(String), "--all-stages"];
}

function withTraining(overrides) {
  const args = [...TRAINING];
  for (const [flag, v] of Object.entries(overrides)) args[args.indexOf(flag) + 1] = String(v);
  return args;
}

export const SCENARIOS = [
  {
    name: "dense",
    query: {},
    cli: ["estimate", "--model", "llama-3.1-70b", "--system", "dgx-h100", "--nodes", "8", ...TRAINING, ...layout({})],
  },
  {
    name: "moe",
    query: { model: "mixtral-8x7b", nodes: 2, tp: 2, pp: 1, ep: 8, seq_len: 4096, global_batch: 256 },
    cli: ["estimate", "--model", "mixtral-8x7b", "--system", "dgx-h100", "--nodes", "2",
          ...withTraining({ "--seq-len": 4096, "--global-batch": 256 }), ...layout({ tp: 2, pp: 1, ep: 8 })],
  },
  {
    name: "long-context",
    query: { model: "llama-3.1-8b", nodes: 2, tp: 4, pp: 1, cp: 4, cp_comm_type: "all_gather", seq_len: 131072,
             global_batch: 16 },
    cli: ["estimate", "--model", "llama-3.1-8b", "--system", "dgx-h100", "--nodes", "2",
          ...withTraining({ "--seq-len": 131072, "--global-batch": 16 }),
          ...layout({ tp: 4, pp: 1, cp: 4, cpComm: "all_gather" })],
  },
  {
    name: "offload",
    query: { nodes: 1, pp: 1, zero: 3, offload: "optimizer", global_batch: 64 },
    cli: ["estimate", "--model", "llama-3.1-70b", "--system", "dgx-h100", "--nodes", "1",
          ...withTraining({ "--global-batch": 64 }), ...layout({ pp: 1, zero: 3, offload: "optimizer" })],
  },
  {
    name: "config-json",
    query: { config, nodes: 2, tp: 2, pp: 1, ep: 8, seq_len: 4096, global_batch: 256 },
    cli: ["estimate", "--model", CONFIG_PATH, "--system", "dgx-h100", "--nodes", "2",
          ...withTraining({ "--seq-len": 4096, "--global-batch": 256 }), ...layout({ tp: 2, pp: 1, ep: 8 })],
  },
  {
    name: "topology",
    query: { topology, gpu: "h100-sxm-80gb", model: "llama-3.1-8b", nodes: 1, tp: 8, pp: 1, global_batch: 64 },
    cli: ["estimate", "--model", "llama-3.1-8b", "--topology", TOPO_PATH, "--gpu", "h100-sxm-80gb", "--nodes", "1",
          ...withTraining({ "--global-batch": 64 }), ...layout({ tp: 8, pp: 1 })],
    topo: ["topo", TOPO_PATH, "--gpu", "h100-sxm-80gb"],
  },
  {
    name: "torchtitan",
    query: { framework: "torchtitan", model: "llama-3.1-8b", nodes: 1, tp: 1, pp: 1, zero: 3,
             sequence_parallel: 0, global_batch: 64 },
    cli: ["estimate", "--model", "llama-3.1-8b", "--system", "dgx-h100", "--nodes", "1",
          ...withTraining({ "--global-batch": 64 }), "--framework", "torchtitan",
          ...layout({ tp: 1, pp: 1, zero: 3, sp: false })],
  },
  {
    name: "attention-kernel",
    query: { attention_backend: "flash", model: "llama-3.1-8b", nodes: 1, pp: 1, global_batch: 64 },
    cli: ["estimate", "--model", "llama-3.1-8b", "--system", "dgx-h100", "--nodes", "1",
          ...withTraining({ "--global-batch": 64 }), ...layout({ pp: 1, attention: "flash" })],
  },
  {
    name: "moe-flex",
    query: { model: "mixtral-8x7b", nodes: 2, tp: 2, pp: 1, ep: 8, moe_dispatcher: "flex", moe_capacity_factor: "1.25",
             seq_len: 4096, global_batch: 256 },
    cli: ["estimate", "--model", "mixtral-8x7b", "--system", "dgx-h100", "--nodes", "2",
          ...withTraining({ "--seq-len": 4096, "--global-batch": 256 }), "--moe-dispatcher", "flex",
          "--moe-capacity-factor", "1.25", ...layout({ tp: 2, pp: 1, ep: 8 })],
  },
  {
    name: "search",
    query: { mode: "search", model: "gpt3-175b", system: "dgx-a100", nodes: 32, seq_len: 2048, global_batch: 1024 },
    cli: ["plan", "--model", "gpt3-175b", "--system", "dgx-a100", "--nodes", "32",
          ...withTraining({ "--seq-len": 2048, "--global-batch": 1024 }), "--top", "5"],
  },
  {
    name: "does-not-fit",
    query: { nodes: 1, tp: 1, pp: 1, zero: 0, recompute: "none", sequence_parallel: 0, global_batch: 64 },
    cli: ["estimate", "--model", "llama-3.1-70b", "--system", "dgx-h100", "--nodes", "1",
          ...withTraining({ "--global-batch": 64 }), ...layout({ tp: 1, pp: 1, zero: 0, recompute: "none", sp: false })],
  },
  {
    name: "size",
    query: { mode: "size", model: "llama-3.1-8b", systems: "dgx-h100,dgx-b200", size_nodes: "1:8", price: "2.5" },
    cli: ["size", "--model", "llama-3.1-8b", "--tokens", "1T", ...TRAINING, "--systems", "dgx-h100,dgx-b200",
          "--nodes", "1:8", "--price", "2.5", "--explain"],
  },
];

export function queryString(query) {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) params.set(k, String(v));
  const text = params.toString();
  return text ? `?${text}` : "";
}
