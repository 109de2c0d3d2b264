//! The daemon: serving JSON-RPC on `.wit/daemon.sock` and the daemon's life on disk.
//!
//! - [`paths`]: root discovery and the files under `.wit/`.
//! - [`envelope`]: the HTTP layer that enforces wit's envelope around jsonrpsee.
//! - [`server`]: the accept loop, connection limits, timeouts and graceful shutdown.
//! - [`lifecycle`]: the exclusive lock, stale sockets, the pid file and signals.
//! - [`runner`]: `wit daemon run`, tying the above to the RPC services.
//! - [`launcher`]: start, stop and status from the CLI side, race-free auto-start.
//! - [`store_choice`]: which store (`sqlite` or PostgreSQL) and project a daemon opens.
//! - [`worktree_server`]: the daemon serving each worktree of the repository
//!   ([`crate::worktrees`]) on its own socket, picking new ones up and letting removed ones go.
//! - [`worktree_observer`]: every tree the daemon serves watched by file-system notification:
//!   changes attributed (docs/protocol.md 15.3) and worktrees' work observed (14.4).
//! - [`tree_attribution`]: one worktree's changed files read as bytes for attribution.

pub mod envelope;
pub mod launcher;
pub mod lifecycle;
pub mod paths;
pub mod runner;
pub mod server;
pub mod store_choice;
pub mod tree_attribution;
pub mod warm_up;
pub mod watch_set;
pub mod work_snapshots;
pub mod worktree_git;
pub mod worktree_observer;
pub mod worktree_server;

#[cfg(test)]
mod envelope_tests;
