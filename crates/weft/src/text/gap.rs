//! Where text typed in a styled text goes: after the anchors glued to the
//! char before it, unless that would bring back a mark whose text was all
//! deleted (the rule: [`TextState::rich_insert_point`]).
//!
//! The rule reads the *gap*: the deleted chars and anchors between the
//! visible char before the new text and the next visible char. A gap of up
//! to [`GAP_SCAN`] items is read item by item ([`TextState::scan_gap`]).
//! A longer one (a long deleted passage, or thousands of marks whose text
//! was deleted) is searched in the [`super::anchors::AnchorTree`] instead
//! ([`TextState::search_gap`]), in O(log n + the marks active at the ends
//! of the gap), with the same result:
//!
//! Every place the rule may pick is right after a deleted char and the
//! left-sticky anchors glued to it, and the marks covering a place are the
//! marks active at its anchor rank. Past the default place the rule wants
//! the marks active there minus the marks of the gap without text that
//! cover it (`wanted`). Up to the first anchor in the gap of a mark with
//! its other anchor outside the gap, a place is covered by `wanted` and by
//! the marks without text over it, so its depth (marks opened minus
//! closed) is at least `wanted.len()`, and equal exactly when the place
//! suits; past that anchor no place suits. So the first place with a depth
//! of at most `wanted.len()` ([`super::anchors::AnchorTree::find_place`]) is
//! the answer when the marks active there are `wanted`, and there is no
//! answer otherwise. (A hand-made history can end a mark before it starts:
//! such a mark covers nothing but still moves the depth, so in a long gap
//! the search may then give up where a scan would find a place, and the
//! new text is unmarked as when no place exists.)

use generic_btree::{Cursor, LeafIndex, PreviousCache};
use smallvec::SmallVec;

use crate::id::{MarkIdx, Seq};
use crate::unit::Unit;

use super::anchors::MarkSet;
use super::item::{Item, ANCHOR_END, STICKS_LEFT};
use super::{Counts, InsertPoint, TextState};

/// Most items of a gap read one by one (see
/// [`TextState::rich_insert_point`]); a longer gap is searched in the
/// anchor tree.
const GAP_SCAN: usize = 64;

/// A mark with an anchor in a gap: (mark, ordinal of its start anchor in
/// the gap, ordinal of its end anchor).
type GapMark = (MarkIdx, Option<usize>, Option<usize>);

/// A place [`TextState::scan_gap`] tries, by gap item.
#[derive(Clone, Copy)]
enum Candidate {
    /// Right after the first char of the deleted run `i`.
    Inside(usize),
    /// After the deleted run `i` and its left-sticky anchors.
    After(usize),
}

/// Where typed text goes in a gap.
#[derive(Debug, Clone, PartialEq, Eq)]
struct GapChoice {
    /// The text goes before item `index` of `leaf` (`index` may be the
    /// leaf's length)...
    leaf: LeafIndex,
    index: usize,
    /// ...or, when set, inside that item, right after its first char.
    split: bool,
    /// The char the text goes after (`NO_SEQ`: the start of the text).
    origin_left: Seq,
    /// Marks without text that no place avoids (the place is then the
    /// default one): see [`TextState::take_resurrected`]. In the order of
    /// their start anchors from a scan, of their indexes from a search.
    stuck: MarkSet,
}

impl TextState {
    /// The styled half of [`TextState::local_insert`]: the place of the
    /// new run `item` typed at visible char `pos` by
    /// [`TextState::rich_insert_point`], then its origins, which are always
    /// chars: it goes after the anchors glued to the char before it and
    /// before those glued to the char after it. Kept out of line so
    /// plain-text typing stays small.
    #[inline(never)]
    pub(super) fn styled_insert(&mut self, pos: u32, item: Item, content: &str) -> (Seq, Seq) {
        let mut item = item;
        let point = self.local_insert_point(pos, content);
        let point = self.rich_insert_point(pos, point, content);
        item.origin_left = point.origin_left;
        item.origin_right = self.non_anchor_from(point.leaf, point.index);
        let (leaf, index) = self.insert_item(point.leaf, point.index, item);
        // Typing on grows this item without looking at anchors: not while
        // the anchor after it counts it as the one char before it.
        let alone = self.note_chars_added(leaf, index, item.len);
        let f = self.focus.as_mut().expect("insert focuses its leaf");
        debug_assert_eq!(f.leaf, leaf);
        f.extend = (!alone).then_some((pos + item.len, index));
        (item.origin_left, item.origin_right)
    }

