//! File paths and symbol paths (docs/protocol.md 2.1, 2.2).
//!
//! Normalisation is purely lexical: it never touches the file system (the analysis layer
//! separately refuses to read through symlinks that leave the root).

/// Why a path or symbol path is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The empty string.
    #[error("path is empty")]
    Empty,
    /// Starts with `/`.
    #[error("path must be relative to the repository root")]
    Absolute,
    /// A `..` would climb above the root, on the way or at the end.
    #[error("path leaves the repository root")]
    EscapesRoot,
    /// Only `.`, `/` and folded `..` segments: it names the root itself.
    #[error("path does not name a file")]
    NormalisesToNothing,
    /// Contains `\`.
    #[error("path must use '/' as separator, not '\\'")]
    Backslash,
    /// Contains a NUL byte.
    #[error("path contains a NUL byte")]
    Nul,
    /// A symbol path without `:`.
    #[error("symbol path must have the form 'file:symbol'")]
    MissingColon,
    /// A symbol path with nothing after the `:`.
    #[error("symbol path has an empty symbol name")]
    EmptyName,
}

/// Normalises a repository-relative file path: drops `.` segments and repeated `/`, folds
/// `x/..` pairs. `./src/a.ts`, `src//a.ts` and `src/../src/a.ts` all give `src/a.ts`.
pub fn normalize(path: &str) -> Result<String, PathError> {
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    if path.contains('\0') {
        return Err(PathError::Nul);
    }
    if path.contains('\\') {
        return Err(PathError::Backslash);
    }
    if path.starts_with('/') {
        return Err(PathError::Absolute);
    }
    let mut segments: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if segments.pop().is_none() {
                    return Err(PathError::EscapesRoot);
                }
            }
            other => segments.push(other),
        }
    }
    if segments.is_empty() {
        return Err(PathError::NormalisesToNothing);
    }
    Ok(segments.join("/"))
}

/// Splits `file:name` at the first `:` and normalises the file part; the name is kept as
/// written (it may be qualified, `Class.method`, and may itself contain `:`).
pub fn split_symbol_path(symbol_path: &str) -> Result<(String, String), PathError> {
    let (file, name) = symbol_path.split_once(':').ok_or(PathError::MissingColon)?;
    if name.is_empty() {
        return Err(PathError::EmptyName);
    }
    if name.contains('\0') {
        return Err(PathError::Nul);
    }
    Ok((normalize(file)?, name.to_owned()))
}

/// Normalises a symbol path: `./src//a.ts:f` gives `src/a.ts:f`.
pub fn normalize_symbol_path(symbol_path: &str) -> Result<String, PathError> {
    let (file, name) = split_symbol_path(symbol_path)?;
    Ok(join_symbol_path(&file, &name))
}

/// Joins a normalised file and a symbol name into `file:name`.
pub fn join_symbol_path(file: &str, name: &str) -> String {
    let mut path = String::with_capacity(file.len() + 1 + name.len());
    path.push_str(file);
    path.push(':');
    path.push_str(name);
    path
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    #[test]
    fn normalises_lexically() {
        let cases = [
            ("src/a.ts", "src/a.ts"),
            ("./src/a.ts", "src/a.ts"),
            ("src//a.ts", "src/a.ts"),
            ("src/../src/a.ts", "src/a.ts"),
            ("src/./a.ts", "src/a.ts"),
            ("src/a.ts/", "src/a.ts"),
            ("a.ts", "a.ts"),
            ("././a.ts", "a.ts"),
            ("a/b/../../c.py", "c.py"),
            ("a/b/c/../../d", "a/d"),
            ("src///x//y.ts", "src/x/y.ts"),
            ("..a/b", "..a/b"),
            ("a/...", "a/..."),
            ("dir with space/ü.ts", "dir with space/ü.ts"),
            ("C:/x.ts", "C:/x.ts"),
        ];
        for (input, want) in cases {
            assert_eq!(normalize(input).as_deref(), Ok(want), "{input}");
        }
    }

    #[test]
    fn refuses_bad_paths() {
        let cases = [
            ("", PathError::Empty),
            ("/etc/passwd", PathError::Absolute),
            ("//x", PathError::Absolute),
            ("../a.ts", PathError::EscapesRoot),
            ("..", PathError::EscapesRoot),
            ("src/../../a.ts", PathError::EscapesRoot),
            ("a/../../a/b", PathError::EscapesRoot),
            ("./..", PathError::EscapesRoot),
            (".", PathError::NormalisesToNothing),
            ("./", PathError::NormalisesToNothing),
            ("src/..", PathError::NormalisesToNothing),
            ("a/b/../..", PathError::NormalisesToNothing),
            ("src\\a.ts", PathError::Backslash),
            ("..\\a.ts", PathError::Backslash),
            ("src/a\0.ts", PathError::Nul),
        ];
        for (input, want) in cases {
            assert_eq!(normalize(input), Err(want.clone()), "{input:?}");
        }
    }

    #[test]
    fn normalisation_is_idempotent() {
        for input in ["./a//b/../c.ts", "x/y/z", "a/./b/"] {
            let once = normalize(input).unwrap();
            assert_eq!(normalize(&once).unwrap(), once);
        }
    }

    #[test]
    fn splits_symbol_paths_at_the_first_colon() {
        assert_eq!(
            split_symbol_path("src/a.ts:validateToken").unwrap(),
            ("src/a.ts".into(), "validateToken".into())
        );
        assert_eq!(
            split_symbol_path("./src//a.ts:Class.method").unwrap(),
            ("src/a.ts".into(), "Class.method".into())
        );
        assert_eq!(
            split_symbol_path("a.py:x:y").unwrap(),
            ("a.py".into(), "x:y".into())
        );
        assert_eq!(
            normalize_symbol_path("src/../src/a.ts:f").unwrap(),
            "src/a.ts:f"
        );
    }

    #[test]
    fn refuses_bad_symbol_paths() {
        assert_eq!(split_symbol_path("src/a.ts"), Err(PathError::MissingColon));
        assert_eq!(split_symbol_path("src/a.ts:"), Err(PathError::EmptyName));
        assert_eq!(split_symbol_path(":f"), Err(PathError::Empty));
        assert_eq!(split_symbol_path("../a.ts:f"), Err(PathError::EscapesRoot));
        assert_eq!(split_symbol_path("/a.ts:f"), Err(PathError::Absolute));
        assert_eq!(
            split_symbol_path(".:f"),
            Err(PathError::NormalisesToNothing)
        );
        assert_eq!(split_symbol_path("a\\b.ts:f"), Err(PathError::Backslash));
        assert_eq!(split_symbol_path("a.ts:f\0"), Err(PathError::Nul));
    }

    proptest::proptest! {
        #[test]
        fn normalised_paths_are_clean(input in "[a./\\\\]{0,12}") {
            if let Ok(out) = normalize(&input) {
                proptest::prop_assert!(!out.is_empty());
                proptest::prop_assert!(!out.starts_with('/'));
                proptest::prop_assert!(!out.ends_with('/'));
                proptest::prop_assert!(!out.contains("//"));
                proptest::prop_assert!(out.split('/').all(|s| s != "." && s != ".."));
                proptest::prop_assert_eq!(normalize(&out), Ok(out.clone()));
            }
        }
    }
}
