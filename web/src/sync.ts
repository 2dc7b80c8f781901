// A sync client for the browser (and Node.js 20+ with a WebSocket): keeps
// a Weft document in sync with a weft-sync server over docs/PROTOCOL.md.
//
// - Joins with the document's version (and the epoch once it has one), and
//   after `Joined` sends every op the server lacks, cut to the server's
//   message limit: nothing unacknowledged is lost by a dropped connection.
// - Sends each local commit as a numbered batch; counts the batches not yet
//   acknowledged (an ack means the edit is durable on the server).
// - Imports others' updates with the origin "sync".
// - Reconnects with exponential backoff and jitter (100 ms doubling to
//   10 s), and carries presence (a `Presence` store) both ways.

import { Doc, Presence, VersionVector } from "../pkg/weft_wasm.js";
import {
  Status, decodeServer, encodeJoin, encodeLeave, encodePresence, encodeUpdate, statusNames,
  updateOverhead, type ServerMessage,
} from "./protocol.js";

export type SyncStatus = "connecting" | "syncing" | "connected" | "refused" | "closed";

export interface SyncState {
  status: SyncStatus;
  /** Local batches sent and not acknowledged yet. */
  unacked: number;
  /** Why the server refused the document (status `refused`). */
  refused?: { status: string; message: string };
  /** The last error (a connection failure, an invalid batch). */
  lastError?: string;
  /** Bytes of updates received from the server. */
  receivedBytes: number;
}

export interface SyncOptions {
  /** The server, e.g. `ws://localhost:8080/`. */
  url: string;
  /** The document's id on the server. */
  docId: string;
  /** The token the server's authorisation reads (default ""). */
  token?: string;
  /** Presence to share with the document's other clients. */
  presence?: Presence;
  /** The WebSocket class (default the global one). */
  WebSocket?: typeof WebSocket;
  /** First reconnect delay in ms (default 100), doubling to `maxBackoffMs` (10,000). */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** Called on every state change. */
  onState?: (state: SyncState) => void;
}

/** Statuses after which joining again cannot help. */
const FINAL = new Set<number>([Status.forbidden, Status.divergentHistory, Status.unknownDocument]);

export class SyncClient {
  readonly doc: Doc;
  private opts: Required<Pick<SyncOptions, "url" | "docId" | "token" | "minBackoffMs" | "maxBackoffMs">> & SyncOptions;
  private ws: WebSocket | null = null;
  private epoch: Uint8Array | null = null;
  private maxMessage = 1 << 20;
  private joined = false;
  private writable = false;
  private batch = 0;
  private pendingAcks = new Set<number>();
  private backoff: number;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private presenceTimer: ReturnType<typeof setInterval> | null = null;
  private unsubscribe: Array<() => void> = [];
  private syncedWaiters: Array<() => void> = [];
  private stopped = false;
  state: SyncState = { status: "connecting", unacked: 0, receivedBytes: 0 };

  constructor(doc: Doc, options: SyncOptions) {
    this.doc = doc;
    this.opts = { token: "", minBackoffMs: 100, maxBackoffMs: 10_000, ...options };
    this.backoff = this.opts.minBackoffMs;
    this.unsubscribe.push(doc.subscribeLocalUpdates((bytes: Uint8Array) => this.sendLocal(bytes)));
    const presence = this.opts.presence;
    if (presence) {
      this.unsubscribe.push(presence.subscribeLocalUpdates((bytes: Uint8Array) => {
        if (this.joined) this.send(encodePresence(this.opts.docId, bytes));
      }));
      this.presenceTimer = setInterval(() => presence.removeOutdated(), 1000);
    }
    this.connect();
  }

  /** Whether every local edit is acknowledged and the client is connected. */
  get isSynced(): boolean {
    return this.state.status === "connected" && this.state.unacked === 0;
  }

  /** Resolves once connected with every local edit acknowledged. */
  whenSynced(): Promise<void> {
    if (this.isSynced) return Promise.resolve();
    return new Promise((resolve) => this.syncedWaiters.push(resolve));
  }

