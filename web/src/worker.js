// The library in a Web Worker, so that a search never freezes the page. Messages in: {id, question, request};
// out: {id, result} (the JSON `gpuplan QUESTION --json` prints, or {error}) and {id, progress: [done, total]}.
/* global importScripts, createGpuplan */
importScripts("gpuplan.js");

let current = null;   // the id of the question being answered, for its progress reports
const ready = createGpuplan({
  onProgress(done, total) {
    if (current !== null) postMessage({ id: current, progress: [done, total] });
  },
});

function answer(gpuplan, question, request) {
  const encoder = new TextEncoder();
  const questionBytes = encoder.encode(question + "\0");
  const requestBytes = encoder.encode(JSON.stringify(request) + "\0");
  const questionPtr = gpuplan._malloc(questionBytes.length);
  const requestPtr = gpuplan._malloc(requestBytes.length);
  gpuplan.HEAPU8.set(questionBytes, questionPtr);
  gpuplan.HEAPU8.set(requestBytes, requestPtr);
  const resultPtr = gpuplan._gpuplan_answer(questionPtr, requestPtr);
  const text = gpuplan.UTF8ToString(resultPtr);
  gpuplan._gpuplan_free(resultPtr);
  gpuplan._free(questionPtr);
  gpuplan._free(requestPtr);
  return JSON.parse(text);
}

onmessage = async (event) => {
  const { id, question, request } = event.data;
  const gpuplan = await ready;
  current = id;
  const started = performance.now();
  let result;
  try {
    result = answer(gpuplan, question, request);
  } catch (error) {
    result = { error: { field: "", message: `internal error: ${error}` } };
  }
  current = null;
  postMessage({ id, result, ms: performance.now() - started });
};
