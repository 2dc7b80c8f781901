//! [`AnchorTree`]: the style anchors of one text in document order, in a
//! b-tree whose nodes summarise what their anchors do to the set of active
//! marks.
//!
//! The text tree counts anchors beside chars, so the number of anchors
//! before any place of the text (its *anchor rank*) takes O(log n) to find
//! there, and the anchors before that place are the first that many of
//! this tree. This tree then answers, for a rank:
//!
//! - the marks active there ([`AnchorTree::active`]), from the summaries of
//!   the subtrees left of it and at most [`LEAF_CAP`] anchors stepped one by
//!   one: O(log n + the marks those summaries name) instead of a replay of
//!   every anchor before it;
//! - where typed text may go in a long gap of deleted text (see `gap.rs`):
//!   the *depth* (marks opened minus marks closed before a rank) and the
//!   first rank, past a given one, that is a place right after a deleted
//!   char with at most a given depth ([`AnchorTree::find_place`]), in
//!   O(log n).
//!
//! **Summaries.** `opened` lists the marks whose start anchor is in the
//! subtree and whose end anchor is not; `closed` the marks whose end anchor
//! is in the subtree with no start anchor before it there. A mark is named
//! only by the nodes holding one of its anchors and not the other: at most
//! two per level, so many small marks leave O(1) names per node, and long
//! overlapping ones (`comment:<id>`) cost O(depth) names each in all.
//! Inserting an anchor adds or removes its mark in those lists along its
//! path (its partner, when already in the tree, is found through them),
//! one sorted insert or removal per node, rather than recomputing them.
//!
//! **Places after deleted chars.** Each anchor knows whether one char or
//! more sit between it and the anchor before it (`chars_before`, counted
//! up to 2). That and which side each anchor sticks to decide, with one
//! bit of state carried from left to right (*in a run*: only left-sticky
//! anchors since the last char), which ranks are such places; each node
//! keeps, for both states on entry, the lowest depth of such a place below
//! it and the state on exit.
//!
//! Invariants (checked by [`AnchorTree::assert_invariants`]): every leaf is
//! at the same depth, no node is empty or over its capacity, the root is
//! node 0, every summary equals the one computed afresh from what is below
//! it.

use smallvec::SmallVec;

use super::style::ActiveMarks;
use crate::id::{MarkIdx, Seq};

/// Most anchors in a leaf (4 with the test-only `small-nodes` feature).
const LEAF_CAP: usize = if cfg!(feature = "small-nodes") { 4 } else { 64 };

/// Most children of an internal node (4 with `small-nodes`).
const BRANCH_CAP: usize = if cfg!(feature = "small-nodes") { 4 } else { 16 };

/// Anchors per leaf when built in bulk: room for more before a split.
const BULK_LEAF: usize = LEAF_CAP * 3 / 4;

/// Children per internal node when built in bulk.
const BULK_BRANCH: usize = BRANCH_CAP * 3 / 4;

/// What [`AnchorTree::fold_prefix`] hands out: a whole subtree before the
/// rank, or one anchor of the last leaf.
enum Prefix<'a> {
    Subtree(&'a Summary),
    Anchor(&'a Anchor),
}

/// `Run::lowest` of a node with no place after a deleted char.
const NO_PLACE: i32 = i32::MAX;

/// A sorted list of mark indexes.
pub(crate) type MarkSet = SmallVec<[MarkIdx; 2]>;

/// Inserts `mark` into the sorted `set` (once).
pub(crate) fn set_insert<A: smallvec::Array<Item = MarkIdx>>(set: &mut SmallVec<A>, mark: MarkIdx) {
    if let Err(i) = set.binary_search(&mark) {
        set.insert(i, mark);
    }
}

/// Removes `mark` from the sorted `set`; returns whether it was there.
pub(crate) fn set_remove<A: smallvec::Array<Item = MarkIdx>>(
    set: &mut SmallVec<A>,
    mark: MarkIdx,
) -> bool {
    match set.binary_search(&mark) {
        Ok(i) => {
            set.remove(i);
            true
        }
        Err(_) => false,
    }
}

/// One style anchor of the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Anchor {
    pub seq: Seq,
    /// The anchor's mark in the op log.
    pub mark: MarkIdx,
    /// Ends its mark (else starts it).
    pub end: bool,
    /// Glued to the char before it (see [`super::STICKS_LEFT`]).
    pub sticks_left: bool,
    /// Chars, deleted or not, between the anchor before this one (or the
    /// start of the text) and this one, counted up to 2.
    pub chars_before: u8,
}

