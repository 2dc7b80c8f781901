// Loads the bundled library (dist/weft-web.js) and its WebAssembly module
// for a Node.js test.
import { readFileSync } from "node:fs";
import * as weft from "../dist/weft-web.js";

await weft.loadWeft(readFileSync(new URL("../dist/weft_wasm_bg.wasm", import.meta.url)));
export default weft;
