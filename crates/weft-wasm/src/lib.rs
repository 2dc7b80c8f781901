//! Weft in the browser: WebAssembly bindings of the public API a
//! JavaScript editor needs, built with `wasm-bindgen`.
//!
//! The JavaScript API (documented in `web/README.md`, typed by the
//! generated `.d.ts`) follows loro-crdt's and yjs's conventions:
//! camelCase, handles from the document (`doc.getText(name)`), UTF-16
//! positions, Quill deltas, `subscribe` returning an unsubscribe
//! function. Every error is a JavaScript `Error` with Weft's message, and
//! a call that throws changes nothing. Objects are freed by `free()` or,
//! when forgotten, by the garbage collector (the glue is built with
//! `--weak-refs`, a `FinalizationRegistry`).
//!
//! On `wasm32-unknown-unknown` the standard library has no clock and no
//! randomness; the module's start function installs JavaScript's
//! `Date.now` and `crypto.getRandomValues` through [`weft::platform`].
//!
//! The crate also builds natively (its functions then need a JavaScript
//! host to run and are only compiled); `web/build.sh` builds the
//! WebAssembly module and its glue.

mod convert;
mod doc;
mod map;
mod presence;
mod shared;
mod text;
mod undo;

use wasm_bindgen::prelude::*;

pub use doc::{Doc, VersionVector};
pub use map::Map;
pub use presence::Presence;
pub use text::Text;
pub use undo::{Cursor, UndoManager};

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = console, js_name = error)]
    fn console_error_js(value: &JsValue);
}

#[cfg(target_arch = "wasm32")]
#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = Date, js_name = now)]
    fn date_now() -> f64;
    #[wasm_bindgen(js_namespace = crypto, js_name = getRandomValues)]
    fn get_random_values(buf: &js_sys::Uint32Array);
}

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = r#"
/** A value of a map, a mark, an embed or presence. */
export type Value = null | boolean | number | bigint | string | Value[] | { [key: string]: Value };
/** A Quill delta op. A block marker is `{insert: "\n", attributes}`. */
export type DeltaOp =
  | { insert: string | Value; attributes?: Record<string, Value> }
  | { retain: number; attributes?: Record<string, Value> }
  | { delete: number };
/** An op id: a peer (decimal string) and its counter. */
export interface OpId { peer: string; counter: number }
/** Ops `start..end` (end exclusive) of one peer. */
export interface IdSpan { peer: string; start: number; end: number }
/** What `Doc.subscribe` listeners get. */
export interface WeftEvent {
  by: "local" | "import" | "undo" | "redo" | "checkout";
  origin?: string;
  texts: { name: string; delta: DeltaOp[] }[];
  maps: { name: string; changes: Record<string, Value | undefined> }[];
}
/** What `Doc.export` writes. */
export type ExportMode =
  | { mode: "snapshot" }
  | { mode: "update"; from?: VersionVector }
  | { mode: "snapshot-at"; frontiers: OpId[] }
  | { mode: "shallow-snapshot"; frontiers: OpId[] };
/** Options of `Doc.commit`. */
export interface CommitOptions { origin?: string; message?: string; timestamp?: number | true }
/** A change of the history. */
export interface Change {
  peer: string; start: number; end: number; lamport: number; deps: OpId[];
  timestamp?: number; message?: string;
}
/** A block of a text: `start..end`, ended by the marker at `marker`. */
export interface Block { start: number; end: number; marker?: number; attributes: Record<string, Value> }
/** What `Presence.subscribe` listeners get. */
export interface PresenceEvent { by: "local" | "import" | "timeout"; added: string[]; updated: string[]; removed: string[] }
"#;

pub(crate) fn console_error(value: &JsValue) {
    console_error_js(value);
}

#[cfg(target_arch = "wasm32")]
fn js_clock() -> u64 {
    date_now().max(0.0) as u64
}

#[cfg(target_arch = "wasm32")]
fn js_entropy() -> u64 {
    let buf = js_sys::Uint32Array::new_with_length(2);
    get_random_values(&buf);
    (u64::from(buf.get_index(0)) << 32) | u64::from(buf.get_index(1))
}

/// Runs when the module is instantiated: gives Weft JavaScript's clock
/// and randomness, and makes a panic (a bug in Weft: none should happen)
/// print its message before the module traps.
#[wasm_bindgen(start)]
pub fn start() {
    #[cfg(target_arch = "wasm32")]
    {
        weft::platform::set_clock(js_clock);
        weft::platform::set_entropy(js_entropy);
        std::panic::set_hook(Box::new(|info| {
            console_error(&JsValue::from_str(&format!("weft panicked: {info}")));
        }));
    }
}

/// How many documents are alive: made and not yet released (by `free()`,
/// or by the garbage collector once nothing refers to them or to any of
/// their texts, maps or undo managers). For finding leaks.
#[wasm_bindgen(js_name = liveDocuments)]
pub fn live_documents() -> u32 {
    shared::LIVE.load(std::sync::atomic::Ordering::Relaxed)
}

/// The version of this package.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}
