//! Java: `import a.b.C` names the file `a/b/C.java` under any source root; a call through it
//! (`C.m()`, a static import `m()`, `new C()`) is the fully qualified name `a.b.C.m`, whose
//! longest prefix that is a file names the file and whose rest, from the class on, the symbol.

use super::{defined, Found, Repo};
use crate::analysis::language::ModuleStyle;

/// Packages whose classes are never files of the repository.
const EXTERNAL: [&str; 3] = ["java.", "javax.", "jdk."];

pub(super) fn import(repo: &dyn Repo, _from: &str, module: &str, path: &[String]) -> Found {
    let mut found = Found::default();
    if EXTERNAL.iter().any(|p| module.starts_with(p)) {
        return found;
    }
    found.may_appear = true;
    let mut fqn: Vec<String> = module.split('.').map(str::to_owned).collect();
    fqn.pop();
    fqn.extend(path.iter().cloned());
    for k in (1..fqn.len()).rev() {
        let suffix = format!("{}.java", fqn[..k].join("/"));
        let name = format!("{}.java", fqn[k - 1]);
        let files: Vec<&str> = repo
            .files_named(&name)
            .into_iter()
            .filter(|f| *f == suffix || f.ends_with(&format!("/{suffix}")))
            .collect();
        // Two source roots with the same class: the import does not say which, so neither.
        let [file] = files[..] else {
            if files.is_empty() {
                continue;
            }
            found
                .consulted
                .extend(files.iter().map(|f| (*f).to_owned()));
            break;
        };
        found.consulted.push(file.to_owned());
        if let Some(qualified) = repo
            .exports(file)
            .and_then(|a| defined(ModuleStyle::Java, a, &fqn[k - 1..]))
        {
            found.targets.push((file.to_owned(), qualified));
        }
        break;
    }
    found
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::super::testing::MemRepo;
    use super::super::{import, package};
    use crate::analysis::language::ModuleStyle;

    fn strings(path: &[&str]) -> Vec<String> {
        path.iter().map(|s| (*s).to_owned()).collect()
    }

    fn targets(found: super::Found) -> Vec<String> {
        found
            .targets
            .into_iter()
            .map(|(f, q)| format!("{f}:{q}"))
            .collect()
    }

    #[test]
    fn imports_name_files_under_any_source_root() {
        let repo = MemRepo::new(&[
            (
                "src/main/java/a/b/C.java",
                "package a.b;\npublic class C {\n  public C() {}\n  public static int m() { return 1; }\n  public static class In { static void n() {} }\n}\n",
            ),
            ("src/main/java/a/b/D.java", "package a.b;\nclass D {}\n"),
            ("other/x/C.java", "package x;\nclass C { static int m() { return 2; } }\n"),
        ]);
        let r = |module: &str, path: &[&str]| {
            targets(import(
                ModuleStyle::Java,
                &repo,
                "app/App.java",
                module,
                &strings(path),
            ))
        };
        assert_eq!(r("a.b.C", &["C", "m"]), ["src/main/java/a/b/C.java:C.m"]);
        assert_eq!(
            r("a.b.C.m", &["m"]),
            ["src/main/java/a/b/C.java:C.m"],
            "static import"
        );
        assert_eq!(r("a.b.C", &["C", "C"]), ["src/main/java/a/b/C.java:C.C"]);
        assert_eq!(
            r("a.b.D", &["D", "D"]),
            ["src/main/java/a/b/D.java:D"],
            "no constructor"
        );
        assert_eq!(
            r("a.b.C", &["C", "In", "n"]),
            ["src/main/java/a/b/C.java:C.In.n"]
        );
        assert!(r("java.util.List", &["List", "of"]).is_empty());
        assert!(r("a.b.C", &["C", "missing"]).is_empty());
    }

    #[test]
    fn the_package_is_the_directory() {
        let repo = MemRepo::new(&[
            (
                "p/A.java",
                "package p;\nclass A { void run() { B.util(); } }\n",
            ),
            (
                "p/B.java",
                "package p;\nclass B { static void util() {} }\n",
            ),
            (
                "q/B.java",
                "package q;\nclass B { static void util() {} }\n",
            ),
        ]);
        let found = package(
            ModuleStyle::Java,
            &repo,
            "p/A.java",
            &strings(&["B", "util"]),
        );
        assert_eq!(targets(found), ["p/B.java:B.util"]);
    }
}
