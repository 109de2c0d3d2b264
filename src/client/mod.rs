//! The `client` module (to be filled in).
