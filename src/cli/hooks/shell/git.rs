//! Which git commands move or drop uncommitted work, read from the simple commands of a
//! command line ([`super::words`]): wrappers (`env`, `sudo`, `nohup`, `sh -c '…'`, `eval`, …)
//! are looked through, `cd DIR` moves the directory of the commands after it, git's global
//! options (`-C dir`, `-c key=value`, `--git-dir`, `--work-tree`) are honoured and aliases
//! (from `-c alias.x=…` or the repository's configuration) are expanded.
//!
//! The result is what each risky git call would do and to which paths ([`Risk`]); whether
//! anyone's work is at stake there is for the gate to find out.

use std::path::{Path, PathBuf};

use super::words::{self, Command, Word};

/// What a git call would do to uncommitted work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Takes the working tree's changes into a commit or the index (`add -A`, `commit -a`).
    Takes,
    /// Throws the working tree's changes away or out of the tree (`stash`, `checkout --`,
    /// `restore`, `reset --hard`, `clean -f`, `rm`).
    Drops,
    /// Moves the tree to other commits with the changes on top (`switch`, `checkout BRANCH`,
    /// `rebase`, `merge`, `pull`, `stash pop`).
    Moves,
}

impl Effect {
    /// Whether the working tree's text may be lost (a snapshot is taken first).
    pub fn destroys(self) -> bool {
        matches!(self, Self::Drops | Self::Moves)
    }
}

/// The paths a call affects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// The whole working tree.
    All,
    /// These pathspecs, as written, relative to the call's directory.
    Paths(Vec<Word>),
}

/// A git call that moves or drops uncommitted work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Risk {
    /// The directory git runs in (`cd` and `-C` applied).
    pub dir: PathBuf,
    /// `--work-tree`, when given.
    pub work_tree: Option<PathBuf>,
    /// The command as the agent would recognise it (`git stash`, `git add -A`).
    pub command: String,
    /// What it does.
    pub effect: Effect,
    /// Where.
    pub scope: Scope,
}

/// What a command line holds.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Analysis {
    /// The risky git calls, in order.
    pub risks: Vec<Risk>,
    /// Whether any git call was found at all.
    pub has_git: bool,
    /// What could not be read (the gate passes it on as a note).
    pub notes: Vec<String>,
}

/// Looks up `alias.<name>` for a repository directory.
pub trait Aliases {
    /// The alias's value, if the repository at `dir` defines one.
    fn alias(&self, dir: &Path, name: &str) -> Option<String>;
}

/// Reads aliases with `git config` (one process, only for a subcommand git does not know).
pub struct GitConfigAliases;

impl Aliases for GitConfigAliases {
    fn alias(&self, dir: &Path, name: &str) -> Option<String> {
        let output = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["config", "--get", &format!("alias.{name}")])
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
            .filter(|value| !value.is_empty())
    }
}

/// How deep aliases and `sh -c` strings are followed.
const MAX_DEPTH: usize = 6;

/// Reads `line`, run in `cwd`.
pub fn analyse(line: &str, cwd: &Path, aliases: &dyn Aliases) -> Analysis {
    let mut analysis = Analysis::default();
    let mut dir = cwd.to_path_buf();
    line_into(line, &mut dir, aliases, 0, &mut analysis);
    analysis
}

/// A quick test before any parsing: a line that never says `git` (nor `eval`/`sh -c`, whose
/// strings could) holds no git call. Aliases of the shell itself are not followed.
pub fn may_hold_git(line: &str) -> bool {
    line.contains("git")
}

fn line_into(
    line: &str,
    dir: &mut PathBuf,
    aliases: &dyn Aliases,
    depth: usize,
    out: &mut Analysis,
) {
    match words::split_nested(line, depth) {
        Ok(commands) => {
            for command in commands {
                command_into(&command, dir, aliases, depth, out);
            }
        }
        Err(error) => out.notes.push(format!(
            "command line not understood ({error}); not checked"
        )),
    }
}

