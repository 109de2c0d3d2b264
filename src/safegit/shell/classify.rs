//! What one git subcommand, with its arguments, does to uncommitted work: takes it into the
//! index or a commit, throws it away, or moves the tree under it ([`Effect`]), and on which
//! paths ([`Scope`]). Porcelain and the plumbing that writes the work tree or the index alike;
//! the option grammar is git's own ([`super::grammar`]).
//!
//! It errs only towards "no effect" where git itself refuses: `git rm` of a modified file
//! without `-f`, `git worktree remove` of a dirty worktree without `--force`, `git clean`
//! without `-f` (unless `clean.requireForce` is off).

use std::path::{Path, PathBuf};

use super::config::RepoConfig;
use super::git::{Effect, Scope};
use super::grammar::{self, Args};
use super::words::Word;

/// What a git call does, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// What it does.
    pub effect: Effect,
    /// Where.
    pub scope: Scope,
    /// The worktree it acts on when it is not the call's own (`git worktree remove`).
    pub other_tree: Option<PathBuf>,
}

impl Verdict {
    fn new(effect: Effect, scope: Scope) -> Option<Self> {
        Some(Self {
            effect,
            scope,
            other_tree: None,
        })
    }
}

/// Subcommands git knows that never take, drop or move uncommitted work (no alias can hide
/// behind their names).
pub const HARMLESS: &[&str] = &[
    "status",
    "diff",
    "log",
    "show",
    "branch",
    "tag",
    "fetch",
    "push",
    "remote",
    "config",
    "blame",
    "grep",
    "ls-files",
    "ls-tree",
    "rev-parse",
    "rev-list",
    "describe",
    "shortlog",
    "reflog",
    "cat-file",
    "help",
    "version",
    "init",
    "clone",
    "notes",
    "format-patch",
    "range-diff",
    "whatchanged",
    "for-each-ref",
    "show-ref",
    "symbolic-ref",
    "update-ref",
    "hash-object",
    "write-tree",
    "commit-tree",
    "merge-base",
    "name-rev",
    "bisect",
    "gc",
    "fsck",
    "prune",
    "count-objects",
    "submodule",
    "archive",
    "bundle",
    "check-ignore",
    "check-attr",
    "difftool",
    "mergetool",
    "var",
    "verify-commit",
    "sparse-checkout",
    "cherry",
    "am",
    "cherry-pick",
    "revert",
    "maintenance",
    "lfs",
    "annotate",
    "diff-index",
    "diff-files",
    "diff-tree",
    "merge-tree",
    "mktree",
    "mktag",
    "interpret-trailers",
    "stripspace",
    "column",
    "credential",
    "send-email",
    "request-pull",
    "replace",
    "repack",
    "pack-refs",
    "verify-pack",
    "verify-tag",
    "show-branch",
    "instaweb",
    "gitk",
    "citool",
    "gui",
    "scalar",
    "rerere",
    "backfill",
    "refs",
    "unpack-objects",
    "index-pack",
    "pack-objects",
    "fast-export",
    "fast-import",
    "filter-branch",
    "ls-remote",
    "daemon",
    "upload-pack",
    "receive-pack",
];

/// Subcommands [`classify`] reads.
pub const JUDGED: &[&str] = &[
    "add",
    "commit",
    "stash",
    "checkout",
    "switch",
    "restore",
    "reset",
    "clean",
    "rm",
    "mv",
    "read-tree",
    "checkout-index",
    "apply",
    "update-index",
    "worktree",
    "rebase",
    "merge",
    "pull",
];

/// Whether git itself knows `sub` (so no alias of that name is looked up).
pub fn is_builtin(sub: &str) -> bool {
    HARMLESS.contains(&sub) || JUDGED.contains(&sub)
}

