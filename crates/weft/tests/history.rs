//! History: version math, fork_at, diff and revert_to, checked on random
//! multi-peer runs against what each replica (and the reference model)
//! held when each version was recorded.

use std::cmp::Ordering;

use weft::{Delta, Doc, Error, ExportMode, Frontiers, IdSpan, OpId, Unit, VersionVector};
use weft_testkit::history::{apply, commit_infos};
use weft_testkit::{history_actions, Random};

/// Random three-peer runs (edits, marks, map writes, commits with
/// messages and timestamps, syncs and a network); at the end the
/// versions replicas held are shown again: version math, `fork_at`,
/// `cmp_frontiers`, diffs (texts in chars and UTF-16, maps) between
/// pairs, `SnapshotAt` with the commit messages up to it, `revert_to`
/// concurrent with an edit, and every change re-sent on its own in a
/// random order (some twice, some in overlapping spans) giving the same
/// history and messages; each against the reference model at that
/// version. Commit messages reach every replica.
#[test]
fn random_runs_match_what_each_version_held() {
    let stats = Random {
        seeds: 12,
        keep: history_actions,
        ..Random::new(150)
    }
    .run(0x5eed);
    assert!(stats.versions > 100, "{stats:?}");
}

#[test]
fn unknown_and_impossible_versions_are_errors() {
    let mut a = Doc::new();
    a.set_peer_id(1).unwrap();
    a.text("t").insert(0, "abc").unwrap();
    let mut b = a.fork();
    b.set_peer_id(2).unwrap();
    b.text("t").insert(0, "x").unwrap();
    a.import(
        &b.export(ExportMode::Updates { from: &a.version() })
            .unwrap(),
    )
    .unwrap();
    let unknown: Frontiers = [OpId::new(9, 0)].into_iter().collect();
    assert!(matches!(a.fork_at(&unknown), Err(Error::UnknownOp(_))));
    assert!(matches!(
        a.frontiers_to_vv(&unknown),
        Err(Error::UnknownOp(_))
    ));
    assert!(matches!(
        a.diff(&unknown, &a.frontiers()),
        Err(Error::UnknownOp(_))
    ));
    assert!(matches!(
        a.cmp_frontiers(&a.frontiers(), &unknown),
        Err(Error::UnknownOp(_))
    ));
    assert!(matches!(
        a.diff_in(&a.frontiers(), &unknown, Unit::Utf16),
        Err(Error::UnknownOp(_))
    ));
    assert!(matches!(
        a.export(ExportMode::SnapshotAt(&unknown)),
        Err(Error::UnknownOp(_))
    ));
    let past_end: Frontiers = [OpId::new(1, 3)].into_iter().collect();
    assert!(matches!(a.revert_to(&past_end), Err(Error::UnknownOp(_))));
    // b's op without the a op it was typed on.
    let mut vv = VersionVector::new();
    vv.set(2, 1);
    assert!(matches!(
        a.vv_to_frontiers(&vv),
        Err(Error::InvalidVersion { .. })
    ));
    vv.set(2, 5);
    assert!(matches!(a.vv_to_frontiers(&vv), Err(Error::UnknownOp(_))));
    // The empty version is fine everywhere.
    let empty = Frontiers::new();
    assert_eq!(a.frontiers_to_vv(&empty).unwrap(), VersionVector::new());
    assert_eq!(a.fork_at(&empty).unwrap().text_names().count(), 0);
    assert_eq!(
        a.cmp_frontiers(&empty, &a.frontiers()).unwrap(),
        Some(Ordering::Less)
    );
}

#[test]
fn fork_at_a_snapshot_imported_lazily_loads_what_it_needs() {
    let mut a = Doc::new();
    a.text("t").insert(0, "one").unwrap();
    let v1 = a.frontiers();
    a.text("t").insert(3, " two").unwrap();
    a.text("t").mark(0..3, "bold", true).unwrap();
    let mut b = Doc::new();
    b.import(&a.export(ExportMode::Snapshot).unwrap()).unwrap();
    assert_eq!(b.fork_at(&v1).unwrap().text("t").to_string(), "one");
    let diff = b.diff(&v1, &b.frontiers()).unwrap();
    let mut mirror = vec![Delta::insert("one")];
    apply(&diff, &mut mirror, Unit::Char);
    assert_eq!(mirror, b.text("t").to_delta());
}

