//! The `rpc` module (to be filled in).
