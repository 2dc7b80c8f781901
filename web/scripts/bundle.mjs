// Bundles the TypeScript sources with esbuild into dist/:
// - dist/weft-web.js: the library (wasm glue, sync client, Quill binding),
//   an ES module for Node.js tests and for apps;
// - dist/index.html, dist/demo.js, dist/quill.snow.css: the demo editor;
// - dist/weft_wasm_bg.wasm: the WebAssembly module both load.
// Run web/build.sh first (it writes web/pkg/).
import { build } from "esbuild";
import { copyFileSync, mkdirSync, existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

const web = join(dirname(fileURLToPath(import.meta.url)), "..");
const dist = join(web, "dist");
if (!existsSync(join(web, "pkg", "weft_wasm_bg.wasm"))) {
  console.error("web/pkg is missing: run web/build.sh first");
  process.exit(1);
}
mkdirSync(dist, { recursive: true });
const common = { bundle: true, format: "esm", target: "es2022", sourcemap: true, logLevel: "warning" };
await build({ ...common, entryPoints: [join(web, "src/index.ts")], outfile: join(dist, "weft-web.js"), platform: "neutral", mainFields: ["module", "main"] });
await build({ ...common, entryPoints: [join(web, "demo/main.ts")], outfile: join(dist, "demo.js"), platform: "browser" });
copyFileSync(join(web, "pkg/weft_wasm_bg.wasm"), join(dist, "weft_wasm_bg.wasm"));
copyFileSync(join(web, "demo/index.html"), join(dist, "index.html"));
copyFileSync(join(web, "node_modules/quill/dist/quill.snow.css"), join(dist, "quill.snow.css"));
console.log("bundled into", dist);
