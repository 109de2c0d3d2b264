//! Reading a whole command line: every simple command of it ([`super::words`]) in order,
//! with what earlier commands change for later ones (`cd DIR`, exported or assigned
//! variables, `git config alias.x …`), wrappers looked through (`env`, `sudo`, `nohup`,
//! `timeout`, `xargs`, `find -exec`, …), and the shells inside the line (`sh -c '…'`, `eval`,
//! a shell reading a here-document) read as lines of their own.
//!
//! What the gate cannot read (a part that does not parse, a command name or git subcommand
//! only known when it runs, a shell fed from a pipe, more than [`MAX_COMMANDS`] commands) is
//! "cannot tell": on a line that also runs a risky git call, or when what runs may itself be
//! git (a command name in a variable that held `git`, a shell fed from a pipe), it is a risk
//! of its own (every file); elsewhere only a note. The work is
//! bounded: [`MAX_COMMANDS`] commands in all (aliases and nested shells included),
//! [`MAX_ALIASES`] alias expansions, [`MAX_RISKS`] risky calls.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::config::RepoConfig;
use super::git::{self, Analysis, Effect, Risk, Scope};
use super::words::{self, Command, Word};

/// The most commands read from one line, everything nested included.
pub const MAX_COMMANDS: usize = 100_000;

/// The most alias expansions followed on one line.
pub const MAX_ALIASES: usize = 1_000;

/// The most risky calls kept; the calls past it count as one call on every file.
pub const MAX_RISKS: usize = 256;

/// How deep `sh -c`, `eval` and shell aliases are followed.
const MAX_DEPTH: usize = 6;

/// Where a command runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The directory (`cd` applied).
    pub dir: PathBuf,
    /// False once a `cd` went somewhere only known when the line runs.
    pub known: bool,
}

/// A part of the line that could not be read.
#[derive(Debug, Clone)]
struct Unsure {
    text: String,
    why: String,
    dir: PathBuf,
    /// It may run git itself.
    git_ish: bool,
}

/// The state of reading one line.
pub struct Walk<'a> {
    /// The repository settings (aliases, `clean.requireForce`, the current branch).
    pub config: &'a dyn RepoConfig,
    /// What was found.
    pub out: Analysis,
    /// Aliases set (`Some`) or unset (`None`) by earlier commands of the line.
    aliases: HashMap<String, Option<String>>,
    /// Variables assigned or exported by earlier commands of the line.
    variables: HashMap<String, String>,
    unsure: Vec<Unsure>,
    commands: usize,
    aliases_followed: usize,
    too_many_risks: bool,
    exhausted: bool,
}

/// Reads `line`, run in `cwd`.
pub fn analyse(line: &str, cwd: &Path, config: &dyn RepoConfig) -> Analysis {
    let mut walk = Walk {
        config,
        out: Analysis::default(),
        aliases: HashMap::new(),
        variables: HashMap::new(),
        unsure: Vec::new(),
        commands: 0,
        aliases_followed: 0,
        too_many_risks: false,
        exhausted: false,
    };
    let mut place = Place {
        dir: cwd.to_path_buf(),
        known: true,
    };
    walk.line(line, &mut place, 0);
    walk.finish()
}

/// Whether `text` may name git: it says `git` once quotes and backslashes are taken out, or
/// spells words in ANSI-C quoting.
fn mentions_git(text: &str) -> bool {
    if text.contains("$'") {
        return true;
    }
    let bare: String = text
        .chars()
        .filter(|c| !matches!(c, '\'' | '"' | '\\'))
        .collect();
    bare.contains("git")
}