fn command_into(
    command: &Command,
    dir: &mut PathBuf,
    aliases: &dyn Aliases,
    depth: usize,
    out: &mut Analysis,
) {
    let words = unwrap(command);
    let Some(first) = words.first() else {
        return;
    };
    let name = first.text.rsplit('/').next().unwrap_or_default();
    match name {
        "cd" | "pushd" => {
            if let Some(target) = words
                .get(1)
                .filter(|w| !w.dynamic && !w.text.starts_with('-'))
            {
                *dir = dir.join(&target.text);
            }
        }
        "git" => git_into(&words[1..], dir, None, aliases, depth, out),
        "sh" | "bash" | "zsh" | "dash" | "ksh" => {
            let script = words.iter().skip(1).position(|word| {
                word.text.starts_with('-')
                    && !word.text.starts_with("--")
                    && word.text.contains('c')
            });
            if let Some(at) = script {
                if let Some(text) = words.get(at + 2) {
                    if depth < MAX_DEPTH {
                        let mut inner = dir.clone();
                        line_into(&text.text, &mut inner, aliases, depth + 1, out);
                    }
                }
            }
        }
        "eval" if depth < MAX_DEPTH => {
            let text: Vec<&str> = words[1..].iter().map(|w| w.text.as_str()).collect();
            line_into(&text.join(" "), dir, aliases, depth + 1, out);
        }
        _ => {}
    }
}

/// The command without leading assignments and wrappers that run their arguments.
fn unwrap(command: &Command) -> Vec<Word> {
    let mut words: &[Word] = command;
    loop {
        let Some(first) = words.first() else {
            return Vec::new();
        };
        if is_assignment(&first.text) {
            words = &words[1..];
            continue;
        }
        let name = first.text.rsplit('/').next().unwrap_or_default();
        // Wrapper name → its options that take a value.
        let valued: &[&str] = match name {
            "env" => &["-u", "-C", "-S", "--unset", "--chdir"],
            "sudo" => &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"],
            "nice" => &["-n"],
            "command" | "exec" | "nohup" | "time" | "builtin" | "stdbuf" | "ionice" | "xargs" => {
                &[]
            }
            "timeout" => {
                // `timeout [opts] DURATION cmd`.
                let mut rest = &words[1..];
                while rest.first().is_some_and(|w| w.text.starts_with('-')) {
                    rest = &rest[1..];
                }
                words = rest.get(1..).unwrap_or_default();
                continue;
            }
            _ => return words.to_vec(),
        };
        let mut rest = &words[1..];
        while let Some(word) = rest.first() {
            if word.text == "--" {
                rest = &rest[1..];
                break;
            }
            if valued.contains(&word.text.as_str()) {
                rest = rest.get(2..).unwrap_or_default();
            } else if word.text.starts_with('-') || (name == "env" && is_assignment(&word.text)) {
                rest = &rest[1..];
            } else {
                break;
            }
        }
        words = rest;
    }
}