impl Anchor {
    /// What the anchor adds to the depth.
    #[inline]
    fn delta(&self) -> i32 {
        if self.end {
            -1
        } else {
            1
        }
    }

    /// Whether the place right before this anchor (after the chars before
    /// it) is right after a deleted char and its left-sticky anchors, when
    /// the anchors since the last char before it all stick left
    /// (`in_run`): the end of such a run, or a place between two chars
    /// before it, or after the char right before an anchor that does not
    /// stick left. (Inside a gap every char is deleted.)
    #[inline]
    fn is_place(&self, in_run: bool) -> bool {
        if self.chars_before > 0 {
            in_run || self.chars_before >= 2 || !self.sticks_left
        } else {
            in_run && !self.sticks_left
        }
    }

    /// `in_run` after this anchor.
    #[inline]
    fn run_after(&self, in_run: bool) -> bool {
        self.sticks_left && (in_run || self.chars_before > 0)
    }
}

/// For one state on entry to a node: the lowest depth (relative to the
/// node's start) of a place after a deleted char below it, and the state
/// on exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    lowest: i32,
    exit: bool,
}

/// What a subtree does, as seen from outside it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Summary {
    /// Anchors below.
    len: u32,
    /// Starts minus ends below.
    delta: i32,
    /// Every anchor below sticks left with no char before it.
    glued: bool,
    /// Indexed by the `in_run` state on entry.
    runs: [Run; 2],
    /// Marks started below and not ended below.
    opened: MarkSet,
    /// Marks ended below with no start before the end below.
    closed: MarkSet,
}

impl Summary {
    /// The summary of `anchors`, in order.
    fn of_anchors(anchors: &[Anchor]) -> Summary {
        let mut s = Summary::shape_of_anchors(anchors);
        for a in anchors {
            if a.end {
                if !set_remove(&mut s.opened, a.mark) {
                    set_insert(&mut s.closed, a.mark);
                }
            } else if s.closed.binary_search(&a.mark).is_err() {
                set_insert(&mut s.opened, a.mark);
            }
        }
        s
    }

    /// The summary of `anchors` without the mark lists.
    fn shape_of_anchors(anchors: &[Anchor]) -> Summary {
        let mut runs = [Run {
            lowest: NO_PLACE,
            exit: false,
        }; 2];
        for (entry, run) in runs.iter_mut().enumerate() {
            let (mut depth, mut in_run) = (0i32, entry == 1);
            for a in anchors {
                if a.is_place(in_run) {
                    run.lowest = run.lowest.min(depth);
                }
                depth += a.delta();
                in_run = a.run_after(in_run);
            }
            run.exit = in_run;
        }
        Summary {
            len: anchors.len() as u32,
            delta: anchors.iter().map(Anchor::delta).sum(),
            glued: anchors.iter().all(|a| a.sticks_left && a.chars_before == 0),
            runs,
            opened: MarkSet::new(),
            closed: MarkSet::new(),
        }
    }

