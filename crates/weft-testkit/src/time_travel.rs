//! The end of a driver run that asks for [`crate::Checks::versions`]:
//! the versions replicas held during the run, shown again by the history
//! API of a replica that now holds everything, each against what the
//! model showed at that version.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use weft::{Delta, Doc, DocEvent, EventTrigger, ExportMode, IdSpan, Unit, Value, VersionVector};

use crate::converge::Recorded;
use crate::history::{apply, commit_infos, Infos};
use crate::{map_contents, Rng};

type Maps = Vec<(String, Vec<(String, Value)>)>;

fn delta(doc: &Doc) -> Vec<Delta> {
    doc.get_text("t").map_or_else(Vec::new, |t| t.to_delta())
}

/// Checks the history API of `docs[0]` (which holds every version of
/// `recorded`) against `recorded`: version math, `fork_at`, diffs,
/// `SnapshotAt`, `checkout` with event mirrors, `revert_to` against a
/// concurrent edit, and the history re-sent change by change in a random
/// order.
pub(crate) fn check(docs: &[Doc], recorded: &[Recorded], rng: &mut Rng) {
    let doc = &docs[0];
    let infos = commit_infos(doc);
    for (k, r) in recorded.iter().enumerate() {
        let ctx = format!("version {k} {:?}", r.version);
        let frontiers = doc.vv_to_frontiers(&r.version).expect("a held version");
        assert_eq!(
            doc.frontiers_to_vv(&frontiers).expect("its frontiers"),
            r.version,
            "{ctx}"
        );
        let fork = doc.fork_at(&frontiers).expect("a held version");
        assert_eq!(fork.version(), r.version, "{ctx}: fork_at's version");
        assert_eq!(delta(&fork), r.delta, "{ctx}: fork_at's text");
        assert_eq!(map_contents(&fork), r.maps, "{ctx}: fork_at's maps");
        assert_eq!(fork.text_len("t", Unit::Utf16), r.utf16_len, "{ctx}");
        if k % 3 == 0 {
            // A snapshot at the version holds what fork_at does, and the
            // commit messages of its ops.
            let mut old = Doc::new();
            old.import(
                &doc.export(ExportMode::SnapshotAt(&frontiers))
                    .expect("exports do not fail"),
            )
            .expect("a snapshot at a version imports");
            assert_eq!(old.version(), r.version, "{ctx}: SnapshotAt");
            let expected: BTreeMap<_, _> = infos
                .iter()
                .filter(|((peer, counter), _)| *counter < r.version.get(*peer))
                .map(|(k, v)| (*k, v.clone()))
                .collect();
            assert_eq!(commit_infos(&old), expected, "{ctx}: infos at a version");
            assert_eq!(delta(&old), r.delta, "{ctx}: SnapshotAt");
            assert_eq!(map_contents(&old), r.maps, "{ctx}: SnapshotAt maps");
        }
    }
    if !recorded.is_empty() {
        pairs(doc, recorded, rng);
        checkouts(doc, recorded, rng);
        revert(docs, &recorded[rng.below(recorded.len())]);
    }
    change_by_change(doc, &infos, rng);
}

/// Random pairs of versions: their order, and the diffs from one to the
/// other (texts in chars and UTF-16, maps).
fn pairs(doc: &Doc, recorded: &[Recorded], rng: &mut Rng) {
    for _ in 0..recorded.len().min(12) {
        let (a, b) = (
            &recorded[rng.below(recorded.len())],
            &recorded[rng.below(recorded.len())],
        );
        let fa = doc.vv_to_frontiers(&a.version).expect("a held version");
        let fb = doc.vv_to_frontiers(&b.version).expect("a held version");
        assert_eq!(
            doc.cmp_frontiers(&fa, &fb).expect("held versions"),
            a.version.partial_cmp(&b.version)
        );
        for unit in [Unit::Char, Unit::Utf16] {
            let diff = doc.diff_in(&fa, &fb, unit).expect("held versions");
            let mut mirror = a.delta.clone();
            apply(&diff, &mut mirror, unit);
            assert_eq!(mirror, b.delta, "diff in {unit:?}");
        }
        let mut maps: BTreeMap<String, BTreeMap<String, Value>> = a
            .maps
            .iter()
            .map(|(n, e)| (n.clone(), e.iter().cloned().collect()))
            .collect();
        for d in doc.diff_maps(&fa, &fb).expect("held versions") {
            let m = maps.entry(d.name.clone()).or_default();
            for (k, v) in d.changes {
                match v {
                    Some(v) => m.insert(k, v),
                    None => m.remove(&k),
                };
            }
        }
        let maps: Maps = maps
            .into_iter()
            .map(|(n, e)| (n, e.into_iter().collect::<Vec<_>>()))
            .filter(|(_, e)| !e.is_empty())
            .collect();
        assert_eq!(maps, b.maps, "diff_maps");
    }
}

