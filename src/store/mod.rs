//! The `store` module (to be filled in).
