//! The JSON-RPC face of the coordination core: implementations of the generated server traits
//! (`crate::protocol::server`), one file per method namespace, each thin: decode (done by the
//! generated code), call [`crate::coord`], map the result or error to wire types.
//!
//! - [`errors`]: the one place where a [`crate::coord::CoordError`] becomes a protocol error.
//! - `convert`: domain records to wire records.
//! - [`code_index`]: the [`crate::coord::CodeIndex`] that coordination sees, over
//!   [`crate::analysis::RepoIndex`].
//! - `services`: opening the state and building the method table (one per worktree).
//! - [`worktree_index`]: each request's work sees the index of the worktree it came from.

pub mod code_index;
mod contracts;
mod convert;
mod edits;
pub mod errors;
mod events;
mod forecast;
mod intents;
mod locks;
mod services;
mod sessions;
pub mod tree_flush;
pub mod waiting;
mod wit;
mod work;
pub mod worktree_index;

pub use services::{App, OpenError, Services, INDEX_DB, INDEX_STATUS};
