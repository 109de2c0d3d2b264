//! Source analysis with tree-sitter: which symbols a file declares (names, byte ranges,
//! signatures), which calls it makes, and a repository-wide call graph kept fresh by checking
//! each file's size and mtime when it is asked about.
//!
//! Synchronous and free of JSON-RPC: the daemon calls it from blocking tasks.
//!
//! - [`language`]: the registry of languages; `languages/<lang>.rs` holds each language's
//!   table and `languages/<lang>/*.scm` its queries.
//! - `model`: the data of one file's analysis ([`FileAnalysis`], [`Symbol`], [`CallSite`]).
//! - [`analyze`] (`extract`): one parse of one file -> [`FileAnalysis`] (symbols, ranges,
//!   signatures, imports), generic over the language's table; `calls` reads the call sites
//!   and resolves them within the file.
//! - [`signatures_equal`]: token comparison of signatures (docs/protocol.md 2.5).
//! - [`RepoIndex`] (`index`): the whole repository on disk, kept fresh: `index::walk` (the
//!   walk and freshness), `index::build` (parsing and resolving), `index::queries` (callers,
//!   callees, content analyses). `resolution` resolves one file's calls (pure functions),
//!   `resolve` holds the per-style cross-file resolvers (ECMAScript, Python, Go, Rust, Java)
//!   and `links` turns resolved calls into the rows of the call graph.
//! - [`worker`]: large sources parsed in a child process, so the parse's memory goes back to
//!   the OS and a parser crash cannot take the daemon down; [`pool`] keeps two such workers
//!   alive (no process start per file).
//! - `store`: the index's one store (`.wit/index.db`, or the same schema in memory): per
//!   file its size, mtime, hash, outline and whole analysis, and the call graph, so a start
//!   parses only what changed; [`progress`]: how far a build
//!   is, published as `.wit/index.json`.

mod answers;
pub(crate) mod cache;
mod calls;
mod encoding;
mod extract;
mod flights;
mod index;
pub mod language;
mod languages;
mod links;
mod matches;
mod model;
mod nesting;
mod on_lines;
mod outline;
pub mod pool;
pub mod progress;
mod resolution;
mod resolve;
mod signature;
mod store;
pub mod worker;

pub use extract::{analyze, analyze_with_budget, PARSE_BUDGET};
pub use index::{RepoIndex, SymbolRef, MAX_FILE_BYTES};
pub use language::Language;
pub use model::{
    CallSite, CallTarget, Diagnostic, FileAnalysis, Import, ImportKind, Lookup, Symbol, SymbolKind,
};
pub use on_lines::{innermost_on_lines, innermost_spans_on_lines, symbols_on_lines};
pub use signature::signatures_equal;
pub use store::{IndexDbError, EXTRACTOR_VERSION};

/// Why a repository query failed. Broken source code is never an error.
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    /// The path is absolute, leaves the root, or contains a backslash or NUL.
    #[error("invalid path {path:?}: {reason}")]
    InvalidPath {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The file could not be read (other than not existing).
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path relative to the root.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// Result alias for repository queries.
pub type Result<T, E = AnalysisError> = std::result::Result<T, E>;
