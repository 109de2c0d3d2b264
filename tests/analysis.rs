//! Integration tests of `wit::analysis`: snapshot files over the fixture corpus (what is a
//! symbol, what a signature looks like, which calls are found) and the repository index.
//!
//! Snapshots live in `tests/snapshots/analysis/`; regenerate them with
//! `WIT_UPDATE_SNAPSHOTS=1 cargo test --test analysis` and review the diff.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::sleep;
use std::time::Duration;

use wit::analysis::{
    analyze, CallTarget, FileAnalysis, ImportKind, Language, Lookup, RepoIndex, SymbolRef,
};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/analysis")
}

#[path = "common/snapshot.rs"]
mod snapshot_files;

use snapshot_files::Snapshots;

fn snapshots() -> Snapshots {
    Snapshots::new(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/analysis"),
        "WIT_UPDATE_SNAPSHOTS",
        "cargo test --test analysis",
    )
}

fn fixture_files() -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![fixtures()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path
                    .strip_prefix(fixtures())
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .to_owned();
                if Language::for_path(&rel).is_some() {
                    out.push(rel);
                }
            }
        }
    }
    out.sort();
    out
}

/// One line of source text, shortened, with line breaks shown.
fn excerpt(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c == '\n' { '⏎' } else { c })
        .collect();
    let chars: Vec<char> = flat.chars().collect();
    if chars.len() <= 60 {
        return flat;
    }
    let head: String = chars[..40].iter().collect();
    let tail: String = chars[chars.len() - 15..].iter().collect();
    format!("{head} … {tail}")
}

fn render(source: &str, analysis: &FileAnalysis) -> String {
    let mut out = String::new();
    writeln!(
        out,
        "## symbols (kind qualified-name line [start..end) text)"
    )
    .unwrap();
    for s in &analysis.symbols {
        let text = &source[s.start_byte..s.end_byte];
        writeln!(
            out,
            "{:<11} {} @{} [{}..{}) `{}`",
            s.kind.as_str(),
            s.qualified_name,
            s.line,
            s.start_byte,
            s.end_byte,
            excerpt(text)
        )
        .unwrap();
        match &s.signature {
            Some(sig) => writeln!(out, "            signature: {sig}").unwrap(),
            None => writeln!(out, "            signature: (none)").unwrap(),
        }
    }
    writeln!(out, "\n## imports (local <- module binding)").unwrap();
    for i in &analysis.imports {
        let kind = match &i.kind {
            ImportKind::Named(name) => format!("named {name}"),
            ImportKind::Default => "default".to_owned(),
            ImportKind::Namespace => "namespace".to_owned(),
        };
        writeln!(out, "{} <- {:?} {kind}", i.local, i.module).unwrap();
    }
    if let Some(d) = &analysis.default_export {
        writeln!(out, "default export: {d}").unwrap();
    }
    writeln!(out, "\n## calls (line caller -> callee => target)").unwrap();
    for c in &analysis.calls {
        let target = match &c.target {
            CallTarget::Local(q) => format!("local {q}"),
            CallTarget::Import { module, path } => format!("import {module:?} {}", path.join(".")),
            CallTarget::Package(path) => format!("package {}", path.join(".")),
            CallTarget::Unresolved => "unresolved".to_owned(),
        };
        let caller = c.caller.as_deref().unwrap_or("(module/class level)");
        writeln!(out, "{:>3} {caller} -> {} => {target}", c.line, c.callee).unwrap();
    }
    if !analysis.diagnostics.is_empty() {
        writeln!(out, "\n## diagnostics").unwrap();
        for d in &analysis.diagnostics {
            writeln!(out, "{:>3} {}", d.line, d.message).unwrap();
        }
    }
    out
}

fn snapshot_name(rel: &str) -> String {
    format!("{}.snap", rel.replace('/', "__"))
}