    /// Where text typed right after a visible char goes in a styled text.
    /// `point` is right after that char, and visible char `pos` (if any)
    /// is the next one. By default the text goes after the anchors glued
    /// to the char before it. When the gap up to the next visible char
    /// holds a mark with no text left (both anchors in the gap), the text
    /// instead goes after the first deleted char where no such mark covers
    /// it and every other mark covers it exactly as by default, so typing
    /// where a mark's text was deleted does not bring the mark back. When
    /// no such place exists, the text goes to the default place and those
    /// marks are kept for [`TextState::take_resurrected`]. Any gap size,
    /// in O(log n) for a long one (see the module doc).
    fn rich_insert_point(&mut self, pos: u32, point: InsertPoint, content: &str) -> InsertPoint {
        let choice = match self.scan_gap(point, GAP_SCAN) {
            Some(choice) => choice,
            None => self.search_gap(pos, point),
        };
        self.enter_gap(choice, content)
    }

    /// The rule of [`TextState::rich_insert_point`], reading the gap after
    /// `point` item by item; `None` if it holds more than `limit` items.
    fn scan_gap(&self, point: InsertPoint, limit: usize) -> Option<GapChoice> {
        // The gap: (item, leaf, index), up to the next visible char.
        let mut gap: SmallVec<[(Item, LeafIndex, usize); 16]> = SmallVec::new();
        let (mut leaf, mut index) = (point.leaf, point.index);
        loop {
            let Some(item) = self.chunk(leaf).items.get(index).copied() else {
                match self.next_leaf(leaf) {
                    Some(next) => (leaf, index) = (next, 0),
                    None => break,
                }
                continue;
            };
            if item.is_visible_text() {
                break;
            }
            if gap.len() == limit {
                return None;
            }
            gap.push((item, leaf, index));
            index += 1;
        }
        let sticks_left =
            |e: &(Item, LeafIndex, usize)| e.0.is_anchor() && e.0.anchor & STICKS_LEFT != 0;
        // Candidate places: after the char before the gap, or after a
        // deleted char; each past the left-sticky anchors glued there.
        let after = |from: usize| from + gap[from..].iter().take_while(|e| sticks_left(e)).count();
        // The place after gap item `end - 1` (or at `point`).
        let place = |end: usize, origin_left: Seq| {
            let (leaf, index) = match end.checked_sub(1).map(|i| gap[i]) {
                Some((_, leaf, index)) => (leaf, index + 1),
                None => (point.leaf, point.index),
            };
            GapChoice {
                leaf,
                index,
                split: false,
                origin_left,
                stuck: MarkSet::new(),
            }
        };
        let default = after(0);
        let mut choice = place(default, point.origin_left);
        if !gap.iter().any(|e| e.0.is_anchor()) {
            return Some(choice);
        }
        // Per mark with an anchor in the gap: (start, end) ordinals.
        let mut marks: SmallVec<[GapMark; 8]> = SmallVec::new();
        for (i, e) in gap.iter().enumerate() {
            if !e.0.is_anchor() {
                continue;
            }
            let m = e.0.mark();
            let slot = match marks.iter_mut().find(|x| x.0 == m) {
                Some(slot) => slot,
                None => {
                    marks.push((m, None, None));
                    marks.last_mut().expect("just pushed")
                }
            };
            if e.0.anchor & ANCHOR_END != 0 {
                slot.2 = Some(i);
            } else {
                slot.1 = Some(i);
            }
        }
        let covers =
            |&(_, s, e): &GapMark, p: usize| s.is_none_or(|s| s < p) && e.is_none_or(|e| e >= p);
        let dead = |m: &GapMark| m.1.is_some() && m.2.is_some();
        if !marks.iter().any(|m| dead(m) && covers(m, default)) {
            return Some(choice);
        }
        // Candidates left to right: right after the first char of a
        // deleted run (inside it), then after its last char.
        let mut candidates: SmallVec<[(usize, Candidate); 16]> = SmallVec::new();
        for (i, e) in gap.iter().enumerate() {
            if !e.0.is_anchor() {
                if e.0.len > 1 {
                    candidates.push((i + 1, Candidate::Inside(i)));
                }
                candidates.push((after(i + 1), Candidate::After(i)));
            }
        }
        let ok = |p: usize| {
            marks.iter().all(|m| {
                if dead(m) {
                    !covers(m, p)
                } else {
                    covers(m, p) == covers(m, default)
                }
            })
        };
        match candidates.into_iter().find(|c| ok(c.0)) {
            Some((_, Candidate::Inside(i))) => {
                let (item, leaf, index) = gap[i];
                choice = GapChoice {
                    leaf,
                    index,
                    split: true,
                    origin_left: item.seq,
                    stuck: MarkSet::new(),
                };
            }
            Some((_, Candidate::After(i))) => choice = place(after(i + 1), gap[i].0.end() - 1),
            // No place escapes (a mark expanding both ways): the caller
            // unmarks the new text.
            None => {
                choice.stuck = marks
                    .iter()
                    .filter(|m| dead(m) && covers(m, default))
                    .map(|m| m.0)
                    .collect();
            }
        }
        Some(choice)
    }

