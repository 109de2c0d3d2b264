//! Where a request stands: the acting session and the worktree it acts in (docs/protocol.md
//! 7, 14.2, 15). The rpc layer builds one [`Vantage`] per request ([`super::Coord::vantage`])
//! and passes it down; the conflict rules ([`super::conflicts::Others`]) and the owner maps
//! ([`super::ownership`]) answer "whose work is this, seen from here" from it alone, so no
//! rule reads the worktree from anywhere else.

/// The acting session of a request (if it names one) and the root of the worktree the
/// request came in on (`None`: no worktree on disk, as in tests).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Vantage {
    session: Option<String>,
    worktree: Option<String>,
}

impl Vantage {
    /// The vantage of `session` (if any) acting in the worktree at `worktree` (if any).
    pub fn new(session: Option<&str>, worktree: Option<&str>) -> Vantage {
        Vantage {
            session: session.map(str::to_owned),
            worktree: worktree.map(str::to_owned),
        }
    }

    /// The acting session, when the request names one.
    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// The root of the worktree the request acts in.
    pub fn worktree(&self) -> Option<&str> {
        self.worktree.as_deref()
    }

    /// The worktree's root as the owner maps key it (`""` without a worktree on disk).
    pub fn root(&self) -> &str {
        self.worktree.as_deref().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vantage_names_its_session_and_worktree() {
        let at = Vantage::new(Some("s1"), Some("/r/w1"));
        assert_eq!(
            (at.session(), at.worktree(), at.root()),
            (Some("s1"), Some("/r/w1"), "/r/w1")
        );
        let nowhere = Vantage::new(None, None);
        assert_eq!((nowhere.session(), nowhere.root()), (None, ""));
    }
}
