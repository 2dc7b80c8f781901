// A real weft-server for the tests, on loopback, with its own SQLite store
// in a temporary folder. Built with cargo if needed.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
let built = false;

export function serverBinary() {
  if (!built) {
    execFileSync("cargo", ["build", "-q", "-p", "weft-sync", "--bin", "weft-server"], { cwd: root, stdio: "inherit" });
    built = true;
  }
  return join(root, "target", "debug", "weft-server");
}

/** Starts a server; `listen` reuses an address (a restart), `dir` a store. */
export async function startServer({ listen = "127.0.0.1:0", dir, args = [] } = {}) {
  dir ??= mkdtempSync(join(tmpdir(), "weft-web-"));
  const child = spawn(serverBinary(), ["--db", join(dir, "store.sqlite"), "--listen", listen, "--exit-with-stdin", ...args], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout });
  const addr = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("weft-server did not start in 30 s")), 30_000);
    child.on("exit", (code) => reject(new Error(`weft-server exited with ${code}`)));
    lines.on("line", (line) => {
      const m = line.match(/^listening on ws:\/\/(.*)$/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
  });
  return {
    addr,
    dir,
    url: `ws://${addr}/`,
    http: `http://${addr}/`,
    /** Kills the server at once (SIGKILL): nothing is flushed. */
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.on("exit", r));
      child.kill("SIGKILL");
      await exited;
    },
    async stop() {
      await this.kill();
    },
    remove() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Resolves once `check()` is true; fails after `ms`. */
export async function until(check, ms = 20_000, what = "condition") {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
