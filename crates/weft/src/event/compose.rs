//! Quill delta algebra: composing two change deltas, applying a change to
//! a text's delta, and the attribute changes between two deltas of the
//! same text. Counts are in one [`Unit`] throughout.

use std::collections::btree_map::Entry;

use crate::error::{Error, Result};
use crate::style::{Attributes, Delta};
use crate::unit::Unit;
use crate::value::Value;

/// Length of `s` in `unit`.
pub(crate) fn units(s: &str, unit: Unit) -> usize {
    match unit {
        Unit::Char => s.chars().count(),
        Unit::Utf8 => s.len(),
        Unit::Utf16 => s.encode_utf16().count(),
    }
}

/// The byte offset of `n` units into `s` (its end if `s` is shorter; a
/// surrogate pair is never split: counts in one unit always fall on char
/// boundaries of the text they count, and one inside a char, which only
/// inconsistent deltas give, is moved to the char's end rather than
/// panic).
fn byte_offset(s: &str, n: usize, unit: Unit) -> usize {
    match unit {
        Unit::Utf8 => {
            let mut i = n.min(s.len());
            while !s.is_char_boundary(i) {
                i += 1;
            }
            i
        }
        Unit::Char => s.char_indices().nth(n).map_or(s.len(), |(i, _)| i),
        Unit::Utf16 => {
            let mut seen = 0;
            for (i, c) in s.char_indices() {
                if seen >= n {
                    return i;
                }
                seen += c.len_utf16();
            }
            s.len()
        }
    }
}

/// Length of an embed in `unit`: that of U+FFFC.
pub(crate) fn embed_units(unit: Unit) -> usize {
    match unit {
        Unit::Utf8 => 3,
        Unit::Char | Unit::Utf16 => 1,
    }
}

/// What an insert piece inserts: text, one embed or one block marker.
#[derive(Clone, Copy)]
enum Ins<'a> {
    Text(&'a str),
    Embed(&'a Value),
    Block,
}

impl Ins<'_> {
    fn to_delta(self, attributes: Attributes) -> Delta {
        match self {
            Ins::Text(s) => Delta::Insert {
                insert: s.to_owned(),
                attributes,
            },
            Ins::Embed(v) => Delta::Embed {
                insert: v.clone(),
                attributes,
            },
            Ins::Block => Delta::Block { attributes },
        }
    }
}

/// The length of op `d` in `unit`.
fn op_len(d: &Delta, unit: Unit) -> usize {
    match d {
        Delta::Insert { insert, .. } => units(insert, unit),
        Delta::Embed { .. } | Delta::Block { .. } => embed_units(unit),
        Delta::Retain { retain, .. } => *retain,
        Delta::Delete { delete } => *delete,
    }
}

/// One step of a delta being read piece by piece.
enum Piece<'a> {
    Insert(Ins<'a>, &'a Attributes),
    Retain(usize, &'a Attributes),
    Delete(usize),
}

/// Reads a delta in pieces of a given length; past its end it reads as an
/// endless plain retain.
struct Reader<'a> {
    ops: &'a [Delta],
    /// Index of the current op and units of it already taken.
    at: usize,
    taken: usize,
    unit: Unit,
}

static NO_ATTRIBUTES: Attributes = Attributes::new();

impl<'a> Reader<'a> {
    fn new(ops: &'a [Delta], unit: Unit) -> Self {
        let mut r = Reader {
            ops,
            at: 0,
            taken: 0,
            unit,
        };
        r.skip_empty();
        r
    }

    fn skip_empty(&mut self) {
        while self.at < self.ops.len() && self.len_of(self.at) == 0 {
            self.at += 1;
        }
    }

    fn len_of(&self, i: usize) -> usize {
        op_len(&self.ops[i], self.unit)
    }

    fn done(&self) -> bool {
        self.at >= self.ops.len()
    }

    /// Units left in the current op (`usize::MAX` past the end).
    fn peek_len(&self) -> usize {
        if self.done() {
            usize::MAX
        } else {
            self.len_of(self.at) - self.taken
        }
    }

