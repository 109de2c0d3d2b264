//! Safe git (docs/protocol.md 6, 15): what keeps an agent's git commands from taking or
//! dropping another session's uncommitted work. The shell gate judges a harness's shell
//! commands (`shell`), the `pre-commit` hook refuses staged lines of other live sessions
//! (`foreign`), and the git hooks wit installs (`git`: install, trailers, post-commit). Whose
//! lines are whose comes from the daemon (`work.changes`, read by `crate::cli::owners`); the
//! harness side of the hooks (payloads, verdicts, windows) is `crate::hooks`.

pub mod foreign;
pub mod git;
pub mod shell;
