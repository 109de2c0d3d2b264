//! One git call of a command line: git's global options before the subcommand (`-C dir`,
//! `-c key=value`, `--git-dir`, `--work-tree`, `--attr-source TREE`, …), the environment
//! variables git reads (`GIT_DIR`, `GIT_WORK_TREE`, `GIT_CONFIG_COUNT`/`KEY_n`/`VALUE_n`,
//! `GIT_CONFIG_PARAMETERS`), aliases (from `-c alias.x=…`, from `git config alias.x …`
//! earlier on the same line, or from the repository's configuration; `!shell` aliases are
//! read as shell lines), then what the subcommand does ([`super::classify`]).
//!
//! The result is what each risky git call would do and to which paths ([`Risk`]); whether
//! anyone's work is at stake there is for the gate to find out.

use std::path::{Path, PathBuf};

use super::classify::{classify, is_builtin, JUDGED};
use super::config::{top_level, Overridden};
use super::line::{Place, Walk};
use super::words::{self, Word};

/// What a git call would do to uncommitted work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Takes the working tree's changes into a commit or the index (`add -A`, `commit -a`,
    /// `update-index`).
    Takes,
    /// Throws the working tree's changes away or out of the tree (`stash`, `checkout --`,
    /// `restore`, `reset --hard`, `clean -f`, `rm -f`, `read-tree -u`, `checkout-index -f`,
    /// `apply`, `worktree remove --force`).
    Drops,
    /// Moves the tree to other commits with the changes on top (`switch`, `checkout BRANCH`,
    /// `rebase`, `merge`, `pull`, `stash pop`).
    Moves,
    /// A part of the line the gate cannot read, on a line that runs git: it may do anything.
    CannotTell,
}

