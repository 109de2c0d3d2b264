//! wit: lets several AI coding agents edit one git repository at the same time.
//!
//! The protocol lives in `openrpc.json`; `build.rs` turns it into typed code that
//! [`protocol`] and [`client`] include. With the `daemon` feature (the default) the crate
//! also holds the daemon, its storage, the source analysis and the CLI.

pub mod client;
pub mod protocol;

#[cfg(feature = "daemon")]
pub mod analysis;
#[cfg(feature = "daemon")]
pub mod cli;
#[cfg(feature = "daemon")]
pub mod config;
#[cfg(feature = "daemon")]
pub mod coord;
#[cfg(feature = "daemon")]
pub mod daemon;
#[cfg(feature = "daemon")]
pub mod doorway;
#[cfg(feature = "daemon")]
pub mod git;
#[cfg(feature = "daemon")]
pub mod harness;
#[cfg(feature = "daemon")]
pub mod hooks;
#[cfg(feature = "daemon")]
pub mod mcp;
#[cfg(feature = "daemon")]
pub mod platform;
#[cfg(feature = "daemon")]
pub mod rpc;
#[cfg(feature = "daemon")]
pub mod safegit;
#[cfg(feature = "daemon")]
pub mod store;
#[cfg(feature = "daemon")]
pub mod ui;
#[cfg(feature = "daemon")]
pub mod worktrees;

#[cfg(all(test, feature = "daemon"))]
mod fuzz;