/// What `git SUB ARGS`, run in `dir` (work tree `base`), would do; `None` when it leaves
/// uncommitted work alone.
pub fn classify(
    sub: &str,
    args: &[Word],
    dir: &Path,
    base: &Path,
    config: &dyn RepoConfig,
) -> Option<Verdict> {
    match sub {
        "add" => add(&grammar::ADD.parse(args)),
        "commit" => commit(&grammar::COMMIT.parse(args)),
        "stash" => stash(args),
        "checkout" => checkout(&grammar::CHECKOUT.parse(args), base, config),
        "switch" => switch(&grammar::SWITCH.parse(args), base, config),
        "restore" => restore(&grammar::RESTORE.parse(args)),
        "reset" => {
            let a = grammar::RESET.parse(args);
            if a.has(&["--hard"]) {
                return Verdict::new(Effect::Drops, Scope::All);
            }
            // `--merge` and `--keep` keep local changes (git stops where they would be
            // touched) but move the commit under them.
            let target = a.operands.first();
            let moves =
                a.has(&["--merge", "--keep"]) && target.is_some_and(|t| !is_here(t, base, config));
            moves
                .then_some(())
                .and_then(|()| Verdict::new(Effect::Moves, Scope::All))
        }
        "clean" => {
            let a = grammar::CLEAN.parse(args);
            let forced = a.has(&["-f", "--force", "-i", "--interactive"])
                || !config.clean_requires_force(dir);
            if a.has(&["-n", "--dry-run"]) || !forced {
                return None;
            }
            Verdict::new(Effect::Drops, scope_of(a.paths(0)))
        }
        "rm" => {
            // Without `-f` git refuses to remove a file with changes (staged or not).
            let a = grammar::RM.parse(args);
            if a.has(&["--cached", "-n", "--dry-run"]) || !a.has(&["-f", "--force"]) {
                return None;
            }
            let paths = a.paths(0);
            (!paths.is_empty() || a.has(&["--pathspec-from-file"]))
                .then(|| Verdict::new(Effect::Drops, scope_of(paths)))
                .flatten()
        }
        "mv" => {
            // `-f` overwrites the destination, whatever it holds.
            let a = grammar::MV.parse(args);
            if !a.has(&["-f", "--force"]) || a.has(&["-n", "--dry-run"]) {
                return None;
            }
            let target = a.paths(0).pop()?;
            Verdict::new(Effect::Drops, Scope::Paths(vec![target]))
        }
        "read-tree" => {
            let a = grammar::READ_TREE.parse(args);
            (a.has(&["-u"]) && a.has(&["-m", "--reset"]) && !a.has(&["-n", "--dry-run"]))
                .then_some(())
                .and_then(|()| Verdict::new(Effect::Drops, Scope::All))
        }
        "checkout-index" => {
            let a = grammar::CHECKOUT_INDEX.parse(args);
            if !a.has(&["-f", "--force"]) || a.has(&["--temp", "--prefix"]) {
                return None;
            }
            if a.has(&["-a", "--all", "--stdin"]) {
                return Verdict::new(Effect::Drops, Scope::All);
            }
            let paths = a.paths(0);
            (!paths.is_empty())
                .then(|| Verdict::new(Effect::Drops, Scope::Paths(paths)))
                .flatten()
        }
        "apply" => apply(&grammar::APPLY.parse(args), dir),
        "update-index" => update_index(&grammar::UPDATE_INDEX.parse(args)),
        "worktree" => worktree(args, dir),
        "rebase" => {
            // Git refuses to rebase a tree with changes unless it stashes them first.
            let a = grammar::ANY.parse(args);
            let stashes = (a.has(&["--autostash"]) || config.rebase_autostash(dir))
                && !a.has(&["--no-autostash"]);
            let resumes = a.options.iter().any(|o| {
                matches!(
                    o.as_str(),
                    "--continue"
                        | "--abort"
                        | "--skip"
                        | "--quit"
                        | "--edit-todo"
                        | "--show-current-patch"
                )
            });
            (stashes || resumes && !a.has(&["--quit", "--edit-todo", "--show-current-patch"]))
                .then_some(())
                .and_then(|()| Verdict::new(Effect::Moves, Scope::All))
        }
        "merge" | "pull" => {
            let a = grammar::ANY.parse(args);
            let only_asks = a
                .options
                .iter()
                .any(|o| matches!(o.as_str(), "--help" | "--show-current-patch" | "--quit"));
            (!only_asks)
                .then_some(())
                .and_then(|()| Verdict::new(Effect::Moves, Scope::All))
        }
        _ => None,
    }
}

fn scope_of(paths: Vec<Word>) -> Scope {
    if paths.is_empty() {
        Scope::All
    } else {
        Scope::Paths(paths)
    }
}

fn add(a: &Args) -> Option<Verdict> {
    if a.has(&["-n", "--dry-run", "-N", "--intent-to-add", "--refresh"]) {
        return None;
    }
    let paths = a.paths(0);
    if a.has(&[
        "-A",
        "--all",
        "-u",
        "--update",
        "--no-ignore-removal",
        "--pathspec-from-file",
    ]) {
        return Verdict::new(Effect::Takes, scope_of(paths));
    }
    if a.has(&["-p", "--patch", "-i", "--interactive", "-e", "--edit"]) {
        return Verdict::new(Effect::Takes, scope_of(paths));
    }
    (!paths.is_empty())
        .then(|| Verdict::new(Effect::Takes, Scope::Paths(paths)))
        .flatten()
}