fn is_assignment(text: &str) -> bool {
    match text.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// Subcommands git knows that never move or drop uncommitted work (no alias lookup needed).
const HARMLESS: &[&str] = &[
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
    "worktree",
    "notes",
    "mv",
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
    "apply",
    "am",
    "cherry-pick",
    "revert",
    "maintenance",
    "lfs",
    "annotate",
];

fn git_into(
    args: &[Word],
    dir: &Path,
    work_tree: Option<PathBuf>,
    aliases: &dyn Aliases,
    depth: usize,
    out: &mut Analysis,
) {
    out.has_git = true;
    let mut dir = dir.to_path_buf();
    let mut work_tree = work_tree;
    let mut config: Vec<(String, String)> = Vec::new();
    let mut at = 0;
    // Global options, up to the subcommand.
    while let Some(word) = args.get(at) {
        let text = word.text.as_str();
        if !text.starts_with('-') {
            break;
        }
        let value = |at: usize| args.get(at + 1).map(|w| w.text.clone());
        match text {
            "-C" => {
                if let Some(value) = value(at) {
                    dir = dir.join(value);
                }
                at += 2;
            }
            "-c" => {
                if let Some((key, val)) = value(at).as_deref().and_then(|kv| kv.split_once('=')) {
                    config.push((key.to_ascii_lowercase(), val.to_string()));
                }
                at += 2;
            }
            "--git-dir" | "--namespace" | "--super-prefix" | "--config-env" | "--exec-path" => {
                at += 2;
            }
            "--work-tree" => {
                work_tree = value(at).map(|w| dir.join(w));
                at += 2;
            }
            _ => {
                if let Some(tree) = text.strip_prefix("--work-tree=") {
                    work_tree = Some(dir.join(tree));
                }
                at += 1;
            }
        }
    }
    let Some(sub) = args.get(at) else {
        return;
    };
    if sub.dynamic {
        out.notes.push(format!(
            "git subcommand `{}` is only known when the shell runs; not checked",
            sub.text
        ));
        return;
    }
    let rest = &args[at + 1..];
    let effect = classify(&sub.text, rest, &dir, work_tree.as_deref());
    if let Some((effect, scope)) = effect {
        let shown: Vec<&str> = std::iter::once(sub.text.as_str())
            .chain(rest.iter().map(|w| w.text.as_str()))
            .collect();
        out.risks.push(Risk {
            dir,
            work_tree,
            command: format!("git {}", shown.join(" ")),
            effect,
            scope,
        });
        return;
    }
    if is_known(&sub.text) || depth >= MAX_DEPTH {
        return;
    }
    let key = format!("alias.{}", sub.text.to_ascii_lowercase());
    let alias = config
        .iter()
        .rev()
        .find(|(name, _)| *name == key)
        .map(|(_, value)| value.clone())
        .or_else(|| aliases.alias(&dir, &sub.text));
    let Some(alias) = alias else {
        return;
    };
    let tail: Vec<String> = rest.iter().map(|w| quote(&w.text)).collect();
    if let Some(shell) = alias.strip_prefix('!') {
        let mut inner = dir.clone();
        let line = format!("{shell} {}", tail.join(" "));
        line_into(&line, &mut inner, aliases, depth + 1, out);
        return;
    }
    match words::split_nested(&alias, depth + 1) {
        Ok(commands) => {
            let mut expanded: Vec<Word> = commands.into_iter().next().unwrap_or_default();
            expanded.extend(rest.iter().cloned());
            git_into(&expanded, &dir, work_tree, aliases, depth + 1, out);
        }
        Err(error) => out.notes.push(format!(
            "git alias `{}` not understood ({error}); not checked",
            sub.text
        )),
    }
}

fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

fn is_known(sub: &str) -> bool {
    HARMLESS.contains(&sub)
        || matches!(
            sub,
            "add"
                | "commit"
                | "stash"
                | "checkout"
                | "switch"
                | "restore"
                | "reset"
                | "clean"
                | "rm"
                | "rebase"
                | "merge"
                | "pull"
        )
}

/// A subcommand's arguments: its options, operands and what follows `--`.
struct Args<'a> {
    options: Vec<String>,
    operands: Vec<&'a Word>,
    after_dashes: Option<Vec<&'a Word>>,
}

/// Splits `args`; `valued` lists the options that take the next word as their value (short
/// options also attached, `-mMSG`; long ones also as `--opt=value`).
fn split_args<'a>(args: &'a [Word], valued: &[&str]) -> Args<'a> {
    let mut parsed = Args {
        options: Vec::new(),
        operands: Vec::new(),
        after_dashes: None,
    };
    let mut at = 0;
    while let Some(word) = args.get(at) {
        let text = word.text.as_str();
        at += 1;
        if text == "--" {
            parsed.after_dashes = Some(args[at..].iter().collect());
            break;
        }
        if text.starts_with("--") {
            parsed.options.push(text.to_string());
            if valued.contains(&text) {
                at += 1;
            }
        } else if text.len() > 1 && text.starts_with('-') {
            // A cluster of short options (`-am`): each letter, until one takes a value,
            // attached (`-mMSG`) or the next word.
            let letters: Vec<char> = text[1..].chars().collect();
            for (index, letter) in letters.iter().enumerate() {
                let short = format!("-{letter}");
                let takes_value = valued.contains(&short.as_str());
                parsed.options.push(short);
                if takes_value {
                    if index + 1 == letters.len() {
                        at += 1;
                    }
                    break;
                }
            }
        } else {
            parsed.operands.push(word);
        }
    }
    parsed
}