impl Walk<'_> {
    /// Reads `text` as a shell line at nesting `depth`.
    pub(super) fn line(&mut self, text: &str, place: &mut Place, depth: usize) {
        let split = words::split_at_depth(text, depth);
        for command in &split.commands {
            if self.exhausted {
                return;
            }
            self.command(command, place, depth);
        }
        if let Some(part) = split.unreadable {
            // Bash runs none of a part it cannot parse: it only counts on a line that also
            // runs a risky git call.
            self.cannot_tell(&part.text, &part.error.to_string(), place, false);
        }
    }

    /// Records a part that cannot be read; `git_ish`: it may run git itself.
    pub(super) fn cannot_tell(&mut self, text: &str, why: &str, place: &Place, git_ish: bool) {
        if self.unsure.len() < 16 {
            self.unsure.push(Unsure {
                text: text.chars().take(160).collect(),
                why: why.to_string(),
                dir: place.dir.clone(),
                git_ish,
            });
        }
    }

    /// Keeps a risky call (past [`MAX_RISKS`], only that there were more).
    pub(super) fn push_risk(&mut self, risk: Risk) {
        if self.out.risks.contains(&risk) {
            return;
        }
        if self.out.risks.len() >= MAX_RISKS {
            self.too_many_risks = true;
            return;
        }
        self.out.risks.push(risk);
    }

    /// Counts one alias expansion; false once [`MAX_ALIASES`] were followed.
    pub(super) fn spend_alias(&mut self) -> bool {
        self.aliases_followed += 1;
        self.aliases_followed <= MAX_ALIASES
    }

    /// An alias set (`Some(Some(v))`) or unset (`Some(None)`) earlier on the line.
    pub(super) fn line_alias(&self, name: &str) -> Option<Option<String>> {
        self.aliases.get(name).cloned()
    }

    /// A variable assigned or exported earlier on the line.
    pub(super) fn variable(&self, name: &str) -> Option<String> {
        self.variables.get(name).cloned()
    }

    /// `git config …` on the line: an alias it sets or unsets holds for the commands after.
    pub(super) fn remember_config(&mut self, args: &[Word]) {
        if let Some((name, value)) = git::config_alias(args) {
            self.aliases.insert(name, value);
        }
    }

    fn finish(mut self) -> Analysis {
        if self.too_many_risks {
            if let Some(first) = self.out.risks.first().cloned() {
                self.out.risks.push(Risk {
                    command: format!("more than {MAX_RISKS} risky git calls"),
                    effect: Effect::CannotTell,
                    scope: Scope::All,
                    work_tree: None,
                    ..first
                });
            }
        }
        let judged = !self.out.risks.is_empty() || self.unsure.iter().any(|u| u.git_ish);
        for part in std::mem::take(&mut self.unsure) {
            if judged {
                self.out.risks.push(Risk {
                    dir: part.dir,
                    work_tree: None,
                    command: format!("{} ({})", part.text, part.why),
                    effect: Effect::CannotTell,
                    scope: Scope::All,
                });
            } else {
                self.out.notes.push(format!(
                    "`{}` not understood ({}); not checked",
                    part.text, part.why
                ));
            }
        }
        self.out
    }

    fn command(&mut self, command: &Command, place: &mut Place, depth: usize) {
        self.commands += 1;
        if self.commands > MAX_COMMANDS {
            self.exhausted = true;
            let first = command
                .words
                .first()
                .map(|w| w.text.clone())
                .unwrap_or_default();
            self.cannot_tell(
                &first,
                &format!("the line runs more than {MAX_COMMANDS} commands"),
                place,
                true,
            );
            return;
        }
        let mut assigned: Vec<(String, String)> = Vec::new();
        let words = unwrap(&command.words, &mut assigned);
        let Some(first) = words.first() else {
            // Only assignments: they hold for the rest of the line.
            for (name, value) in assigned {
                self.variables.insert(name, value);
            }
            return;
        };
        if first.dynamic {
            let git_ish = first.text.contains("git")
                || git::looks_like_git(&words[1..])
                || self.variables.values().any(|v| v.contains("git"));
            self.cannot_tell(
                &first.text,
                "the command is only known when it runs",
                place,
                git_ish,
            );
            return;
        }
        let name = first.text.rsplit('/').next().unwrap_or_default();
        match name {
            "cd" | "pushd" => match words.get(1).filter(|w| w.text != "--") {
                None => {
                    if let Ok(home) = std::env::var("HOME") {
                        place.dir = PathBuf::from(home);
                    }
                }
                Some(target) if target.dynamic || target.text.starts_with('-') => {
                    place.known = false;
                }
                Some(target) => place.dir = place.dir.join(&target.text),
            },
            "popd" => place.known = false,
            "export" | "declare" | "typeset" | "local" | "readonly" => {
                for word in &words[1..] {
                    if let Some((name, value)) = assignment(word) {
                        self.variables.insert(name, value);
                    }
                }
            }
            "unset" => {
                for word in &words[1..] {
                    self.variables.remove(&word.text);
                }
            }
            "git" => git::git_call(self, &words[1..], place, &assigned, depth),
            _ if name.starts_with("git-") && name.len() > 4 => {
                // The dashed form (`/usr/lib/git-core/git-stash`) is the subcommand.
                let mut args = vec![Word::plain(&name[4..])];
                args.extend(words[1..].iter().cloned());
                git::git_call(self, &args, place, &assigned, depth);
            }
            "sh" | "bash" | "zsh" | "dash" | "ksh" | "mksh" | "busybox" => {
                self.shell(&words, command, place, depth);
            }
            "su" | "script" | "runuser" => {
                // `su -c 'CMD'`, `script -c 'CMD'`.
                if let Some(at) = words
                    .iter()
                    .position(|w| w.text == "-c" || w.text == "--command")
                {
                    if let Some(script) = words.get(at + 1) {
                        self.nested(&script.text, place, depth);
                    }
                }
            }
            "eval" | "watch" => {
                let start = if name == "watch" {
                    skip_options(&words[1..], &["-n", "-d", "--interval", "-q"]) + 1
                } else {
                    1
                };
                let text: Vec<&str> = words[start.min(words.len())..]
                    .iter()
                    .map(|w| w.text.as_str())
                    .collect();
                self.nested(&text.join(" "), place, depth);
            }
            "find" => self.find_exec(&words, place, depth),
            _ => {}
        }
    }

    /// Reads `text` as a nested line (its own `cd`s stay inside).
    fn nested(&mut self, text: &str, place: &Place, depth: usize) {
        if depth >= MAX_DEPTH {
            self.cannot_tell(text, "nested too deeply", place, mentions_git(text));
            return;
        }
        let mut inner = place.clone();
        self.line(text, &mut inner, depth + 1);
    }

    /// A shell: `-c SCRIPT`, a script from a here-document or here-string, from a pipe
    /// (cannot tell), or a script file (not read).
    fn shell(&mut self, words: &[Word], command: &Command, place: &Place, depth: usize) {
        let mut at = 1;
        let mut inline = false;
        while let Some(word) = words.get(at) {
            let text = word.text.as_str();
            if text == "-o" || text == "+o" || text == "-O" || text == "+O" {
                at += 2;
                continue;
            }
            if text.starts_with('-') && !text.starts_with("--") {
                inline |= text.contains('c');
                at += 1;
                continue;
            }
            if text.starts_with("--") {
                at += 1;
                continue;
            }
            break;
        }
        if inline {
            if let Some(script) = words.get(at) {
                self.nested(&script.text, place, depth);
            }
            return;
        }
        if words.get(at).is_some() {
            // `bash script.sh`: a file the gate does not read.
            return;
        }
        if let Some(script) = &command.stdin_text {
            self.nested(script, place, depth);
        } else if command.piped {
            self.cannot_tell(
                &words[0].text,
                "a shell reading its commands from a pipe",
                place,
                true,
            );
        }
    }

    /// `find … -exec CMD … ;` (and `-execdir`, `-ok`, `-okdir`): each command, `{}` being the
    /// files found.
    fn find_exec(&mut self, words: &[Word], place: &Place, depth: usize) {
        let mut at = 1;
        while at < words.len() {
            if matches!(
                words[at].text.as_str(),
                "-exec" | "-execdir" | "-ok" | "-okdir"
            ) {
                let start = at + 1;
                let mut end = start;
                while end < words.len() && !matches!(words[end].text.as_str(), ";" | "+") {
                    end += 1;
                }
                let inner: Vec<Word> = words[start..end]
                    .iter()
                    .map(|w| {
                        if w.text.contains("{}") {
                            Word::unknown(&w.text)
                        } else {
                            w.clone()
                        }
                    })
                    .collect();
                if !inner.is_empty() {
                    let command = Command {
                        words: inner,
                        stdin_text: None,
                        piped: false,
                    };
                    let mut inner_place = place.clone();
                    self.command(&command, &mut inner_place, depth);
                }
                at = end + 1;
            } else {
                at += 1;
            }
        }
    }
}