fn commit(a: &Args) -> Option<Verdict> {
    if a.has(&["--dry-run"]) {
        return None;
    }
    let paths = a.paths(0);
    if a.has(&["-a", "--all", "-p", "--patch", "--interactive"]) {
        return Verdict::new(Effect::Takes, scope_of(paths));
    }
    if a.has(&["--pathspec-from-file"]) {
        return Verdict::new(Effect::Takes, Scope::All);
    }
    (!paths.is_empty())
        .then(|| Verdict::new(Effect::Takes, Scope::Paths(paths)))
        .flatten()
}

fn stash(args: &[Word]) -> Option<Verdict> {
    let first = args.first().map(|w| w.text.as_str());
    match first {
        // `drop` and `clear` forget stashes, not the working tree.
        Some("list" | "show" | "create" | "store" | "drop" | "clear") => None,
        Some("apply" | "pop" | "branch") => Verdict::new(Effect::Moves, Scope::All),
        Some("save") => Verdict::new(Effect::Drops, Scope::All),
        Some("push") => stash_push(&grammar::STASH_PUSH.parse(args.get(1..).unwrap_or_default())),
        None => Verdict::new(Effect::Drops, Scope::All),
        // `git stash -p`, `git stash -- path`, `git stash -k`: a push.
        Some(_) => stash_push(&grammar::STASH_PUSH.parse(args)),
    }
}

fn stash_push(a: &Args) -> Option<Verdict> {
    let paths = a.paths(0);
    if a.has(&["--pathspec-from-file"]) {
        return Verdict::new(Effect::Drops, Scope::All);
    }
    Verdict::new(Effect::Drops, scope_of(paths))
}

/// Whether `name` is where the worktree already is (`HEAD`, `@`, the checked-out branch).
fn is_here(name: &Word, base: &Path, config: &dyn RepoConfig) -> bool {
    if name.dynamic {
        return false;
    }
    matches!(name.text.as_str(), "HEAD" | "@")
        || config.current_branch(base).is_some_and(|branch| {
            branch == name.text || format!("refs/heads/{branch}") == name.text
        })
}

fn checkout(a: &Args, base: &Path, config: &dyn RepoConfig) -> Option<Verdict> {
    let forced = a.has(&["-f", "--force"]);
    if a.has(&["-p", "--patch"]) {
        return Verdict::new(Effect::Drops, scope_of(a.paths(0)));
    }
    let creating = a.has(&["-b", "-B", "--orphan"]);
    if a.after_dashes.is_some() || a.has(&["--pathspec-from-file"]) {
        // `git checkout [TREE] -- PATHS`: the first operand before `--` is the tree.
        let skip = usize::from(!a.operands.is_empty());
        let paths = a.paths(skip);
        if paths.is_empty() && !a.has(&["--pathspec-from-file"]) {
            return branch_move(a, creating, forced, base, config);
        }
        return Verdict::new(Effect::Drops, scope_of(paths));
    }
    match a.operands.as_slice() {
        [] => branch_move(a, creating, forced, base, config),
        [only] if !creating && names_a_path(only, base) => {
            Verdict::new(Effect::Drops, Scope::Paths(a.paths(0)))
        }
        [_] => branch_move(a, creating, forced, base, config),
        [_, ..] if creating => branch_move(a, creating, forced, base, config),
        [_, ..] => Verdict::new(Effect::Drops, Scope::Paths(a.paths(1))),
    }
}

/// Whether a single `git checkout` operand is a path rather than a branch: `.`, a glob, a
/// word the line only knows when it runs, or an existing file.
fn names_a_path(word: &Word, base: &Path) -> bool {
    word.text == "." || word.glob || word.dynamic || base.join(&word.text).exists()
}

/// A checkout or switch of a branch: nothing happens to the tree when it stays where it is
/// (creating a branch at `HEAD`, checking out `HEAD`), unless forced (then it is
/// `reset --hard`).
fn branch_move(
    a: &Args,
    creating: bool,
    forced: bool,
    base: &Path,
    config: &dyn RepoConfig,
) -> Option<Verdict> {
    let target = a.operands.first();
    let stays = match target {
        None => true,
        Some(word) => is_here(word, base, config),
    };
    if forced {
        return Verdict::new(Effect::Drops, Scope::All);
    }
    if stays || (creating && target.is_none()) {
        return None;
    }
    Verdict::new(Effect::Moves, Scope::All)
}

fn switch(a: &Args, base: &Path, config: &dyn RepoConfig) -> Option<Verdict> {
    let forced = a.has(&["-f", "--force", "--discard-changes"]);
    if a.has(&["--orphan"]) {
        // An orphan branch starts from an empty tree: every tracked file goes.
        return Verdict::new(
            if forced { Effect::Drops } else { Effect::Moves },
            Scope::All,
        );
    }
    let creating = a.has(&["-c", "-C", "--create", "--force-create"]);
    branch_move(a, creating, forced, base, config)
}

