//! The `coord` module (to be filled in).
