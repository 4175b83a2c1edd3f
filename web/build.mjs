// Builds web/dist/: the page's modules bundled with esbuild, the worker, the WebAssembly library and its loader,
// the HTML and CSS. Run by `make web` after the library is built (node build.mjs WASM_BUILD_DIR).
import { build } from "esbuild";
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const wasmDir = process.argv[2] ?? join(here, "..", "build-web");
const dist = join(here, "dist");

rmSync(dist, { recursive: true, force: true });
mkdirSync(dist, { recursive: true });

await build({
  entryPoints: [join(here, "src", "app.js")],
  bundle: true,
  format: "esm",
  minify: true,
  target: ["es2022"],
  outfile: join(dist, "app.js"),
  logLevel: "warning",
});
await build({
  entryPoints: [join(here, "src", "worker.js")],
  bundle: false,
  minify: true,
  target: ["es2022"],
  outfile: join(dist, "worker.js"),
  logLevel: "warning",
});
for (const file of ["index.html", "style.css"]) copyFileSync(join(here, "src", file), join(dist, file));
for (const file of ["gpuplan.js", "gpuplan.wasm"]) copyFileSync(join(wasmDir, file), join(dist, file));
console.log(`web: wrote ${dist}`);
