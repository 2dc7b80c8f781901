//! Seeded randomized rich text: three peers insert, delete, mark and unmark
//! (emoji and CJK text, every expand rule) and sync in random orders. After
//! every sync the receiver must equal the reference model (naive per-char
//! FugueMax with anchors, styles recomputed char by char) fed the same ops;
//! at the end all peers hold identical deltas and versions.

use weft::{Cursor, Doc, ExportMode, OpId, Side, Value, VersionVector};
use weft_testkit::{config, KEYS};
use weft_testkit::{RefDoc, Rng};

fn doc(peer: u64) -> Doc {
    let mut d = Doc::new();
    d.set_peer_id(peer).unwrap();
    d.config_text_style(config());
    d
}

fn sync(docs: &mut [Doc], i: usize, j: usize) {
    let from = docs[j].version();
    let bytes = docs[i].export(ExportMode::Updates { from: &from }).unwrap();
    docs[j].import(&bytes).unwrap();
}

fn ref_version(r: &RefDoc) -> VersionVector {
    let mut v = VersionVector::new();
    for (peer, n) in r.version() {
        v.set(peer, n);
    }
    v
}

fn random_value(rng: &mut Rng) -> Value {
    match rng.below(4) {
        0 => Value::Bool(true),
        1 => Value::I64(rng.below(3) as i64),
        2 => Value::String(["a", "b"][rng.below(2)].into()),
        _ => Value::Bool(false),
    }
}

/// With `TRACE=1`, prints the actions (and both sides of a mismatch).
fn trace(s: String) {
    if std::env::var("TRACE").is_ok() {
        eprintln!("{s}");
    }
}

/// A cursor made at a random place of peer `i`'s text, with the id the
/// model gives the char it sticks to (checked against the cursor's).
fn random_cursor(rng: &mut Rng, doc: &mut Doc, model: &RefDoc) -> (Cursor, Option<(u64, u32)>) {
    let len = model.len();
    let pos = rng.below(len + 1);
    let side = if rng.chance(50) {
        Side::Before
    } else {
        Side::After
    };
    let cursor = match doc.get_text("t") {
        Some(view) if rng.chance(50) => view.cursor(pos, side).unwrap(),
        _ => doc.text("t").cursor(pos, side).unwrap(),
    };
    let id = match side {
        Side::Before => pos.checked_sub(1).map(|p| model.char_id(p)),
        Side::After => (pos < len).then(|| model.char_id(pos)),
    };
    assert_eq!(cursor.id(), id.map(|(p, c)| OpId::new(p, c)));
    assert_eq!(Cursor::decode(&cursor.encode()).unwrap(), cursor);
    (cursor, id)
}

/// Every cursor resolves, on every peer, where the model says its char is
/// (an error on a peer that does not have the char yet).
fn check_cursors(docs: &[Doc], refs: &[RefDoc], cursors: &[(Cursor, Option<(u64, u32)>)]) {
    for (d, r) in docs.iter().zip(refs) {
        for (cursor, id) in cursors {
            let expected = match (id, cursor.side()) {
                (None, Side::Before) => Some(0),
                (None, Side::After) => Some(r.len()),
                (Some(id), side) => r.cursor_pos(*id, side == Side::Before),
            };
            if d.get_text("t").is_none() {
                // No op of the text has arrived: the text is unknown here.
                let unknown = Err(weft::Error::UnknownText("t".into()));
                assert_eq!(d.cursor_pos(cursor), unknown);
                continue;
            }
            match expected {
                Some(pos) => assert_eq!(d.cursor_pos(cursor), Ok(pos), "{cursor:?}"),
                None => assert!(d.cursor_pos(cursor).is_err(), "{cursor:?}"),
            }
        }
    }
}