/// A copy of `doc` checks out every version in the order they were
/// recorded (mostly forward), then in a random order (backward moves
/// rebuild), returning to the latest now and then; it shows each exactly,
/// and mirrors kept from its events (chars, UTF-16) follow every move.
fn checkouts(doc: &Doc, recorded: &[Recorded], rng: &mut Rng) {
    let mut doc = doc.fork();
    let latest = delta(&doc);
    let latest_version = doc.version();
    let mirror = |doc: &mut Doc, unit: Unit| {
        let m = Arc::new(Mutex::new(latest.clone()));
        let m2 = Arc::clone(&m);
        let sub = doc.subscribe_in(unit, move |e: &DocEvent| {
            assert_eq!(e.trigger, EventTrigger::Checkout, "only checkouts here");
            let mut m = m2.lock().unwrap_or_else(|e| e.into_inner());
            for d in e.texts.iter().filter(|d| d.name == "t") {
                d.apply_to(&mut m, unit).expect("an event applies");
            }
        });
        (m, sub)
    };
    let (chars, _s1) = mirror(&mut doc, Unit::Char);
    let (utf16, _s2) = mirror(&mut doc, Unit::Utf16);
    let mut order: Vec<usize> = (0..recorded.len()).collect();
    order.extend((0..recorded.len()).map(|_| rng.below(recorded.len())));
    for (step, &k) in order.iter().enumerate() {
        let r = &recorded[k];
        let ctx = format!("checkout step {step}, version {k}");
        let frontiers = doc.vv_to_frontiers(&r.version).expect("a held version");
        doc.checkout(&frontiers).expect("a held version");
        assert!(doc.is_detached(), "{ctx}");
        assert_eq!(delta(&doc), r.delta, "{ctx}: text");
        assert_eq!(doc.text_len("t", Unit::Utf16), r.utf16_len, "{ctx}: UTF-16");
        assert_eq!(doc.version(), r.version, "{ctx}: version");
        assert_eq!(doc.frontiers(), frontiers, "{ctx}: frontiers");
        assert_eq!(map_contents(&doc), r.maps, "{ctx}: maps");
        assert_eq!(doc.latest_version(), latest_version, "{ctx}");
        let lock = |m: &Arc<Mutex<Vec<Delta>>>| m.lock().map(|m| m.clone()).unwrap_or_default();
        assert_eq!(lock(&chars), r.delta, "{ctx}: chars mirror");
        assert_eq!(lock(&utf16), r.delta, "{ctx}: UTF-16 mirror");
        if rng.chance(15) {
            doc.checkout_to_latest().expect("back to latest");
            assert_eq!(delta(&doc), latest, "{ctx}: back");
            assert_eq!(lock(&chars), latest, "{ctx}: mirror back");
        }
        doc.assert_invariants();
    }
    doc.checkout_to_latest().expect("back to latest");
    assert_eq!(delta(&doc), latest);
    assert_eq!(doc.version(), latest_version);
}

/// A copy of replica 0 reverts to `target` while a copy of replica 1
/// types concurrently: the revert shows `target`, and both merge to the
/// same text, the concurrent insert kept.
fn revert(docs: &[Doc], target: &Recorded) {
    let mut reverter = docs[0].fork();
    reverter.set_peer_id(10_000).expect("a valid id");
    let frontiers = reverter
        .vv_to_frontiers(&target.version)
        .expect("a held version");
    reverter.revert_to(&frontiers).expect("a held version");
    reverter.commit();
    assert_eq!(delta(&reverter), target.delta, "revert_to");
    assert_eq!(map_contents(&reverter), target.maps, "revert_to maps");
    let mut other = docs[1].fork();
    other.set_peer_id(10_001).expect("a valid id");
    other.text("t").insert(0, "~").expect("an insert at 0");
    other.commit();
    let for_other = reverter
        .export(ExportMode::Updates {
            from: &other.version(),
        })
        .expect("exports do not fail");
    let for_reverter = other
        .export(ExportMode::Updates {
            from: &reverter.version(),
        })
        .expect("exports do not fail");
    other.import(&for_other).expect("an update imports");
    reverter.import(&for_reverter).expect("an update imports");
    assert_eq!(delta(&reverter), delta(&other), "revert and edit merge");
    // '~' is in no text an action types.
    assert!(reverter.text("t").to_string().contains('~'));
}

