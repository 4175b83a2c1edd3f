// The page: the form, its state in the URL, the questions asked of the library in a Web Worker, and the results
// drawn. Every number shown comes from the library's result JSON (the exact value in data-value).
import { FIELDS, requestsFor, stateFromUrl, urlFromState } from "./state.js";
import { render, renderError, renderProgress, clearErrors } from "./render.js";

const worker = new Worker("worker.js");
const pending = new Map();
let nextId = 1;

function ask(question, request, onProgress) {
  const id = nextId++;
  return new Promise((resolve) => {
    pending.set(id, { resolve, onProgress });
    worker.postMessage({ id, question, request });
  });
}

worker.onmessage = (event) => {
  const { id, result, progress, ms } = event.data;
  const waiting = pending.get(id);
  if (!waiting) return;
  if (progress) {
    waiting.onProgress?.(progress[0], progress[1]);
    return;
  }
  pending.delete(id);
  waiting.resolve({ result, ms });
};

// A worker that cannot start (no WebAssembly, a file missing from the host) is said, not waited for.
worker.onerror = (event) => {
  event.preventDefault();
  document.getElementById("status").textContent = `The library could not be loaded: ${event.message ?? "worker error"}`;
  document.body.dataset.ready = "error";
};

const form = document.getElementById("inputs");

function readForm() {
  const state = {};
  for (const f of FIELDS) {
    if (f.name === "mode") {
      state.mode = form.querySelector('input[name="mode"]:checked').value;
      continue;
    }
    const input = form.elements[f.name];
    if (f.kind === "flag") state[f.name] = input.checked;
    else if (f.kind === "integer") state[f.name] = /^-?\d+$/.test(input.value.trim()) ? Number(input.value) : input.value;
    else state[f.name] = input.value;
  }
  return state;
}

function fillForm(state) {
  for (const f of FIELDS) {
    if (f.name === "mode") {
      form.querySelector(`input[name="mode"][value="${state.mode}"]`).checked = true;
      continue;
    }
    const input = form.elements[f.name];
    if (f.kind === "flag") input.checked = Boolean(state[f.name]);
    else {
      // A value the list lacks (a link naming an unknown model) is kept, so that the library names it.
      if (input.tagName === "SELECT" && ![...input.options].some((o) => o.value === String(state[f.name])))
        input.append(new Option(String(state[f.name])));
      input.value = state[f.name];
    }
  }
  document.body.dataset.mode = state.mode;
  showPasted();
}

// A pasted config.json replaces the catalog model, a pasted topology the system: their choosers are disabled
// (and their text shown) while the text is there.
function showPasted() {
  for (const [text, chooser] of [["config", "model"], ["topology", "system"]]) {
    const given = form.elements[text].value.trim() !== "";
    form.elements[chooser].disabled = given;
    if (given) document.getElementById(`${text}-details`).open = true;
  }
}

let generation = 0;

// Asks every question the state needs and draws the answers; a newer run makes an older one's answers moot.
// startedAt is when the input changed: the page records how long it took until the answer was on screen.
async function run(state, startedAt) {
  const mine = ++generation;
  document.body.dataset.mode = state.mode;
  document.body.dataset.ready = "running";
  const requests = requestsFor(state);
  const answers = {};
  let answerMs = 0;
  for (const [question, request] of Object.entries(requests)) {
    const { result, ms } = await ask(question, request, (done, total) => {
      if (mine === generation) renderProgress(done, total);
    });
    if (mine !== generation) return;
    answerMs += ms;
    if (result.error) {
      clearErrors();
      renderError(question, result.error);
      document.body.dataset.ready = "error";
      return;
    }
    answers[question] = result;
  }
  clearErrors();
  render(answers, state);
  document.getElementById("share-link").href = location.href;
  requestAnimationFrame(() => {
    if (mine !== generation) return;
    document.body.dataset.lastAnswerMs = answerMs.toFixed(1);
    document.body.dataset.lastRenderMs = (performance.now() - startedAt).toFixed(1);
    document.body.dataset.ready = "done";
  });
}

// History: the first edit after a committed state opens a new entry, later keystrokes update it, and a change
// (a select, leaving a field, the button) commits it, so Back returns to the previous question, not keystroke.
let editing = false;

function submit(how, startedAt = performance.now()) {
  const state = readForm();
  const url = urlFromState(state);
  if (how === "push" || (how === "edit" && !editing)) history.pushState(null, "", url);
  else if (how === "edit" || how === "replace") history.replaceState(null, "", url);
  editing = how === "edit";
  run(state, startedAt);
}

// A layout check answers as the user types (it takes milliseconds); a search waits for its button.
form.addEventListener("input", (event) => {
  if (event.target.type === "file") return;
  showPasted();
  if (readForm().mode === "check") submit("edit", event.timeStamp);
  else if (event.target.name === "mode") submit("push", event.timeStamp);
});
form.addEventListener("change", () => {
  editing = false;
});
form.addEventListener("submit", (event) => {
  event.preventDefault();
  submit(editing ? "replace" : "push", event.timeStamp);
  editing = false;
});
window.addEventListener("popstate", () => {
  fillForm(stateFromUrl(location.search));
  editing = false;
  run(readForm(), performance.now());
});

// Files dropped or chosen: their text goes into the field beside them.
for (const [fileInput, target] of [["config_file", "config"], ["topology_file", "topology"]]) {
  form.elements[fileInput].addEventListener("change", async (event) => {
    const file = event.target.files[0];
    if (!file) return;
    form.elements[target].value = await file.text();
    showPasted();
    submit("push");
  });
}

async function fillCatalog() {
  const [models, systems, gpus] = await Promise.all(["models", "systems", "gpus"].map((kind) => ask("catalog", { kind })));
  const options = (select, entries, describe) => {
    for (const entry of entries) select.append(new Option(describe(entry), entry.name));
  };
  options(form.elements.model, models.result.models, (m) => `${m.name} (${(m.total_params / 1e9).toFixed(1)} B)`);
  options(form.elements.system, systems.result.systems, (s) => `${s.name}: ${s.gpus_per_node}x ${s.gpu}`);
  options(form.elements.gpu, gpus.result.gpus, (g) => g.name);
}

await fillCatalog();
fillForm(stateFromUrl(location.search));
submit("replace");
