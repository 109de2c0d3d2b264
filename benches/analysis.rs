//! Benchmark of the analysis module on a generated repository of 1,000 TypeScript files with
//! 50 functions each (50,000 functions, cross-file imports), and of one file's analysis per
//! language.
//!
//! Run: `cargo bench --bench analysis` (release). Prints the median of several runs for: cold
//! index build, refresh after one file changed plus a callers query, a callers query alone,
//! the parse of one 1 MB TypeScript file, and the throughput of `analyze` per byte for each
//! language on generated files of 16 KB, 169 KB and 1.7 MB (functions that call their
//! neighbour, like `wit-bench`'s), with the ratio to TypeScript's in the same run.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use wit::analysis::{analyze, Language, RepoIndex};

const FILES: usize = 1_000;
const FUNCTIONS: usize = 50;
const RUNS: usize = 5;

fn module(i: usize, edit: usize) -> String {
    let next = (i + 1) % FILES;
    let mut out = format!("import {{ f{next}_0 }} from './mod{next}';\n\n");
    for j in 0..FUNCTIONS {
        let call = if j + 1 < FUNCTIONS {
            format!("f{i}_{}(a + 1, b)", j + 1)
        } else {
            format!("f{next}_0(a, b)")
        };
        writeln!(
            out,
            "/** Function {j} of module {i}. */\nexport function f{i}_{j}(a: number, b: string): number {{\n  \
             if (a > {j}) {{\n    return a;\n  }}\n  const label = `${{b}}-{j}`;\n  return {call} + label.length;\n}}\n"
        )
        .unwrap();
    }
    if edit > 0 {
        writeln!(out, "// edit {edit}").unwrap();
    }
    out
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn fmt(d: Duration) -> String {
    if d >= Duration::from_millis(1) {
        format!("{:.1} ms", d.as_secs_f64() * 1e3)
    } else {
        format!("{:.1} µs", d.as_secs_f64() * 1e6)
    }
}

fn generate(root: &Path) -> usize {
    fs::create_dir_all(root.join("src")).unwrap();
    let mut bytes = 0;
    for i in 0..FILES {
        let text = module(i, 0);
        bytes += text.len();
        fs::write(root.join(format!("src/mod{i}.ts")), text).unwrap();
    }
    bytes
}

/// One generated function per language: a doc comment, two parameters, a branch, a local and
/// a call to the next function, so the languages are compared on like code.
type Generator = fn(usize) -> String;

fn ts_function(n: usize) -> String {
    format!(
        "/** Function {n}. */\nexport function fn_{n}(a: number, b: string = \"x\"): number {{\n  const c = a + b.length;\n  if (c > 10) {{\n    return fn_{next}(c - 1, b);\n  }}\n  return c * {n};\n}}\n\n",
        next = n + 1
    )
}

fn python_function(n: usize) -> String {
    format!(
        "def fn_{n}(a: int, b: str = \"x\") -> int:\n    \"\"\"Function {n}.\"\"\"\n    c = a + len(b)\n    if c > 10:\n        return fn_{next}(c - 1, b)\n    return c * {n}\n\n\n",
        next = n + 1
    )
}

fn go_function(n: usize) -> String {
    format!(
        "// Fn{n} is function {n}.\nfunc Fn{n}(a int, b string) int {{\n\tc := a + len(b)\n\tif c > 10 {{\n\t\treturn Fn{next}(c-1, b)\n\t}}\n\treturn c * {n}\n}}\n\n",
        next = n + 1
    )
}

fn rust_function(n: usize) -> String {
    format!(
        "/// Function {n}.\npub fn fn_{n}(a: i64, b: &str) -> i64 {{\n    let c = a + b.len() as i64;\n    if c > 10 {{\n        return fn_{next}(c - 1, b);\n    }}\n    c * {n}\n}}\n\n",
        next = n + 1
    )
}

fn java_function(n: usize) -> String {
    format!(
        "    /** Function {n}. */\n    public static int fn{n}(int a, String b) {{\n        int c = a + b.length();\n        if (c > 10) {{\n            return fn{next}(c - 1, b);\n        }}\n        return c * {n};\n    }}\n\n",
        next = n + 1
    )
}

/// A generated file of about `target` bytes in `language`.
fn generated(language: Language, function: Generator, target: usize) -> String {
    let (head, tail) = match language.name() {
        "go" => ("package gen\n\n", ""),
        "java" => ("package gen;\n\npublic class Gen {\n", "}\n"),
        _ => ("", ""),
    };
    let mut out = String::with_capacity(target + 1024);
    out.push_str(head);
    let mut n = 0;
    while out.len() + tail.len() < target {
        out.push_str(&function(n));
        n += 1;
    }
    out.push_str(tail);
    out
}

/// Throughput of one file's analysis per language and size; ratios to TypeScript's. The
/// languages take turns within each round, so a burst of load on a shared machine falls on
/// all of them alike; each figure is the median over the rounds.
fn throughput(languages: &[(Language, Generator)]) {
    let sizes = [
        ("16 KB", 16 * 1024, 41),
        ("169 KB", 169 * 1024, 15),
        ("1.7 MB", 1_700 * 1024, 5),
    ];
    println!("analyze() throughput per byte (median; ratio = time per byte / TypeScript's):");
    for (label, bytes, rounds) in sizes {
        let sources: Vec<String> = languages
            .iter()
            .map(|(language, function)| generated(*language, *function, bytes))
            .collect();
        let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(rounds); languages.len()];
        for _ in 0..rounds {
            for (i, (language, _)) in languages.iter().enumerate() {
                let start = Instant::now();
                let analysis = analyze(*language, &sources[i]);
                samples[i].push(start.elapsed());
                assert!(!analysis.symbols.is_empty(), "{}", language.name());
            }
        }
        let mut ts_per_byte = None;
        for (i, (language, _)) in languages.iter().enumerate() {
            let per_byte = median(samples[i].clone()).as_secs_f64() / sources[i].len() as f64;
            let ts = *ts_per_byte.get_or_insert(per_byte);
            println!(
                "  {label:>6} {:<10} {:>7.1} ns/byte  {:>6.1} MB/s  {:.2}x",
                language.name(),
                per_byte * 1e9,
                1e-6 / per_byte,
                per_byte / ts
            );
        }
    }
}

