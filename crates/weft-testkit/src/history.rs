//! What the history tests share: diffs applied to a mirror, and the
//! commit messages and timestamps of a history, op by op.

use std::collections::BTreeMap;

use weft::{Delta, Doc, TextDiff, Unit};

/// Applies each diff of text "t" to `mirror`.
pub fn apply(diffs: &[TextDiff], mirror: &mut Vec<Delta>, unit: Unit) {
    for d in diffs.iter().filter(|d| d.name == "t") {
        d.apply_to(mirror, unit).unwrap();
    }
}

/// Per op, its commit's timestamp and message ([`commit_infos`]).
pub type Infos = BTreeMap<(u64, u32), (Option<i64>, Option<String>)>;

/// Per op (peer, counter): the timestamp and message of its commit, as
/// `doc.changes()` lists them (ops without either left out), so that
/// replicas that split their history differently compare equal.
pub fn commit_infos(doc: &Doc) -> Infos {
    let mut out = BTreeMap::new();
    for c in doc.changes().unwrap() {
        if c.timestamp.is_none() && c.message.is_none() {
            continue;
        }
        for counter in c.id.counters.clone() {
            out.insert(
                (c.id.peer, counter),
                (c.timestamp, c.message.as_deref().map(str::to_owned)),
            );
        }
    }
    out
}