    fn peek_is_insert(&self) -> bool {
        matches!(
            self.ops.get(self.at),
            Some(Delta::Insert { .. } | Delta::Embed { .. } | Delta::Block { .. })
        )
    }

    fn peek_is_delete(&self) -> bool {
        matches!(self.ops.get(self.at), Some(Delta::Delete { .. }))
    }

    /// Takes up to `n` units of the current op.
    fn take(&mut self, n: usize) -> Piece<'a> {
        let Some(op) = self.ops.get(self.at) else {
            return Piece::Retain(n, &NO_ATTRIBUTES);
        };
        let left = self.len_of(self.at) - self.taken;
        let n = n.min(left);
        let piece = match op {
            Delta::Insert { insert, attributes } => {
                let from = byte_offset(insert, self.taken, self.unit);
                let rest = &insert[from..];
                let to = from + byte_offset(rest, n, self.unit);
                Piece::Insert(Ins::Text(&insert[from..to]), attributes)
            }
            Delta::Embed { insert, attributes } => Piece::Insert(Ins::Embed(insert), attributes),
            Delta::Block { attributes } => Piece::Insert(Ins::Block, attributes),
            Delta::Retain { attributes, .. } => Piece::Retain(n, attributes),
            Delta::Delete { .. } => Piece::Delete(n),
        };
        if n == left {
            self.at += 1;
            self.taken = 0;
            self.skip_empty();
        } else {
            self.taken += n;
        }
        piece
    }
}

/// Appends `op` to `out`, merging it with the last op when they are of the
/// same kind and attributes, and keeping an insert before a delete at the
/// same place (Quill's normal form).
fn push(out: &mut Vec<Delta>, op: Delta) {
    match (out.last_mut(), op) {
        (_, Delta::Retain { retain: 0, .. } | Delta::Delete { delete: 0 }) => {}
        (_, Delta::Insert { insert, .. }) if insert.is_empty() => {}
        (Some(Delta::Delete { delete }), Delta::Delete { delete: n }) => *delete += n,
        (
            Some(Delta::Retain {
                retain,
                attributes: a,
            }),
            Delta::Retain {
                retain: n,
                attributes: b,
            },
        ) if *a == b => *retain += n,
        (
            Some(Delta::Insert {
                insert,
                attributes: a,
            }),
            Delta::Insert {
                insert: s,
                attributes: b,
            },
        ) if *a == b => insert.push_str(&s),
        (
            Some(Delta::Delete { .. }),
            op @ (Delta::Insert { .. } | Delta::Embed { .. } | Delta::Block { .. }),
        ) => {
            let del = out.pop();
            push(out, op);
            out.extend(del);
        }
        (_, op) => out.push(op),
    }
}

/// Whether `op` changes nothing (an empty retain, delete or insert).
fn is_empty_op(op: &Delta) -> bool {
    match op {
        Delta::Retain { retain, .. } => *retain == 0,
        Delta::Delete { delete } => *delete == 0,
        Delta::Insert { insert, .. } => insert.is_empty(),
        Delta::Embed { .. } | Delta::Block { .. } => false,
    }
}

/// Whether `push` would merge or reorder `b` after `a`.
fn joins(a: &Delta, b: &Delta) -> bool {
    match (a, b) {
        (
            Delta::Delete { .. },
            Delta::Delete { .. } | Delta::Insert { .. } | Delta::Embed { .. } | Delta::Block { .. },
        ) => true,
        (Delta::Retain { attributes: x, .. }, Delta::Retain { attributes: y, .. })
        | (Delta::Insert { attributes: x, .. }, Delta::Insert { attributes: y, .. }) => x == y,
        _ => false,
    }
}