    /// The summary of consecutive subtrees with summaries `parts`.
    fn of_parts<'a>(parts: impl Iterator<Item = &'a Summary> + Clone) -> Summary {
        let mut s = Summary::shape_of_parts(parts.clone());
        for p in parts {
            for &m in &p.closed {
                if !set_remove(&mut s.opened, m) {
                    set_insert(&mut s.closed, m);
                }
            }
            for &m in &p.opened {
                if s.closed.binary_search(&m).is_err() {
                    set_insert(&mut s.opened, m);
                }
            }
        }
        s
    }

    /// [`Summary::of_parts`] without the mark lists.
    fn shape_of_parts<'a>(parts: impl Iterator<Item = &'a Summary> + Clone) -> Summary {
        let mut runs = [Run {
            lowest: NO_PLACE,
            exit: false,
        }; 2];
        for (entry, run) in runs.iter_mut().enumerate() {
            let (mut depth, mut in_run) = (0i32, entry == 1);
            for p in parts.clone() {
                let inner = p.runs[usize::from(in_run)];
                if inner.lowest != NO_PLACE {
                    run.lowest = run.lowest.min(depth + inner.lowest);
                }
                depth += p.delta;
                in_run = inner.exit;
            }
            run.exit = in_run;
        }
        let (mut len, mut delta, mut glued) = (0, 0, true);
        for p in parts {
            len += p.len;
            delta += p.delta;
            glued &= p.glued;
        }
        Summary {
            len,
            delta,
            glued,
            runs,
            opened: MarkSet::new(),
            closed: MarkSet::new(),
        }
    }

    /// Copies everything but the mark lists from `shape`.
    fn set_shape(&mut self, shape: Summary) {
        self.len = shape.len;
        self.delta = shape.delta;
        self.glued = shape.glued;
        self.runs = shape.runs;
    }
}

/// The anchors of a leaf, or the children of an internal node.
#[derive(Debug, Clone)]
enum Body {
    Leaf(Vec<Anchor>),
    Branch(Vec<u32>),
}

/// A node of the tree: its summary and what is below it.
#[derive(Debug, Clone)]
struct Node {
    summary: Summary,
    body: Body,
}

impl Node {
    /// A leaf holding `anchors`.
    fn leaf(anchors: Vec<Anchor>) -> Node {
        Node {
            summary: Summary::of_anchors(&anchors),
            body: Body::Leaf(anchors),
        }
    }
}

/// The path from the root to a leaf, as node ids.
type Path = SmallVec<[u32; 8]>;

/// Where [`AnchorTree::find_place`] stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PlaceSearch {
    /// The first rank found, if any.
    pub found: Option<u32>,
    /// The run state at the rank found, or at the end of the range.
    pub in_run: bool,
    /// The depth there.
    pub depth: i32,
}

/// The anchors of one text in document order. See the module doc.
#[derive(Debug, Clone, Default)]
pub(crate) struct AnchorTree {
    /// Arena of nodes, the root first; empty for a text without anchors.
    nodes: Vec<Node>,
}

/// Id of the root node.
const ROOT: u32 = 0;

impl AnchorTree {
    /// Builds the tree from `anchors` in document order.
    pub fn from_anchors(anchors: Vec<Anchor>) -> AnchorTree {
        let mut tree = AnchorTree::default();
        if anchors.is_empty() {
            return tree;
        }
        // A stand-in for the root, which is built last.
        tree.push(Node::leaf(Vec::new()));
        let mut level: Vec<u32> = Vec::new();
        for chunk in anchors.chunks(BULK_LEAF) {
            let mut leaf = Vec::with_capacity(LEAF_CAP + 1);
            leaf.extend_from_slice(chunk);
            level.push(tree.push(Node::leaf(leaf)));
        }
        while level.len() > 1 {
            let mut up = Vec::new();
            for group in level.chunks(BULK_BRANCH) {
                up.push(tree.push_branch(group.to_vec()));
            }
            level = up;
        }
        // The root was pushed last: it takes the stand-in's place.
        tree.nodes.swap_remove(ROOT as usize);
        tree
    }

    /// Whether the text has no anchors.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Number of anchors.
    pub fn len(&self) -> u32 {
        self.nodes.get(ROOT as usize).map_or(0, |n| n.summary.len)
    }

    /// Node `id`.
    fn node(&self, id: u32) -> &Node {
        &self.nodes[id as usize]
    }

