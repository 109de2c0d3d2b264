//! Rust: paths through modules. A crate's root is the nearest `lib.rs` or `main.rs` above the
//! file; module `a::b` is `a/b.rs` or `a/b/mod.rs` under the root's directory; `crate::`,
//! `super::` and `self::` start from the root, the parent or the current module, and any
//! other first segment is a child module of the current one (`mod x;` or a 2018 path). The
//! longest prefix of the path that is a module file names the file; the rest is the item
//! (`Circle::new` -> `Circle.new`).

use super::{parent_dir, Found, Repo};

const ROOT_FILES: [&str; 2] = ["lib.rs", "main.rs"];

/// Crates whose paths never name a file of the repository.
const EXTERNAL: [&str; 3] = ["std", "core", "alloc"];

pub(super) fn import(repo: &dyn Repo, from: &str, module: &str, path: &[String]) -> Found {
    let mut found = Found::default();
    let Some(root_dir) = crate_dir(repo, from) else {
        return found;
    };
    let Some(current) = module_of(&root_dir, from) else {
        return found;
    };
    let mut segments: Vec<String> = Vec::new();
    let mut parts = module.split("::").filter(|s| !s.is_empty()).peekable();
    match parts.peek().copied() {
        Some("crate") => {
            parts.next();
        }
        Some("self") => {
            parts.next();
            segments = current.clone();
        }
        Some("super") => {
            segments = current.clone();
            while parts.peek() == Some(&"super") {
                parts.next();
                if segments.pop().is_none() {
                    return found;
                }
            }
        }
        Some(first) if EXTERNAL.contains(&first) => return found,
        Some(_) => segments = current.clone(),
        None => return found,
    }
    segments.extend(parts.map(str::to_owned));
    segments.extend(path.iter().cloned());
    found.may_appear = true;
    for k in (0..segments.len()).rev() {
        let Some(file) = module_file(repo, &root_dir, &segments[..k]) else {
            continue;
        };
        found.consulted.push(file.clone());
        let qualified = segments[k..].join(".");
        if repo
            .exports(&file)
            .is_some_and(|a| a.callable_symbol(&qualified))
        {
            found.targets.push((file, qualified));
        }
        break;
    }
    found
}

/// The directory of the crate root above `file`.
fn crate_dir(repo: &dyn Repo, file: &str) -> Option<String> {
    let mut dir = parent_dir(file);
    loop {
        if ROOT_FILES.iter().any(|root| repo.exists(&join(dir, root))) {
            return Some(dir.to_owned());
        }
        if dir.is_empty() {
            return None;
        }
        dir = parent_dir(dir);
    }
}

/// The module path of `file` inside the crate rooted at `root_dir` (`src/a/b.rs` -> `[a, b]`).
fn module_of(root_dir: &str, file: &str) -> Option<Vec<String>> {
    let rel = if root_dir.is_empty() {
        file
    } else {
        file.strip_prefix(root_dir)?.strip_prefix('/')?
    };
    let stem = rel.strip_suffix(".rs")?;
    let mut segments: Vec<String> = stem.split('/').map(str::to_owned).collect();
    match segments.last().map(String::as_str) {
        Some("mod") => {
            segments.pop();
        }
        Some("lib" | "main") if segments.len() == 1 => segments.clear(),
        _ => {}
    }
    Some(segments)
}

/// The file of module `segments` under the crate root, if the repository has it.
fn module_file(repo: &dyn Repo, root_dir: &str, segments: &[String]) -> Option<String> {
    if segments.is_empty() {
        return ROOT_FILES
            .iter()
            .map(|root| join(root_dir, root))
            .find(|f| repo.exists(f));
    }
    let base = join(root_dir, &segments.join("/"));
    [format!("{base}.rs"), format!("{base}/mod.rs")]
        .into_iter()
        .find(|f| repo.exists(f))
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::super::import;
    use super::super::testing::MemRepo;
    use crate::analysis::language::ModuleStyle;

    fn resolve(repo: &MemRepo, from: &str, module: &str, path: &[&str]) -> Vec<String> {
        let path: Vec<String> = path.iter().map(|s| (*s).to_owned()).collect();
        import(ModuleStyle::Rust, repo, from, module, &path)
            .targets
            .into_iter()
            .map(|(f, q)| format!("{f}:{q}"))
            .collect()
    }

    #[test]
    fn paths_map_to_module_files() {
        let repo = MemRepo::new(&[
            ("src/lib.rs", "mod a;\nmod b;\npub fn top() {}\n"),
            (
                "src/a.rs",
                "pub struct C;\nimpl C { pub fn new() -> C { C } }\npub fn f() {}\n",
            ),
            ("src/b/mod.rs", "mod c;\npub fn g() {}\n"),
            ("src/b/c.rs", "pub fn h() {}\n"),
            ("tools/a.rs", "pub fn f() {}\n"),
        ]);
        assert_eq!(
            resolve(&repo, "src/lib.rs", "crate::a", &["f"]),
            ["src/a.rs:f"]
        );
        assert_eq!(
            resolve(&repo, "src/lib.rs", "a", &["C", "new"]),
            ["src/a.rs:C.new"]
        );
        assert_eq!(
            resolve(&repo, "src/b/c.rs", "super", &["g"]),
            ["src/b/mod.rs:g"]
        );
        assert_eq!(
            resolve(&repo, "src/b/c.rs", "super::super::a", &["f"]),
            ["src/a.rs:f"]
        );
        assert_eq!(
            resolve(&repo, "src/b/mod.rs", "self::c", &["h"]),
            ["src/b/c.rs:h"]
        );
        assert_eq!(
            resolve(&repo, "src/b/mod.rs", "c", &["h"]),
            ["src/b/c.rs:h"]
        );
        assert_eq!(
            resolve(&repo, "src/a.rs", "crate", &["top"]),
            ["src/lib.rs:top"]
        );
        assert!(resolve(&repo, "src/lib.rs", "crate::a", &["missing"]).is_empty());
        assert!(resolve(&repo, "src/lib.rs", "std::mem", &["take"]).is_empty());
        assert!(
            resolve(&repo, "src/lib.rs", "super", &["f"]).is_empty(),
            "above the root"
        );
    }
}