fn run(seed: u64, steps: usize) {
    let mut rng = Rng::new(seed);
    let mut docs: Vec<Doc> = (1..=3).map(doc).collect();
    let mut refs: Vec<RefDoc> = (1..=3).map(RefDoc::new).collect();
    let mut cursors = Vec::new();
    for step in 0..steps {
        let i = rng.below(3);
        let len = refs[i].len();
        if rng.chance(10) {
            let c = random_cursor(&mut rng, &mut docs[i], &refs[i]);
            if cursors.len() < 6 {
                cursors.push(c);
            } else {
                let k = rng.below(cursors.len());
                cursors[k] = c;
            }
        }
        match rng.below(12) {
            0..=3 => {
                let pos = rng.below(len + 1);
                let s = rng.text(4);
                docs[i].text("t").insert(pos, &s).unwrap();
                refs[i].insert(pos, &s);
                trace(format!("{i}: insert {pos} {s:?}"));
            }
            4 if len > 0 => {
                let pos = rng.below(len);
                let n = 1 + rng.below((len - pos).min(4));
                docs[i].text("t").delete(pos, n).unwrap();
                refs[i].delete(pos, n);
                trace(format!("{i}: delete {pos} {n}"));
            }
            5..=6 if len > 0 => {
                let start = rng.below(len);
                let end = start + 1 + rng.below((len - start).min(6));
                let key = KEYS[rng.below(KEYS.len())];
                let value = if rng.chance(25) {
                    Value::Null
                } else {
                    random_value(&mut rng)
                };
                docs[i]
                    .text("t")
                    .mark(start..end, key, value.clone())
                    .unwrap();
                trace(format!("{i}: mark {start}..{end} {key} {value:?}"));
                refs[i].mark(start..end, key, value);
            }
            7 => docs[i].commit(),
            8..=11 => {
                let j = (i + 1 + rng.below(2)) % 3;
                trace(format!("sync {i} -> {j}"));
                sync(&mut docs, i, j);
                let src = refs[i].clone();
                refs[j].merge_from(&src);
                if std::env::var("TRACE").is_ok()
                    && docs[j].text("t").to_delta() != refs[j].to_delta()
                {
                    eprintln!(
                        "weft:\n{}\nref:\n{}",
                        docs[j].debug_dump("t"),
                        refs[j].dump()
                    );
                }
                assert_eq!(
                    docs[j].text("t").to_delta(),
                    refs[j].to_delta(),
                    "seed {seed} step {step}: delta of peer {j}"
                );
                assert_eq!(
                    docs[j].version(),
                    ref_version(&refs[j]),
                    "seed {seed} step {step}: version of peer {j}"
                );
                docs[j].assert_invariants();
            }
            _ => {}
        }
        // The local document always matches its model too.
        assert_eq!(
            docs[i].text("t").to_delta(),
            refs[i].to_delta(),
            "seed {seed} step {step}: local delta of peer {i}"
        );
        check_cursors(&docs, &refs, &cursors);
    }
    for _ in 0..2 {
        for i in 0..3 {
            for j in 0..3 {
                if i != j {
                    sync(&mut docs, i, j);
                    let src = refs[i].clone();
                    refs[j].merge_from(&src);
                    assert_eq!(
                        docs[j].text("t").to_delta(),
                        refs[j].to_delta(),
                        "seed {seed}: final sync {i} -> {j}"
                    );
                }
            }
        }
    }
    let delta = docs[0].text("t").to_delta();
    let version = docs[0].version();
    if std::env::var("TRACE").is_ok() {
        for r in &refs {
            eprintln!("{}", r.dump());
        }
    }
    check_cursors(&docs, &refs, &cursors);
    for d in &mut docs {
        assert_eq!(d.text("t").to_delta(), delta, "seed {seed}: converged");
        assert_eq!(d.version(), version);
        d.assert_invariants();
    }
    // A fresh document importing everything agrees.
    let mut fresh = Doc::new();
    fresh
        .import(
            &docs[1]
                .export(ExportMode::Updates {
                    from: &VersionVector::new(),
                })
                .unwrap(),
        )
        .unwrap();
    assert_eq!(fresh.text("t").to_delta(), delta, "seed {seed}: re-import");
}

#[test]
fn three_peers_with_marks_match_the_reference_model() {
    let extra: u64 = std::env::var("WEFT_STRESS_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    for seed in 0..30 + extra {
        run(seed, 300);
    }
    // Long runs grow multi-level trees with many leaf splits.
    for seed in 1000..1002 {
        run(seed, 2500);
    }
}