impl Effect {
    /// Whether the working tree's text may be lost (a snapshot is taken first).
    pub fn destroys(self) -> bool {
        !matches!(self, Self::Takes)
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

/// A git call that takes, drops or moves uncommitted work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Risk {
    /// The directory git runs in (`cd` and `-C` applied).
    pub dir: PathBuf,
    /// The work tree it acts on when that is not `dir`'s (`--work-tree`, `GIT_WORK_TREE`,
    /// the worktree `git worktree remove` removes).
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
    /// The risky git calls (and the unreadable parts of a line that runs git), in order.
    pub risks: Vec<Risk>,
    /// Whether any git call was found at all.
    pub has_git: bool,
    /// What could not be read (the gate passes it on as a note).
    pub notes: Vec<String>,
}

/// How deep aliases are followed (git itself stops at a loop).
const MAX_ALIAS_DEPTH: usize = 6;

/// The longest command shown in a message.
const SHOWN: usize = 160;

/// The settings a git call carries into its alias expansions.
#[derive(Debug, Clone, Default)]
pub(super) struct GitEnv {
    /// `-c key=value` and the `GIT_CONFIG_*` variables, in order (later wins).
    config: Vec<(String, String)>,
    work_tree: Option<PathBuf>,
    git_dir: Option<PathBuf>,
}

/// Reads a git call: `args` are the words after `git`, run at `place` with the command's own
/// variable assignments `assigned`.
pub(super) fn git_call(
    walk: &mut Walk,
    args: &[Word],
    place: &Place,
    assigned: &[(String, String)],
    depth: usize,
) {
    let mut env = GitEnv::default();
    let lookup = |name: &str| {
        assigned
            .iter()
            .rev()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
            .or_else(|| walk.variable(name))
    };
    if let Some(dir) = lookup("GIT_DIR") {
        env.git_dir = Some(place.dir.join(dir));
    }
    if let Some(tree) = lookup("GIT_WORK_TREE") {
        env.work_tree = Some(place.dir.join(tree));
    }
    if let Some(count) = lookup("GIT_CONFIG_COUNT").and_then(|c| c.trim().parse::<usize>().ok()) {
        for n in 0..count.min(64) {
            if let (Some(key), Some(value)) = (
                lookup(&format!("GIT_CONFIG_KEY_{n}")),
                lookup(&format!("GIT_CONFIG_VALUE_{n}")),
            ) {
                env.config.push((key.to_ascii_lowercase(), value));
            }
        }
    }
    if let Some(parameters) = lookup("GIT_CONFIG_PARAMETERS") {
        // `'alias.z'='stash' 'user.name'='x'`: shell-quoted pairs.
        for pair in words::split(&parameters)
            .commands
            .into_iter()
            .flat_map(|c| c.words)
        {
            if let Some((key, value)) = pair.text.split_once('=') {
                env.config
                    .push((key.to_ascii_lowercase(), value.to_string()));
            }
        }
    }
    call(walk, args, place.clone(), env, depth);
}

fn call(walk: &mut Walk, args: &[Word], mut place: Place, mut env: GitEnv, depth: usize) {
    walk.out.has_git = true;
    let mut at = 0;
    // Global options, up to the subcommand (git reads them exactly: no abbreviations).
    while let Some(word) = args.get(at) {
        let text = word.text.as_str();
        if !text.starts_with('-') && !word.dynamic {
            break;
        }
        if word.dynamic {
            walk.cannot_tell(
                &shown(args),
                "its options are only known when it runs",
                &place,
                true,
            );
            return;
        }
        let value = args.get(at + 1);
        let (name, inline) = match text.split_once('=') {
            Some((name, value)) if name.starts_with("--") => (name, Some(value)),
            _ => (text, None),
        };
        let separate = inline.is_none();
        let value_text = inline
            .map(str::to_string)
            .or_else(|| value.map(|w| w.text.clone()));
        let value_dynamic = separate && value.is_some_and(|w| w.dynamic);
        match name {
            "-C" => {
                match value {
                    Some(dir) if !dir.dynamic => place.dir = place.dir.join(&dir.text),
                    _ => place.known = false,
                }
                at += 2;
            }
            "-c" => {
                if let Some((key, val)) = value.and_then(|kv| kv.text.split_once('=')) {
                    env.config.push((key.to_ascii_lowercase(), val.to_string()));
                }
                at += 2;
            }
            "--git-dir" | "--work-tree" => {
                let path = value_text.map(|v| place.dir.join(v));
                if value_dynamic {
                    place.known = false;
                }
                if name == "--git-dir" {
                    env.git_dir = path;
                } else {
                    env.work_tree = path;
                }
                at += if separate { 2 } else { 1 };
            }
            "--namespace" | "--attr-source" | "--shallow-file" | "--config-env"
            | "--super-prefix" => {
                at += if separate { 2 } else { 1 };
            }
            "--exec-path" if inline.is_some() => at += 1,
            "-p"
            | "--paginate"
            | "-P"
            | "--no-pager"
            | "--no-replace-objects"
            | "--bare"
            | "--literal-pathspecs"
            | "--glob-pathspecs"
            | "--noglob-pathspecs"
            | "--icase-pathspecs"
            | "--no-optional-locks"
            | "--no-lazy-fetch"
            | "--no-advice" => {
                at += 1;
            }
            // `--version`, `--help`, `--exec-path`, `--list-cmds=…` answer and stop; an
            // option git does not know stops it with an error.
            _ => return,
        }
    }
    let Some(sub) = args.get(at) else {
        return;
    };
    let rest = &args[at + 1..];
    if sub.dynamic {
        walk.cannot_tell(
            &shown(args),
            "its subcommand is only known when it runs",
            &place,
            true,
        );
        return;
    }
    if sub.text == "config" {
        walk.remember_config(rest);
        return;
    }
    let base = env.work_tree.clone().unwrap_or_else(|| place.dir.clone());
    let config = Overridden {
        base: walk.config,
        pairs: &env.config,
    };
    if let Some(verdict) = classify(&sub.text, rest, &place.dir, &base, &config) {
        let mut scope = verdict.scope;
        let mut work_tree = verdict.other_tree.or(env.work_tree.clone());
        if env.git_dir.is_some() || !place.known {
            // Another repository's files, or a directory the line only knows when it
            // runs: every file of it.
            scope = super::git::Scope::All;
        }
        if work_tree.is_none() {
            work_tree =
                env.git_dir
                    .as_ref()
                    .map(|dir| match dir.file_name().and_then(|n| n.to_str()) {
                        Some(".git") => dir.parent().map_or_else(|| dir.clone(), Path::to_path_buf),
                        _ => dir.clone(),
                    });
        }
        walk.push_risk(Risk {
            dir: place.dir.clone(),
            work_tree,
            command: format!("git {}", shown(&args[at..])),
            effect: verdict.effect,
            scope,
        });
        return;
    }
    if is_builtin(&sub.text) {
        return;
    }
    let name = sub.text.to_ascii_lowercase();
    let key = format!("alias.{name}");
    let alias = env
        .config
        .iter()
        .rev()
        .find(|(k, _)| *k == key)
        .map(|(_, value)| Some(value.clone()))
        .or_else(|| walk.line_alias(&name))
        .unwrap_or_else(|| walk.config.alias(&place.dir, &name));
    // A subcommand git does not know and no alias names runs nothing of the tree's.
    let Some(alias) = alias else {
        return;
    };
    if depth >= MAX_ALIAS_DEPTH || !walk.spend_alias() {
        let note = format!(
            "git alias `{}` expands too deeply; not followed further",
            sub.text
        );
        // One note of the kind: a fan-out names its first alias, not thousands.
        if !walk
            .out
            .notes
            .iter()
            .any(|n| n.contains("expands too deeply"))
        {
            walk.out.notes.push(note);
        }
        return;
    }
    if let Some(shell) = alias.strip_prefix('!') {
        // A shell alias runs from the top of the work tree, its arguments appended.
        let tail: Vec<String> = rest
            .iter()
            .map(|w| crate::safegit::git::shell_quote(&w.text))
            .collect();
        let mut inner = Place {
            dir: top_level(&place.dir).unwrap_or_else(|| place.dir.clone()),
            known: place.known,
        };
        walk.line(
            &format!("{shell} {}", tail.join(" ")),
            &mut inner,
            depth + 1,
        );
        return;
    }
    let split = words::split_at_depth(&alias, depth + 1);
    if let Some(part) = split.unreadable {
        walk.cannot_tell(
            &format!("git {}", sub.text),
            &format!("its alias `{alias}` is not understood ({})", part.error),
            &place,
            true,
        );
        return;
    }
    let mut expanded: Vec<Word> = split
        .commands
        .into_iter()
        .next()
        .map(|command| command.words)
        .unwrap_or_default();
    expanded.extend(rest.iter().cloned());
    call(walk, &expanded, place, env, depth + 1);
}

/// `git config` arguments that set or unset an alias: `(name, Some(value))` or `(name,
/// None)`.
pub(super) fn config_alias(args: &[Word]) -> Option<(String, Option<String>)> {
    let mut operands: Vec<&Word> = Vec::new();
    let mut unset = false;
    let mut at = 0;
    while let Some(word) = args.get(at) {
        at += 1;
        match word.text.as_str() {
            "-f" | "--file" | "--blob" | "--type" | "--default" | "--comment" | "--value" => {
                at += 1;
            }
            "--unset" | "--unset-all" => unset = true,
            text if text.starts_with('-') => {}
            _ => operands.push(word),
        }
    }
    let mut operands = operands.into_iter();
    let mut first = operands.next()?;
    match first.text.as_str() {
        "set" => first = operands.next()?,
        "unset" => {
            unset = true;
            first = operands.next()?;
        }
        _ => {}
    }
    let name = first
        .text
        .to_ascii_lowercase()
        .strip_prefix("alias.")?
        .to_string();
    if unset {
        return Some((name, None));
    }
    operands
        .next()
        .map(|value| (name, Some(value.text.clone())))
}

/// Whether `args` (after a command name the line only knows when it runs) look like git's:
/// their first operand is a subcommand the gate judges.
pub(super) fn looks_like_git(args: &[Word]) -> bool {
    args.iter()
        .find(|w| !w.text.starts_with('-'))
        .is_some_and(|w| JUDGED.contains(&w.text.as_str()))
}

/// `words` joined for a message, cut to [`SHOWN`] characters.
fn shown(words: &[Word]) -> String {
    let joined: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
    let text = joined.join(" ");
    if text.chars().count() <= SHOWN {
        text
    } else {
        let cut: String = text.chars().take(SHOWN).collect();
        format!("{cut}…")
    }
}
