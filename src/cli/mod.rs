//! The `cli` module (to be filled in).