#[test]
fn fixture_snapshots_are_current() {
    let snapshots = snapshots();
    let mut stale = Vec::new();
    let mut check_snapshot = |name: &str, actual: &str| {
        if let Err(error) = snapshots.compare(name, actual) {
            stale.push(error);
        }
    };
    let mut expected_names = vec!["repo_edges.snap".to_owned()];
    for rel in fixture_files() {
        let source = fs::read_to_string(fixtures().join(&rel)).unwrap();
        let language = Language::for_path(&rel).unwrap();
        let analysis = analyze(language, &source);
        let header = format!("# {rel} ({})\n\n", language.name());
        let name = snapshot_name(&rel);
        check_snapshot(&name, &(header + &render(&source, &analysis)));
        expected_names.push(name);
    }
    let index = RepoIndex::new(fixtures());
    index.build_now();
    let mut edges = String::from("# resolved call edges across tests/fixtures/analysis\n\n");
    for file in index.files() {
        let analysis = index.file(&file).unwrap().unwrap();
        for s in &analysis.symbols {
            for callee in index.callees(&file, &s.qualified_name) {
                writeln!(
                    edges,
                    "{}:{} -> {}",
                    file,
                    s.qualified_name,
                    callee.to_symbol_path()
                )
                .unwrap();
            }
        }
    }
    check_snapshot("repo_edges.snap", &edges);
    if !snapshots.updating() {
        for entry in fs::read_dir(snapshots.dir()).unwrap() {
            let name = entry.unwrap().file_name().to_str().unwrap().to_owned();
            if !expected_names.contains(&name) {
                stale.push(format!("{name}: no fixture produces it (delete it)"));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "stale snapshots ({}):\n{}",
        snapshots.how_to_update(),
        stale.join("\n")
    );
}

#[test]
fn unicode_offsets_are_utf8_bytes() {
    let source = fs::read_to_string(fixtures().join("ts/unicode.ts")).unwrap();
    let analysis = analyze(Language::TypeScript, &source);
    let Lookup::Unique(s) = analysis.lookup("après") else {
        panic!("après not found")
    };
    assert!(source[s.start_byte..s.end_byte].starts_with("export function après("));
    assert!(source[s.start_byte..s.end_byte].ends_with('}'));
    let start = source.find("export function après").unwrap();
    assert_eq!(s.start_byte, start);
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn refs(list: &[(&str, &str)]) -> Vec<SymbolRef> {
    list.iter()
        .map(|(f, q)| SymbolRef {
            file: (*f).to_owned(),
            qualified_name: (*q).to_owned(),
        })
        .collect()
}

#[test]
fn cross_file_edges_through_relative_imports() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "src/a.ts",
        "import { pong } from './b';\nexport function ping(n: number) { return pong(n); }\n",
    );
    write(root, "src/b.ts", "import { ping } from './a';\nexport function pong(n: number) { return n ? ping(n - 1) : 0; }\n");
    // Same name, unrelated: never bound.
    write(root, "src/c.ts", "export function pong(n: number) { return n; }\nexport function user() { return pong(1); }\n");
    write(root, "lib/d.ts", "function local() { return pong(); }\n");
    let index = RepoIndex::new(root.to_path_buf());
    index.build_now();
    assert_eq!(
        index.callers("src/b.ts", "pong"),
        refs(&[("src/a.ts", "ping")])
    );
    assert_eq!(
        index.callers("src/a.ts", "ping"),
        refs(&[("src/b.ts", "pong")])
    );
    assert_eq!(
        index.callees("src/a.ts", "ping"),
        refs(&[("src/b.ts", "pong")])
    );
    assert_eq!(
        index.callers("src/c.ts", "pong"),
        refs(&[("src/c.ts", "user")])
    );
    assert_eq!(index.callees("lib/d.ts", "local"), vec![]);
}

#[test]
fn python_imports_resolve_within_the_repository() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "pkg/__init__.py", "");
    write(root, "pkg/m.py", "def f():\n    return 1\n");
    write(
        root,
        "pkg/a.py",
        "from .m import f\n\ndef g():\n    return f()\n",
    );
    write(
        root,
        "app.py",
        "import pkg.m as m\nfrom pkg.m import f as ff\n\ndef h():\n    m.f()\n    ff()\n",
    );
    write(
        root,
        "other.py",
        "def f():\n    return 2\n\ndef k():\n    return f()\n",
    );
    let index = RepoIndex::new(root.to_path_buf());
    index.build_now();
    assert_eq!(
        index.callers("pkg/m.py", "f"),
        refs(&[("app.py", "h"), ("pkg/a.py", "g")])
    );
    assert_eq!(index.callers("other.py", "f"), refs(&[("other.py", "k")]));
}

/// Waits until the filesystem clock has moved so an rewrite gets a new mtime.
fn settle() {
    sleep(Duration::from_millis(20));
}

#[test]
fn edits_and_removals_refresh_the_graph() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "a.ts",
        "import { b } from './b';\nexport function a() { return b(); }\n",
    );
    write(root, "b.ts", "export function b() { return 1; }\n");
    let index = Arc::new(RepoIndex::new(root.to_path_buf()));
    index.start_background_build();
    assert_eq!(index.callers("b.ts", "b"), refs(&[("a.ts", "a")]));

    // The caller stops calling: noticed when the caller's file is checked.
    settle();
    write(root, "a.ts", "export function a() { return 2; }\n");
    assert_eq!(index.callers("b.ts", "b"), vec![]);

    // A new caller appears and is asked about.
    settle();
    write(
        root,
        "c.ts",
        "import { b } from './b';\nexport function c() { b(); }\n",
    );
    assert!(index.file("c.ts").unwrap().is_some());
    assert_eq!(index.callers("b.ts", "b"), refs(&[("c.ts", "c")]));

    // The callee is renamed: the edge goes; renamed back: it returns.
    settle();
    write(root, "b.ts", "export function bb() { return 1; }\n");
    assert_eq!(index.callers("b.ts", "bb"), vec![]);
    assert!(index.callees("c.ts", "c").is_empty());
    settle();
    write(root, "b.ts", "export function b() { return 1;  }\n");
    assert_eq!(index.callees("c.ts", "c"), refs(&[("b.ts", "b")]));

    // A removed file drops its symbols and edges.
    fs::remove_file(root.join("c.ts")).unwrap();
    assert!(index.file("c.ts").unwrap().is_none());
    assert_eq!(index.callers("b.ts", "b"), vec![]);
    assert!(!index.files().contains(&"c.ts".to_owned()));

    // A module that appears later resolves the imports waiting for it.
    write(
        root,
        "d.ts",
        "import { e } from './e';\nexport function d() { e(); }\n",
    );
    index.build_now();
    assert!(index.callees("d.ts", "d").is_empty());
    write(root, "e.ts", "export function e() {}\n");
    assert!(index.file("e.ts").unwrap().is_some());
    assert_eq!(index.callees("d.ts", "d"), refs(&[("e.ts", "e")]));
}

