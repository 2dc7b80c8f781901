// The demo editor: Quill bound to a Weft document synced through the
// weft-server that serves this page. `?doc=NAME` picks the document,
// `?name=NAME` the user name shown beside this user's caret.
import Quill from "quill";
import { Doc, Presence, QuillBinding, SyncClient, loadWeft } from "../src/index.js";

const colors = ["#d33", "#27a", "#393", "#a3a", "#e80", "#077"];

async function main() {
  await loadWeft(new URL("weft_wasm_bg.wasm", document.baseURI));
  const params = new URLSearchParams(location.search);
  const docId = params.get("doc") ?? "demo";
  const doc = new Doc();
  const name = params.get("name") ?? `user ${doc.peerId.slice(-4)}`;
  const color = colors[Number(BigInt(doc.peerId) % BigInt(colors.length))];
  document.getElementById("doc")!.textContent = `document "${docId}"`;

  const quill = new Quill("#editor", {
    theme: "snow",
    modules: {
      toolbar: [[{ header: [1, 2, false] }], ["bold", "italic", "underline", "link"], [{ list: "ordered" }, { list: "bullet" }], ["clean"]],
    },
  });
  const presence = new Presence(30_000);
  const binding = new QuillBinding(doc, "body", quill, { presence, user: { name, color } });

  const status = document.getElementById("status")!;
  const users = document.getElementById("users")!;
  const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/`;
  const client = new SyncClient(doc, {
    url,
    docId,
    presence,
    onState: (s) => {
      const text = s.status === "refused" ? `refused: ${s.refused?.message}` : s.unacked ? `${s.status}, ${s.unacked} unsaved` : s.status;
      status.textContent = text;
      status.dataset.status = s.status;
    },
  });
  const showUsers = () => {
    const names = binding.remoteCarets().map((c) => c.name);
    users.textContent = names.length ? `also here: ${names.join(", ")}` : "";
  };
  presence.subscribe(showUsers);
  // For tests and for poking at it from the console.
  Object.assign(window, { weftDemo: { doc, quill, binding, client, presence } });
}

main().catch((e) => {
  document.body.textContent = `Weft failed to start: ${e}`;
  console.error(e);
});
