// Binds a Quill editor to a text of a Weft document.
//
// - Local Quill changes become Weft edits (`Text.applyQuillDelta`): every
//   line end Quill shows is a Weft block marker carrying its line formats,
//   so a header or a list item never leaks onto text a peer types on the
//   next line. Quill's document is the Weft text plus Quill's own final
//   "\n", which Weft does not store.
// - Weft events (remote imports, undo, redo, edits by other code) become
//   Quill updates; the binding's own edits are never echoed back.
// - Undo and redo (keys and the browser's history input) go through
//   Weft's `UndoManager`: they undo this user's edits only, never a peer's.
// - With a `Presence`, this user's caret and selection are shared as
//   stable cursors, and other users' are drawn over the editor.

import type Quill from "quill";
import Delta from "quill-delta";
import { Cursor, Doc, Presence, Text, UndoManager, type DeltaOp, type WeftEvent } from "../pkg/weft_wasm.js";

type Op = { insert?: unknown; retain?: number; delete?: number; attributes?: Record<string, unknown> };

export interface User {
  name: string;
  color: string;
}

export interface QuillBindingOptions {
  /** Shares carets and selections (key `user:<peer id>`). */
  presence?: Presence;
  /** This user, shown beside their caret on other screens. */
  user?: User;
  /** The origin of the binding's commits (default "quill"). */
  origin?: string;
  /** Edits closer than this many milliseconds undo as one step (default
   * 1000, as Quill's own history). */
  undoMergeMs?: number;
}

/** What a user shares in presence. */
interface Shared {
  name: string;
  color: string;
  anchor: number[] | null;
  head: number[] | null;
}

/** A peer's color if it is a plain CSS color (`#rgb`, `#rrggbb`, a
 * color name), else a neutral one: presence comes from other users, and
 * goes into style attributes. */