#[test]
fn commit_infos_survive_every_path_and_bad_bytes_are_refused() {
    use weft::CommitOptions;
    let mut a = Doc::new();
    a.set_peer_id(1).unwrap();
    a.text("t").insert(0, "ab").unwrap();
    a.commit_with(CommitOptions::new().message("one").timestamp(10));
    a.text("t").insert(2, "c").unwrap(); // continues the same change
    a.commit();
    a.text("t").insert(3, "d").unwrap();
    a.commit_with(CommitOptions::new().message("two"));
    a.commit_with(CommitOptions::new().message("nothing to commit"));
    let parts: Vec<_> = a
        .changes()
        .unwrap()
        .into_iter()
        .map(|c| {
            (
                c.id.counters,
                c.timestamp,
                c.message.as_deref().map(str::to_owned),
            )
        })
        .collect();
    assert_eq!(
        parts,
        vec![
            (0..2, Some(10), Some("one".to_owned())),
            (2..3, None, None),
            (3..4, None, Some("two".to_owned())),
        ]
    );
    let infos = commit_infos(&a);
    let update = a
        .export(ExportMode::Updates {
            from: &VersionVector::new(),
        })
        .unwrap();
    let snapshot = a.export(ExportMode::Snapshot).unwrap();
    for bytes in [&update, &snapshot] {
        let mut b = Doc::new();
        b.import(bytes).unwrap();
        assert_eq!(commit_infos(&b), infos);
        let mut live = Doc::new();
        live.text("u").insert(0, "x").unwrap();
        live.import(bytes).unwrap();
        assert_eq!(commit_infos(&live), infos);
    }
    let v = a.frontiers();
    let fork = a.fork_at(&v).unwrap();
    assert_eq!(commit_infos(&fork), infos);
    a.checkout(&v).unwrap();
    assert_eq!(commit_infos(&a), infos);
    a.checkout_to_latest().unwrap();

    // Cut short or damaged: an error, and the document is unchanged.
    for bytes in [&update, &snapshot] {
        let mut b = Doc::new();
        b.text("t").insert(0, "keep").unwrap();
        for len in 0..bytes.len() {
            assert!(b.import(&bytes[..len]).is_err(), "prefix {len}");
        }
        for i in 0..bytes.len() {
            for bit in [0x01, 0x80] {
                let mut bad = bytes.to_vec();
                bad[i] ^= bit;
                let _ = b.import(&bad); // Err, or a valid document
            }
        }
        assert!(b.text("t").to_string().contains("keep"));
    }
    // A version 1 header on a body with commit infos: trailing bytes.
    let mut old = update.clone();
    old[4] = 1;
    assert!(matches!(
        Doc::new().import(&old),
        Err(Error::Malformed { .. })
    ));
}

/// A message given after an export sent part of the open change (exports
/// include it) covers only the ops after that export, on every replica:
/// a peer that got the early ops never receives them again, so their
/// replicas' histories would differ for good. (Stress seed 31 of
/// `random_runs_match_what_each_version_held` diverged so.)
#[test]
fn a_message_after_an_export_of_the_open_change_converges() {
    use weft::CommitOptions;
    let mut a = weft_testkit::doc(1);
    let mut b = weft_testkit::doc(2);
    let send = |to: &mut Doc, from: &Doc| {
        let bytes = from
            .export(ExportMode::Updates {
                from: &to.version(),
            })
            .unwrap();
        to.import(&bytes).unwrap();
    };
    a.text("t").insert(0, "abc").unwrap();
    send(&mut b, &a);
    a.text("t").insert(3, "de").unwrap();
    a.commit_with(CommitOptions::new().message("typed"));
    send(&mut b, &a);
    let infos = commit_infos(&a);
    let keys: Vec<(u64, u32)> = infos.keys().copied().collect();
    assert_eq!(keys, vec![(1, 3), (1, 4)]);
    assert_eq!(commit_infos(&b), infos);
    // A snapshot taken while the change is open counts as sent too.
    a.text("t").insert(0, "x").unwrap();
    let snapshot = a.export(ExportMode::Snapshot).unwrap();
    a.text("t").insert(0, "y").unwrap();
    a.commit_with(CommitOptions::new().message("after the snapshot"));
    let mut c = Doc::new();
    c.import(&snapshot).unwrap();
    send(&mut c, &a);
    send(&mut b, &a);
    assert_eq!(commit_infos(&c), commit_infos(&a));
    assert_eq!(commit_infos(&b), commit_infos(&a));
    assert!(!commit_infos(&a).contains_key(&(1, 5)));
    assert!(commit_infos(&a).contains_key(&(1, 6)));
    // Nothing sent: the message covers the whole change.
    a.text("t").insert(0, "zz").unwrap();
    a.commit_with(CommitOptions::new().message("whole"));
    assert!(commit_infos(&a).contains_key(&(1, 7)));
    assert!(commit_infos(&a).contains_key(&(1, 8)));
}

