//! Names for versions of a document.
//!
//! A [`VersionVector`] says, per peer, how many of its ops are included
//! (peer -> next counter); it answers "which ops does this version have?".
//! [`Frontiers`] lists the ops that nothing else in the version depends on
//! (the heads of the history DAG); it is the compact name of a version and is
//! what a new change records as its dependencies.
//!
//! Both are plain values with a canonical form (sorted, no zero entries,
//! no duplicates), so `==` compares versions.

mod frontiers;
mod vector;

pub use frontiers::Frontiers;
pub use vector::VersionVector;
