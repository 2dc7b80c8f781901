//! weft-sync tests.