fn restore(a: &Args) -> Option<Verdict> {
    if a.has(&["-S", "--staged"]) && !a.has(&["-W", "--worktree"]) {
        return None;
    }
    let paths = a.paths(0);
    if a.has(&["--pathspec-from-file"]) {
        return Verdict::new(Effect::Drops, Scope::All);
    }
    (!paths.is_empty())
        .then(|| Verdict::new(Effect::Drops, Scope::Paths(paths)))
        .flatten()
}

fn apply(a: &Args, dir: &Path) -> Option<Verdict> {
    let reports_only =
        a.has(&["--stat", "--numstat", "--summary", "--check"]) && !a.has(&["--apply"]);
    if reports_only || a.has(&["--cached"]) {
        return None;
    }
    // The files a patch touches are in the patch: read it when it is a file the line names.
    let patches = a.paths(0);
    let strip = a.value("-p").map_or("1", |w| w.text.as_str()).to_string();
    if patches.is_empty() || strip != "1" || a.has(&["--directory", "--include", "--exclude"]) {
        return Verdict::new(Effect::Drops, Scope::All);
    }
    let mut files = Vec::new();
    for patch in &patches {
        if patch.dynamic || patch.glob || patch.text == "-" {
            return Verdict::new(Effect::Drops, Scope::All);
        }
        match patch_files(&dir.join(&patch.text)) {
            Some(found) => files.extend(found),
            None => return Verdict::new(Effect::Drops, Scope::All),
        }
    }
    // Patch paths are relative to the top of the work tree.
    let words = files
        .into_iter()
        .map(|file| Word::plain(&format!(":/{file}")))
        .collect::<Vec<_>>();
    (!words.is_empty())
        .then(|| Verdict::new(Effect::Drops, Scope::Paths(words)))
        .flatten()
}

/// The largest patch file read.
const MAX_PATCH: u64 = 8 << 20;

/// The files a patch (`git diff` format, `-p1`) changes; `None` when it cannot be read.
fn patch_files(path: &Path) -> Option<Vec<String>> {
    let meta = std::fs::metadata(path).ok()?;
    if meta.len() > MAX_PATCH {
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let mut files: Vec<String> = Vec::new();
    for line in text.lines() {
        let named = line
            .strip_prefix("--- a/")
            .or_else(|| line.strip_prefix("+++ b/"))
            .map(|rest| {
                rest.split('\t')
                    .next()
                    .unwrap_or(rest)
                    .trim_end()
                    .to_string()
            });
        if let Some(file) = named {
            if !files.contains(&file) {
                files.push(file);
            }
        } else if let Some(rest) = line.strip_prefix("diff --git ") {
            // Renames and mode changes name their files only here.
            for part in rest.split(' ') {
                let file = part.strip_prefix("a/").or_else(|| part.strip_prefix("b/"));
                if let Some(file) = file {
                    if !files.iter().any(|f| f == file) {
                        files.push(file.to_string());
                    }
                }
            }
        }
    }
    Some(files)
}

fn update_index(a: &Args) -> Option<Verdict> {
    let paths = a.paths(0);
    if a.has(&["--stdin", "--again", "--index-info"]) && !a.has(&["--refresh", "--really-refresh"])
    {
        return Verdict::new(Effect::Takes, Scope::All);
    }
    let flags_only = a.has(&[
        "--refresh",
        "--really-refresh",
        "--assume-unchanged",
        "--no-assume-unchanged",
        "--skip-worktree",
        "--no-skip-worktree",
        "--cacheinfo",
        "--unresolve",
        "--fsmonitor-valid",
        "--no-fsmonitor-valid",
    ]);
    if paths.is_empty() || (flags_only && !a.has(&["--force-remove"])) {
        return None;
    }
    Verdict::new(Effect::Takes, Scope::Paths(paths))
}

fn worktree(args: &[Word], dir: &Path) -> Option<Verdict> {
    let (first, rest) = args.split_first()?;
    if first.text != "remove" {
        return None;
    }
    let a = grammar::WORKTREE_REMOVE.parse(rest);
    // Without `--force` git refuses to remove a worktree with changes.
    if !a.has(&["-f", "--force"]) {
        return None;
    }
    let target = a.paths(0).into_iter().next()?;
    if target.dynamic {
        return Verdict::new(Effect::CannotTell, Scope::All);
    }
    Some(Verdict {
        effect: Effect::Drops,
        scope: Scope::All,
        other_tree: Some(dir.join(&target.text)),
    })
}
