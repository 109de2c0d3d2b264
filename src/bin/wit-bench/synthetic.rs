//! A generated repository for the index section when no checkout is at hand: mixed languages
//! (Python, TypeScript, Go, Rust, Java in about the proportions of a polyglot monorepo),
//! realistic file sizes (most files 2-40 KB, one in twenty over 64 KB, a few near 500 KB),
//! packages of a dozen files importing and calling each other so the call graph has
//! cross-file edges. Deterministic: the same size gives the same files.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;

/// A small deterministic generator (xorshift), so runs compare.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Writes about `total_bytes` of sources under `root` (created; a `.git` directory marks the
/// root). Returns (files, bytes).
pub(crate) fn generate(root: &Path, total_bytes: u64) -> Result<(usize, u64)> {
    std::fs::create_dir_all(root.join(".git"))?;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut written = 0u64;
    let mut files = 0usize;
    let mut package = 0usize;
    while written < total_bytes {
        let language = match rng.below(10) {
            0..=3 => "py",
            4..=6 => "ts",
            7 => "go",
            8 => "rs",
            _ => "java",
        };
        let dir = root.join(format!("pkg{}/{language}{package}", package / 50));
        std::fs::create_dir_all(&dir)?;
        let count = 8 + rng.below(8) as usize;
        for file in 0..count {
            let size = match rng.below(100) {
                0..=59 => 2_000 + rng.below(14_000),
                60..=94 => 16_000 + rng.below(48_000),
                95..=98 => 64_000 + rng.below(136_000),
                _ => 200_000 + rng.below(300_000),
            } as usize;
            let text = source(language, package, file, count, size, &mut rng);
            let name = match language {
                "java" => format!("C{package}x{file}.java"),
                _ => format!("m{file}.{language}"),
            };
            std::fs::write(dir.join(name), &text)?;
            written += text.len() as u64;
            files += 1;
        }
        package += 1;
    }
    Ok((files, written))
}

/// One file of about `size` bytes: functions (and a class) calling local functions and
/// functions of a sibling file.
fn source(
    language: &str,
    package: usize,
    file: usize,
    count: usize,
    size: usize,
    rng: &mut Rng,
) -> String {
    let sibling = (file + 1) % count;
    let mut out = String::with_capacity(size + 512);
    match language {
        "py" => {
            let _ = writeln!(out, "from .m{sibling} import f{sibling}_0\nimport os\n");
        }
        "ts" => {
            let _ = writeln!(out, "import {{ f{sibling}_0 }} from './m{sibling}';\n");
        }
        "go" => {
            let _ = writeln!(out, "package p{package}\n\nimport \"fmt\"\n");
        }
        "rs" => {
            let _ = writeln!(out, "use std::collections::HashMap;\n");
        }
        _ => {
            let _ = writeln!(
                out,
                "package pkg{};\n\nimport java.util.List;\n\npublic class C{package}x{file} {{",
                package / 50
            );
        }
    }
    let mut n = 0;
    while out.len() < size {
        let local = if n > 0 { rng.below(n as u64) } else { 0 };
        let body_lines = 2 + rng.below(12);
        match language {
            "py" => {
                let _ = writeln!(
                    out,
                    "def f{file}_{n}(a, b=None, *args, **kwargs):\n    \"\"\"Function {n}.\"\"\""
                );
                for l in 0..body_lines {
                    let _ = writeln!(
                        out,
                        "    x{l} = f{file}_{local}(a, {l}) if a else os.path.join(str(b), 'v{l}')"
                    );
                }
                let _ = writeln!(out, "    return f{sibling}_0(a)\n");
                if n % 20 == 19 {
                    let _ = writeln!(out, "class K{n}:\n    def m(self, v):\n        return f{file}_{local}(v)\n\n    def n(self):\n        return self.m(1)\n");
                }
            }
            "ts" => {
                let _ = writeln!(out, "/** Function {n}. */\nexport function f{file}_{n}(a: number, b: string = \"x\"): number {{");
                for l in 0..body_lines {
                    let _ = writeln!(
                        out,
                        "  const x{l} = a > {l} ? f{file}_{local}(a - 1, b) : b.length + {l};"
                    );
                }
                let _ = writeln!(out, "  return f{sibling}_0(a, b);\n}}\n");
                if n % 20 == 19 {
                    let _ = writeln!(out, "export class K{n} {{\n  m(v: number): number {{ return f{file}_{local}(v, 'k'); }}\n  n(): number {{ return this.m(1); }}\n}}\n");
                }
            }
            "go" => {
                let _ = writeln!(
                    out,
                    "// F{file}x{n} is function {n}.\nfunc F{file}x{n}(a int, b string) int {{"
                );
                for l in 0..body_lines {
                    let _ = writeln!(
                        out,
                        "\tif a > {l} {{\n\t\ta = F{file}x{local}(a-1, b) + {l}\n\t}}"
                    );
                }
                let _ = writeln!(out, "\tfmt.Println(b)\n\treturn F{sibling}x0(a, b)\n}}\n");
            }
            "rs" => {
                let _ = writeln!(out, "/// Function {n}.\npub fn f{file}_{n}(a: u64, b: &str) -> u64 {{\n    let mut m: HashMap<u64, u64> = HashMap::new();");
                for l in 0..body_lines {
                    let _ = writeln!(out, "    m.insert({l}, if a > {l} {{ f{file}_{local}(a - 1, b) }} else {{ {l} }});");
                }
                let _ = writeln!(out, "    m.len() as u64\n}}\n");
            }
            _ => {
                let _ = writeln!(
                    out,
                    "    /** Method {n}. */\n    public static int m{n}(int a, String b) {{"
                );
                for l in 0..body_lines {
                    let _ = writeln!(
                        out,
                        "        if (a > {l}) {{ a = m{local}(a - 1, b) + {l}; }}"
                    );
                }
                let _ = writeln!(
                    out,
                    "        return C{package}x{sibling}.m0(a, b);\n    }}\n"
                );
            }
        }
        n += 1;
    }
    if language == "java" {
        out.push_str("}\n");
    }
    out
}