    /// Adds `node` to the arena; returns its id.
    fn push(&mut self, node: Node) -> u32 {
        self.nodes.push(node);
        (self.nodes.len() - 1) as u32
    }

    /// Adds an internal node over `children`; returns its id.
    fn push_branch(&mut self, children: Vec<u32>) -> u32 {
        let summary = Summary::of_parts(children.iter().map(|&c| &self.node(c).summary));
        let mut kids = Vec::with_capacity(BRANCH_CAP + 1);
        kids.extend(children);
        self.push(Node {
            summary,
            body: Body::Branch(kids),
        })
    }

    /// The anchor at `rank`.
    pub fn get(&self, rank: u32) -> Option<Anchor> {
        if rank >= self.len() {
            return None;
        }
        let (path, offset) = self.path_to(rank, false);
        match &self.node(*path.last()?).body {
            Body::Leaf(anchors) => anchors.get(offset as usize).copied(),
            Body::Branch(_) => None,
        }
    }

    /// The leaf holding rank `rank` (with `append`, the leaf that can take
    /// a new anchor at `rank`, which may be the length) and the offset in
    /// it, with the path there.
    fn path_to(&self, rank: u32, append: bool) -> (Path, u32) {
        let mut path = Path::new();
        let (mut id, mut left) = (ROOT, rank);
        loop {
            path.push(id);
            match &self.node(id).body {
                Body::Leaf(_) => return (path, left),
                Body::Branch(children) => {
                    let mut next = *children.last().expect("branches are never empty");
                    for (i, &c) in children.iter().enumerate() {
                        let n = self.node(c).summary.len;
                        let last = i + 1 == children.len();
                        if left < n || (append && left == n) || last {
                            next = c;
                            break;
                        }
                        left -= n;
                    }
                    id = next;
                }
            }
        }
    }

    /// The rank and path of the start (`start`) or end anchor of `mark`
    /// while its other anchor is not in the tree, if it is there.
    fn lone_anchor(&self, mark: MarkIdx, start: bool) -> Option<(u32, Path)> {
        let names = |s: &Summary| {
            if start {
                s.opened.binary_search(&mark).is_ok()
            } else {
                s.closed.binary_search(&mark).is_ok()
            }
        };
        if !names(&self.node(ROOT).summary) {
            return None;
        }
        let mut path = Path::new();
        let (mut id, mut rank) = (ROOT, 0u32);
        loop {
            path.push(id);
            match &self.node(id).body {
                Body::Leaf(anchors) => {
                    let i = anchors
                        .iter()
                        .position(|a| a.mark == mark && a.end != start)?;
                    return Some((rank + i as u32, path));
                }
                Body::Branch(children) => {
                    let mut next = None;
                    for &c in children {
                        let s = &self.node(c).summary;
                        if names(s) {
                            next = Some(c);
                            break;
                        }
                        rank += s.len;
                    }
                    id = next?;
                }
            }
        }
    }

    /// Inserts `anchor` at `rank` (at most the length). O(log n), plus the
    /// length of the mark lists it changes.
    pub fn insert(&mut self, rank: u32, anchor: Anchor) {
        if self.nodes.is_empty() {
            let mut anchors = Vec::with_capacity(LEAF_CAP + 1);
            anchors.push(anchor);
            self.push(Node::leaf(anchors));
            return;
        }
        let rank = rank.min(self.len());
        // The other anchor of the mark, if already here: nodes holding both
        // name the mark in neither list (or, when the end comes first, as
        // closed only).
        let partner = self.lone_anchor(anchor.mark, anchor.end);
        let (path, offset) = self.path_to(rank, true);
        let leaf = *path.last().expect("paths end at a leaf");
        if let Body::Leaf(anchors) = &mut self.nodes[leaf as usize].body {
            anchors.insert(offset as usize, anchor);
        }
        let in_order = partner
            .as_ref()
            .is_none_or(|(p, _)| if anchor.end { *p < rank } else { *p >= rank });
        for (depth, &id) in path.iter().enumerate().rev() {
            let shared = partner
                .as_ref()
                .is_some_and(|(_, p)| p.get(depth) == Some(&id));
            let shape = self.fresh_summary(&self.node(id).body, false);
            let s = &mut self.nodes[id as usize].summary;
            s.set_shape(shape);
            match (anchor.end, shared) {
                (false, false) => set_insert(&mut s.opened, anchor.mark),
                (false, true) => {
                    if in_order {
                        set_remove(&mut s.closed, anchor.mark);
                    }
                }
                (true, false) => set_insert(&mut s.closed, anchor.mark),
                (true, true) => {
                    set_remove(&mut s.opened, anchor.mark);
                    if !in_order {
                        set_insert(&mut s.closed, anchor.mark);
                    }
                }
            }
        }
        self.split_overfull(&path);
    }