#[test]
fn gitignore_hidden_and_unsupported_files_are_not_indexed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, ".gitignore", "dist/\n");
    write(root, "dist/out.js", "function x() {}\n");
    write(root, ".hidden/h.ts", "function h() {}\n");
    write(root, "node_modules/p/index.js", "function p() {}\n");
    write(root, "src/a.ts", "function a() {}\n");
    write(root, "README.md", "# hi\n");
    let index = RepoIndex::new(root.to_path_buf());
    index.build_now();
    assert_eq!(index.files(), vec!["src/a.ts".to_owned()]);
    assert!(index.file("README.md").unwrap().is_none());
}

#[test]
fn never_reads_outside_the_root() {
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "secret.ts", "export function secret() {}\n");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "inside.ts", "export function inside() {}\n");
    std::os::unix::fs::symlink(outside.path().join("secret.ts"), root.join("link.ts")).unwrap();
    std::os::unix::fs::symlink(root.join("inside.ts"), root.join("alias.ts")).unwrap();
    fs::create_dir(root.join("dir.ts")).unwrap();
    let index = RepoIndex::new(root.to_path_buf());
    assert!(
        index.file("link.ts").unwrap().is_none(),
        "symlink leaving the root"
    );
    assert!(
        index.file("alias.ts").unwrap().is_some(),
        "symlink inside the root"
    );
    assert!(
        index.file("dir.ts").unwrap().is_none(),
        "not a regular file"
    );
    assert!(index.file("../secret.ts").is_err());
    assert!(index.file("/etc/passwd.ts").is_err());
    assert!(index.file("missing.ts").unwrap().is_none());
}

#[test]
fn huge_files_have_no_symbols() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut text = String::from("export function f() {}\n");
    while text.len() <= 8 * 1024 * 1024 {
        text.push_str(&"// padding padding padding padding padding padding padding\n".repeat(1024));
    }
    write(root, "big.ts", &text);
    let index = RepoIndex::new(root.to_path_buf());
    let analysis = index.file("big.ts").unwrap().unwrap();
    assert!(analysis.symbols.is_empty());
    assert!(!analysis.diagnostics.is_empty());
}

#[test]
fn content_cache_is_shared_with_disk_parses() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let text = "export function f(a: number): number { return a; }\n";
    write(root, "a.ts", text);
    let index = RepoIndex::new(root.to_path_buf());
    let from_disk = index.file("a.ts").unwrap().unwrap();
    let staged = index.analyze_content(Language::TypeScript, text);
    assert!(
        Arc::ptr_eq(&from_disk, &staged),
        "equal content costs no parse"
    );
    let other = index.analyze_content(Language::TypeScript, "export function f(a: string) {}\n");
    assert!(!Arc::ptr_eq(&from_disk, &other));
    assert_eq!(other.symbols[0].signature.as_deref(), Some("(a: string)"));
}

#[test]
fn staged_content_equal_to_the_indexed_file_needs_no_cache() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let text = "export function f(a: number): number { return a; }\n";
    write(root, "a.ts", text);
    // A cache that keeps nothing: only the index remembers the parse.
    let index = RepoIndex::new(root.to_path_buf()).with_cache_bytes(0);
    let from_disk = index.file("a.ts").unwrap().unwrap();
    let parses = index.parse_count();
    let staged = index.analyze_content_of("a.ts", Language::TypeScript, text);
    assert_eq!(
        index.parse_count(),
        parses,
        "the indexed analysis, read back"
    );
    assert_eq!(from_disk.symbols, staged.symbols);
    let anonymous = index.analyze_content(Language::TypeScript, text);
    assert_eq!(index.parse_count(), parses + 1, "parsed again");
    assert_eq!(from_disk.symbols, anonymous.symbols);
    let edited = index.analyze_content_of("a.ts", Language::TypeScript, "export function f() {}\n");
    assert_eq!(edited.symbols[0].signature.as_deref(), Some("()"));
}

/// The signature of the one symbol `name` in `source`.
fn signature_of(language: Language, source: &str, name: &str) -> String {
    let analysis = analyze(language, source);
    let Lookup::Unique(symbol) = analysis.lookup(name) else {
        panic!("{name} not unique in {source}: {:?}", analysis.symbols)
    };
    symbol.signature.clone().unwrap()
}