/// Found by an outside attack: an empty or reversed span inside a change
/// wrote a change of 0 ops, which every importer refused.
#[test]
fn regression_empty_and_reversed_spans_export_nothing() {
    let mut a = Doc::new();
    a.set_peer_id(1).unwrap();
    a.text("t").insert(0, "ab").unwrap();
    a.commit();
    let reversed = std::ops::Range { start: 2, end: 1 };
    for span in [IdSpan::new(1, 1..1), IdSpan::new(1, reversed)] {
        let bytes = a.export(ExportMode::UpdatesInRange(&[span])).unwrap();
        let mut b = Doc::new();
        b.import(&bytes).unwrap();
        assert_eq!(b.version(), VersionVector::new());
    }
}

/// Every export of `doc` imports into a fresh document with the same
/// text, version and commit infos.
fn reopens(doc: &Doc, ctx: &str) {
    let full = ExportMode::Updates {
        from: &VersionVector::new(),
    };
    for mode in [ExportMode::Snapshot, full] {
        let bytes = doc.export(mode).unwrap();
        let mut fresh = Doc::new();
        fresh
            .import(&bytes)
            .unwrap_or_else(|e| panic!("{ctx}: {e}"));
        assert_eq!(fresh.version(), doc.version(), "{ctx}");
        let text = |d: &Doc| d.get_text("t").map(|t| t.to_string());
        assert_eq!(text(&fresh), text(doc), "{ctx}");
        assert_eq!(commit_infos(&fresh), commit_infos(doc), "{ctx}");
    }
}

/// Issue 25: a peer sent ops the receiver already had with commit infos
/// that overlapped the receiver's own; they were stored as they came,
/// and from then on every export of the receiver (its own snapshots
/// included) was refused as "commit infos out of order". Infos are now
/// kept only for ops an import adds, as one commit of them, overlapping
/// no other.
#[test]
fn forged_commit_infos_for_ops_held_or_not_sent_change_nothing() {
    use weft::CommitOptions;
    let mut a = weft_testkit::doc(1);
    a.text("t").insert(0, "abc").unwrap();
    a.commit_with(CommitOptions::new().message("mine").timestamp(7));
    a.text("t").insert(3, "d").unwrap();
    a.commit();
    let infos = commit_infos(&a);
    let before = a.export(ExportMode::Snapshot).unwrap();

    // A forger with a's peer id: the same op ids (other text), with a
    // message on part of them, overlapping a's.
    let mut forger = weft_testkit::doc(1);
    forger.text("t").insert(0, "x").unwrap();
    let _sent = forger.export(ExportMode::Snapshot).unwrap();
    forger.text("t").insert(1, "yzw").unwrap();
    forger.commit_with(CommitOptions::new().message("forged"));
    // ...and ops of its own (peer 9) in the same update, so the import
    // adds something: infos must name ops it adds.
    let mut nine = weft_testkit::doc(9);
    nine.text("t").insert(0, "9").unwrap();
    nine.commit_with(CommitOptions::new().message("nine"));
    forger
        .import(&nine.export(ExportMode::Snapshot).unwrap())
        .unwrap();
    let whole = forger
        .export(ExportMode::Updates {
            from: &VersionVector::new(),
        })
        .unwrap();
    a.import(&whole).unwrap();
    reopens(&a, "after the forged infos");
    let mut expected = infos.clone();
    expected.extend(commit_infos(&nine));
    assert_eq!(commit_infos(&a), expected);

    // Infos for ops the import does not add (already held, or another
    // peer's, not sent) are ignored the same way.
    for bytes in [&whole, &before] {
        a.import(bytes).unwrap();
        reopens(&a, "after a re-sent history");
        assert_eq!(commit_infos(&a), expected);
    }
    // An honest replica that gets the same ops from a and from the forger,
    // in either order, ends with a's history, messages included.
    for forged_first in [false, true] {
        let mut b = weft_testkit::doc(2);
        let mine = a
            .export(ExportMode::Updates {
                from: &VersionVector::new(),
            })
            .unwrap();
        let order = if forged_first {
            [&whole, &mine]
        } else {
            [&mine, &whole]
        };
        for bytes in order {
            b.import(bytes).unwrap();
            reopens(&b, "replica");
        }
        if !forged_first {
            assert_eq!(commit_infos(&b), commit_infos(&a));
            assert_eq!(b.changes().unwrap(), a.changes().unwrap());
        }
    }
}