    /// The summary of `body` computed from what is below it (`lists`:
    /// with the mark lists, else without).
    fn fresh_summary(&self, body: &Body, lists: bool) -> Summary {
        match (body, lists) {
            (Body::Leaf(anchors), true) => Summary::of_anchors(anchors),
            (Body::Leaf(anchors), false) => Summary::shape_of_anchors(anchors),
            (Body::Branch(children), true) => {
                Summary::of_parts(children.iter().map(|&c| &self.node(c).summary))
            }
            (Body::Branch(children), false) => {
                Summary::shape_of_parts(children.iter().map(|&c| &self.node(c).summary))
            }
        }
    }

    /// Splits the nodes of `path` (root first) over their capacity, from
    /// the leaf up. A split node keeps the first half.
    fn split_overfull(&mut self, path: &[u32]) {
        for depth in (0..path.len()).rev() {
            let id = path[depth];
            let tail = match &mut self.nodes[id as usize].body {
                Body::Leaf(anchors) if anchors.len() > LEAF_CAP => {
                    let mut tail = Vec::with_capacity(LEAF_CAP + 1);
                    tail.extend(anchors.drain(anchors.len() / 2..));
                    Body::Leaf(tail)
                }
                Body::Branch(children) if children.len() > BRANCH_CAP => {
                    let mut tail = Vec::with_capacity(BRANCH_CAP + 1);
                    tail.extend(children.drain(children.len() / 2..));
                    Body::Branch(tail)
                }
                _ => return,
            };
            let node = self.node(id);
            let left = self.fresh_summary(&node.body, true);
            let right = Node {
                summary: self.fresh_summary(&tail, true),
                body: tail,
            };
            self.nodes[id as usize].summary = left;
            let new = self.push(right);
            match depth.checked_sub(1).map(|d| path[d]) {
                Some(parent) => {
                    if let Body::Branch(children) = &mut self.nodes[parent as usize].body {
                        let at = children
                            .iter()
                            .position(|&c| c == id)
                            .expect("a child is in its parent");
                        children.insert(at + 1, new);
                    }
                }
                None => {
                    // The root stays first: its left half moves out.
                    let stand_in = Node::leaf(Vec::new());
                    let left = std::mem::replace(&mut self.nodes[ROOT as usize], stand_in);
                    let left = self.push(left);
                    let root = self.push_branch(vec![left, new]);
                    self.nodes.swap_remove(ROOT as usize);
                    debug_assert_eq!(root as usize, self.nodes.len());
                }
            }
        }
    }

    /// Sets how many chars (up to 2) sit right before the anchor at `rank`.
    pub fn set_chars_before(&mut self, rank: u32, chars: u8) {
        if rank >= self.len() {
            return;
        }
        let (path, offset) = self.path_to(rank, false);
        for &id in path.iter().rev() {
            if let Body::Leaf(anchors) = &mut self.nodes[id as usize].body {
                match anchors.get_mut(offset as usize) {
                    Some(a) if a.chars_before != chars => a.chars_before = chars,
                    _ => return,
                }
            }
            let shape = self.fresh_summary(&self.node(id).body, false);
            self.nodes[id as usize].summary.set_shape(shape);
        }
    }