#[test]
fn signatures_per_language_are_equal_across_reformatting_only() {
    use wit::analysis::signatures_equal;
    // (language, name, source, reformatted with comments, changed, expected signature)
    let cases = [
        (
            Language::Go,
            "Map",
            "package p\nfunc Map[T any](xs []T, f func(T) T) (int, error) { return 0, nil }\n",
            "package p\n// doc\nfunc Map[T any,](xs []T, /* fn */ f func(T) T,\n) (int, error) {\n\treturn 0, nil\n}\n",
            "package p\nfunc Map[T any](xs []T, f func(T) T) (int64, error) { return 0, nil }\n",
            "[T any](xs []T, f func(T) T) (int, error)",
        ),
        (
            Language::Go,
            "T.M",
            "package p\nfunc (t *T) M(a int) string { return \"\" }\n",
            "package p\nfunc (t   *T) M(\n\ta int,\n) string { return \"\" }\n",
            "package p\nfunc (t *T) M(a int, b int) string { return \"\" }\n",
            "(a int) string",
        ),
        (
            Language::Rust,
            "S.get",
            "impl S {\n    pub fn get<T: Clone>(&self, x: T) -> Option<T> where T: Default { None }\n}\n",
            "impl S {\n    /// doc\n    pub fn get<T: Clone,>(\n        &self, // me\n        x: T,\n    ) -> Option<T>\n    where\n        T: Default,\n    { None }\n}\n",
            "impl S {\n    pub fn get<T: Clone>(&mut self, x: T) -> Option<T> where T: Default { None }\n}\n",
            "<T: Clone>(&self, x: T) -> Option<T> where T: Default",
        ),
        (
            Language::Rust,
            "f",
            "pub async unsafe fn f<'a>(x: &'a str) -> &'a str { x }\n",
            "pub  async  unsafe fn f<'a>(\n    x: &'a str, /* c */\n) -> &'a str { x }\n",
            "pub async fn f<'a>(x: &'a str) -> &'a str { x }\n",
            "async unsafe <'a>(x: &'a str) -> &'a str",
        ),
        (
            Language::Java,
            "C.wrap",
            "class C {\n  public static <T> List<T> wrap(T x) throws IOException { return null; }\n}\n",
            "class C {\n  /** doc */\n  @Override\n  public static <T> List<T>\n      wrap(T x /* x */)\n      throws IOException { return null; }\n}\n",
            "class C {\n  public static <T> List<T> wrap(T x) throws IOException, Error { return null; }\n}\n",
            "<T> List<T> (T x) throws IOException",
        ),
        (
            Language::Java,
            "C.C",
            "class C {\n  public C(int v) {}\n}\n",
            "class C {\n  private C(\n    int v\n  ) {}\n}\n",
            "class C {\n  public C(long v) {}\n}\n",
            "(int v)",
        ),
    ];
    for (language, name, source, reformatted, changed, expected) in cases {
        let sig = signature_of(language, source, name);
        assert_eq!(sig, expected, "{name}");
        let same = signature_of(language, reformatted, name);
        assert!(signatures_equal(&sig, &same), "{name}: {sig} vs {same}");
        let other = signature_of(language, changed, name);
        assert!(!signatures_equal(&sig, &other), "{name}: {sig} vs {other}");
    }
}

#[test]
fn ranges_include_attributes_and_annotations_in_utf8_bytes() {
    let cases = [
        (
            Language::Rust,
            "// é\n/// Doc.\n#[derive(Debug)]\n#[allow(dead_code)]\npub struct Ünï { a: u8 }\n",
            "Ünï",
            "#[derive(Debug)]",
        ),
        (
            Language::Java,
            "// é\nclass A {\n  /** Doc. */\n  @Override @Deprecated\n  public String ünï() { return \"é\"; }\n}\n",
            "A.ünï",
            "@Override",
        ),
        (
            Language::Go,
            "package p\n\n// é doc\ntype Ünï struct{ a int }\n",
            "Ünï",
            "type Ünï",
        ),
    ];
    for (language, source, name, starts_with) in cases {
        let analysis = analyze(language, source);
        let Lookup::Unique(s) = analysis.lookup(name) else {
            panic!("{name}: {:?}", analysis.symbols)
        };
        assert_eq!(s.start_byte, source.find(starts_with).unwrap(), "{name}");
        assert!(source[s.start_byte..s.end_byte].ends_with('}'), "{name}");
        assert!(!source[s.start_byte..s.end_byte].contains("Doc."), "{name}");
    }
}

#[test]
fn java_overloads_are_ambiguous() {
    let source = "class C {\n  C() {}\n  C(int a) {}\n  int size(int a) { return a; }\n  int size(String s) { return 0; }\n}\n";
    let analysis = analyze(Language::Java, source);
    for name in ["size", "C.size", "C.C"] {
        let Lookup::Ambiguous(candidates) = analysis.lookup(name) else {
            panic!("{name} is not ambiguous")
        };
        assert_eq!(candidates.len(), 2, "{name}");
    }
    assert!(matches!(analysis.lookup("C"), Lookup::Unique(_)));
}

#[test]
fn go_calls_resolve_through_packages_and_go_mod() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "go.mod", "module example.com/app\n\ngo 1.22\n");
    write(
        root,
        "geom/a.go",
        "package geom\n\nfunc Area() int { return sq() }\n",
    );
    write(
        root,
        "geom/b.go",
        "package geom\n\nfunc sq() int { return 1 }\n",
    );
    write(
        root,
        "main.go",
        "package main\n\nimport \"example.com/app/geom\"\n\nfunc main() { geom.Area() }\n",
    );
    // Same names, unrelated package: never bound.
    write(
        root,
        "other/a.go",
        "package other\n\nfunc Area() int { return sq() }\n\nfunc sq() int { return 2 }\n",
    );
    let index = RepoIndex::new(root.to_path_buf());
    index.build_now();
    assert_eq!(
        index.callers("geom/a.go", "Area"),
        refs(&[("main.go", "main")])
    );
    assert_eq!(
        index.callers("geom/b.go", "sq"),
        refs(&[("geom/a.go", "Area")])
    );
    assert_eq!(
        index.callees("main.go", "main"),
        refs(&[("geom/a.go", "Area")])
    );
    assert_eq!(
        index.callers("other/a.go", "sq"),
        refs(&[("other/a.go", "Area")])
    );
    assert!(index.callers("other/a.go", "Area").is_empty());
}