    /// The rule of [`TextState::rich_insert_point`] for the gap after
    /// `point` (before visible char `pos`, if any), searched in the anchor
    /// tree (see the module doc). O(log n + the marks active at the
    /// default place and at the ends of the gap).
    fn search_gap(&mut self, pos: u32, point: InsertPoint) -> GapChoice {
        let default = GapChoice {
            leaf: point.leaf,
            index: point.index,
            split: false,
            origin_left: point.origin_left,
            stuck: MarkSet::new(),
        };
        // Without left-sticky anchors opening the gap, the default place
        // is its start, and no mark of the gap covers it.
        match self.item_from(point.leaf, point.index) {
            Some((_, _, first)) if first.is_anchor() && first.anchor & STICKS_LEFT != 0 => {}
            _ => return default,
        }
        self.build_index();
        let a0 = self.anchors_before(point.leaf, point.index);
        let a1 = if pos < self.len(Unit::Char) {
            self.char_anchor_rank(pos)
        } else {
            self.anchors.len()
        };
        // The default place is past the anchors glued to the char before.
        let r_default = self.anchors.first_unglued(a0 + 1, a1);
        let Some((leaf, index)) = self.after_anchor(r_default - 1) else {
            return default;
        };
        let default = GapChoice {
            leaf,
            index,
            ..default
        };
        let all = |_: MarkIdx| true;
        let before = self.anchors.active(a0, all);
        let at_default = self.anchors.active(r_default, all);
        let beyond = self.anchors.active(a1, all);
        // The marks without text covering the default place: started
        // among the anchors before it, ended in the gap.
        let dead: MarkSet = at_default
            .marks()
            .iter()
            .copied()
            .filter(|&m| !before.contains(m) && !beyond.contains(m))
            .collect();
        if dead.is_empty() {
            return default;
        }
        let wanted: SmallVec<[MarkIdx; 8]> = at_default
            .marks()
            .iter()
            .copied()
            .filter(|m| dead.binary_search(m).is_err())
            .collect();
        let stuck = GapChoice {
            stuck: dead.clone(),
            ..default
        };
        let depth = self.anchors.depth(r_default);
        let target = depth - dead.len() as i32;
        let search = self.anchors.find_place(r_default, a1, depth, target);
        let rank = match search.found {
            Some(rank) => rank,
            None => {
                // The place at the end of the gap: after its last deleted
                // char, or at the end of a run of left-sticky anchors.
                let char_last = self
                    .after_anchor(a1 - 1)
                    .and_then(|(leaf, index)| self.item_from(leaf, index))
                    .is_some_and(|(_, _, item)| !item.is_anchor() && item.deleted);
                if !(search.in_run || char_last) || search.depth > target {
                    return stuck;
                }
                a1
            }
        };
        if self.anchors.active(rank, all).marks() != wanted.as_slice() {
            return stuck;
        }
        let Some((leaf, index)) = self.after_anchor(rank - 1) else {
            return stuck;
        };
        if search.in_run {
            // Right after a run of left-sticky anchors: after the char
            // they are glued to.
            let glue = self.chunk(leaf).items[index - 1].origin_left;
            return GapChoice {
                leaf,
                index,
                split: false,
                origin_left: glue,
                stuck: MarkSet::new(),
            };
        }
        // After the first deleted char following that anchor.
        match self.item_from(leaf, index) {
            Some((leaf, index, item)) if !item.is_anchor() => GapChoice {
                leaf,
                index: if item.len > 1 { index } else { index + 1 },
                split: item.len > 1,
                origin_left: item.seq,
                stuck: MarkSet::new(),
            },
            _ => stuck,
        }
    }