    /// Walks the first `rank` anchors in O(log n): `f` sees the summary of
    /// every whole subtree among them, left to right, then each anchor of
    /// the one leaf the walk ends in.
    fn fold_prefix(&self, rank: u32, mut f: impl FnMut(Prefix<'_>)) {
        if self.nodes.is_empty() {
            return;
        }
        let (mut id, mut left) = (ROOT, rank);
        while left > 0 {
            match &self.node(id).body {
                Body::Leaf(anchors) => {
                    for a in anchors.iter().take(left as usize) {
                        f(Prefix::Anchor(a));
                    }
                    return;
                }
                Body::Branch(children) => {
                    let mut next = None;
                    for &c in children {
                        let s = &self.node(c).summary;
                        if left < s.len {
                            next = Some(c);
                            break;
                        }
                        f(Prefix::Subtree(s));
                        left -= s.len;
                    }
                    match next {
                        Some(c) => id = c,
                        None => return,
                    }
                }
            }
        }
    }

    /// The marks active after the first `rank` anchors: started and not
    /// ended there, and for which `live` holds when they start (a mark
    /// whose end came first starts nothing). O(log n + the marks named by
    /// the summaries of the subtrees left of `rank`).
    pub fn active(&self, rank: u32, live: impl Fn(MarkIdx) -> bool) -> ActiveMarks {
        let mut active = ActiveMarks::default();
        self.fold_prefix(rank, |p| match p {
            Prefix::Subtree(s) => {
                for &m in &s.closed {
                    active.close(m);
                }
                for &m in &s.opened {
                    active.open(m, live(m));
                }
            }
            Prefix::Anchor(a) if a.end => active.close(a.mark),
            Prefix::Anchor(a) => active.open(a.mark, live(a.mark)),
        });
        active
    }

    /// Starts minus ends among the first `rank` anchors.
    pub fn depth(&self, rank: u32) -> i32 {
        let mut depth = 0;
        self.fold_prefix(rank, |p| match p {
            Prefix::Subtree(s) => depth += s.delta,
            Prefix::Anchor(a) => depth += a.delta(),
        });
        depth
    }

    /// The first rank in `from..to` whose anchor does not stick left or
    /// has a char before it (`to` if none). O(log n).
    pub fn first_unglued(&self, from: u32, to: u32) -> u32 {
        if self.nodes.is_empty() || from >= to {
            return to;
        }
        self.unglued_in(ROOT, 0, from, to).unwrap_or(to)
    }

    fn unglued_in(&self, id: u32, lo: u32, from: u32, to: u32) -> Option<u32> {
        let node = self.node(id);
        let hi = lo + node.summary.len;
        if hi <= from || lo >= to || (from <= lo && hi <= to && node.summary.glued) {
            return None;
        }
        match &node.body {
            Body::Leaf(anchors) => anchors
                .iter()
                .enumerate()
                .map(|(i, a)| (lo + i as u32, a))
                .filter(|(r, _)| (from..to).contains(r))
                .find(|(_, a)| !(a.sticks_left && a.chars_before == 0))
                .map(|(r, _)| r),
            Body::Branch(children) => {
                let mut lo = lo;
                for &c in children {
                    if lo >= to {
                        break;
                    }
                    if let Some(r) = self.unglued_in(c, lo, from, to) {
                        return Some(r);
                    }
                    lo += self.node(c).summary.len;
                }
                None
            }
        }
    }

    /// The first rank `r` in `from..to` such that the place right before
    /// anchor `r` is right after a deleted char (and its left-sticky
    /// anchors), with a depth of at most `target` there, given `depth`
    /// (the depth at `from`, see [`AnchorTree::depth`]) and no run at
    /// `from`. Ranks are read as inside one gap: every char between them
    /// deleted. O(log n).
    pub fn find_place(&self, from: u32, to: u32, depth: i32, target: i32) -> PlaceSearch {
        let mut state = PlaceSearch {
            found: None,
            in_run: false,
            depth,
        };
        if !self.nodes.is_empty() && from < to {
            self.place_in(ROOT, 0, from..to, target, &mut state);
        }
        state
    }

    /// [`AnchorTree::find_place`] below node `id`, whose first anchor has
    /// rank `lo`. Returns whether it found the place (then `state` is at
    /// it).
    fn place_in(
        &self,
        id: u32,
        lo: u32,
        range: std::ops::Range<u32>,
        target: i32,
        state: &mut PlaceSearch,
    ) -> bool {
        let node = self.node(id);
        let hi = lo + node.summary.len;
        if hi <= range.start || lo >= range.end {
            return false;
        }
        if range.start <= lo && hi <= range.end {
            let run = node.summary.runs[usize::from(state.in_run)];
            if run.lowest == NO_PLACE || state.depth + run.lowest > target {
                state.depth += node.summary.delta;
                state.in_run = run.exit;
                return false;
            }
        }
        match &node.body {
            Body::Leaf(anchors) => {
                for (i, a) in anchors.iter().enumerate() {
                    let r = lo + i as u32;
                    if r < range.start {
                        continue;
                    }
                    if r >= range.end {
                        break;
                    }
                    if a.is_place(state.in_run) && state.depth <= target {
                        state.found = Some(r);
                        return true;
                    }
                    state.depth += a.delta();
                    state.in_run = a.run_after(state.in_run);
                }
                false
            }
            Body::Branch(children) => {
                let mut lo = lo;
                for &c in children {
                    if lo >= range.end {
                        break;
                    }
                    if self.place_in(c, lo, range.clone(), target, state) {
                        return true;
                    }
                    lo += self.node(c).summary.len;
                }
                false
            }
        }
    }

    /// Calls `f` on every anchor in document order.
    pub fn for_each(&self, mut f: impl FnMut(&Anchor)) {
        if self.nodes.is_empty() {
            return;
        }
        let mut stack = vec![ROOT];
        while let Some(id) = stack.pop() {
            match &self.node(id).body {
                Body::Leaf(anchors) => anchors.iter().for_each(&mut f),
                Body::Branch(children) => stack.extend(children.iter().rev()),
            }
        }
    }

    /// Checks the invariants listed in the module doc; panics on a broken
    /// one.
    pub fn assert_invariants(&self) {
        if self.nodes.is_empty() {
            return;
        }
        let mut leaf_depth = None;
        let mut seen = 0;
        self.check_node(ROOT, 0, &mut leaf_depth, &mut seen);
        assert_eq!(seen, self.nodes.len(), "every node is in the tree once");
    }

    /// Checks node `id` at `depth` and returns its summary computed afresh.
    fn check_node(
        &self,
        id: u32,
        depth: usize,
        leaf_depth: &mut Option<usize>,
        seen: &mut usize,
    ) -> Summary {
        *seen += 1;
        let node = self.node(id);
        let fresh = match &node.body {
            Body::Leaf(anchors) => {
                assert!(
                    !anchors.is_empty() && anchors.len() <= LEAF_CAP,
                    "leaf size"
                );
                assert_eq!(
                    *leaf_depth.get_or_insert(depth),
                    depth,
                    "leaves at one depth"
                );
                Summary::of_anchors(anchors)
            }
            Body::Branch(children) => {
                assert!(
                    !children.is_empty() && children.len() <= BRANCH_CAP,
                    "branch size"
                );
                let parts: Vec<Summary> = children
                    .iter()
                    .map(|&c| self.check_node(c, depth + 1, leaf_depth, seen))
                    .collect();
                Summary::of_parts(parts.iter())
            }
        };
        assert_eq!(node.summary, fresh, "summary of node {id}");
        fresh
    }
}

#[cfg(test)]
#[path = "anchors_tests.rs"]
pub(super) mod tests;
