//! The one encoding of a whole [`FileAnalysis`] outside the process that made it: what a parse
//! worker answers and what the index database stores (postcard: no field names, integers as
//! varints). sympy's analyses take 26.3 MB this way against 63.2 MB as JSON, and decode faster; the
//! transient copies of a large file's analysis (the worker's answer, the stored blob, SQLite's
//! copy of it) were the daemon's largest allocations (issue 32.3, 32.7).

use super::model::FileAnalysis;

/// Why bytes are not an analysis.
#[derive(Debug, thiserror::Error)]
#[error("unreadable analysis: {0}")]
pub struct DecodeError(#[from] postcard::Error);

/// `analysis` as bytes.
pub fn encode(analysis: &FileAnalysis) -> Vec<u8> {
    // Serialising into a growing vector fails only when the allocator does.
    postcard::to_stdvec(analysis).unwrap_or_default()
}

/// The analysis `bytes` encode, with its name index rebuilt.
pub fn decode(bytes: &[u8]) -> Result<FileAnalysis, DecodeError> {
    let mut analysis: FileAnalysis = postcard::from_bytes(bytes)?;
    analysis.reindex();
    Ok(analysis)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;
    use crate::analysis::language::Language;

    #[test]
    fn an_analysis_round_trips_and_garbage_is_refused() {
        let source = "import { g } from './g';\nexport default class K {\n  m(a: number): string { return g(a); }\n}\nfunction f(x = 1) { return new K().m(x) }\n}{";
        let direct = crate::analysis::analyze(Language::TypeScript, source);
        assert!(!direct.diagnostics.is_empty() && !direct.calls.is_empty());
        let back = decode(&encode(&direct)).unwrap();
        assert_eq!(back.language, direct.language);
        assert_eq!(back.symbols, direct.symbols);
        assert_eq!(back.calls, direct.calls);
        assert_eq!(back.imports, direct.imports);
        assert_eq!(back.default_export, direct.default_export);
        assert_eq!(back.diagnostics, direct.diagnostics);
        assert_eq!(back.by_qualified("K.m").len(), 1);
        assert!(decode(b"{\"symbols\":[]}").is_err());
        assert!(decode(&[]).is_err());
    }
}
