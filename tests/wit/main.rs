//! The integration tests: each module drives a real `wit` daemon in a temporary repository,
//! through the generated client and, for envelope rules, through raw HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod cli;
mod contracts;
mod gate;
mod git_guards;
mod hardening;
mod harness;
mod hostile;
mod index;
mod intents;
mod languages;
mod load;
mod locks;
mod mcp;
mod owners;
mod replay;
mod safegit;
mod sessions;
mod shared;
mod spine;
mod ui;
mod webdriver;
mod workmap;
mod worktree_work;
mod worktrees;