/// Puts a change delta in Quill's normal form (no empty ops, neighbours
/// merged, inserts before deletes, no trailing plain retain), in place;
/// O(n), and without allocating when it already is.
pub(crate) fn normalize(delta: &mut Vec<Delta>) {
    let normal = !delta.iter().any(is_empty_op)
        && !delta.windows(2).any(|w| joins(&w[0], &w[1]))
        && !matches!(delta.last(), Some(Delta::Retain { attributes, .. }) if attributes.is_empty());
    if !normal {
        let mut out = Vec::with_capacity(delta.len());
        for op in delta.drain(..) {
            push(&mut out, op);
        }
        *delta = chop(out);
    }
}

/// Drops a trailing plain retain (it changes nothing).
fn chop(mut out: Vec<Delta>) -> Vec<Delta> {
    if matches!(out.last(), Some(Delta::Retain { attributes, .. }) if attributes.is_empty()) {
        out.pop();
    }
    out
}

/// `a`'s attributes with `b`'s set on top; `keep_null`: a `Null` of `b`
/// stays (a retain that removes), else it removes the key.
fn merge_attributes(a: &Attributes, b: &Attributes, keep_null: bool) -> Attributes {
    let mut out = a.clone();
    for (k, v) in b {
        if v.is_null() && !keep_null {
            out.remove(k);
        } else {
            out.insert(k.clone(), v.clone());
        }
    }
    out
}

/// The change `a` then `b` as one delta (Quill's `compose`), counted in
/// `unit`. O(|a| + |b|).
pub(crate) fn compose(a: &[Delta], b: &[Delta], unit: Unit) -> Vec<Delta> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut ra, mut rb) = (Reader::new(a, unit), Reader::new(b, unit));
    while !ra.done() || !rb.done() {
        if rb.peek_is_insert() {
            if let Piece::Insert(ins, attrs) = rb.take(usize::MAX) {
                let attrs = attrs.iter().filter(|(_, v)| !v.is_null());
                let attributes = attrs.map(|(k, v)| (k.clone(), v.clone())).collect();
                push(&mut out, ins.to_delta(attributes));
            }
            continue;
        }
        if ra.peek_is_delete() {
            if let Piece::Delete(n) = ra.take(usize::MAX) {
                push(&mut out, Delta::Delete { delete: n });
            }
            continue;
        }
        if rb.done() {
            // The rest of `a` as it is.
            let rest = ra.take(usize::MAX);
            push(&mut out, owned(rest));
            continue;
        }
        let n = ra.peek_len().min(rb.peek_len());
        let (pa, pb) = (ra.take(n), rb.take(n));
        match (pa, pb) {
            (Piece::Retain(n, x), Piece::Retain(_, y)) => push(
                &mut out,
                Delta::Retain {
                    retain: n,
                    attributes: merge_attributes(x, y, true),
                },
            ),
            (Piece::Insert(ins, x), Piece::Retain(_, y)) => {
                push(&mut out, ins.to_delta(merge_attributes(x, y, false)));
            }
            (Piece::Retain(n, _), Piece::Delete(_)) => push(&mut out, Delta::Delete { delete: n }),
            // Inserted by `a`, deleted by `b`: nothing.
            (Piece::Insert(..), Piece::Delete(_)) => {}
            // Deletes of `a` and inserts of `b` were taken above.
            (Piece::Delete(_), _) | (_, Piece::Insert(..)) => {}
        }
    }
    chop(out)
}

fn owned(p: Piece<'_>) -> Delta {
    match p {
        Piece::Insert(ins, a) => ins.to_delta(a.clone()),
        Piece::Retain(n, a) => Delta::Retain {
            retain: n,
            attributes: a.clone(),
        },
        Piece::Delete(n) => Delta::Delete { delete: n },
    }
}