#[test]
fn rust_calls_resolve_through_mod_and_use() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "src/lib.rs", "mod geom;\nmod util;\nuse crate::geom::Circle;\n\npub fn run() -> f64 {\n    util::twice(Circle::new(1.0).r)\n}\n");
    write(root, "src/geom.rs", "pub struct Circle { pub r: f64 }\n\nimpl Circle {\n    pub fn new(r: f64) -> Self { Circle { r } }\n}\n");
    write(
        root,
        "src/util/mod.rs",
        "pub fn twice(x: f64) -> f64 { super::geom::Circle::new(x).r * 2.0 }\n",
    );
    write(root, "tools/util.rs", "pub fn twice(x: f64) -> f64 { x }\n");
    let index = RepoIndex::new(root.to_path_buf());
    index.build_now();
    assert_eq!(
        index.callers("src/geom.rs", "Circle.new"),
        refs(&[("src/lib.rs", "run"), ("src/util/mod.rs", "twice")])
    );
    assert_eq!(
        index.callers("src/util/mod.rs", "twice"),
        refs(&[("src/lib.rs", "run")])
    );
    assert!(index.callers("tools/util.rs", "twice").is_empty());
    // DEP_CHAIN's question: what does `run` depend on?
    assert_eq!(
        index.callees("src/lib.rs", "run"),
        refs(&[("src/geom.rs", "Circle.new"), ("src/util/mod.rs", "twice")])
    );
}

#[test]
fn java_calls_resolve_through_packages_and_imports() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let j = "src/main/java/com/ex";
    write(root, &format!("{j}/a/Circle.java"), "package com.ex.a;\n\npublic class Circle {\n  public Circle(double r) {}\n  public static double unit() { return Help.one(); }\n}\n");
    write(
        root,
        &format!("{j}/a/Help.java"),
        "package com.ex.a;\n\nclass Help {\n  static double one() { return 1; }\n}\n",
    );
    write(root, &format!("{j}/b/App.java"), "package com.ex.b;\n\nimport com.ex.a.Circle;\n\npublic class App {\n  void run() { new Circle(2); Circle.unit(); }\n}\n");
    // Same class name, other package, not imported: never bound.
    write(
        root,
        &format!("{j}/c/Help.java"),
        "package com.ex.c;\n\nclass Help {\n  static double one() { return 2; }\n}\n",
    );
    let index = RepoIndex::new(root.to_path_buf());
    index.build_now();
    let file = |rel: &str| format!("{j}/{rel}");
    assert_eq!(
        index.callers(&file("a/Circle.java"), "Circle.Circle"),
        vec![SymbolRef {
            file: file("b/App.java"),
            qualified_name: "App.run".into()
        }]
    );
    assert_eq!(
        index.callers(&file("a/Help.java"), "Help.one"),
        vec![SymbolRef {
            file: file("a/Circle.java"),
            qualified_name: "Circle.unit".into()
        }]
    );
    assert!(index.callers(&file("c/Help.java"), "Help.one").is_empty());
    assert_eq!(index.callees(&file("b/App.java"), "App.run").len(), 2);
}

#[test]
fn hostile_sources_in_every_language_yield_diagnostics_not_panics() {
    let nested = "(".repeat(4_000) + &"{[".repeat(1_000);
    let garbage: String = (0..5_000u32)
        .map(|i| char::from_u32(0x20 + (i * 7919) % 0x2000).unwrap_or('?'))
        .collect();
    let truncated = [
        "package p\nfunc F(a int, b",
        "impl<T> S<T> where T: {\n fn f(&self",
        "class C { <T> void m(T x) throws",
    ];
    for language in Language::ALL {
        for source in [nested.as_str(), garbage.as_str()]
            .into_iter()
            .chain(truncated)
        {
            let analysis = analyze(language, source);
            assert_eq!(analysis.language, Some(language));
            assert!(!analysis.diagnostics.is_empty(), "{}", language.name());
        }
    }
}

// The index on disk (`.wit/index.db`): restarts, changes while stopped, versions, damage.

/// A small repository: `b.ts:b` is called from `a.ts:a` and `c.ts:c`.
fn write_call_triangle(root: &Path) {
    write(
        root,
        "a.ts",
        "import { b } from './b';\nexport function a(x: number) { return b(x); }\n",
    );
    write(root, "b.ts", "export function b(y: number) { return y; }\n");
    write(
        root,
        "c.ts",
        "import { b } from './b';\nexport function c() { return b(1); }\n",
    );
}

fn indexed(root: &Path, db: &Path) -> RepoIndex {
    let index = RepoIndex::new(root.to_path_buf()).with_index_db(db);
    index.build_now();
    index
}

/// Issue 20 item 11: after a restart the stored analyses of large files are read back once
/// the index is built, so the first call on such a file costs what a later one does (its
/// analysis is in memory) instead of decoding it then.
#[test]
fn a_restart_reads_large_analyses_back_before_the_first_call() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("r");
    let db = dir.path().join("index.db");
    let big: String = (0..6000)
        .map(|i| format!("export function f{i}(a: number): number {{\n  return a + {i};\n}}\n"))
        .collect();
    assert!(big.len() >= 256 * 1024);
    write(&root, "big.ts", &big);
    write(&root, "small.ts", "export function s() { return 1; }\n");
    let analysis = analyze(Language::TypeScript, &big).approx_heap_bytes();
    drop(indexed(&root, &db));

    let restarted = indexed(&root, &db);
    assert_eq!(
        restarted.parse_count(),
        0,
        "nothing changed: nothing parsed"
    );
    assert!(
        restarted.resident_bytes() >= analysis,
        "the large file's analysis is held: {} < {analysis}",
        restarted.resident_bytes()
    );
}