function safeColor(color: unknown): string {
  return typeof color === "string" && /^(#[0-9a-fA-F]{3,8}|[a-zA-Z]{1,20})$/.test(color) ? color : "#888";
}

/** Quill's delta for a Weft change delta: block markers as "\n", with
 * their formats only when they have some. */
function toQuill(delta: Op[]): Op[] {
  return delta.map((op) => {
    if (op.insert === "\n" && op.attributes && Object.keys(op.attributes).length === 0) {
      return { insert: "\n" };
    }
    return op;
  });
}

export class QuillBinding {
  readonly doc: Doc;
  readonly text: Text;
  readonly quill: Quill;
  readonly undoManager: UndoManager;
  private origin: string;
  private presence?: Presence;
  private user?: User;
  private key: string;
  private carets: HTMLElement;
  private off: Array<() => void> = [];
  private applying = false;

  constructor(doc: Doc, textName: string, quill: Quill, options: QuillBindingOptions = {}) {
    this.doc = doc;
    this.text = doc.getText(textName);
    this.quill = quill;
    this.origin = options.origin ?? "quill";
    this.presence = options.presence;
    this.user = options.user;
    this.key = `user:${doc.peerId}`;
    this.undoManager = new UndoManager(doc);
    this.undoManager.setMergeInterval(options.undoMergeMs ?? 1000);

    quill.setContents(this.text.toQuillDelta() as never, "silent");

    const onText = (delta: { ops: Op[] }, _old: unknown, source: string) => {
      if (source !== "user" || this.applying) return;
      this.applyLocal(delta.ops);
    };
    quill.on("text-change", onText as never);
    this.off.push(() => quill.off("text-change", onText as never));

    this.off.push(doc.subscribe((event: WeftEvent) => {
      if (event.by === "local" && event.origin === this.origin) return;
      for (const t of event.texts) {
        if (t.name !== textName) continue;
        this.applying = true;
        try {
          const change = new Delta(toQuill(t.delta as Op[]) as never);
          const selection = quill.getSelection();
          quill.updateContents(change, "api");
          if (selection && event.by === "import") {
            // Text another user typed right at this user's caret goes after
            // it: the caret stays with the char before it, so typing goes
            // on where it was (Quill alone would push the caret past it).
            const start = change.transformPosition(selection.index, true);
            const end = change.transformPosition(selection.index + selection.length, true);
            quill.setSelection(start, end - start, "silent");
          }
        } finally {
          this.applying = false;
        }
      }
      this.drawCarets();
    }));

    // Quill's own history would undo other users' edits too: route its
    // keys and the browser's undo/redo input to Weft's undo instead.
    const history = quill.getModule("history") as {
      change?: (source: string) => void;
      record?: () => void;
      clear?: () => void;
    } | undefined;
    if (history) {
      history.clear?.();
      history.record = () => {};
      history.change = (source: string) => (source === "undo" ? this.undo() : this.redo());
    }

    if (this.presence) {
      const presence = this.presence;
      const onSelection = () => this.shareSelection();
      quill.on("selection-change", onSelection as never);
      this.off.push(() => quill.off("selection-change", onSelection as never));
      this.off.push(presence.subscribe(() => this.drawCarets()));
      this.shareSelection();
      // Refresh before the presence timeout expires this user.
      const refresh = setInterval(() => this.shareSelection(), 10_000);
      this.off.push(() => clearInterval(refresh));
    }
    this.carets = document.createElement("div");
    this.carets.className = "weft-carets";
    this.carets.style.cssText = "position:absolute;inset:0;pointer-events:none;overflow:hidden";
    quill.container.style.position = "relative";
    quill.container.appendChild(this.carets);
    this.drawCarets();
  }

  /** Applies a local Quill change to Weft and commits it. */
  private applyLocal(ops: Op[]) {
    let trailing: boolean;
    try {
      trailing = this.text.applyQuillDelta(ops as DeltaOp[]);
    } catch (e) {
      // Quill and Weft disagree (a bug): show Weft's content again.
      console.error("weft: a Quill change did not apply; reloading the editor", e);
      this.quill.setContents(this.text.toQuillDelta() as never, "silent");
      return;
    }
    this.doc.commit({ origin: this.origin });
    if (trailing) {
      // Quill's final line got a format and became a marker: give Quill a
      // new plain final line, one position after it.
      const length = this.quill.getLength();
      const last = this.quill.getContents(length - 1, 1).ops[0]?.attributes ?? {};
      const clear = Object.fromEntries(Object.keys(last).map((k) => [k, null]));
      this.quill.updateContents(
        [{ retain: length - 1 }, { insert: "\n", attributes: last }, { retain: 1, attributes: clear }] as never,
        "silent",
      );
    }
    this.shareSelection();
  }

  /** Undoes this user's latest step; false when there is none. */
  undo(): boolean {
    return this.undoManager.undo();
  }

  /** Redoes the latest undone step; false when there is none. */
  redo(): boolean {
    return this.undoManager.redo();
  }

  private shareSelection() {
    if (!this.presence) return;
    const range = this.quill.getSelection();
    const cursor = (pos: number): number[] | null => {
      try {
        const c = this.text.cursor(Math.min(pos, this.text.length));
        const bytes = Array.from(c.encode());
        c.free();
        return bytes;
      } catch {
        return null;
      }
    };
    const shared: Shared = {
      name: this.user?.name ?? "anonymous",
      color: this.user?.color ?? "#36c",
      anchor: range ? cursor(range.index) : null,
      head: range ? cursor(range.index + range.length) : null,
    };
    this.presence.set(this.key, shared as never);
  }

  /** The other users' carets: `[{name, color, index, length}]`. */
  remoteCarets(): { name: string; color: string; index: number; length: number }[] {
    if (!this.presence) return [];
    const out = [];
    const states = this.presence.getAllStates() as unknown as Record<string, Shared>;
    for (const [key, s] of Object.entries(states)) {
      if (key === this.key || !key.startsWith("user:") || !s || !s.anchor || !s.head) continue;
      const at = (bytes: number[]) => {
        try {
          const c = Cursor.decode(Uint8Array.from(bytes));
          const pos = this.doc.getCursorPos(c);
          c.free();
          return pos;
        } catch {
          return null; // a cursor of another text, or one not synced yet
        }
      };
      const a = at(s.anchor);
      const h = at(s.head);
      if (a === null || h === null) continue;
      out.push({ name: String(s.name).slice(0, 64), color: safeColor(s.color), index: Math.min(a, h), length: Math.abs(h - a) });
    }
    return out;
  }

  private drawCarets() {
    if (!this.carets) return;
    this.carets.replaceChildren();
    for (const c of this.remoteCarets()) {
      const bounds = this.quill.getBounds(c.index, c.length);
      if (!bounds) continue;
      if (c.length > 0) {
        const sel = document.createElement("div");
        sel.className = "weft-selection";
        sel.style.cssText = `position:absolute;left:${bounds.left}px;top:${bounds.top}px;width:${bounds.width}px;height:${bounds.height}px;background:${c.color};opacity:0.25`;
        this.carets.appendChild(sel);
      }
      const caret = this.quill.getBounds(c.index + c.length, 0);
      if (!caret) continue;
      const el = document.createElement("div");
      el.className = "weft-caret";
      el.dataset.name = c.name;
      el.style.cssText = `position:absolute;left:${caret.left}px;top:${caret.top}px;height:${caret.height}px;border-left:2px solid ${c.color}`;
      const label = document.createElement("span");
      label.textContent = c.name;
      label.style.cssText = `position:absolute;top:-1.2em;left:-2px;font:11px sans-serif;color:#fff;background:${c.color};padding:0 3px;border-radius:2px;white-space:nowrap`;
      el.appendChild(label);
      this.carets.appendChild(el);
    }
  }

  /** Detaches from Quill and the document. */
  destroy() {
    if (this.presence) this.presence.delete(this.key);
    for (const f of this.off) f();
    this.off = [];
    this.carets.remove();
    this.undoManager.free();
  }
}
