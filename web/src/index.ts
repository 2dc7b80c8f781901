// weft-web: Weft's WebAssembly package with a sync client and a Quill
// binding. Call `loadWeft()` once before using anything.

import init, { initSync } from "../pkg/weft_wasm.js";

export * from "../pkg/weft_wasm.js";
export { SyncClient, type SyncOptions, type SyncState, type SyncStatus } from "./sync.js";
export { QuillBinding, type QuillBindingOptions, type User } from "./quill-binding.js";
export { Status, statusNames } from "./protocol.js";

/** Loads the WebAssembly module: from `wasm` (a URL, a Response, or the
 * module's bytes), by default `weft_wasm_bg.wasm` beside the page. */
export async function loadWeft(wasm?: string | URL | Response | BufferSource): Promise<void> {
  if (wasm instanceof ArrayBuffer || ArrayBuffer.isView(wasm)) {
    memory = initSync({ module: wasm }).memory;
    return;
  }
  memory = (await init({ module_or_path: wasm ?? new URL("weft_wasm_bg.wasm", document.baseURI) })).memory;
}

let memory: WebAssembly.Memory | null = null;

/** The size of the WebAssembly module's memory in bytes (it grows, and
 * never shrinks; freed memory is reused). */
export function wasmMemoryBytes(): number {
  return memory ? memory.buffer.byteLength : 0;
}
