//! Cross-file resolution: which symbol of which repository file a call that the calling file
//! could not resolve goes to. One resolver per [`ModuleStyle`]; each is pure work over a
//! [`Repo`] view of the indexed files, so the call graph (`graph`) stays free of language
//! rules and the resolvers are unit-tested on in-memory file sets.

mod go;
mod java;
mod paths;
mod rust;

use super::language::ModuleStyle;
use super::model::FileAnalysis;

pub(crate) use paths::parent_dir;

/// What a resolver asks about one file's symbols.
pub(crate) trait Exports {
    /// Whether a call can go to the symbol of this qualified name (see
    /// [`FileAnalysis::callable_symbol`]).
    fn callable_symbol(&self, qualified_name: &str) -> bool;
    /// The qualified name an imported `path` names in this file (see
    /// [`FileAnalysis::export_target`]).
    fn export_target(&self, path: &[String]) -> Option<String>;
}

impl Exports for FileAnalysis {
    fn callable_symbol(&self, qualified_name: &str) -> bool {
        FileAnalysis::callable_symbol(self, qualified_name)
    }

    fn export_target(&self, path: &[String]) -> Option<String> {
        FileAnalysis::export_target(self, path)
    }
}

/// What a resolver may ask about the indexed repository.
pub(crate) trait Repo {
    /// Whether the index knows the file.
    fn exists(&self, file: &str) -> bool;
    /// The analysis of an indexed file (a view that keeps whole analyses; the call graph
    /// keeps outlines and answers [`Repo::exports`] instead).
    fn analysis(&self, _file: &str) -> Option<&FileAnalysis> {
        None
    }
    /// What resolution needs of an indexed file's symbols.
    fn exports(&self, file: &str) -> Option<&dyn Exports> {
        self.analysis(file).map(|a| a as &dyn Exports)
    }
    /// The indexed files directly in `dir` (`""` is the root), sorted.
    fn files_in_dir(&self, dir: &str) -> Vec<&str>;
    /// The indexed files whose name (last path segment) is `name`, sorted.
    fn files_named(&self, name: &str) -> Vec<&str>;
    /// The Go module that contains `file`: the directory of the nearest `go.mod` and the
    /// module path it declares.
    fn go_module(&self, file: &str) -> Option<(&str, &str)>;
}

/// The outcome of resolving one call target.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    /// The symbols the call goes to: (file, qualified name).
    pub targets: Vec<(String, String)>,
    /// The files whose content decided the answer: a change there re-resolves the caller.
    pub consulted: Vec<String>,
    /// Whether a file that does not exist yet could change the answer.
    pub may_appear: bool,
}

/// Resolves a call through an import: `module` as written in `from`, `path` the names after
/// it (`["f"]`, `["C", "m"]`).
pub(crate) fn import(
    style: ModuleStyle,
    repo: &dyn Repo,
    from: &str,
    module: &str,
    path: &[String],
) -> Found {
    match style {
        ModuleStyle::EcmaScript | ModuleStyle::Python => {
            ecma_or_python(style, repo, from, module, path)
        }
        ModuleStyle::Go => go::import(repo, from, module, path),
        ModuleStyle::Rust => rust::import(repo, from, module, path),
        ModuleStyle::Java => java::import(repo, from, module, path),
    }
}

/// Resolves a name the calling file left to its package (Go: the directory's other files;
/// Java: the package's other classes).
pub(crate) fn package(style: ModuleStyle, repo: &dyn Repo, from: &str, path: &[String]) -> Found {
    match style {
        ModuleStyle::Go | ModuleStyle::Java => {
            let qualified = path.join(".");
            let fallback = constructor_fallback(style, path);
            let mut found = Found {
                may_appear: true,
                ..Found::default()
            };
            let ext = from.rsplit_once('.').map_or("", |(_, e)| e);
            for file in repo.files_in_dir(parent_dir(from)) {
                if file == from || !file.ends_with(&format!(".{ext}")) {
                    continue;
                }
                let Some(analysis) = repo.exports(file) else {
                    continue;
                };
                found.consulted.push(file.to_owned());
                let name = if analysis.callable_symbol(&qualified) {
                    Some(qualified.clone())
                } else {
                    fallback.clone().filter(|f| analysis.callable_symbol(f))
                };
                if let Some(name) = name {
                    found.targets.push((file.to_owned(), name));
                }
            }
            found
        }
        ModuleStyle::EcmaScript | ModuleStyle::Python | ModuleStyle::Rust => Found::default(),
    }
}