fn main() {
    throughput(&[
        (Language::TypeScript, ts_function),
        (Language::Python, python_function),
        (Language::Go, go_function),
        (Language::Rust, rust_function),
        (Language::Java, java_function),
    ]);

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let bytes = generate(root);
    println!(
        "generated {FILES} files x {FUNCTIONS} functions ({:.1} MB)",
        bytes as f64 / 1e6
    );

    let mut cold = Vec::new();
    let mut index = None;
    for _ in 0..RUNS {
        let fresh = RepoIndex::new(root.to_path_buf());
        let start = Instant::now();
        fresh.build_now();
        cold.push(start.elapsed());
        index = Some(fresh);
    }
    let index = index.unwrap();
    let target = "src/mod500.ts";
    let callers = index.callers(target, "f500_0");
    assert_eq!(callers.len(), 1, "f499_49 calls f500_0: {callers:?}");

    let mut refresh = Vec::new();
    let mut parse_only = Vec::new();
    for run in 1..=RUNS {
        let text = module(500, run);
        let start = Instant::now();
        let _ = analyze(Language::TypeScript, &text);
        parse_only.push(start.elapsed());
        fs::write(root.join(target), &text).unwrap();
        let start = Instant::now();
        let found = index.callers(target, "f500_10");
        refresh.push(start.elapsed());
        assert_eq!(found.len(), 1);
    }

    let mut query = Vec::new();
    for _ in 0..RUNS {
        const N: u32 = 2_000;
        let start = Instant::now();
        for _ in 0..N {
            let found = index.callers(target, "f500_10");
            assert_eq!(found.len(), 1);
        }
        query.push(start.elapsed() / N);
    }

    let mut big = String::new();
    let mut i = 0;
    while big.len() < 1_000_000 {
        big.push_str(&module(i, 0));
        i += 1;
    }
    let mut parse = Vec::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        let analysis = analyze(Language::TypeScript, &big);
        parse.push(start.elapsed());
        assert!(analysis.symbols.len() >= FUNCTIONS);
    }

    let parse_med = median(parse_only.clone());
    let refresh_med = median(refresh.clone());
    println!("medians of {RUNS} runs:");
    println!(
        "  cold index build ({FILES} files):            {}",
        fmt(median(cold))
    );
    println!(
        "  refresh after one change + callers query:  {} (of which parsing the file: {}, rest: {})",
        fmt(refresh_med),
        fmt(parse_med),
        fmt(refresh_med.saturating_sub(parse_med))
    );
    println!(
        "  callers query alone (file unchanged):      {}",
        fmt(median(query))
    );
    println!(
        "  parse + extract of one {:.1} MB TS file:    {}",
        big.len() as f64 / 1e6,
        fmt(median(parse))
    );
}