#[test]
fn a_restart_reuses_the_index_database() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("r");
    let db = dir.path().join("index.db");
    write_call_triangle(&root);
    let first = indexed(&root, &db);
    assert_eq!(first.parse_count(), 3);
    let callers = first.callers("b.ts", "b");
    assert_eq!(callers, refs(&[("a.ts", "a"), ("c.ts", "c")]));
    drop(first);

    let second = indexed(&root, &db);
    assert_eq!(second.parse_count(), 0, "nothing changed: nothing parsed");
    assert_eq!(second.callers("b.ts", "b"), callers);
    assert_eq!(second.callees("a.ts", "a"), refs(&[("b.ts", "b")]));
    // The whole analysis comes back from disk: ranges and signatures included.
    let text = fs::read_to_string(root.join("a.ts")).unwrap();
    let stored = second.file("a.ts").unwrap().unwrap();
    let direct = analyze(Language::TypeScript, &text);
    assert_eq!(stored.symbols, direct.symbols);
    assert_eq!(stored.calls, direct.calls);
    assert_eq!(second.parse_count(), 0);
    let status = second.status();
    assert!(status.complete);
    assert_eq!((status.files, status.parsed), (3, 0));
}

#[test]
fn changes_while_stopped_are_picked_up() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("r");
    let db = dir.path().join("index.db");
    write_call_triangle(&root);
    write(&root, "d.ts", "export function d() {}\n");
    drop(indexed(&root, &db));

    settle();
    // Edited: a no longer calls b. Deleted: c. Renamed: d -> e. New: f calls b.
    write(
        &root,
        "a.ts",
        "export function a(x: number) { return x; }\n",
    );
    fs::remove_file(root.join("c.ts")).unwrap();
    fs::rename(root.join("d.ts"), root.join("e.ts")).unwrap();
    write(
        &root,
        "f.ts",
        "import { b } from './b';\nexport function f() { return b(2); }\n",
    );
    let index = indexed(&root, &db);
    assert_eq!(index.parse_count(), 3, "a, e and f");
    assert_eq!(index.callers("b.ts", "b"), refs(&[("f.ts", "f")]));
    assert_eq!(index.files(), ["a.ts", "b.ts", "e.ts", "f.ts"]);
    drop(index);
    // The database followed: a third start parses nothing.
    assert_eq!(indexed(&root, &db).parse_count(), 0);
}

#[test]
fn a_file_replaced_by_a_symlink_while_stopped_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("r");
    let db = dir.path().join("index.db");
    write_call_triangle(&root);
    drop(indexed(&root, &db));
    fs::remove_file(root.join("c.ts")).unwrap();
    std::os::unix::fs::symlink(root.join("b.ts"), root.join("c.ts")).unwrap();
    let index = indexed(&root, &db);
    assert_eq!(index.callers("b.ts", "b"), refs(&[("a.ts", "a")]));
    assert!(!index.files().contains(&"c.ts".to_owned()));
}

#[test]
fn a_version_change_rebuilds_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("r");
    let db = dir.path().join("index.db");
    write_call_triangle(&root);
    drop(indexed(&root, &db));
    // As if the index was written by another schema, extractor or grammar.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute(
        "UPDATE meta SET value = 'schema=0;extractor=0' WHERE key = 'version'",
        [],
    )
    .unwrap();
    drop(conn);
    let index = indexed(&root, &db);
    assert_eq!(index.parse_count(), 3);
    assert_eq!(
        index.callers("b.ts", "b"),
        refs(&[("a.ts", "a"), ("c.ts", "c")])
    );
    drop(index);
    assert_eq!(indexed(&root, &db).parse_count(), 0);
}

#[test]
fn a_truncated_or_garbled_index_database_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("r");
    let db = dir.path().join("index.db");
    write_call_triangle(&root);
    // Enough rows that the file spans many pages.
    for i in 0..40 {
        write(
            &root,
            &format!("m/f{i}.ts"),
            &format!("export function f{i}(a: number) {{ return a + {i}; }}\n").repeat(20),
        );
    }
    drop(indexed(&root, &db));
    let full = fs::metadata(&db).unwrap().len();
    for damage in ["truncate", "garble"] {
        let file = fs::OpenOptions::new().write(true).open(&db).unwrap();
        match damage {
            "truncate" => file.set_len(full / 3).unwrap(),
            _ => fs::write(&db, vec![0x5a; 4096]).unwrap(),
        }
        drop(file);
        let index = indexed(&root, &db);
        assert_eq!(index.parse_count(), 43, "{damage}: everything parsed again");
        assert_eq!(
            index.callers("b.ts", "b"),
            refs(&[("a.ts", "a"), ("c.ts", "c")]),
            "{damage}"
        );
        drop(index);
        assert_eq!(indexed(&root, &db).parse_count(), 0, "{damage}: rebuilt");
    }
}