    /// The place right after the anchor at `rank` (the id index must be
    /// built).
    fn after_anchor(&self, rank: u32) -> Option<(LeafIndex, usize)> {
        let seq = self.anchors.get(rank)?.seq;
        let (leaf, index, _) = self.position_of(seq);
        Some((leaf, index + 1))
    }

    /// Goes where `choice` says: splits the item to go inside, focuses the
    /// leaf and keeps the stuck marks for
    /// [`TextState::take_resurrected`].
    fn enter_gap(&mut self, choice: GapChoice, content: &str) -> InsertPoint {
        self.resurrected.extend(choice.stuck.iter().copied());
        self.focus_with_start(choice.leaf);
        if !choice.split {
            return InsertPoint {
                leaf: choice.leaf,
                index: choice.index,
                origin_left: choice.origin_left,
            };
        }
        let (leaf, index) = self.make_room(choice.leaf, choice.index, 2);
        let chunk = self.chunk_mut(leaf);
        let right = chunk.items[index].split(1, content.as_bytes());
        chunk.items.insert(index + 1, right);
        InsertPoint {
            leaf,
            index: index + 1,
            origin_left: choice.origin_left,
        }
    }

    /// Makes `leaf` the focus with its start counts known. O(log n) unless
    /// it already is.
    fn focus_with_start(&mut self, leaf: LeafIndex) {
        if self
            .focus
            .is_some_and(|f| f.leaf == leaf && f.start.is_some())
        {
            return;
        }
        self.flush();
        let mut start = Counts::default();
        self.tree
            .visit_previous_caches(Cursor { leaf, offset: 0 }, |c| {
                if let PreviousCache::NodeCache(c) = c {
                    start.add(*c);
                }
            });
        self.set_focus(leaf, Some(start));
    }
}

#[cfg(test)]
mod tests {
    use std::ops::Range;

    use super::*;
    use crate::style::ExpandType;
    use crate::text::anchors::tests::Rng;
    use crate::unit::{char_len, utf16_len};

    /// A text edited locally, with the op log's content and seqs kept by
    /// hand.
    struct Harness {
        state: TextState,
        content: String,
        seq: Seq,
        marks: u32,
    }

    impl Harness {
        fn new() -> Harness {
            Harness {
                state: TextState::new("t"),
                content: String::new(),
                seq: 0,
                marks: 0,
            }
        }

        fn len(&self) -> u32 {
            self.state.len(Unit::Char)
        }

        fn insert(&mut self, pos: u32, s: &str) {
            let len = char_len(s);
            let item = Item {
                seq: self.seq,
                len,
                origin_left: 0,
                origin_right: 0,
                byte_start: self.content.len() as u32,
                bytes: s.len() as u32,
                utf16: utf16_len(s),
                deleted: false,
                anchor: 0,
            };
            self.content.push_str(s);
            self.seq += len;
            self.state.local_insert(pos, item, &self.content);
            self.state.resurrected.clear();
            self.state.assert_invariants(&self.content);
        }

        fn delete(&mut self, pos: u32, len: u32) {
            let mut out = Vec::new();
            self.state.local_delete(pos, len, &self.content, &mut out);
            self.seq += len;
            self.state.assert_invariants(&self.content);
        }

        fn mark(&mut self, range: Range<u32>, expand: ExpandType) {
            self.state.local_mark(
                range,
                self.seq,
                MarkIdx::new(self.marks),
                expand,
                &self.content,
            );
            self.seq += 2;
            self.marks += 1;
            self.state.assert_invariants(&self.content);
        }

        /// The scan and the search at every position, which must agree;
        /// returns how many positions met a mark without text.
        fn compare_everywhere(&self, what: &str) -> usize {
            let mut revived = 0;
            for pos in 0..=self.len() {
                let mut s = self.state.clone();
                let point = s.local_insert_point(pos, &self.content);
                let scan = s.scan_gap(point, usize::MAX).expect("no limit");
                let search = s.search_gap(pos, point);
                let sorted = |c: &GapChoice| {
                    let mut c = c.clone();
                    c.stuck.sort_unstable();
                    c
                };
                assert_eq!(sorted(&scan), sorted(&search), "{what}: insert at {pos}");
                if scan.split || scan.origin_left != point.origin_left || !scan.stuck.is_empty() {
                    revived += 1;
                }
            }
            revived
        }
    }

