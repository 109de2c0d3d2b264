//! ECMAScript and Python module specifiers: which repository file an import names. Pure string
//! work over relative paths; `exists` says whether a path is a file the index knows.

use crate::analysis::language::ModuleStyle;

/// Extensions tried, in order, for an ECMAScript specifier written without one.
const ES_EXTENSIONS: [&str; 8] = ["ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs"];

/// The file that `module`, imported from `from_file`, refers to, if the repository has it.
pub(crate) fn resolve_module(
    style: ModuleStyle,
    from_file: &str,
    module: &str,
    exists: &dyn Fn(&str) -> bool,
) -> Option<String> {
    let dir = parent_dir(from_file);
    match style {
        ModuleStyle::EcmaScript => resolve_es(dir, module, exists),
        ModuleStyle::Python => resolve_python(dir, module, exists),
        ModuleStyle::Go | ModuleStyle::Rust | ModuleStyle::Java => None,
    }
}

/// The Python module `child` inside `module` (`from . import m` -> `.m`).
pub(crate) fn python_submodule(module: &str, child: &str) -> String {
    if module.ends_with('.') {
        format!("{module}{child}")
    } else {
        format!("{module}.{child}")
    }
}

/// The directory of a relative path (`""` at the root).
pub(crate) fn parent_dir(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

fn resolve_es(dir: &str, spec: &str, exists: &dyn Fn(&str) -> bool) -> Option<String> {
    let relative = spec == "." || spec == ".." || spec.starts_with("./") || spec.starts_with("../");
    if !relative {
        return None;
    }
    let joined = join(dir, spec)?;
    let mut candidates: Vec<String> = Vec::new();
    if let Some((stem, ext)) = joined.rsplit_once('.') {
        if !stem.ends_with('/') && !stem.is_empty() && ES_EXTENSIONS.contains(&ext) {
            candidates.push(joined.clone());
            // ESM-style TypeScript imports name the emitted `.js` file.
            let ts_like: &[&str] = match ext {
                "js" => &["ts", "tsx"],
                "jsx" => &["tsx"],
                "mjs" => &["mts"],
                "cjs" => &["cts"],
                _ => &[],
            };
            candidates.extend(ts_like.iter().map(|e| format!("{stem}.{e}")));
        }
    }
    if !joined.is_empty() {
        candidates.extend(ES_EXTENSIONS.iter().map(|e| format!("{joined}.{e}")));
    }
    let index = if joined.is_empty() {
        "index".to_owned()
    } else {
        format!("{joined}/index")
    };
    candidates.extend(ES_EXTENSIONS.iter().map(|e| format!("{index}.{e}")));
    candidates.into_iter().find(|c| exists(c))
}

fn resolve_python(dir: &str, module: &str, exists: &dyn Fn(&str) -> bool) -> Option<String> {
    let dots = module.bytes().take_while(|&b| b == b'.').count();
    let rest = &module[dots..];
    let parts: Vec<&str> = rest.split('.').filter(|p| !p.is_empty()).collect();
    if parts.iter().any(|p| p.contains('/')) {
        return None;
    }
    let bases: Vec<String> = if dots > 0 {
        let mut base = dir.to_owned();
        for _ in 1..dots {
            if base.is_empty() {
                return None;
            }
            base = parent_dir(&base).to_owned();
        }
        vec![base]
    } else {
        // Absolute imports: from the root first, then from each enclosing directory (a `src/`
        // layout or a package that is not at the root).
        let mut bases = vec![String::new()];
        let mut d = dir;
        while !d.is_empty() {
            bases.push(d.to_owned());
            d = parent_dir(d);
        }
        bases
    };
    for base in bases {
        let mut path = base;
        for part in &parts {
            if !path.is_empty() {
                path.push('/');
            }
            path.push_str(part);
        }
        let prefix = if path.is_empty() {
            String::new()
        } else {
            format!("{path}/")
        };
        let mut candidates = Vec::new();
        if !parts.is_empty() {
            candidates.push(format!("{path}.py"));
            candidates.push(format!("{path}.pyi"));
        }
        candidates.push(format!("{prefix}__init__.py"));
        candidates.push(format!("{prefix}__init__.pyi"));
        if let Some(found) = candidates.into_iter().find(|c| exists(c)) {
            return Some(found);
        }
    }
    None
}

/// Joins a relative specifier to a directory lexically; `None` when it leaves the root.
pub(crate) fn join(dir: &str, spec: &str) -> Option<String> {
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for seg in spec.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn within(files: &'static [&'static str]) -> impl Fn(&str) -> bool {
        move |p: &str| files.contains(&p)
    }

    #[test]
    fn ecmascript_relative_specifiers() {
        let files = within(&["src/util.ts", "src/lib/index.tsx", "lib/x.js", "src/esm.ts"]);
        let r =
            |from: &str, spec: &str| resolve_module(ModuleStyle::EcmaScript, from, spec, &files);
        assert_eq!(r("src/a.ts", "./util").as_deref(), Some("src/util.ts"));
        assert_eq!(r("src/a.ts", "./util.ts").as_deref(), Some("src/util.ts"));
        assert_eq!(r("src/a.ts", "./lib").as_deref(), Some("src/lib/index.tsx"));
        assert_eq!(
            r("src/a.ts", "./lib/index").as_deref(),
            Some("src/lib/index.tsx")
        );
        assert_eq!(
            r("src/deep/a.ts", "../util").as_deref(),
            Some("src/util.ts")
        );
        assert_eq!(r("src/a.ts", "../lib/x").as_deref(), Some("lib/x.js"));
        assert_eq!(r("src/a.ts", "./esm.js").as_deref(), Some("src/esm.ts"));
        assert_eq!(r("src/a.ts", "util"), None, "bare specifiers are packages");
        assert_eq!(r("src/a.ts", "../../util"), None, "never leaves the root");
        assert_eq!(r("src/a.ts", "./missing"), None);
    }

    #[test]
    fn python_modules() {
        let files = within(&[
            "pkg/__init__.py",
            "pkg/m.py",
            "pkg/sub/n.py",
            "src/app/core.py",
            "top.py",
        ]);
        let r = |from: &str, m: &str| resolve_module(ModuleStyle::Python, from, m, &files);
        assert_eq!(r("pkg/a.py", ".m").as_deref(), Some("pkg/m.py"));
        assert_eq!(r("pkg/a.py", ".").as_deref(), Some("pkg/__init__.py"));
        assert_eq!(r("pkg/sub/x.py", "..m").as_deref(), Some("pkg/m.py"));
        assert_eq!(r("pkg/sub/x.py", ".n").as_deref(), Some("pkg/sub/n.py"));
        assert_eq!(r("other/a.py", "pkg.m").as_deref(), Some("pkg/m.py"));
        assert_eq!(r("other/a.py", "pkg").as_deref(), Some("pkg/__init__.py"));
        assert_eq!(
            r("src/app/main.py", "app.core").as_deref(),
            Some("src/app/core.py")
        );
        assert_eq!(r("a.py", "top").as_deref(), Some("top.py"));
        assert_eq!(r("a.py", "..top"), None);
        assert_eq!(r("a.py", "os.path"), None);
        assert_eq!(python_submodule(".", "m"), ".m");
        assert_eq!(python_submodule("pkg", "m"), "pkg.m");
    }
}