  /** Leaves the document and stops reconnecting. */
  close() {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.presenceTimer) clearInterval(this.presenceTimer);
    for (const u of this.unsubscribe) u();
    this.unsubscribe = [];
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      if (this.joined && ws.readyState === 1) ws.send(encodeLeave(this.opts.docId));
      ws.close();
    }
    this.setState({ status: "closed" });
  }

  private setState(change: Partial<SyncState>) {
    this.state = { ...this.state, ...change, unacked: this.pendingAcks.size };
    if (this.isSynced) {
      const waiters = this.syncedWaiters;
      this.syncedWaiters = [];
      for (const w of waiters) w();
    }
    this.opts.onState?.(this.state);
  }

  private connect() {
    if (this.stopped) return;
    this.joined = false;
    this.pendingAcks.clear();
    this.setState({ status: "connecting" });
    const WS = this.opts.WebSocket ?? globalThis.WebSocket;
    let ws: WebSocket;
    try {
      ws = new WS(this.opts.url);
    } catch (e) {
      this.setState({ lastError: String(e) });
      this.retry();
      return;
    }
    ws.binaryType = "arraybuffer";
    this.ws = ws;
    // A handshake that does not finish in 10 s is given up (a server that
    // accepts and never answers must not stall reconnecting).
    const handshake = setTimeout(() => lost("the handshake timed out"), 10_000);
    const lost = (why: string) => {
      clearTimeout(handshake);
      if (this.ws !== ws) return;
      this.ws = null;
      this.joined = false;
      try {
        ws.close();
      } catch {
        // Closing a socket that never opened may throw; it is gone anyway.
      }
      this.setState({ lastError: why });
      if (this.state.status !== "refused") this.retry();
    };
    ws.onopen = () => {
      clearTimeout(handshake);
      const version = this.doc.version();
      ws.send(encodeJoin(this.opts.docId, this.opts.token, this.epoch, version.encode()));
      version.free();
    };
    ws.onmessage = (e: MessageEvent) => {
      if (this.ws !== ws || !(e.data instanceof ArrayBuffer)) return;
      let m: ServerMessage;
      try {
        m = decodeServer(new Uint8Array(e.data));
      } catch (err) {
        lost(`bad message from the server: ${err}`);
        return;
      }
      this.receive(m);
    };
    // Browsers follow an error with a close; Node's WebSocket may not.
    ws.onclose = () => lost("connection closed");
    ws.onerror = () => lost("connection failed");
  }

  private retry() {
    if (this.stopped) return;
    this.setState({ status: "connecting" });
    const delay = this.backoff * (0.5 + Math.random() * 0.5);
    this.backoff = Math.min(this.backoff * 2, this.opts.maxBackoffMs);
    this.timer = setTimeout(() => this.connect(), delay);
  }

  private send(bytes: Uint8Array) {
    if (this.ws && this.ws.readyState === 1) this.ws.send(bytes);
  }

  private sendBatch(update: Uint8Array) {
    const n = ++this.batch;
    this.pendingAcks.add(n);
    this.send(encodeUpdate(this.opts.docId, n, update));
  }

  private sendLocal(update: Uint8Array) {
    if (!this.joined || !this.writable) return; // sent after the next join, from the server's version
    if (update.length + updateOverhead(this.opts.docId) > this.maxMessage) {
      // Too large for one message: join again, which sends it in pieces.
      this.ws?.close();
      return;
    }
    this.sendBatch(update);
    this.setState({});
  }

  private receive(m: ServerMessage) {
    const ws = this.ws;
    if (!ws) return;
    switch (m.kind) {
      case "joined": {
        this.epoch = m.epoch;
        this.maxMessage = m.maxMessage;
        this.joined = true;
        this.writable = m.access === "write";
        this.setState({ status: "syncing", refused: undefined });
        if (m.access === "write") {
          // Everything the server lacks, cut to its message limit.
          const server = VersionVector.decode(m.version);
          const limit = this.maxMessage - updateOverhead(this.opts.docId);
          for (const piece of this.doc.exportUpdatesLimited(server, limit)) this.sendBatch(piece);
          server.free();
        }
        break;
      }
      case "updates":
        for (const u of m.updates) {
          this.doc.import(u, "sync");
          this.state.receivedBytes += u.length;
        }
        this.setState({});
        break;
      case "synced":
        this.backoff = this.opts.minBackoffMs;
        if (this.opts.presence) {
          if (this.opts.presence.keys().length > 0) {
            this.send(encodePresence(this.opts.docId, this.opts.presence.encodeAll()));
          }
        }
        this.setState({ status: "connected" });
        break;
      case "ack":
        this.pendingAcks.delete(m.batch);
        if (m.status !== Status.ok) {
          this.setState({ lastError: `batch ${m.batch}: ${statusNames[m.status]}` });
          if (m.status === Status.rateLimited || m.status === Status.unavailable) {
            // Not stored: join again later, which sends it again.
            ws.close();
            return;
          }
        }
        this.setState({});
        break;
      case "presence":
        try {
          this.opts.presence?.apply(m.bytes);
        } catch {
          // Bad presence bytes change nothing.
        }
        break;
      case "refused":
        if (FINAL.has(m.status)) {
          this.setState({ status: "refused", refused: { status: statusNames[m.status], message: m.message } });
          ws.close();
        } else {
          this.setState({ lastError: `${statusNames[m.status]}: ${m.message}` });
          ws.close();
        }
        break;
      case "error":
        this.setState({ lastError: `${statusNames[m.status]}: ${m.message}` });
        break;
    }
  }
}
