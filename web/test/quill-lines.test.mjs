// Quill's lines onto Weft's block markers: line formats never leak onto a
// peer's concurrent typing (issue 30's trap), and Quill's final line end.
import test from "node:test";
import assert from "node:assert/strict";
import weft from "./load.mjs";

const { Doc } = weft;

function pair() {
  const a = new Doc();
  const b = new Doc();
  a.setPeerId("1");
  b.setPeerId("2");
  return [a, b];
}

function sync(a, b) {
  a.import(b.export({ mode: "update", from: a.version() }));
  b.import(a.export({ mode: "update", from: b.version() }));
}

test("a header set on one line does not spread onto a peer's typing on the next", () => {
  for (const order of ["a-first", "b-first"]) {
    const [a, b] = pair();
    // Quill sends unformatted lines as plain text.
    a.getText("q").applyQuillDelta([{ insert: "Title\nbody\n" }]);
    a.commit();
    sync(a, b);
    // Concurrently: A makes line 1 a header, B types at the start of line 2.
    a.getText("q").applyQuillDelta([{ retain: 5 }, { retain: 1, attributes: { header: 1 } }]);
    b.getText("q").applyQuillDelta([{ retain: 6 }, { insert: "B " }]);
    a.commit();
    b.commit();
    if (order === "a-first") sync(a, b);
    else sync(b, a);
    const expected = [
      { insert: "Title" },
      { insert: "\n", attributes: { header: 1 } },
      { insert: "B body" },
      { insert: "\n" },
      { insert: "\n" },
    ];
    assert.deepEqual(a.getText("q").toQuillDelta(), expected, order);
    assert.deepEqual(b.getText("q").toQuillDelta(), expected, order);
  }
});

test("without the line mapping the header leaks (the trap the mapping avoids)", () => {
  const [a, b] = pair();
  a.getText("q").applyDelta([{ insert: "Title\nbody\n" }]);
  a.commit();
  sync(a, b);
  a.getText("q").applyDelta([{ retain: 5 }, { retain: 1, attributes: { header: 1 } }]);
  b.getText("q").applyDelta([{ retain: 6 }, { insert: "B " }]);
  a.commit();
  b.commit();
  sync(a, b);
  assert.deepEqual(a.getText("q").toDelta(), [
    { insert: "Title" },
    { insert: "\nB ", attributes: { header: 1 } },
    { insert: "body\n" },
  ]);
});

test("inline formats over a line end style the text, block formats the line", () => {
  const [a] = pair();
  const q = a.getText("q");
  q.applyQuillDelta([{ insert: "ab\ncd\n" }]);
  // Bold from "b" to "c" (across the line end) and align both lines.
  q.applyQuillDelta([{ retain: 1 }, { retain: 3, attributes: { bold: true } }]);
  q.applyQuillDelta([{ retain: 2 }, { retain: 1, attributes: { align: "center" } }, { retain: 2 }, { retain: 1, attributes: { align: "center" } }]);
  assert.deepEqual(q.toQuillDelta(), [
    { insert: "a" },
    { insert: "b", attributes: { bold: true } },
    { insert: "\n", attributes: { align: "center" } },
    { insert: "c", attributes: { bold: true } },
    { insert: "d" },
    { insert: "\n", attributes: { align: "center" } },
    { insert: "\n" },
  ]);
  // An insert with a line format and text formats: each goes to its kind.
  q.applyQuillDelta([{ retain: 6 }, { insert: "x", attributes: { italic: true } }, { insert: "\n", attributes: { header: 2 } }]);
  assert.deepEqual(q.blocks().map((b) => b.attributes), [{ align: "center" }, { align: "center" }, { header: 2 }]);
  assert.deepEqual(q.getAttributes(6), { italic: true });
});

test("formatting Quill's last line makes its line end a marker", () => {
  const [a, b] = pair();
  const q = a.getText("q");
  assert.equal(q.applyQuillDelta([{ insert: "last" }]), false);
  // Quill: "last\n"; the final "\n" is not stored.
  assert.equal(q.applyQuillDelta([{ retain: 4 }, { retain: 1, attributes: { header: 1 } }]), true);
  assert.deepEqual(q.toQuillDelta(), [
    { insert: "last" },
    { insert: "\n", attributes: { header: 1 } },
    { insert: "\n" },
  ]);
  // Deleting Quill's final line end is nothing to Weft; retains past the
  // end without formats are dropped.
  assert.equal(q.applyQuillDelta([{ retain: 5 }, { retain: 1 }]), false);
  a.commit();
  sync(a, b);
  assert.deepEqual(b.getText("q").toQuillDelta(), q.toQuillDelta());
});

test("an embed keeps its inline formats and drops line formats", () => {
  const [a] = pair();
  const q = a.getText("q");
  q.applyQuillDelta([{ insert: { image: "x.png" }, attributes: { link: "https://x", header: 1 } }]);
  assert.deepEqual(q.toQuillDelta(), [
    { insert: { image: "x.png" }, attributes: { link: "https://x" } },
    { insert: "\n" },
  ]);
});