#[test]
fn edits_while_running_reach_the_index_database() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("r");
    let db = dir.path().join("index.db");
    write_call_triangle(&root);
    let index = indexed(&root, &db);
    settle();
    write(&root, "c.ts", "export function c() { return 3; }\n");
    assert_eq!(index.callers("b.ts", "b"), refs(&[("a.ts", "a")]));
    fs::remove_file(root.join("a.ts")).unwrap();
    assert!(index.file("a.ts").unwrap().is_none());
    drop(index);
    let again = indexed(&root, &db);
    assert_eq!(
        again.parse_count(),
        0,
        "the running index stored its re-parse"
    );
    assert!(again.callers("b.ts", "b").is_empty());
}

/// The memory bound, as a size: with the index on disk the daemon holds outlines (no whole
/// analyses), and what it holds is a small fraction of what the analyses would take.
#[test]
fn the_index_holds_outlines_not_analyses() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("r");
    let db = dir.path().join("index.db");
    let mut analyses = 0usize;
    for i in 0..60 {
        let text: String = (0..40)
            .map(|n| {
                format!(
                    "/** Doc {n}. */\nexport function g{i}_{n}(a: number, b: string = \"x\", opts: {{ deep?: boolean; depth: number }} = {{ depth: 1 }}): Promise<Map<string, number[]>> {{\n  const c = a + b.length + {n};\n  console.log(c, b.trim(), opts.depth.toFixed(2));\n  const items = b.split(',').map((s) => s.trim()).filter((s) => s.length > 0);\n  items.forEach((s) => console.debug(s.toUpperCase()));\n  return g{i}_{m}(c - 1, b, opts);\n}}\n",
                    m = (n + 1) % 40
                )
            })
            .collect();
        analyses += analyze(Language::TypeScript, &text).approx_heap_bytes();
        write(&root, &format!("src/g{i}.ts"), &text);
    }
    let on_disk = RepoIndex::new(root.clone())
        .with_index_db(&db)
        .with_cache_bytes(0);
    on_disk.build_now();
    let in_memory = RepoIndex::new(root.clone()).with_cache_bytes(0);
    in_memory.build_now();
    let held = on_disk.resident_bytes();
    assert!(
        held * 2 < analyses,
        "holds {held} bytes for {analyses} bytes of analyses"
    );
    // One store: in memory, the same schema holds the analyses, not the index's heap.
    assert!(
        in_memory.resident_bytes() * 2 < analyses,
        "pins no analysis"
    );
    // Reading a file's whole analysis back does not pin it (the cache keeps nothing here).
    assert_eq!(
        on_disk.file("src/g7.ts").unwrap().unwrap().symbols.len(),
        40
    );
    assert_eq!(on_disk.resident_bytes(), held);
    assert_eq!(
        on_disk.callers("src/g3.ts", "g3_5"),
        refs(&[("src/g3.ts", "g3_4")])
    );
}

/// Callers and callees are read from the index database's graph tables, not rebuilt in
/// memory: a row deleted behind the index's back is missing from the answer of a start that
/// parses nothing, and comes back once the graph is marked incomplete (everything resolved
/// again).
#[test]
fn callers_come_from_the_index_tables() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("r");
    let db = dir.path().join("index.db");
    write_call_triangle(&root);
    drop(indexed(&root, &db));
    let conn = rusqlite::Connection::open(&db).unwrap();
    let deleted = conn
        .execute("DELETE FROM links WHERE caller_file = 'c.ts'", [])
        .unwrap();
    assert_eq!(deleted, 1);
    let index = indexed(&root, &db);
    assert_eq!(index.parse_count(), 0);
    assert_eq!(index.callers("b.ts", "b"), refs(&[("a.ts", "a")]));
    drop(index);
    conn.execute("DELETE FROM meta WHERE key = 'graph'", [])
        .unwrap();
    let index = indexed(&root, &db);
    assert_eq!(
        index.parse_count(),
        0,
        "resolved again from the stored outlines"
    );
    assert_eq!(
        index.callers("b.ts", "b"),
        refs(&[("a.ts", "a"), ("c.ts", "c")])
    );
    assert_eq!(index.callees("c.ts", "c"), refs(&[("b.ts", "b")]));
}

/// The memory bound, as a size: with the index on disk what the daemon holds does not grow
/// with the symbols and call edges. Two repositories with the same files, one with 20 times
/// the functions and calls, hold the same bytes (the per-file facts; the cache keeps nothing).
#[test]
fn memory_does_not_grow_with_symbols_and_edges() {
    let dir = tempfile::tempdir().unwrap();
    let held = |functions: usize| {
        let root = dir.path().join(format!("r{functions}"));
        for i in 0..30 {
            let text: String = (0..functions)
                .map(|n| {
                    format!(
                        "import {{ f{j}_0 }} from './f{j}';\nexport function f{i}_{n}(a: number) {{ return f{i}_{m}(a) + f{j}_0(a); }}\n",
                        j = (i + 1) % 30,
                        m = (n + 1) % functions
                    )
                })
                .collect();
            write(&root, &format!("f{i}.ts"), &text);
        }
        let index = RepoIndex::new(root.clone())
            .with_index_db(&dir.path().join(format!("index{functions}.db")))
            .with_cache_bytes(0);
        index.build_now();
        assert_eq!(
            index.callers("f3.ts", "f3_0").len(),
            functions + 1,
            "every function of f2 and f3_{} call f3_0",
            functions - 1
        );
        index.resident_bytes()
    };
    let small = held(10);
    let large = held(200);
    assert_eq!(
        small, large,
        "{small} bytes for 10 functions a file, {large} for 200"
    );
}