/// `NAME=value` as a pair; the value's text as written when it is only known at run time.
fn assignment(word: &Word) -> Option<(String, String)> {
    let (name, value) = word.text.split_once('=')?;
    let valid = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    valid.then(|| (name.to_string(), value.to_string()))
}

/// How many leading words of `args` are options (with the values of `valued`).
fn skip_options(args: &[Word], valued: &[&str]) -> usize {
    let mut at = 0;
    while let Some(word) = args.get(at) {
        if word.text == "--" {
            return at + 1;
        }
        if !word.text.starts_with('-') {
            break;
        }
        at += if valued.contains(&word.text.as_str()) {
            2
        } else {
            1
        };
    }
    at.min(args.len())
}

/// The command without its leading assignments (collected into `assigned`) and the
/// wrappers that run their arguments. `xargs` appends the words it reads from its input
/// (one word the line cannot know), or puts them where its replace string is.
fn unwrap(words: &[Word], assigned: &mut Vec<(String, String)>) -> Vec<Word> {
    let mut words: Vec<Word> = words.to_vec();
    let mut rounds = 0;
    loop {
        rounds += 1;
        if rounds > 32 {
            return words;
        }
        let leading = words.iter().take_while(|w| assignment(w).is_some()).count();
        if leading > 0 {
            assigned.extend(words[..leading].iter().filter_map(assignment));
            words.drain(..leading);
        }
        let Some(first) = words.first() else {
            return words;
        };
        let name = first
            .text
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string();
        // Wrapper name → its options that take a value.
        let valued: &[&str] = match name.as_str() {
            "env" => &["-u", "-C", "-S", "--unset", "--chdir", "--split-string"],
            "sudo" | "doas" => &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"],
            "nice" => &["-n", "--adjustment"],
            "ionice" => &["-c", "-n", "-p", "-t"],
            "chrt" | "taskset" | "flock" => &[],
            "stdbuf" => &["-i", "-o", "-e"],
            "command" | "exec" | "nohup" | "time" | "builtin" | "setsid" | "chronic"
            | "unbuffer" | "caffeinate" | "strace" | "ltrace" | "catchsegv" => &[],
            "timeout" => {
                // `timeout [opts] DURATION cmd`.
                let skip = skip_options(&words[1..], &["-s", "--signal", "-k", "--kill-after"]);
                words.drain(..(skip + 2).min(words.len()));
                continue;
            }
            "xargs" => {
                return xargs(&words[1..]);
            }
            _ => return words,
        };
        let mut rest = 1;
        while let Some(word) = words.get(rest) {
            if word.text == "--" {
                rest += 1;
                break;
            }
            if valued.contains(&word.text.as_str()) {
                rest += 2;
            } else if word.text.starts_with('-') {
                rest += 1;
            } else if name == "env" && assignment(word).is_some() {
                assigned.extend(assignment(word));
                rest += 1;
            } else {
                break;
            }
        }
        words.drain(..rest.min(words.len()));
    }
}

