//! The `protocol` module (to be filled in).