/// `doc` (a text's delta: inserts only) changed by `change`, counted in
/// `unit`. O(|doc| + |change|).
///
/// # Errors
///
/// [`Error::OutOfBounds`] if `change` retains or deletes past the end of
/// `doc`; [`Error::InvalidDelta`] if `doc` holds a retain or delete.
pub(crate) fn apply_change(doc: &[Delta], change: &[Delta], unit: Unit) -> Result<Vec<Delta>> {
    let mut len = 0usize;
    for d in doc {
        match d {
            Delta::Insert { .. } | Delta::Embed { .. } | Delta::Block { .. } => {
                len += op_len(d, unit)
            }
            _ => {
                return Err(Error::InvalidDelta {
                    what: "a text's delta holds only inserts",
                })
            }
        }
    }
    let mut pos = 0usize;
    for d in change {
        match d {
            Delta::Retain { retain: n, .. } | Delta::Delete { delete: n } => {
                let end = pos.saturating_add(*n);
                if end > len {
                    return Err(Error::OutOfBounds {
                        pos: end,
                        len,
                        unit,
                    });
                }
                if matches!(d, Delta::Retain { .. }) {
                    pos = end;
                } else {
                    len -= n;
                }
            }
            Delta::Insert { .. } | Delta::Embed { .. } | Delta::Block { .. } => {
                let n = op_len(d, unit);
                pos += n;
                len += n;
            }
        }
    }
    Ok(compose(doc, change, unit))
}

/// The attributes a retain sets to turn `x` into `y` (`Null` removes).
fn attribute_diff(x: &Attributes, y: &Attributes) -> Attributes {
    let mut diff = Attributes::new();
    for (k, v) in y {
        if x.get(k) != Some(v) {
            diff.insert(k.clone(), v.clone());
        }
    }
    for k in x.keys() {
        if let Entry::Vacant(e) = diff.entry(k.clone()) {
            if !y.contains_key(k) {
                e.insert(Value::Null);
            }
        }
    }
    diff
}

/// Pushes retains of `n` units that turn the attributes read from `ra`
/// into those read from `rb` (both text deltas, read in step).
fn restyle(out: &mut Vec<Delta>, ra: &mut Reader<'_>, rb: &mut Reader<'_>, mut n: usize) {
    while n > 0 && !ra.done() && !rb.done() {
        let k = ra.peek_len().min(rb.peek_len()).min(n);
        let (Piece::Insert(_, x), Piece::Insert(_, y)) = (ra.take(k), rb.take(k)) else {
            debug_assert!(false, "restyle reads text deltas");
            break;
        };
        push(
            out,
            Delta::Retain {
                retain: k,
                attributes: attribute_diff(x, y),
            },
        );
        n -= k;
    }
}

/// The retains that turn the attributes of `from` into those of `to`, two
/// deltas (inserts only) of the same text. O(|from| + |to|).
pub(crate) fn attribute_changes(from: &[Delta], to: &[Delta], unit: Unit) -> Vec<Delta> {
    let mut out = Vec::new();
    let (mut ra, mut rb) = (Reader::new(from, unit), Reader::new(to, unit));
    restyle(&mut out, &mut ra, &mut rb, usize::MAX);
    chop(out)
}

/// One position of a text delta: a char, an embed (equal only to an
/// equal embed) or a block marker (its attributes are styles).
#[derive(PartialEq)]
enum Atom<'a> {
    Char(char),
    Embed(&'a Value),
    Block,
}

impl Atom<'_> {
    fn units(&self, unit: Unit) -> usize {
        match (self, unit) {
            (Atom::Char(_), Unit::Char) => 1,
            (Atom::Char(c), Unit::Utf8) => c.len_utf8(),
            (Atom::Char(c), Unit::Utf16) => c.len_utf16(),
            (Atom::Embed(_) | Atom::Block, _) => embed_units(unit),
        }
    }
}

/// The positions of a text delta (inserts and embeds; others skipped).
fn atoms(d: &[Delta]) -> Vec<Atom<'_>> {
    let mut out = Vec::new();
    for op in d {
        match op {
            Delta::Insert { insert, .. } => out.extend(insert.chars().map(Atom::Char)),
            Delta::Embed { insert, .. } => out.push(Atom::Embed(insert)),
            Delta::Block { .. } => out.push(Atom::Block),
            _ => {}
        }
    }
    out
}

