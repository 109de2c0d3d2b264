//! git as wit runs it: the one way every part of wit (the daemon's observer and forecast,
//! `wit commit`, the shell gate, the hooks) starts a git process ([`Git`]) and the one
//! reader of object contents ([`blobs_at`], one `git cat-file --batch`, bytes never
//! decoded: PROTOCOL-NOTES 15.4). Which lines changed is never git's patch output but the
//! one line diff, `coord::preflight::line_ops` (13.7).

mod batch;
mod run;

pub use batch::blobs_at;
pub use run::{Git, GitError};
