//! Signature contracts and the commit-time check (docs/protocol.md 2.5, 3; `contract.*`,
//! `check-contracts`).

use std::collections::HashSet;

use serde_json::json;

use super::events::{self, EventKind};
use super::paths::{normalize, split_symbol_path, PathError};
use super::{
    check_len, parse_symbol_path, Contract, ContractStatus, Coord, CoordError, Result,
    SignatureLookup, MAX_PATH_BYTES,
};

/// The `actual` of a violation whose symbol is gone from the staged content.
pub const SYMBOL_NOT_IN_STAGED_CONTENT: &str = "(symbol not found in staged content)";

/// An accepted contract whose symbol's signature differs in the staged content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The contract.
    pub contract_id: String,
    /// Its symbol path.
    pub symbol_path: String,
    /// The contracted signature.
    pub expected: String,
    /// The staged signature, or [`SYMBOL_NOT_IN_STAGED_CONTENT`].
    pub actual: String,
}

impl Coord {
    /// Captures the current signature of `symbol_path` (from the file on disk, through the
    /// code index) and stores a `proposed` contract on it.
    /// No single symbol: [`CoordError::SymbolNotFound`] (with the candidates when ambiguous).
    pub fn propose_contract(&self, session_id: &str, symbol_path: &str) -> Result<Contract> {
        self.acting_session(session_id)?;
        let (file, name, path) = parse_symbol_path("symbolPath", symbol_path)?;
        let signature =
            self.index
                .signature(&file, &name)
                .map_err(|lookup| CoordError::SymbolNotFound {
                    symbol_path: path.clone(),
                    candidates: match lookup {
                        SignatureLookup::NotFound => Vec::new(),
                        SignatureLookup::Ambiguous { candidates } => candidates,
                    },
                })?;
        let id = self.ids.next_id();
        self.store.write(|w| {
            let now = self.clock.now_ms();
            let contract = Contract {
                id,
                proposer_session_id: session_id.to_owned(),
                symbol_path: path,
                file,
                name,
                signature,
                status: ContractStatus::Proposed,
                responder_session_id: None,
                proposed_at_ms: now,
                responded_at_ms: None,
            };
            w.insert_contract(&contract)?;
            events::append(
                w,
                now,
                EventKind::ContractProposed,
                Some(session_id),
                &contract.id,
                json!({"symbolPath": contract.symbol_path, "signature": contract.signature}),
            )?;
            Ok(contract)
        })
    }

    /// Accepts or rejects a proposed contract. Checks, in order:
    /// [`CoordError::ContractNotFound`], [`CoordError::ContractAlreadyResolved`],
    /// [`CoordError::SelfAcceptNotAllowed`] (the proposer can neither accept nor reject).
    pub fn respond_contract(
        &self,
        contract_id: &str,
        session_id: &str,
        accept: bool,
    ) -> Result<Contract> {
        self.acting_session(session_id)?;
        self.store.write(|w| {
            let now = self.clock.now_ms();
            let mut contract = w
                .contract(contract_id)?
                .ok_or(CoordError::ContractNotFound)?;
            if contract.status != ContractStatus::Proposed {
                return Err(CoordError::ContractAlreadyResolved {
                    status: contract.status,
                });
            }
            if contract.proposer_session_id == session_id {
                return Err(CoordError::SelfAcceptNotAllowed);
            }
            let status = if accept {
                ContractStatus::Accepted
            } else {
                ContractStatus::Rejected
            };
            w.set_contract_response(contract_id, status, session_id, now)?;
            events::append(
                w,
                now,
                EventKind::ContractResponded,
                Some(session_id),
                contract_id,
                json!({"symbolPath": contract.symbol_path, "status": status.as_str()}),
            )?;
            contract.status = status;
            contract.responder_session_id = Some(session_id.to_owned());
            contract.responded_at_ms = Some(now);
            Ok(contract)
        })
    }

    /// Contracts filtered by exact symbol path (after normalisation) and status (one of the
    /// three, else [`CoordError::InvalidInput`]), ordered by proposal. An empty symbol path, or
    /// one without `:` or name, matches nothing; an unsafe file part is refused.
    pub fn query_contracts(
        &self,
        symbol_path: Option<&str>,
        status: Option<&str>,
    ) -> Result<Vec<Contract>> {
        let status = status
            .map(|s| {
                s.parse::<ContractStatus>().map_err(|_| {
                    CoordError::invalid("status", "must be one of proposed, accepted, rejected")
                })
            })
            .transpose()?;
        let symbol_path = match symbol_path {
            None => None,
            Some(path) => {
                check_len("symbolPath", path, MAX_PATH_BYTES)?;
                match split_symbol_path(path) {
                    Ok((file, name)) => Some(super::paths::join_symbol_path(&file, &name)),
                    // No contract has such a path: the filter matches nothing.
                    Err(PathError::MissingColon | PathError::EmptyName) => return Ok(Vec::new()),
                    Err(PathError::Empty) if path.is_empty() => return Ok(Vec::new()),
                    Err(e) => return Err(CoordError::invalid("symbolPath", e.to_string())),
                }
            }
        };
        self.store
            .read(|r| Ok(r.contracts(symbol_path.as_deref(), status)?))
    }