    const EXPANDS: [ExpandType; 4] = [
        ExpandType::Before,
        ExpandType::Both,
        ExpandType::After,
        ExpandType::None,
    ];

    #[test]
    fn searching_the_gap_matches_reading_it() {
        let mut revived = 0;
        for seed in 0..1_500 {
            let mut rng = Rng(seed);
            let mut h = Harness::new();
            for _ in 0..1 + rng.below(4) {
                let pos = rng.below(h.len() + 1);
                let s = ["ab", "c", "defgh", "ij", "é文", "k😀"][rng.below(6) as usize];
                h.insert(pos, &s.repeat(1 + rng.below(6) as usize));
            }
            for step in 0..10 + rng.below(30) {
                let len = h.len();
                // Mark and type first, then mostly delete.
                let op = if step < 12 {
                    rng.below(8)
                } else {
                    2 + rng.below(8)
                };
                match op {
                    0..=3 if len > 0 => {
                        let start = rng.below(len);
                        let end = start + 1 + rng.below((len - start).min(4));
                        h.mark(start..end, EXPANDS[rng.below(4) as usize]);
                    }
                    4..=6 if len > 0 => {
                        let pos = rng.below(len);
                        h.delete(pos, 1 + rng.below((len - pos).min(5)));
                    }
                    7 => {
                        // Typing, char by char (the fast path grows one
                        // item).
                        let pos = rng.below(len + 1);
                        for k in 0..1 + rng.below(4) {
                            h.insert(pos + k, "t");
                        }
                    }
                    _ => h.insert(rng.below(len + 1), ["x", "yz", "w"][rng.below(3) as usize]),
                }
            }
            revived += h.compare_everywhere(&format!("seed {seed}"));
        }
        assert!(
            revived > 300,
            "only {revived} places met a mark without text"
        );
    }

    #[test]
    fn typing_between_two_anchors_keeps_their_char_counts() {
        let mut h = Harness::new();
        h.insert(0, "ab");
        // `a`, the start of the second mark (glued to `a`), the end of the
        // first (glued to `b`), `b`: no char between those two anchors.
        h.mark(0..1, ExpandType::After);
        h.mark(1..2, ExpandType::Before);
        let counts = |h: &Harness| {
            let mut counts = Vec::new();
            h.state.anchors.for_each(|a| counts.push(a.chars_before));
            counts
        };
        assert_eq!(counts(&h), [0, 1, 0, 1]);
        // Typed between them, one char at a time (the second one goes the
        // slow way, the third grows the item by the fast path).
        for (k, c) in ["x", "y", "z"].into_iter().enumerate() {
            h.insert(1 + k as u32, c);
        }
        assert_eq!(counts(&h), [0, 1, 2, 1]);
    }

    /// Runs of one-char marks with their text deleted, each run with mixed
    /// expand rules and some chars kept or retyped between them.
    #[test]
    fn searching_chains_of_dead_marks_matches_reading_them() {
        let mut revived = 0;
        for seed in 0..400 {
            let mut rng = Rng(1_000 + seed);
            let mut h = Harness::new();
            let n = 5 + rng.below(60);
            h.insert(0, &format!("x{}y", "m".repeat(n as usize)));
            for i in 0..n {
                let expand = EXPANDS[rng.below(if seed % 2 == 0 { 2 } else { 4 }) as usize];
                let width = 1 + rng.below(2).min(n - i - 1);
                h.mark(1 + i..1 + i + width, expand);
            }
            // Delete most of the marked chars, in a few pieces.
            let mut left = n;
            while left > 0 {
                let pos = 1 + rng.below(h.len() - 2);
                let k = (1 + rng.below(left)).min(h.len() - 1 - pos);
                if k > 0 {
                    h.delete(pos, k);
                }
                left = left.saturating_sub(k.max(1) + rng.below(3));
            }
            revived += h.compare_everywhere(&format!("chain seed {seed}"));
        }
        assert!(
            revived > 300,
            "only {revived} places met a mark without text"
        );
    }
}
