// The weft-sync wire protocol, version 1 (docs/PROTOCOL.md): binary
// WebSocket messages `[1][kind][fields]`, LEB128 varints, strings and
// bytes with a varint length. The same layout as crates/weft-sync's
// protocol.rs; a message that does not parse throws.

export const PROTOCOL_VERSION = 1;

/** Statuses of `Ack`, `Refused` and `Error` (docs/PROTOCOL.md). */
export const Status = {
  ok: 0,
  invalid: 1,
  tooLarge: 2,
  rateLimited: 3,
  forbidden: 4,
  divergentHistory: 5,
  unknownDocument: 6,
  tooManyDocuments: 7,
  notJoined: 8,
  unavailable: 9,
  malformed: 10,
  unsupportedVersion: 11,
  tooSlow: 12,
  goingAway: 13,
} as const;

export const statusNames = [
  "ok", "invalid", "too large", "rate limited", "forbidden", "divergent history",
  "unknown document", "too many documents", "not joined", "unavailable", "malformed",
  "unsupported version", "too slow", "going away",
];

export type Access = "none" | "read" | "write";

/** A message from the server. `version` fields are the raw bytes of the
 * protocol's version layout, for `VersionVector.decode`. */
export type ServerMessage =
  | { kind: "joined"; doc: string; epoch: Uint8Array; version: Uint8Array; access: Access; maxMessage: number }
  | { kind: "updates"; doc: string; updates: Uint8Array[] }
  | { kind: "synced"; doc: string }
  | { kind: "ack"; doc: string; batch: number; status: number }
  | { kind: "presence"; doc: string; bytes: Uint8Array }
  | { kind: "refused"; doc: string; status: number; message: string }
  | { kind: "error"; status: number; message: string };

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

class Writer {
  private out: number[] = [];
  private chunks: Uint8Array[] = [];
  byte(b: number): this {
    this.out.push(b & 0xff);
    return this;
  }
  varint(n: number): this {
    if (!Number.isSafeInteger(n) || n < 0) throw new Error(`not a varint: ${n}`);
    while (n >= 0x80) {
      this.out.push((n % 0x80) | 0x80);
      n = Math.floor(n / 0x80);
    }
    this.out.push(n);
    return this;
  }
  raw(bytes: Uint8Array): this {
    this.flush();
    this.chunks.push(bytes);
    return this;
  }
  bytes(bytes: Uint8Array): this {
    return this.varint(bytes.length).raw(bytes);
  }
  string(s: string): this {
    return this.bytes(encoder.encode(s));
  }
  private flush() {
    if (this.out.length) {
      this.chunks.push(Uint8Array.from(this.out));
      this.out = [];
    }
  }
  finish(): Uint8Array {
    this.flush();
    const len = this.chunks.reduce((n, c) => n + c.length, 0);
    const buf = new Uint8Array(len);
    let at = 0;
    for (const c of this.chunks) {
      buf.set(c, at);
      at += c.length;
    }
    return buf;
  }
}

class Reader {
  at = 0;
  constructor(private buf: Uint8Array) {}
  byte(): number {
    if (this.at >= this.buf.length) throw new Error("message ends too early");
    return this.buf[this.at++];
  }
  /** A varint as a bigint (peer ids use all 64 bits). */
  big(): bigint {
    let v = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      const b = this.byte();
      if (shift === 63n && b > 1) throw new Error("varint past 64 bits");
      v |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return v;
    }
    throw new Error("varint past 64 bits");
  }
  varint(): number {
    const v = this.big();
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error("varint too large");
    return Number(v);
  }
  take(n: number): Uint8Array {
    if (n > this.buf.length - this.at) throw new Error("length past the end of the message");
    const out = this.buf.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }
  bytes(): Uint8Array {
    return this.take(this.varint());
  }
  string(): string {
    return decoder.decode(this.bytes());
  }
  version(): Uint8Array {
    const start = this.at;
    const n = this.varint();
    for (let i = 0; i < n; i++) {
      this.big();
      this.big();
    }
    return this.buf.slice(start, this.at);
  }
  end() {
    if (this.at !== this.buf.length) throw new Error("trailing bytes");
  }
}

function head(kind: number): Writer {
  return new Writer().byte(PROTOCOL_VERSION).byte(kind);
}

/** `Join`: `version` is `VersionVector.encode()`'s bytes. */
export function encodeJoin(doc: string, token: string, epoch: Uint8Array | null, version: Uint8Array): Uint8Array {
  const w = head(0x01).string(doc).string(token);
  if (epoch) w.byte(1).raw(epoch);
  else w.byte(0);
  return w.raw(version).finish();
}

export function encodeUpdate(doc: string, batch: number, update: Uint8Array): Uint8Array {
  return head(0x02).string(doc).varint(batch).bytes(update).finish();
}

export function encodePresence(doc: string, bytes: Uint8Array): Uint8Array {
  return head(0x03).string(doc).bytes(bytes).finish();
}

export function encodeLeave(doc: string): Uint8Array {
  return head(0x04).string(doc).finish();
}

/** The bytes an `Update` message adds around its update. */
export function updateOverhead(doc: string): number {
  return 2 + 10 + encoder.encode(doc).length + 10 + 10;
}

const accessNames: Access[] = ["none", "read", "write"];

/** Reads a server message; throws on anything malformed. */
export function decodeServer(buf: Uint8Array): ServerMessage {
  const r = new Reader(buf);
  const version = r.byte();
  if (version !== PROTOCOL_VERSION) throw new Error(`protocol version ${version}`);
  const kind = r.byte();
  let m: ServerMessage;
  switch (kind) {
    case 0x81: {
      const doc = r.string();
      const epoch = r.take(16).slice();
      const ver = r.version();
      const access = accessNames[r.byte()];
      if (!access) throw new Error("unknown access");
      m = { kind: "joined", doc, epoch, version: ver, access, maxMessage: r.varint() };
      break;
    }
    case 0x82: {
      const doc = r.string();
      const n = r.varint();
      const updates: Uint8Array[] = [];
      for (let i = 0; i < n; i++) updates.push(r.bytes());
      m = { kind: "updates", doc, updates };
      break;
    }
    case 0x83:
      m = { kind: "synced", doc: r.string() };
      break;
    case 0x84:
      m = { kind: "ack", doc: r.string(), batch: r.varint(), status: r.byte() };
      break;
    case 0x85:
      m = { kind: "presence", doc: r.string(), bytes: r.bytes() };
      break;
    case 0x86:
      m = { kind: "refused", doc: r.string(), status: r.byte(), message: r.string() };
      break;
    case 0x87:
      m = { kind: "error", status: r.byte(), message: r.string() };
      break;
    default:
      throw new Error(`unknown message kind ${kind}`);
  }
  if ("status" in m && (m.status >= statusNames.length)) throw new Error("unknown status");
  r.end();
  return m;
}