/// For `new T(..)` (`[.., T, T]`) in Java: the class `T` when it declares no constructor.
fn constructor_fallback(style: ModuleStyle, path: &[String]) -> Option<String> {
    match (style, path) {
        (ModuleStyle::Java, [.., a, b]) if a == b => Some(path[..path.len() - 1].join(".")),
        _ => None,
    }
}

/// The qualified name `path` means in `analysis`, if it defines it (with the Java constructor
/// fallback).
fn defined(style: ModuleStyle, analysis: &dyn Exports, path: &[String]) -> Option<String> {
    let qualified = path.join(".");
    if analysis.callable_symbol(&qualified) {
        return Some(qualified);
    }
    constructor_fallback(style, path).filter(|f| analysis.callable_symbol(f))
}

fn ecma_or_python(
    style: ModuleStyle,
    repo: &dyn Repo,
    from: &str,
    module: &str,
    path: &[String],
) -> Found {
    let exists = |p: &str| repo.exists(p);
    let mut found = Found::default();
    let target_in = |file: &str, path: &[String]| {
        repo.exports(file)
            .and_then(|a| a.export_target(path))
            .map(|q| (file.to_owned(), q))
    };
    let direct = paths::resolve_module(style, from, module, &exists);
    if let Some(file) = &direct {
        found.consulted.push(file.clone());
        found.targets.extend(target_in(file, path));
    }
    // Python: `from . import m; m.f()` names a submodule.
    if found.targets.is_empty() && style == ModuleStyle::Python && path.len() == 2 {
        let sub = paths::python_submodule(module, &path[0]);
        if let Some(file) = paths::resolve_module(style, from, &sub, &exists) {
            found.consulted.push(file.clone());
            found.targets.extend(target_in(&file, &path[1..]));
        } else if direct.is_none() {
            found.may_appear = true;
        }
    } else if direct.is_none() {
        found.may_appear = match style {
            ModuleStyle::EcmaScript => module.starts_with('.'),
            _ => true,
        };
    }
    found
}

#[cfg(test)]
pub(crate) mod testing {
    //! An in-memory [`Repo`] for the resolvers' and the graph's tests.

    use std::collections::BTreeMap;

    use super::Repo;
    use crate::analysis::language::Language;
    use crate::analysis::model::FileAnalysis;

    /// Files analysed from source text, plus `go.mod` modules.
    #[derive(Default)]
    pub(crate) struct MemRepo {
        pub files: BTreeMap<String, FileAnalysis>,
        pub go_modules: Vec<(String, String)>,
    }

    impl MemRepo {
        /// A repository of these (path, source) files.
        pub(crate) fn new(files: &[(&str, &str)]) -> MemRepo {
            let mut repo = MemRepo::default();
            for (path, source) in files {
                let language = Language::for_path(path).unwrap_or(Language::TypeScript);
                repo.files.insert(
                    (*path).to_owned(),
                    crate::analysis::analyze(language, source),
                );
            }
            repo
        }
    }

    impl Repo for MemRepo {
        fn exists(&self, file: &str) -> bool {
            self.files.contains_key(file)
        }
        fn analysis(&self, file: &str) -> Option<&FileAnalysis> {
            self.files.get(file)
        }
        fn files_in_dir(&self, dir: &str) -> Vec<&str> {
            self.files
                .keys()
                .filter(|f| super::parent_dir(f) == dir)
                .map(String::as_str)
                .collect()
        }
        fn files_named(&self, name: &str) -> Vec<&str> {
            self.files
                .keys()
                .filter(|f| f.rsplit('/').next() == Some(name))
                .map(String::as_str)
                .collect()
        }
        fn go_module(&self, file: &str) -> Option<(&str, &str)> {
            self.go_modules
                .iter()
                .filter(|(dir, _)| dir.is_empty() || file.starts_with(&format!("{dir}/")))
                .max_by_key(|(dir, _)| dir.len())
                .map(|(d, m)| (d.as_str(), m.as_str()))
        }
    }
}
