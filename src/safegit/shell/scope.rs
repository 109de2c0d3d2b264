//! Whether a file is within a risky git call's pathspecs, as git would match them: relative
//! to the call's directory, `:/` from the top, `.`/`..` folded, globs matching across `/`
//! (git's default pathspec globbing, which is wider than the shell's: whatever the shell
//! would have expanded a glob to, git's reading of the same pattern covers it). What the gate
//! cannot know (a word only known when the line runs, pathspec magic other than `:/`) covers
//! every file.

use std::path::Path;

use super::git::{Risk, Scope};

/// Whether `file` (relative to `root`, the top of the work tree the call acts on) is within
/// the risk's pathspecs.
pub fn in_scope(root: &Path, risk: &Risk, file: &str) -> bool {
    let Scope::Paths(specs) = &risk.scope else {
        return true;
    };
    let base = risk.work_tree.clone().unwrap_or_else(|| risk.dir.clone());
    specs.iter().any(|spec| {
        if spec.dynamic {
            return true;
        }
        let text = spec.text.as_str();
        let (relative_to_root, pattern) = if let Some(rest) = text.strip_prefix(":/") {
            (true, rest.to_string())
        } else if text.starts_with(':') {
            // Other pathspec magic: assume it may match.
            return true;
        } else {
            (false, text.to_string())
        };
        let full = if relative_to_root {
            root.join(&pattern)
        } else {
            base.join(&pattern)
        };
        let Some(relative) = relative_to(root, &full) else {
            return false;
        };
        if spec.glob || pattern.contains(['*', '?', '[']) {
            return glob_match(&relative, file);
        }
        relative.is_empty() || file == relative || file.starts_with(&format!("{relative}/"))
    })
}

/// `path` relative to `root`, `.`/`..` folded; `None` outside it.
pub fn relative_to(root: &Path, path: &Path) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    let mut root_parts: Vec<String> = Vec::new();
    for (target, source) in [(&mut root_parts, root), (&mut parts, path)] {
        for component in source.components() {
            match component {
                std::path::Component::CurDir => {}
                std::path::Component::ParentDir => {
                    target.pop();
                }
                other => target.push(other.as_os_str().to_string_lossy().into_owned()),
            }
        }
    }
    if parts.len() < root_parts.len() || parts[..root_parts.len()] != root_parts[..] {
        return None;
    }
    Some(parts[root_parts.len()..].join("/"))
}

/// A git pathspec glob: `*` and `?` match any characters (`/` too), `[…]` a class (ranges,
/// `!`/`^` negation). A pattern that matches a directory matches what is under it.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        let step = match p.get(pi) {
            Some('*') => {
                star = Some(pi);
                mark = ti;
                pi += 1;
                continue;
            }
            Some('?') => Some(pi + 1),
            Some('[') => class(&p, pi, t[ti]),
            Some(c) if *c == t[ti] => Some(pi + 1),
            None if t[ti] == '/' && pi > 0 => return true,
            _ => None,
        };
        match step {
            Some(next) => {
                pi = next;
                ti += 1;
            }
            None => match star {
                Some(at) => {
                    pi = at + 1;
                    mark += 1;
                    ti = mark;
                }
                None => return false,
            },
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// Where the class opening at `p[open]` ends (just after its `]`) when it matches `c`.
fn class(p: &[char], open: usize, c: char) -> Option<usize> {
    let mut at = open + 1;
    let negated = matches!(p.get(at), Some('!' | '^'));
    if negated {
        at += 1;
    }
    let mut matched = false;
    let mut first = true;
    while let Some(&item) = p.get(at) {
        if item == ']' && !first {
            return (matched != negated).then_some(at + 1);
        }
        first = false;
        if p.get(at + 1) == Some(&'-') && p.get(at + 2).is_some_and(|end| *end != ']') {
            let end = p[at + 2];
            matched |= item <= c && c <= end;
            at += 3;
        } else {
            matched |= item == c;
            at += 1;
        }
    }
    // No closing `]`: git reads the `[` as itself.
    (c == '[').then_some(open + 1)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::super::git::Effect;
    use super::super::words::Word;
    use super::*;

    #[test]
    fn pathspecs_and_globs() {
        let root = Path::new("/repo");
        let risk = |dir: &str, specs: &[&str]| Risk {
            dir: PathBuf::from(dir),
            work_tree: None,
            command: "git add".into(),
            effect: Effect::Takes,
            scope: Scope::Paths(specs.iter().map(|s| Word::plain(s)).collect()),
        };
        assert!(in_scope(root, &risk("/repo", &["."]), "src/a.ts"));
        assert!(in_scope(root, &risk("/repo/src", &["."]), "src/a.ts"));
        assert!(!in_scope(root, &risk("/repo/lib", &["."]), "src/a.ts"));
        assert!(in_scope(
            root,
            &risk("/repo/lib", &["../src/a.ts"]),
            "src/a.ts"
        ));
        assert!(in_scope(root, &risk("/repo/lib", &[":/src"]), "src/a.ts"));
        assert!(in_scope(root, &risk("/repo", &["*.ts"]), "src/a.ts"));
        assert!(!in_scope(root, &risk("/repo", &["*.py"]), "src/a.ts"));
        assert!(!in_scope(root, &risk("/repo", &["src/ab.ts"]), "src/a.ts"));
        assert!(glob_match("src/[ab].ts", "src/a.ts") && !glob_match("src/[bc].ts", "src/a.ts"));
        assert!(glob_match("src/[!b].ts", "src/a.ts") && glob_match("src/[a-c].ts", "src/b.ts"));
        assert!(glob_match("sr?", "src/a.ts"));
    }
}
