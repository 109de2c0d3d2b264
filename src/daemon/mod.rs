//! The `daemon` module (to be filled in).
