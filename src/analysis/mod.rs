//! The `analysis` module (to be filled in).
