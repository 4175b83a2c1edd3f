// The page's whole state: the form's fields, kept in the URL (a shareable link; back and forward restore it).
export const FIELDS = [
  { name: "mode", kind: "choice", initial: "check", choices: ["check", "search", "size"] },
  { name: "model", kind: "text", initial: "llama-3.1-70b" },
  { name: "config", kind: "text", initial: "" },
  { name: "system", kind: "text", initial: "dgx-h100" },
  { name: "nodes", kind: "integer", initial: 8 },
  { name: "topology", kind: "text", initial: "" },
  { name: "gpu", kind: "text", initial: "" },
  { name: "seq_len", kind: "integer", initial: 8192 },
  { name: "micro_batch", kind: "integer", initial: 1 },
  { name: "global_batch", kind: "integer", initial: 512 },
  { name: "precision", kind: "text", initial: "bf16" },
  { name: "optimizer", kind: "text", initial: "adam" },
  { name: "framework", kind: "text", initial: "megatron" },
  { name: "moe_dispatcher", kind: "text", initial: "alltoall" },
  { name: "moe_capacity_factor", kind: "text", initial: "" },
  { name: "tp", kind: "integer", initial: 8 },
  { name: "pp", kind: "integer", initial: 4 },
  { name: "vpp", kind: "integer", initial: 1 },
  { name: "cp", kind: "integer", initial: 1 },
  { name: "cp_comm_type", kind: "text", initial: "p2p" },
  { name: "ep", kind: "integer", initial: 1 },
  { name: "zero", kind: "integer", initial: 1 },
  { name: "recompute", kind: "text", initial: "selective" },
  { name: "attention_backend", kind: "text", initial: "auto" },
  { name: "offload", kind: "text", initial: "none" },
  { name: "sequence_parallel", kind: "flag", initial: true },
  // Sizing a training run (gpuplan size): the token budget, the systems and node counts to sweep.
  { name: "tokens", kind: "text", initial: "1T" },
  { name: "systems", kind: "text", initial: "dgx-h100,dgx-h200,dgx-b200,mi300x-8x" },
  { name: "size_nodes", kind: "text", initial: "1:64" },
  { name: "deadline", kind: "text", initial: "" },
  { name: "price", kind: "text", initial: "" },
];

// The names the page gives pasted files, which the library's errors about them name.
export const PASTED_CONFIG = "pasted config.json";
export const PASTED_TOPOLOGY = "pasted topology";

export function initialState() {
  return Object.fromEntries(FIELDS.map((f) => [f.name, f.initial]));
}

// The state a URL's query holds; fields it does not name keep their initial values. Numbers that do not parse are
// kept as typed, so that the library names them.
export function stateFromUrl(search) {
  const params = new URLSearchParams(search);
  const state = initialState();
  for (const f of FIELDS) {
    if (!params.has(f.name)) continue;
    const raw = params.get(f.name);
    if (f.kind === "flag") state[f.name] = raw === "1";
    else if (f.kind === "choice") state[f.name] = f.choices.includes(raw) ? raw : f.initial;
    else if (f.kind === "integer") state[f.name] = /^-?\d+$/.test(raw) ? Number(raw) : raw;
    else state[f.name] = raw;
  }
  return state;
}

// Only what differs from the initial state goes into the URL, so links stay short.
export function urlFromState(state) {
  const params = new URLSearchParams();
  for (const f of FIELDS) {
    const value = state[f.name];
    if (value === f.initial) continue;
    params.set(f.name, f.kind === "flag" ? (value ? "1" : "0") : String(value));
  }
  const query = params.toString();
  return query ? `?${query}` : location.pathname;
}

// The library's requests for a state: a model by catalog name or as a pasted config, the machines as a system or
// a pasted topology, and the layout to check (estimate) or the search (plan).
export function requestsFor(state) {
  const model = state.config.trim() ? { config: state.config, name_or_path: PASTED_CONFIG } : state.model;
  const machines = state.topology.trim()
    ? { topology: { path: PASTED_TOPOLOGY, text: state.topology }, gpu: state.gpu || undefined, nodes: state.nodes }
    : { system: state.system, nodes: state.nodes };
  const training = { seq_len: state.seq_len, global_batch: state.global_batch, precision: state.precision,
                     optimizer: state.optimizer };
  const requests = {};
  if (state.mode === "size") {
    // The sweep's clusters are its systems and node counts, not the form's hardware.
    requests.size = { model, ...training, tokens: state.tokens, nodes: state.size_nodes, explain: true, chart: "page",
                      systems: state.systems.split(",").map((name) => name.trim()).filter(Boolean),
                      deadline: state.deadline.trim() || undefined, price: state.price.trim() || undefined };
    return requests;
  }
  // The framework decides what a layout check prices and what a search may pick, and so do an MoE model's token
  // dispatcher and capacity factor (empty: dropless; a factor that is not a number goes as typed, for the library to
  // name); sizing has its own defaults.
  const factor = state.moe_capacity_factor.trim();
  const framework = { framework: state.framework, moe_dispatcher: state.moe_dispatcher,
                      moe_capacity_factor: factor === "" ? undefined : Number.isFinite(Number(factor)) ? Number(factor)
                        : factor };
  if (state.mode === "search") {
    requests.plan = { model, ...machines, ...training, ...framework, top: 5 };
  } else {
    requests.estimate = { model, ...machines, ...training, ...framework, micro_batch: state.micro_batch,
                          tp: state.tp, pp: state.pp, vpp: state.vpp, cp: state.cp,
                          cp_comm_type: state.cp_comm_type, ep: state.ep, zero: state.zero,
                          recompute: state.recompute, attention_backend: state.attention_backend,
                          offload: state.offload, sequence_parallel: state.sequence_parallel, all_stages: true };
  }
  if (state.topology.trim())
    requests.topo = { file: { path: PASTED_TOPOLOGY, text: state.topology }, gpu: state.gpu || undefined };
  return requests;
}