/// `xargs [opts] CMD ARGS`: CMD with ARGS and the words xargs reads from its input.
fn xargs(args: &[Word]) -> Vec<Word> {
    const VALUED: &[&str] = &[
        "-a",
        "-d",
        "-E",
        "-I",
        "-L",
        "-n",
        "-P",
        "-s",
        "--arg-file",
        "--delimiter",
        "--eof",
        "--replace",
        "--max-lines",
        "--max-args",
        "--max-procs",
        "--max-chars",
        "--process-slot-var",
    ];
    let mut replace: Option<String> = None;
    let mut at = 0;
    while let Some(word) = args.get(at) {
        let text = word.text.as_str();
        if text == "--" {
            at += 1;
            break;
        }
        if !text.starts_with('-') || text == "-" {
            break;
        }
        if text == "-I" || text == "--replace" {
            replace = args.get(at + 1).map(|w| w.text.clone());
            at += 2;
            continue;
        }
        if let Some(attached) = text
            .strip_prefix("-I")
            .or_else(|| text.strip_prefix("--replace="))
        {
            replace = Some(attached.to_string());
        } else if text == "-i" || text.starts_with("-i") {
            replace = Some(
                text.strip_prefix("-i")
                    .filter(|r| !r.is_empty())
                    .unwrap_or("{}")
                    .to_string(),
            );
        }
        at += if VALUED.contains(&text) { 2 } else { 1 };
    }
    let mut command: Vec<Word> = args[at.min(args.len())..].to_vec();
    if command.is_empty() {
        // `xargs` alone runs `echo`.
        return command;
    }
    match replace {
        Some(marker) if !marker.is_empty() => {
            for word in command.iter_mut().skip(1) {
                if word.text.contains(&marker) {
                    *word = Word::unknown(&word.text);
                }
            }
        }
        _ => command.push(Word::unknown("(the words xargs reads)")),
    }
    let mut none = Vec::new();
    unwrap(&command, &mut none)
}