/// A change that turns `from` into `to`, two text deltas (inserts only),
/// counted in `unit`: the common prefix and suffix of their text are
/// retained (restyled where attributes differ), the rest is deleted and
/// inserted. O(|from| + |to|).
pub(crate) fn diff_texts(from: &[Delta], to: &[Delta], unit: Unit) -> Vec<Delta> {
    let (a, b) = (atoms(from), atoms(to));
    let pre = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let room = a.len().min(b.len()) - pre;
    let suf = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(room)
        .take_while(|(x, y)| x == y)
        .count();
    let length = |xs: &[Atom<'_>]| -> usize { xs.iter().map(|x| x.units(unit)).sum() };
    let mut out = Vec::new();
    let (mut ra, mut rb) = (Reader::new(from, unit), Reader::new(to, unit));
    restyle(&mut out, &mut ra, &mut rb, length(&a[..pre]));
    let gone = length(&a[pre..a.len() - suf]);
    let mut skip = gone;
    while skip > 0 && !ra.done() {
        let k = ra.peek_len().min(skip);
        ra.take(k);
        skip -= k;
    }
    push(&mut out, Delta::Delete { delete: gone });
    let mut add = length(&b[pre..b.len() - suf]);
    while add > 0 && !rb.done() {
        let k = rb.peek_len().min(add);
        let piece = rb.take(k);
        push(&mut out, owned(piece));
        add -= k;
    }
    restyle(&mut out, &mut ra, &mut rb, usize::MAX);
    chop(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(ops: &[Delta]) -> Vec<Delta> {
        ops.to_vec()
    }

    #[test]
    fn compose_follows_quill() {
        let doc = d(&[Delta::insert("Hello world")]);
        let a = d(&[Delta::retain(6), Delta::delete(5), Delta::insert("Weft")]);
        let b = d(&[Delta::retain_with(2, [("bold", true)]), Delta::insert("!")]);
        let ab = compose(&a, &b, Unit::Char);
        assert_eq!(
            ab,
            vec![
                Delta::retain_with(2, [("bold", true)]),
                Delta::insert("!"),
                Delta::retain(4),
                Delta::insert("Weft"),
                Delta::delete(5),
            ]
        );
        let once = apply_change(&doc, &ab, Unit::Char).unwrap();
        let twice =
            apply_change(&apply_change(&doc, &a, Unit::Char).unwrap(), &b, Unit::Char).unwrap();
        assert_eq!(once, twice);
        assert_eq!(
            once,
            vec![
                Delta::insert_with("He", [("bold", true)]),
                Delta::insert("!llo Weft"),
            ]
        );
    }

    #[test]
    fn inserted_then_deleted_is_nothing() {
        let a = d(&[Delta::retain(1), Delta::insert("abc")]);
        let b = d(&[Delta::retain(2), Delta::delete(2)]);
        assert_eq!(
            compose(&a, &b, Unit::Char),
            vec![Delta::retain(1), Delta::insert("a")]
        );
    }

    #[test]
    fn utf16_counts_split_inside_strings() {
        let doc = d(&[Delta::insert("a😀b")]);
        let change = d(&[Delta::retain(3), Delta::insert("X"), Delta::delete(1)]);
        assert_eq!(
            apply_change(&doc, &change, Unit::Utf16).unwrap(),
            vec![Delta::insert("a😀X")]
        );
        assert!(apply_change(&doc, &[Delta::retain(5)], Unit::Utf16).is_err());
    }

    #[test]
    fn attribute_changes_set_and_remove() {
        let from = d(&[Delta::insert_with("ab", [("b", true)]), Delta::insert("cd")]);
        let to = d(&[Delta::insert("a"), Delta::insert_with("bcd", [("b", true)])]);
        assert_eq!(
            attribute_changes(&from, &to, Unit::Char),
            vec![
                Delta::retain_with(1, [("b", Value::Null)]),
                Delta::retain(1),
                Delta::retain_with(2, [("b", true)]),
            ]
        );
    }
}