/// During a build with an index database, sources under the worker threshold are parsed on
/// the build threads and only larger ones go to the parse workers: with a worker program that
/// answers nothing (`true` exits at once), the small file has its symbols and callers while
/// the large one is reported as not analysed.
#[test]
fn small_files_are_parsed_in_the_build_large_ones_by_a_worker() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("r");
    write_call_triangle(&root);
    let large: String = (0..200)
        .map(|n| format!("export function big{n}() {{ return {n}; }}\n"))
        .collect();
    write(&root, "large.ts", &large);
    let worker = wit::analysis::worker::ParseWorker::new(PathBuf::from("true"), 4 * 1024);
    let index = RepoIndex::new(root.clone())
        .with_index_db(&dir.path().join("index.db"))
        .with_parse_worker(worker);
    index.build_now();
    assert_eq!(
        index.callers("b.ts", "b"),
        refs(&[("a.ts", "a"), ("c.ts", "c")])
    );
    let large = index.file("large.ts").unwrap().unwrap();
    assert!(large.symbols.is_empty());
    assert!(
        !large.diagnostics.is_empty(),
        "the worker's failure is reported"
    );
}

/// The full resolution of a cold build, split over threads and read back from the index
/// database, gives the call graph the index in memory gives.
#[test]
fn a_resolution_split_over_threads_equals_the_graph_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("r");
    let files = 41;
    for i in 0..files {
        let (j, k) = ((i + 1) % files, (i * 7 + 3) % files);
        write(
            &root,
            &format!("d{}/f{i}.ts", i % 5),
            &format!(
                "import {{ f{j} }} from '../d{}/f{j}';\nimport {{ f{k} }} from '../d{}/f{k}';\nexport function f{i}() {{ return f{j}() + f{k}(); }}\n",
                j % 5,
                k % 5
            ),
        );
    }
    let on_disk = indexed(&root, &dir.path().join("index.db"));
    let in_memory = RepoIndex::new(root.clone());
    in_memory.build_now();
    let mut edges = 0;
    for i in 0..files {
        let file = format!("d{}/f{i}.ts", i % 5);
        let name = format!("f{i}");
        let callers = on_disk.callers(&file, &name);
        assert_eq!(callers, in_memory.callers(&file, &name), "{file}");
        assert_eq!(
            on_disk.callees(&file, &name),
            in_memory.callees(&file, &name)
        );
        edges += callers.len();
    }
    assert!(edges > files, "{edges} edges");
}

/// Caller answers are kept between asks (a steady-state acquire asks twice), yet every
/// change that reaches the graph is seen on the next ask: an edit removing a call, an edit
/// restoring it, a deleted caller, a caller replaced by a symlink out of the root.
#[test]
fn kept_caller_answers_follow_edits_deletes_and_symlinks() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("r");
    write_call_triangle(&root);
    let index = indexed(&root, &dir.path().join("index.db"));
    let both = refs(&[("a.ts", "a"), ("c.ts", "c")]);
    for _ in 0..3 {
        assert!(index.callers_are_fresh("b.ts", "b"));
        assert_eq!(index.callers("b.ts", "b"), both);
    }
    settle();
    write(&root, "c.ts", "export function c() { return 3; }\n");
    assert!(!index.callers_are_fresh("b.ts", "b"));
    assert_eq!(index.callers("b.ts", "b"), refs(&[("a.ts", "a")]));
    settle();
    write(
        &root,
        "c.ts",
        "import { b } from './b';\nexport function c() { return b(2); }\n",
    );
    // A call added in a file that is not a known caller is seen once that file is read.
    assert!(index.file("c.ts").unwrap().is_some());
    assert_eq!(index.callers("b.ts", "b"), both);
    fs::remove_file(root.join("a.ts")).unwrap();
    assert_eq!(index.callers("b.ts", "b"), refs(&[("c.ts", "c")]));
    let outside = dir.path().join("outside.ts");
    fs::write(
        &outside,
        "import { b } from './r/b';\nexport function c() { return b(); }\n",
    )
    .unwrap();
    fs::remove_file(root.join("c.ts")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("c.ts")).unwrap();
    assert!(index.callers("b.ts", "b").is_empty());
}

/// Callee and import answers are kept like caller answers, and follow edits the same way: an
/// edit removing a call, one restoring it, a deleted callee file.
#[test]
fn kept_callee_and_import_answers_follow_edits_and_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("r");
    write_call_triangle(&root);
    let index = indexed(&root, &dir.path().join("index.db"));
    for _ in 0..3 {
        assert!(index.file_and_imports_are_fresh("a.ts"));
        assert_eq!(index.callees("a.ts", "a"), refs(&[("b.ts", "b")]));
    }
    settle();
    write(
        &root,
        "a.ts",
        "export function a(x: number) { return x; }\n",
    );
    assert!(!index.file_and_imports_are_fresh("a.ts"));
    assert!(index.callees("a.ts", "a").is_empty());
    settle();
    write(
        &root,
        "a.ts",
        "import { b } from './b';\nexport function a(x: number) { return b(x); }\n",
    );
    assert_eq!(index.callees("a.ts", "a"), refs(&[("b.ts", "b")]));
    assert!(index.file_and_imports_are_fresh("a.ts"));
    fs::remove_file(root.join("b.ts")).unwrap();
    assert!(!index.file_and_imports_are_fresh("a.ts"));
    assert!(index.callees("a.ts", "a").is_empty());
}