impl Args<'_> {
    fn has(&self, names: &[&str]) -> bool {
        self.options.iter().any(|option| {
            names.iter().any(|name| {
                option == name
                    || option
                        .strip_prefix(name)
                        .is_some_and(|rest| rest.starts_with('='))
            })
        })
    }

    /// Every pathspec: the operands from `skip` on, and everything after `--`.
    fn paths(&self, skip: usize) -> Vec<Word> {
        self.operands
            .iter()
            .skip(skip)
            .chain(self.after_dashes.iter().flatten())
            .map(|word| (*word).clone())
            .collect()
    }
}

fn scope_of(paths: Vec<Word>) -> Scope {
    if paths.is_empty() {
        Scope::All
    } else {
        Scope::Paths(paths)
    }
}

/// What `git SUB ARGS` would do; `None` when it leaves uncommitted work alone.
fn classify(
    sub: &str,
    args: &[Word],
    dir: &Path,
    work_tree: Option<&Path>,
) -> Option<(Effect, Scope)> {
    match sub {
        "add" => {
            let a = split_args(args, &["--chmod", "--pathspec-from-file"]);
            if a.has(&["-n", "--dry-run"]) {
                return None;
            }
            let paths = a.paths(0);
            if a.has(&["-A", "--all", "-u", "--update", "--no-ignore-removal"])
                || a.has(&["--pathspec-from-file"])
            {
                return Some((Effect::Takes, scope_of(paths)));
            }
            (!paths.is_empty()).then_some((Effect::Takes, Scope::Paths(paths)))
        }
        "commit" => {
            let a = split_args(
                args,
                &[
                    "-m",
                    "--message",
                    "-F",
                    "--file",
                    "-c",
                    "-C",
                    "--reuse-message",
                    "--reedit-message",
                    "-t",
                    "--template",
                    "--author",
                    "--date",
                    "--fixup",
                    "--squash",
                    "--trailer",
                    "--cleanup",
                    "--pathspec-from-file",
                ],
            );
            if a.has(&["--dry-run"]) {
                return None;
            }
            let paths = a.paths(0);
            if a.has(&["-a", "--all"]) {
                return Some((Effect::Takes, scope_of(paths)));
            }
            (!paths.is_empty()).then_some((Effect::Takes, Scope::Paths(paths)))
        }
        "stash" => {
            let first = args.first().map(|w| w.text.as_str());
            match first {
                Some("list" | "show" | "create" | "store") => None,
                Some("apply" | "pop" | "branch" | "drop" | "clear") => {
                    Some((Effect::Moves, Scope::All))
                }
                Some("push" | "save") | None => {
                    let a = split_args(
                        args.get(1..).unwrap_or_default(),
                        &["-m", "--message", "--pathspec-from-file"],
                    );
                    let paths = if first == Some("push") {
                        a.paths(0)
                    } else {
                        Vec::new()
                    };
                    Some((Effect::Drops, scope_of(paths)))
                }
                Some(_) => {
                    // `git stash -p`, `git stash -- path`, `git stash -k`: a push.
                    let a = split_args(args, &["-m", "--message", "--pathspec-from-file"]);
                    Some((Effect::Drops, scope_of(a.paths(0))))
                }
            }
        }
        "checkout" => {
            let a = split_args(
                args,
                &["-b", "-B", "--orphan", "--conflict", "--pathspec-from-file"],
            );
            if a.has(&["-b", "-B", "--orphan"]) {
                return Some((Effect::Moves, Scope::All));
            }
            if let Some(after) = &a.after_dashes {
                let _ = after;
                return Some((
                    Effect::Drops,
                    Scope::Paths(a.paths(usize::from(!a.operands.is_empty()))),
                ));
            }
            let base = work_tree.unwrap_or(dir);
            match a.operands.as_slice() {
                [] => None,
                [only] if only.text == "." || only.glob || base.join(&only.text).exists() => {
                    Some((Effect::Drops, Scope::Paths(a.paths(0))))
                }
                [_] => {
                    let effect = if a.has(&["-f", "--force", "--discard-changes"]) {
                        Effect::Drops
                    } else {
                        Effect::Moves
                    };
                    Some((effect, Scope::All))
                }
                [_, ..] => Some((Effect::Drops, Scope::Paths(a.paths(1)))),
            }
        }
        "switch" => {
            let effect = if split_args(args, &["-c", "-C", "--orphan"]).has(&[
                "-f",
                "--force",
                "--discard-changes",
            ]) {
                Effect::Drops
            } else {
                Effect::Moves
            };
            Some((effect, Scope::All))
        }
        "restore" => {
            let a = split_args(
                args,
                &["-s", "--source", "--conflict", "--pathspec-from-file"],
            );
            if a.has(&["-S", "--staged"]) && !a.has(&["-W", "--worktree"]) {
                return None;
            }
            let paths = a.paths(0);
            (!paths.is_empty() || a.has(&["--pathspec-from-file"]))
                .then(|| (Effect::Drops, scope_of(paths)))
        }
        "reset" => {
            let a = split_args(args, &["--pathspec-from-file"]);
            a.has(&["--hard", "--merge", "--keep"])
                .then_some((Effect::Drops, Scope::All))
        }
        "clean" => {
            let a = split_args(args, &["-e", "--exclude"]);
            if a.has(&["-n", "--dry-run"]) || !a.has(&["-f", "--force", "-i", "--interactive"]) {
                return None;
            }
            Some((Effect::Drops, scope_of(a.paths(0))))
        }
        "rm" => {
            let a = split_args(args, &["--pathspec-from-file"]);
            if a.has(&["--cached", "-n", "--dry-run"]) {
                return None;
            }
            let paths = a.paths(0);
            (!paths.is_empty()).then_some((Effect::Drops, Scope::Paths(paths)))
        }
        "rebase" | "merge" | "pull" => Some((Effect::Moves, Scope::All)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::collections::HashMap;

    use super::*;

    struct Fixed(HashMap<&'static str, &'static str>);

    impl Aliases for Fixed {
        fn alias(&self, _dir: &Path, name: &str) -> Option<String> {
            self.0.get(name).map(|v| v.to_string())
        }
    }

    fn risks(line: &str) -> Vec<(String, Effect, Scope, PathBuf)> {
        let aliases = Fixed(HashMap::from([
            ("st", "stash"),
            ("wipe", "!git reset --hard"),
            ("co", "checkout"),
        ]));
        analyse(line, Path::new("/repo"), &aliases)
            .risks
            .into_iter()
            .map(|r| (r.command, r.effect, r.scope, r.dir))
            .collect()
    }

    fn paths(items: &[&str]) -> Scope {
        Scope::Paths(items.iter().map(|p| Word::plain(p)).collect())
    }

    #[test]
    fn harmless_commands_are_not_risks() {
        for line in [
            "git status",
            "git diff HEAD -- src/a.ts",
            "git log --oneline | head",
            "git commit -m 'msg with -a inside'",
            "git commit -m \"stash && reset --hard\"",
            "git add -n -A",
            "git reset --soft HEAD~1",
            "git reset src/a.ts",
            "git restore --staged src/a.ts",
            "git clean -n",
            "git stash list",
            "git rm --cached f",
            "echo git stash",
            "ls && cargo test",
            "git checkout",
        ] {
            assert_eq!(risks(line), vec![], "{line}");
        }
    }

    #[test]
    fn each_kind_is_recognised() {
        let cases: Vec<(&str, Effect, Scope)> = vec![
            ("git add -A", Effect::Takes, Scope::All),
            ("git add .", Effect::Takes, paths(&["."])),
            ("git add -u", Effect::Takes, Scope::All),
            ("git add src/a.ts", Effect::Takes, paths(&["src/a.ts"])),
            ("git commit -am 'x'", Effect::Takes, Scope::All),
            ("git commit -m x -a", Effect::Takes, Scope::All),
            (
                "git commit -m x src/a.ts",
                Effect::Takes,
                paths(&["src/a.ts"]),
            ),
            ("git stash", Effect::Drops, Scope::All),
            (
                "git stash push -m wip -- src/a.ts",
                Effect::Drops,
                paths(&["src/a.ts"]),
            ),
            ("git stash -u", Effect::Drops, Scope::All),
            ("git stash pop", Effect::Moves, Scope::All),
            (
                "git checkout -- src/a.ts",
                Effect::Drops,
                paths(&["src/a.ts"]),
            ),
            (
                "git checkout HEAD~1 src/a.ts",
                Effect::Drops,
                paths(&["src/a.ts"]),
            ),
            ("git checkout .", Effect::Drops, paths(&["."])),
            ("git checkout feature", Effect::Moves, Scope::All),
            ("git checkout -b topic", Effect::Moves, Scope::All),
            ("git switch main", Effect::Moves, Scope::All),
            ("git switch -f main", Effect::Drops, Scope::All),
            ("git restore src/a.ts", Effect::Drops, paths(&["src/a.ts"])),
            ("git reset --hard", Effect::Drops, Scope::All),
            ("git reset --keep HEAD~2", Effect::Drops, Scope::All),
            ("git clean -fd", Effect::Drops, Scope::All),
            ("git clean -f src", Effect::Drops, paths(&["src"])),
            ("git rm src/a.ts", Effect::Drops, paths(&["src/a.ts"])),
            ("git rebase main", Effect::Moves, Scope::All),
            ("git merge topic", Effect::Moves, Scope::All),
            ("git pull --rebase", Effect::Moves, Scope::All),
        ];
        for (line, effect, scope) in cases {
            let found = risks(line);
            assert_eq!(found.len(), 1, "{line}: {found:?}");
            assert_eq!((found[0].1, &found[0].2), (effect, &scope), "{line}");
        }
    }

    #[test]
    fn sequences_quotes_directories_and_wrappers() {
        let found =
            risks("cd sub && git -C ../other -c user.name='A B' add -A && git commit -m 'a && b'");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].3, PathBuf::from("/repo/sub/../other"));
        assert_eq!(found[0].0, "git add -A");
        let found = risks("GIT_PAGER=cat env -u X nohup git stash; bash -lc 'git reset --hard'");
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[1].0, "git reset --hard");
        let found = risks("echo \"$(git stash)\"");
        assert_eq!(found.len(), 1);
        let found = risks("/usr/bin/git --no-pager -C /elsewhere checkout -- 'a file.ts'");
        assert_eq!(found[0].2, paths(&["a file.ts"]));
        assert_eq!(found[0].3, PathBuf::from("/elsewhere"));
    }

    #[test]
    fn aliases_are_expanded() {
        assert_eq!(risks("git st")[0].1, Effect::Drops);
        assert_eq!(risks("git wipe")[0].0, "git reset --hard");
        assert_eq!(risks("git co -- a.ts")[0].2, paths(&["a.ts"]));
        assert_eq!(
            risks("git -c alias.zz='clean -fdx' zz")[0].0,
            "git clean -fdx"
        );
        assert_eq!(risks("git unknown-thing"), vec![]);
    }

    #[test]
    fn what_cannot_be_read_is_noted() {
        let analysis = analyse("git $CMD", Path::new("/r"), &GitConfigAliases);
        assert!(analysis.risks.is_empty() && analysis.notes.len() == 1);
        let analysis = analyse("git commit -m 'open", Path::new("/r"), &GitConfigAliases);
        assert!(
            analysis.notes[0].contains("not understood"),
            "{:?}",
            analysis.notes
        );
        assert!(!may_hold_git("cargo test") && may_hold_git("git status"));
    }
}