    /// Compares staged file contents with the accepted contracts on their symbols.
    ///
    /// `files` holds `(path, content)`; paths are normalised and matched exactly (a path given
    /// twice counts once, the first content wins). The contracts of each file come from one
    /// indexed lookup; each file with contracts is parsed once, and each of its contracts is
    /// compared once, by tokens. Violations come in the order of `files`, then of proposal.
    pub fn check_contracts(&self, files: &[(&str, &str)]) -> Result<Vec<Violation>> {
        let mut wanted: Vec<(String, &str)> = Vec::with_capacity(files.len());
        let mut seen = HashSet::new();
        for (path, content) in files {
            check_len("files", path, MAX_PATH_BYTES)?;
            let file = normalize(path)
                .map_err(|e| CoordError::invalid("files", format!("{path:?}: {e}")))?;
            if seen.insert(file.clone()) {
                wanted.push((file, *content));
            }
        }
        // Read every file's contracts in one snapshot, then parse without holding the store.
        let per_file: Vec<Vec<Contract>> = self.store.read(|r| {
            wanted
                .iter()
                .map(|(file, _)| r.accepted_contracts_in_file(file))
                .collect::<Result<_, _>>()
        })?;

        let mut violations = Vec::new();
        for ((file, content), contracts) in wanted.iter().zip(per_file) {
            if contracts.is_empty() {
                continue;
            }
            let names: Vec<&str> = contracts.iter().map(|c| c.name.as_str()).collect();
            let actual = self.index.signatures_in_content(file, content, &names);
            for (i, contract) in contracts.iter().enumerate() {
                let violation = match actual.get(i).cloned().flatten() {
                    Some(sig) if self.index.signatures_equal(&contract.signature, &sig) => None,
                    Some(sig) => Some(sig),
                    None => Some(SYMBOL_NOT_IN_STAGED_CONTENT.to_owned()),
                };
                if let Some(actual) = violation {
                    violations.push(Violation {
                        contract_id: contract.id.clone(),
                        symbol_path: contract.symbol_path.clone(),
                        expected: contract.signature.clone(),
                        actual,
                    });
                }
            }
        }
        Ok(violations)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;
    use crate::coord::testing::Harness;

    const T0: i64 = 1_768_473_000_000;

    fn harness() -> Harness {
        let h = Harness::new();
        h.index
            .add_symbol("src/a.ts", "f", 0, 10, Some("(a: number): void"));
        h.index
            .add_symbol("src/a.ts", "K.m", 20, 30, Some("(x: string): string"));
        h.index
            .add_symbol("src/a.ts", "L.m", 40, 50, Some("(): void"));
        h.index
            .add_symbol("src/b.py", "g", 0, 10, Some("(a: int) -> int"));
        h
    }

    fn accepted(h: &Harness, path: &str) -> Contract {
        let c = h.coord.propose_contract("s1", path).unwrap();
        h.coord.respond_contract(&c.id, "s2", true).unwrap()
    }

    #[test]
    fn propose_captures_signature() {
        let h = harness();
        let c = h.coord.propose_contract("s1", "./src//a.ts:f").unwrap();
        assert_eq!(
            c,
            Contract {
                id: "id-1".into(),
                proposer_session_id: "s1".into(),
                symbol_path: "src/a.ts:f".into(),
                file: "src/a.ts".into(),
                name: "f".into(),
                signature: "(a: number): void".into(),
                status: ContractStatus::Proposed,
                responder_session_id: None,
                proposed_at_ms: T0,
                responded_at_ms: None,
            }
        );
        assert_eq!(
            h.coord.store().read(|r| r.contract("id-1")).unwrap(),
            Some(c)
        );
        let m = h.coord.propose_contract("s1", "src/a.ts:K.m").unwrap();
        assert_eq!(m.signature, "(x: string): string");
    }

    #[test]
    fn propose_symbol_not_found() {
        let h = harness();
        for (path, want, candidates) in [
            ("src/a.ts:nope", "src/a.ts:nope", vec![]),
            ("src/missing.ts:f", "src/missing.ts:f", vec![]),
            (
                "./src/a.ts:m",
                "src/a.ts:m",
                vec!["K.m".to_owned(), "L.m".to_owned()],
            ),
        ] {
            match h.coord.propose_contract("s1", path).unwrap_err() {
                CoordError::SymbolNotFound {
                    symbol_path,
                    candidates: got,
                } => {
                    assert_eq!(symbol_path, want);
                    assert_eq!(got, candidates);
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(matches!(
            h.coord.propose_contract("s1", "../a.ts:f").unwrap_err(),
            CoordError::InvalidInput {
                field: "symbolPath",
                ..
            }
        ));
        assert!(matches!(
            h.coord.propose_contract("", "src/a.ts:f").unwrap_err(),
            CoordError::InvalidInput {
                field: "sessionId",
                ..
            }
        ));
        assert!(h.coord.query_contracts(None, None).unwrap().is_empty());
    }

    #[test]
    fn respond_records_answer() {
        let h = harness();
        let c = h.coord.propose_contract("s1", "src/a.ts:f").unwrap();
        h.clock.advance(42);
        let r = h.coord.respond_contract(&c.id, "s2", false).unwrap();
        assert_eq!(r.status, ContractStatus::Rejected);
        assert_eq!(r.responder_session_id.as_deref(), Some("s2"));
        assert_eq!(r.responded_at_ms, Some(T0 + 42));
        assert_eq!(
            h.coord.store().read(|r| r.contract(&c.id)).unwrap(),
            Some(r)
        );
        let c2 = h.coord.propose_contract("s1", "src/a.ts:f").unwrap();
        let r2 = h.coord.respond_contract(&c2.id, "s3", true).unwrap();
        assert_eq!(r2.status, ContractStatus::Accepted);
    }

    #[test]
    fn respond_errors_in_order() {
        let h = harness();
        assert!(matches!(
            h.coord.respond_contract("nope", "s1", true).unwrap_err(),
            CoordError::ContractNotFound
        ));
        let c = h.coord.propose_contract("s1", "src/a.ts:f").unwrap();
        for accept in [true, false] {
            assert!(matches!(
                h.coord.respond_contract(&c.id, "s1", accept).unwrap_err(),
                CoordError::SelfAcceptNotAllowed
            ));
        }
        h.coord.respond_contract(&c.id, "s2", true).unwrap();
        // Already resolved comes before self: even the proposer gets ALREADY_RESOLVED.
        for session in ["s1", "s2", "s3"] {
            assert!(matches!(
                h.coord.respond_contract(&c.id, session, false).unwrap_err(),
                CoordError::ContractAlreadyResolved {
                    status: ContractStatus::Accepted
                }
            ));
        }
        let c = h.coord.propose_contract("s1", "src/a.ts:f").unwrap();
        h.coord.respond_contract(&c.id, "s2", false).unwrap();
        assert!(matches!(
            h.coord.respond_contract(&c.id, "s2", true).unwrap_err(),
            CoordError::ContractAlreadyResolved {
                status: ContractStatus::Rejected
            }
        ));
    }

    #[test]
    fn query_filters_and_order() {
        let h = harness();
        h.clock.set(T0 + 10);
        let a = h.coord.propose_contract("s1", "src/a.ts:f").unwrap();
        h.clock.set(T0);
        let b = h.coord.propose_contract("s1", "src/a.ts:K.m").unwrap();
        let c = h.coord.propose_contract("s1", "src/b.py:g").unwrap();
        h.clock.set(T0 + 20);
        let d = h.coord.propose_contract("s2", "src/a.ts:f").unwrap();
        h.coord.respond_contract(&a.id, "s2", true).unwrap();
        h.coord.respond_contract(&c.id, "s2", false).unwrap();

        let ids = |p: Option<&str>, s: Option<&str>| {
            h.coord
                .query_contracts(p, s)
                .unwrap()
                .into_iter()
                .map(|c| c.id)
                .collect::<Vec<_>>()
        };
        let (a, b, c, d) = (a.id.as_str(), b.id.as_str(), c.id.as_str(), d.id.as_str());
        assert_eq!(ids(None, None), [b, c, a, d]);
        assert_eq!(ids(Some("src/a.ts:f"), None), [a, d]);
        assert_eq!(ids(Some("./src/../src/a.ts:f"), None), [a, d]);
        assert_eq!(ids(Some("src/a.ts:f"), Some("proposed")), [d]);
        assert_eq!(ids(None, Some("accepted")), [a]);
        assert_eq!(ids(None, Some("rejected")), [c]);
        assert!(
            ids(Some("src/a.ts:m"), None).is_empty(),
            "exact, not resolved"
        );
        assert!(ids(Some(""), None).is_empty());
        assert!(ids(Some("src/a.ts"), None).is_empty());
        assert!(ids(Some("src/a.ts:"), None).is_empty());
        for bad in ["", "Accepted", "resolved", "declared"] {
            assert!(matches!(
                h.coord.query_contracts(None, Some(bad)).unwrap_err(),
                CoordError::InvalidInput {
                    field: "status",
                    ..
                }
            ));
        }
        for bad in ["../x.ts:f", "/x.ts:f", "a\\b.ts:f"] {
            assert!(matches!(
                h.coord.query_contracts(Some(bad), None).unwrap_err(),
                CoordError::InvalidInput {
                    field: "symbolPath",
                    ..
                }
            ));
        }
    }

    #[test]
    fn check_contracts_verdicts() {
        let h = harness();
        let f = accepted(&h, "src/a.ts:f");
        let m = accepted(&h, "src/a.ts:K.m");
        let g = accepted(&h, "src/b.py:g");
        // Proposed and rejected contracts are not guarded.
        h.coord.propose_contract("s1", "src/a.ts:L.m").unwrap();
        let rejected = h.coord.propose_contract("s1", "src/b.py:g").unwrap();
        h.coord.respond_contract(&rejected.id, "s2", false).unwrap();

        // Unchanged (modulo whitespace) content: no violation.
        let same = "f: (a:  number):void\nK.m: (x: string): string\n";
        assert!(h
            .coord
            .check_contracts(&[("src/a.ts", same)])
            .unwrap()
            .is_empty());

        // A changed parameter and a removed method.
        let changed = "f: (a: number, b: number): void\n";
        let v = h
            .coord
            .check_contracts(&[
                ("./src/a.ts", changed),
                ("src/b.py", "g: (a: int) -> int\n"),
            ])
            .unwrap();
        assert_eq!(
            v,
            vec![
                Violation {
                    contract_id: f.id.clone(),
                    symbol_path: "src/a.ts:f".into(),
                    expected: "(a: number): void".into(),
                    actual: "(a: number, b: number): void".into(),
                },
                Violation {
                    contract_id: m.id.clone(),
                    symbol_path: "src/a.ts:K.m".into(),
                    expected: "(x: string): string".into(),
                    actual: SYMBOL_NOT_IN_STAGED_CONTENT.into(),
                },
            ]
        );
        // Files order, then proposal order.
        let v = h
            .coord
            .check_contracts(&[("src/b.py", ""), ("src/a.ts", "")])
            .unwrap();
        let ids: Vec<_> = v.iter().map(|v| v.contract_id.as_str()).collect();
        assert_eq!(ids, [g.id.as_str(), f.id.as_str(), m.id.as_str()]);
    }

    #[test]
    fn check_contracts_parses_each_file_once() {
        let h = Harness::new();
        for i in 0..50 {
            h.index
                .add_symbol("big.ts", &format!("f{i}"), i * 10, i * 10 + 5, Some("()"));
            accepted(&h, &format!("big.ts:f{i}"));
        }
        let content: String = (0..50).map(|i| format!("f{i}: ()\n")).collect();
        let v = h
            .coord
            .check_contracts(&[("big.ts", &content), ("other.ts", "x"), ("big.ts", "")])
            .unwrap();
        assert!(v.is_empty());
        assert_eq!(
            h.index.content_parses(),
            1,
            "one parse; files without contracts skipped"
        );
    }

    #[test]
    fn check_contracts_validates_paths() {
        let h = harness();
        for bad in ["../a.ts", "/a.ts", "", "."] {
            assert!(matches!(
                h.coord.check_contracts(&[(bad, "")]).unwrap_err(),
                CoordError::InvalidInput { field: "files", .. }
            ));
        }
        assert!(h.coord.check_contracts(&[]).unwrap().is_empty());
    }

    #[test]
    fn unsupported_language_reports_missing_symbols() {
        let h = Harness::new();
        h.index.add_symbol("notes.txt", "f", 0, 1, Some("()"));
        let c = accepted(&h, "notes.txt:f");
        let v = h.coord.check_contracts(&[("notes.txt", "f: ()")]).unwrap();
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].contract_id, c.id);
        assert_eq!(v[0].actual, SYMBOL_NOT_IN_STAGED_CONTENT);
    }
}
