//! What coordination needs to know about the source code, as a trait.
//!
//! The daemon implements [`CodeIndex`] with the analysis module's repository index; tests use
//! `coord::testing::FakeIndex` (unit tests). Files are normalised repository-relative paths and
//! names are symbol names as the protocol writes them (bare `f` or qualified `Class.method`).
//! Every method answers "nothing" (empty, `NotFound`, `None`) for a missing, unreadable or
//! unsupported file rather than failing: source problems never fail a coordination request.

/// Why [`CodeIndex::signature`] found no single symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignatureLookup {
    /// No such symbol (or file missing, unsupported language, no signature).
    NotFound,
    /// The bare name matches several symbols; their qualified names.
    Ambiguous {
        /// Qualified names of the candidates.
        candidates: Vec<String>,
    },
}

/// One symbol of a text, as `edit.preflight` needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolSpan {
    /// Qualified name (`Class.method`).
    pub qualified: String,
    /// `[start, end)` in UTF-8 bytes, decorators and attributes included.
    pub start: usize,
    /// End, exclusive.
    pub end: usize,
    /// Normalised signature, when the symbol has one.
    pub signature: Option<String>,
}

impl SymbolSpan {
    /// The last segment of the qualified name.
    pub fn simple_name(&self) -> &str {
        self.qualified.rsplit('.').next().unwrap_or(&self.qualified)
    }
}

/// The symbols found in a text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TextSymbols {
    /// The symbols, in source order.
    pub symbols: Vec<SymbolSpan>,
    /// Whether the text parsed without syntax errors.
    pub clean: bool,
    /// The calls made in the text: the calling symbol's qualified name and the callee as
    /// written (`helper`, `this.run`); calls outside any function are left out.
    pub calls: Vec<(String, String)>,
}

/// Symbol ranges, call graph and signatures of the repository's source.
pub trait CodeIndex: Send + Sync {
    /// The byte ranges `[start, end)` of every symbol `name` could mean in `file`
    /// (docs/protocol.md 2.2, intents rule: all matches of a bare name); empty when none.
    fn symbol_ranges(&self, file: &str, name: &str) -> Vec<(usize, usize)>;

    /// Symbol paths (`file:qualified`) of the callers of `file:name`, in any file.
    fn callers(&self, file: &str, name: &str) -> Vec<String>;

    /// Whether [`CodeIndex::callers`] of `file:name` would answer at once, without parsing
    /// any file (so it may run on a request-serving thread rather than a blocking pool).
    fn callers_are_fresh(&self, file: &str, name: &str) -> bool;

    /// Whether [`CodeIndex::symbol_ranges`] and [`CodeIndex::callees`] in `file` would answer
    /// at once, without parsing any file.
    fn file_is_fresh(&self, file: &str) -> bool;

    /// The size of `file` when the index knows it as it is on disk, so that its analysis
    /// needs no parse of it; `None` otherwise (a file it does not track included).
    fn fresh_size(&self, file: &str) -> Option<u64>;

    /// Symbol paths (`file:qualified`) of the symbols `file:name` calls, in any file.
    fn callees(&self, file: &str, name: &str) -> Vec<String>;

    /// The normalised signature (docs/protocol.md 2.5) of `name` in `file` as it is on disk now.
    fn signature(&self, file: &str, name: &str) -> Result<String, SignatureLookup>;

    /// Parses `content` once as the file `file` (its suffix picks the language) and returns,
    /// for each of `names`, the signature of the symbol it resolves to, or `None` when it does
    /// not resolve to exactly one symbol (all `None` for an unsupported language).
    fn signatures_in_content(
        &self,
        file: &str,
        content: &str,
        names: &[&str],
    ) -> Vec<Option<String>>;

    /// Whether two signatures are the same by tokens (whitespace, comments and trailing commas
    /// ignored; docs/protocol.md 2.5).
    fn signatures_equal(&self, a: &str, b: &str) -> bool;

    /// The current text of `file` (`None` when it is missing, not a regular UTF-8 file, or
    /// outside the root), and whether the file was at rest while it was read: what is kept
    /// from the text (regions carried to it) is kept only from a read at rest.
    fn file_text(&self, file: &str) -> Option<crate::platform::at_rest::DiskText>;

    /// Whether `file`'s suffix names a supported language.
    fn is_supported(&self, file: &str) -> bool;

    /// The symbols of `file` as it is on disk, in source order (from the index: no parse when
    /// it is known and unchanged; shared, not copied, while its analysis stays the same).
    fn file_symbols(&self, file: &str) -> std::sync::Arc<[SymbolSpan]>;

    /// The symbols of `text` parsed as the language of `file` (results are cached by content).
    fn text_symbols(&self, file: &str, text: &str) -> TextSymbols;

    /// The symbols of `text` as the file `file` (as [`CodeIndex::file_symbols`] lists them)
    /// when its analysis is already made; `None` rather than a parse.
    fn known_symbols(&self, _file: &str, _text: &str) -> Option<std::sync::Arc<[SymbolSpan]>> {
        None
    }

    /// The root of the worktree this index reads (docs/protocol.md 14.3: where a session acts
    /// from); `None` when it reads no worktree on disk.
    fn worktree_root(&self) -> Option<String> {
        None
    }
}

/// Source of new record ids.
pub trait IdSource: Send + Sync {
    /// A fresh, unique id.
    fn next_id(&self) -> String;
}

/// Random UUID v4 ids, as the protocol specifies.
#[derive(Debug, Clone, Copy, Default)]
pub struct UuidIds;

impl IdSource for UuidIds {
    fn next_id(&self) -> String {
        uuid::Uuid::new_v4().to_string()
    }
}
