//! Go: an import path inside the module named by the nearest `go.mod` is a directory of the
//! repository; `pkg.F` is the top-level `F` of one of that directory's `.go` files.

use super::{Found, Repo};

pub(super) fn import(repo: &dyn Repo, from: &str, module: &str, path: &[String]) -> Found {
    let Some((root, module_path)) = repo.go_module(from) else {
        return Found::default();
    };
    let rest = if module == module_path {
        ""
    } else if let Some(rest) = module
        .strip_prefix(module_path)
        .and_then(|r| r.strip_prefix('/'))
    {
        rest
    } else {
        // Another module or the standard library.
        return Found::default();
    };
    let dir = match (root.is_empty(), rest.is_empty()) {
        (true, _) => rest.to_owned(),
        (false, true) => root.to_owned(),
        (false, false) => format!("{root}/{rest}"),
    };
    let qualified = path.join(".");
    let mut found = Found {
        may_appear: true,
        ..Found::default()
    };
    for file in repo.files_in_dir(&dir) {
        if !file.ends_with(".go") {
            continue;
        }
        found.consulted.push(file.to_owned());
        if repo
            .exports(file)
            .is_some_and(|a| a.callable_symbol(&qualified))
        {
            found.targets.push((file.to_owned(), qualified.clone()));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::super::testing::MemRepo;
    use super::super::{import, package};
    use crate::analysis::language::ModuleStyle;

    fn names(found: &super::Found) -> Vec<String> {
        found
            .targets
            .iter()
            .map(|(f, q)| format!("{f}:{q}"))
            .collect()
    }

    #[test]
    fn imports_inside_the_module_name_directories() {
        let mut repo = MemRepo::new(&[
            (
                "svc/geom/a.go",
                "package geom\nfunc Area() int { return 1 }\n",
            ),
            ("svc/geom/b.go", "package geom\nfunc Other() {}\n"),
            ("svc/main.go", "package main\n"),
            (
                "elsewhere/geom/a.go",
                "package geom\nfunc Area() int { return 2 }\n",
            ),
        ]);
        repo.go_modules = vec![("svc".into(), "example.com/svc".into())];
        let path = vec!["Area".to_owned()];
        let found = import(
            ModuleStyle::Go,
            &repo,
            "svc/main.go",
            "example.com/svc/geom",
            &path,
        );
        assert_eq!(names(&found), ["svc/geom/a.go:Area"]);
        assert_eq!(found.consulted, ["svc/geom/a.go", "svc/geom/b.go"]);
        let std = import(ModuleStyle::Go, &repo, "svc/main.go", "fmt", &path);
        assert!(std.targets.is_empty() && !std.may_appear);
    }

    #[test]
    fn the_package_is_the_directory() {
        let repo = MemRepo::new(&[
            ("p/a.go", "package p\nfunc A() { b() }\n"),
            ("p/b.go", "package p\nfunc b() {}\n"),
            ("q/b.go", "package q\nfunc b() {}\n"),
        ]);
        let found = package(ModuleStyle::Go, &repo, "p/a.go", &["b".to_owned()]);
        assert_eq!(names(&found), ["p/b.go:b"]);
    }
}