/// A commit received in parts (its first ops, then the rest) gets its
/// message on every part, as on a replica that received it whole.
#[test]
fn a_commit_received_in_parts_keeps_one_message() {
    use weft::CommitOptions;
    let mut a = weft_testkit::doc(1);
    a.text("t").insert(0, "abcdef").unwrap();
    a.commit_with(CommitOptions::new().message("whole"));
    let spans = [IdSpan::new(1, 0..2), IdSpan::new(1, 2..6)];
    let mut b = weft_testkit::doc(2);
    for span in &spans {
        let part = a
            .export(ExportMode::UpdatesInRange(std::slice::from_ref(span)))
            .unwrap();
        b.import(&part).unwrap();
        reopens(&b, "part");
    }
    assert_eq!(commit_infos(&b), commit_infos(&a));
    // A copy of b's first part only, then the rest from a.
    let mut c = weft_testkit::doc(3);
    let first = a.export(ExportMode::UpdatesInRange(&spans[..1])).unwrap();
    c.import(&first).unwrap();
    let mut d = weft_testkit::doc(4);
    d.import(&c.export(ExportMode::Snapshot).unwrap()).unwrap();
    reopens(&d, "copy of a part");
    d.import(&a.export(ExportMode::Snapshot).unwrap()).unwrap();
    reopens(&d, "the rest");
    assert_eq!(commit_infos(&d), commit_infos(&a));
}

/// Found by an outside attack (issue 25): a fork (or `fork_at`) carried
/// the open change away without counting it as sent, so a message given
/// to the change afterwards covered ops the fork's replicas already had
/// and never received the message for: their histories differed for good.
#[test]
fn a_fork_of_the_open_change_counts_as_sent() {
    use weft::CommitOptions;
    for at in [false, true] {
        let mut a = weft_testkit::doc(1);
        a.text("t").insert(0, "hello").unwrap(); // open change
        let fork = if at {
            a.fork_at(&a.frontiers()).unwrap()
        } else {
            a.fork()
        };
        let mut c = weft_testkit::doc(3);
        c.import(
            &fork
                .export(ExportMode::Updates {
                    from: &VersionVector::new(),
                })
                .unwrap(),
        )
        .unwrap();
        a.text("t").insert(5, "!").unwrap();
        a.commit_with(CommitOptions::new().message("m").timestamp(5));
        let mut d = weft_testkit::doc(4);
        d.import(
            &a.export(ExportMode::Updates {
                from: &VersionVector::new(),
            })
            .unwrap(),
        )
        .unwrap();
        c.import(
            &a.export(ExportMode::Updates { from: &c.version() })
                .unwrap(),
        )
        .unwrap();
        assert_eq!(c.version(), d.version());
        assert_eq!(commit_infos(&c), commit_infos(&d), "fork_at: {at}");
        assert_eq!(commit_infos(&c), commit_infos(&a));
        // The message covers the op typed after the fork.
        assert_eq!(
            commit_infos(&a).keys().copied().collect::<Vec<_>>(),
            [(1, 5)]
        );
    }
}
