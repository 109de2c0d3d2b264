//! The JSON-RPC face of the coordination core: implementations of the generated server traits
//! (`crate::protocol::server`), one file per method namespace, each thin: decode (done by the
//! generated code), call [`crate::coord`], map the result or error to wire types.
//!
//! - [`errors`]: the one place where a [`crate::coord::CoordError`] becomes a protocol error.
//! - `convert`: domain records to wire records.
//! - [`code_index`]: the [`crate::coord::CodeIndex`] that coordination sees, over
//!   [`crate::analysis::RepoIndex`].
//! - `services`: opening the state and building the method table (one per worktree, each
//!   [`App`] with its worktree's coordination core, `Coord::for_worktree`); each request's
//!   [`crate::coord::Vantage`] (its session and worktree) is built from its app once and
//!   passed down.

pub mod code_index;
mod contracts;
mod convert;
mod edits;
pub mod errors;
mod events;
mod forecast;
mod intents;
mod locks;
mod memory_upkeep;
mod services;
mod sessions;
pub mod tree_flush;
pub mod waiting;
mod wit;
mod work;

pub use services::{App, OpenError, Services, INDEX_DB, INDEX_STATUS};