/// Every change of `doc` on its own, in a random order (pending until
/// what it builds on arrives), some twice and some in overlapping spans
/// or past what exists, gives the same history, messages and text.
fn change_by_change(doc: &Doc, infos: &Infos, rng: &mut Rng) {
    let mut spans: Vec<IdSpan> = doc
        .changes()
        .expect("a history loads")
        .into_iter()
        .map(|c| c.id)
        .collect();
    for i in (1..spans.len()).rev() {
        spans.swap(i, rng.below(i + 1));
    }
    let mut copy = Doc::new();
    for (i, span) in spans.iter().enumerate() {
        let mut ask = vec![span.clone()];
        if rng.chance(20) {
            ask.push(spans[rng.below(spans.len())].clone());
        }
        if rng.chance(10) {
            let c = span.counters.clone();
            ask.push(IdSpan::new(span.peer, c.start / 2..c.end + 5));
        }
        let bytes = doc
            .export(ExportMode::UpdatesInRange(&ask))
            .expect("exports do not fail");
        copy.import(&bytes).expect("a range export imports");
        if i == spans.len() / 2 {
            let none = doc
                .export(ExportMode::UpdatesInRange(&[]))
                .expect("exports do not fail");
            copy.import(&none).expect("an empty export imports");
        }
    }
    assert!(copy.pending_spans().is_empty(), "change by change");
    assert_eq!(&commit_infos(&copy), infos, "infos by span");
    assert!(copy.history_runs() == doc.history_runs(), "history by span");
    assert_eq!(delta(&copy), delta(doc));
    assert_eq!(map_contents(&copy), map_contents(doc));
    assert_eq!(copy.version(), doc.version());
}

/// Shallow copy `s` of `full`, trimmed at `root`: every recorded version
/// after the root shows through `fork_at`, `checkout`, `SnapshotAt` and
/// diffs as it did, and re-trimming there keeps the same state and later
/// history, unless (only for a version holding ops concurrent to the
/// root, which it cannot place) it refuses with `TrimmedHistory`; a
/// version before the root is refused. Its snapshot reopens the same.
/// Returns how many versions it showed.
pub(crate) fn shallow_views(
    full: &Doc,
    s: &Doc,
    root: &VersionVector,
    recorded: &[Recorded],
) -> usize {
    let mut shown = 0;
    let latest = delta(full);
    assert_eq!(delta(s), latest, "a shallow copy shows the state");
    assert_eq!(map_contents(s), map_contents(full), "a shallow copy's maps");
    let mut again = Doc::new();
    again
        .import(&s.export(ExportMode::Snapshot).expect("exports do not fail"))
        .expect("a shallow snapshot imports");
    assert_eq!(delta(&again), latest, "a shallow copy re-exported");
    let mut s = s.fork();
    for r in recorded
        .iter()
        .filter(|r| full.version().includes_all(&r.version))
    {
        let frontiers = full.vv_to_frontiers(&r.version).expect("a held version");
        if !r.version.includes_all(root) {
            assert_eq!(
                s.fork_at(&frontiers).map(|_| ()),
                Err(weft::Error::TrimmedHistory),
                "before the root"
            );
            continue;
        }
        let Ok(fork) = s.fork_at(&frontiers) else {
            assert!(matches!(
                s.fork_at(&frontiers),
                Err(weft::Error::TrimmedHistory)
            ));
            assert_eq!(s.checkout(&frontiers), Err(weft::Error::TrimmedHistory));
            continue;
        };
        shown += 1;
        assert_eq!(delta(&fork), r.delta, "shallow fork_at");
        assert_eq!(map_contents(&fork), r.maps, "shallow fork_at maps");
        assert_eq!(fork.version(), r.version, "shallow fork_at version");
        s.checkout(&frontiers).expect("fork_at worked");
        assert_eq!(delta(&s), r.delta, "shallow checkout");
        s.checkout_to_latest().expect("back to latest");
        // Applied to that version, the diff gives the latest one, and
        // back (a diff to a version holding ops concurrent to the root
        // compares texts, so it may be cut otherwise than the full
        // replica's).
        let mut mirror = r.delta.clone();
        apply(
            &s.diff(&frontiers, &s.frontiers()).expect("fork_at worked"),
            &mut mirror,
            Unit::Char,
        );
        assert_eq!(mirror, latest, "shallow diff");
        let mut back = latest.clone();
        apply(
            &s.diff(&s.frontiers(), &frontiers).expect("fork_at worked"),
            &mut back,
            Unit::Char,
        );
        assert_eq!(back, r.delta, "shallow diff back");
        let mut old = Doc::new();
        old.import(
            &s.export(ExportMode::SnapshotAt(&frontiers))
                .expect("fork_at worked"),
        )
        .expect("a snapshot imports");
        assert_eq!(delta(&old), r.delta, "shallow SnapshotAt");
        match s.export(ExportMode::ShallowSnapshot(&frontiers)) {
            Ok(bytes) => {
                let mut re = Doc::new();
                re.import(&bytes).expect("a shallow snapshot imports");
                assert_eq!(delta(&re), latest, "re-trimmed");
                assert_eq!(
                    crate::converge::ops_after(&re, &r.version),
                    crate::converge::ops_after(full, &r.version),
                    "re-trimmed history"
                );
            }
            Err(e) => assert!(
                e == weft::Error::TrimmedHistory || crate::converge::root_below_a_later_cancel(&e),
                "re-trimmed: {e:?}"
            ),
        }
    }
    shown
}
