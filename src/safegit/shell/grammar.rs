//! git's option grammar for the subcommands the gate judges, as git's `parse-options` reads
//! it: a long option may be abbreviated to any prefix that names one option only
//! (`--har` is `--hard`, `--forc` is `--force`), `--opt=value` and `--opt value` for options
//! that take one, clusters of short options (`-fdx`) whose value-taking letter takes the rest
//! of the cluster or the next word, and `--` ending the options.
//!
//! The long option lists are git 2.47's own (`git SUB --git-completion-helper-all`, plus the
//! options that list hides, such as `checkout -b`); a trailing `=` marks an option that takes a
//! value.

use super::words::Word;

/// The options of one subcommand.
#[derive(Debug, Clone, Copy)]
pub struct Grammar {
    /// Long option names without `--`; `name=` takes a value (`--name=v` or `--name v`).
    pub long: &'static [&'static str],
    /// Short option letters that take a value (attached, `-mMSG`, or the next word).
    pub short_valued: &'static str,
    /// Short option letters whose value is optional (only attached: `-uno`).
    pub short_optional: &'static str,
}

/// A subcommand's arguments, read by its [`Grammar`].
#[derive(Debug, Default)]
pub struct Args<'a> {
    /// Options, resolved to their full names (`--hard`, `-f`); an option git would not know
    /// or finds ambiguous is kept as written.
    pub options: Vec<String>,
    /// The words that are not options, in order, before `--`.
    pub operands: Vec<&'a Word>,
    /// Everything after `--`, when there is one.
    pub after_dashes: Option<Vec<&'a Word>>,
    /// Option values by option (`--source` → `HEAD~1`).
    pub values: Vec<(String, &'a Word)>,
}

impl Grammar {
    /// The full name of long option `given` (without `--`, without `=value`): itself when
    /// exact, else the one option it is a prefix of; `None` when none or several.
    pub fn resolve(&self, given: &str) -> Option<&'static str> {
        let name = |option: &'static str| option.strip_suffix('=').unwrap_or(option);
        if let Some(exact) = self.long.iter().find(|option| name(option) == given) {
            return Some(exact);
        }
        if given.is_empty() {
            return None;
        }
        let mut found = self
            .long
            .iter()
            .filter(|option| name(option).starts_with(given));
        match (found.next(), found.next()) {
            (Some(one), None) => Some(one),
            _ => None,
        }
    }

    /// Reads `args`.
    pub fn parse<'a>(&self, args: &'a [Word]) -> Args<'a> {
        let mut parsed = Args::default();
        let mut at = 0;
        while let Some(word) = args.get(at) {
            let text = word.text.as_str();
            at += 1;
            if text == "--" {
                parsed.after_dashes = Some(args[at..].iter().collect());
                break;
            }
            if let Some(long) = text.strip_prefix("--") {
                let (given, inline) = match long.split_once('=') {
                    Some((given, value)) => (given, Some(value)),
                    None => (long, None),
                };
                match self.resolve(given) {
                    Some(option) => {
                        let takes_value = option.ends_with('=');
                        let name = format!("--{}", option.trim_end_matches('='));
                        if takes_value && inline.is_none() {
                            if let Some(value) = args.get(at) {
                                parsed.values.push((name.clone(), value));
                            }
                            at += 1;
                        } else if takes_value {
                            parsed.values.push((name.clone(), word));
                        }
                        parsed.options.push(name);
                    }
                    None => parsed.options.push(format!("--{given}")),
                }
            } else if text.len() > 1 && text.starts_with('-') && !word.dynamic {
                let letters: Vec<char> = text[1..].chars().collect();
                for (index, letter) in letters.iter().enumerate() {
                    let short = format!("-{letter}");
                    let last = index + 1 == letters.len();
                    if self.short_valued.contains(*letter) {
                        if last {
                            if let Some(value) = args.get(at) {
                                parsed.values.push((short.clone(), value));
                            }
                            at += 1;
                        }
                        parsed.options.push(short);
                        break;
                    }
                    parsed.options.push(short);
                    if self.short_optional.contains(*letter) {
                        break;
                    }
                }
            } else {
                parsed.operands.push(word);
            }
        }
        parsed
    }
}

impl Args<'_> {
    /// Whether any of `names` (full names: `--hard`, `-f`) was given, and not negated
    /// later by its `--no-` form.
    pub fn has(&self, names: &[&str]) -> bool {
        let mut on = false;
        for option in &self.options {
            if names.contains(&option.as_str()) {
                on = true;
            } else if let Some(positive) = option.strip_prefix("--no-") {
                if names.contains(&format!("--{positive}").as_str()) {
                    on = false;
                }
            }
        }
        on
    }

    /// Every pathspec: the operands from `skip` on, and everything after `--`.
    pub fn paths(&self, skip: usize) -> Vec<Word> {
        self.operands
            .iter()
            .skip(skip)
            .chain(self.after_dashes.iter().flatten())
            .map(|word| (*word).clone())
            .collect()
    }

    /// The value of option `name`, the last given.
    pub fn value(&self, name: &str) -> Option<&Word> {
        self.values
            .iter()
            .rev()
            .find(|(option, _)| option == name)
            .map(|(_, word)| *word)
    }
}

/// `git add`.
pub const ADD: Grammar = Grammar {
    long: &[
        "dry-run",
        "verbose",
        "interactive",
        "patch",
        "edit",
        "force",
        "update",
        "renormalize",
        "intent-to-add",
        "all",
        "ignore-removal",
        "refresh",
        "ignore-errors",
        "ignore-missing",
        "sparse",
        "chmod=",
        "warn-embedded-repo",
        "pathspec-from-file=",
        "pathspec-file-nul",
        "no-dry-run",
        "no-verbose",
        "no-interactive",
        "no-patch",
        "no-edit",
        "no-force",
        "no-update",
        "no-renormalize",
        "no-intent-to-add",
        "no-all",
        "no-ignore-removal",
        "no-refresh",
        "no-ignore-errors",
        "no-ignore-missing",
        "no-sparse",
        "no-chmod",
        "no-warn-embedded-repo",
        "no-pathspec-from-file",
        "no-pathspec-file-nul",
    ],
    short_valued: "",
    short_optional: "",
};

/// `git commit`.
pub const COMMIT: Grammar = Grammar {
    long: &[
        "quiet",
        "verbose",
        "file=",
        "author=",
        "date=",
        "message=",
        "reedit-message=",
        "reuse-message=",
        "fixup=",
        "squash=",
        "reset-author",
        "trailer=",
        "signoff",
        "template=",
        "edit",
        "cleanup=",
        "status",
        "gpg-sign",
        "all",
        "include",
        "interactive",
        "patch",
        "only",
        "no-verify",
        "dry-run",
        "short",
        "branch",
        "ahead-behind",
        "porcelain",
        "long",
        "null",
        "amend",
        "no-post-rewrite",
        "untracked-files",
        "pathspec-from-file=",
        "pathspec-file-nul",
        "allow-empty",
        "allow-empty-message",
        "verify",
        "post-rewrite",
        "no-quiet",
        "no-verbose",
        "no-file",
        "no-author",
        "no-date",
        "no-message",
        "no-reedit-message",
        "no-reuse-message",
        "no-fixup",
        "no-squash",
        "no-reset-author",
        "no-signoff",
        "no-template",
        "no-edit",
        "no-cleanup",
        "no-status",
        "no-gpg-sign",
        "no-all",
        "no-include",
        "no-interactive",
        "no-patch",
        "no-only",
        "no-dry-run",
        "no-short",
        "no-branch",
        "no-ahead-behind",
        "no-porcelain",
        "no-long",
        "no-null",
        "no-amend",
        "no-untracked-files",
        "no-pathspec-from-file",
        "no-pathspec-file-nul",
        "no-allow-empty",
        "no-allow-empty-message",
    ],
    short_valued: "mFcCt",
    short_optional: "uS",
};

/// `git stash push` (and a bare `git stash` with options).
pub const STASH_PUSH: Grammar = Grammar {
    long: &[
        "keep-index",
        "staged",
        "patch",
        "quiet",
        "include-untracked",
        "all",
        "message=",
        "pathspec-from-file=",
        "pathspec-file-nul",
        "no-keep-index",
        "no-staged",
        "no-patch",
        "no-quiet",
        "no-include-untracked",
        "no-all",
        "no-message",
        "no-pathspec-from-file",
        "no-pathspec-file-nul",
    ],
    short_valued: "m",
    short_optional: "",
};

/// `git checkout`.
pub const CHECKOUT: Grammar = Grammar {
    long: &[
        "guess",
        "overlay",
        "quiet",
        "recurse-submodules",
        "progress",
        "merge",
        "conflict=",
        "detach",
        "track",
        "force",
        "orphan=",
        "overwrite-ignore",
        "ignore-other-worktrees",
        "ours",
        "theirs",
        "patch",
        "ignore-skip-worktree-bits",
        "pathspec-from-file=",
        "pathspec-file-nul",
        "no-guess",
        "no-overlay",
        "no-quiet",
        "no-recurse-submodules",
        "no-progress",
        "no-merge",
        "no-conflict",
        "no-detach",
        "no-track",
        "no-force",
        "no-orphan",
        "no-overwrite-ignore",
        "no-ignore-other-worktrees",
        "no-patch",
        "no-ignore-skip-worktree-bits",
        "no-pathspec-from-file",
        "no-pathspec-file-nul",
    ],
    short_valued: "bB",
    short_optional: "t",
};

/// `git switch`.
pub const SWITCH: Grammar = Grammar {
    long: &[
        "create=",
        "force-create=",
        "guess",
        "discard-changes",
        "quiet",
        "recurse-submodules",
        "progress",
        "merge",
        "conflict=",
        "detach",
        "track",
        "force",
        "orphan=",
        "overwrite-ignore",
        "ignore-other-worktrees",
        "no-create",
        "no-force-create",
        "no-guess",
        "no-discard-changes",
        "no-quiet",
        "no-recurse-submodules",
        "no-progress",
        "no-merge",
        "no-conflict",
        "no-detach",
        "no-track",
        "no-force",
        "no-orphan",
        "no-overwrite-ignore",
        "no-ignore-other-worktrees",
    ],
    short_valued: "cC",
    short_optional: "t",
};

/// `git restore`.
pub const RESTORE: Grammar = Grammar {
    long: &[
        "source=",
        "staged",
        "worktree",
        "ignore-unmerged",
        "overlay",
        "quiet",
        "recurse-submodules",
        "progress",
        "merge",
        "conflict=",
        "ours",
        "theirs",
        "patch",
        "ignore-skip-worktree-bits",
        "pathspec-from-file=",
        "pathspec-file-nul",
        "no-source",
        "no-staged",
        "no-worktree",
        "no-ignore-unmerged",
        "no-overlay",
        "no-quiet",
        "no-recurse-submodules",
        "no-progress",
        "no-merge",
        "no-conflict",
        "no-patch",
        "no-ignore-skip-worktree-bits",
        "no-pathspec-from-file",
        "no-pathspec-file-nul",
    ],
    short_valued: "s",
    short_optional: "",
};

/// `git reset`.
pub const RESET: Grammar = Grammar {
    long: &[
        "quiet",
        "no-refresh",
        "mixed",
        "soft",
        "hard",
        "merge",
        "keep",
        "recurse-submodules",
        "patch",
        "intent-to-add",
        "pathspec-from-file=",
        "pathspec-file-nul",
        "refresh",
        "no-quiet",
        "no-recurse-submodules",
        "no-patch",
        "no-intent-to-add",
        "no-pathspec-from-file",
        "no-pathspec-file-nul",
    ],
    short_valued: "",
    short_optional: "",
};

/// `git clean`.
pub const CLEAN: Grammar = Grammar {
    long: &[
        "quiet",
        "dry-run",
        "force",
        "interactive",
        "exclude=",
        "no-quiet",
        "no-dry-run",
        "no-force",
        "no-interactive",
    ],
    short_valued: "e",
    short_optional: "",
};

/// `git rm`.
pub const RM: Grammar = Grammar {
    long: &[
        "dry-run",
        "quiet",
        "cached",
        "force",
        "ignore-unmatch",
        "sparse",
        "pathspec-from-file=",
        "pathspec-file-nul",
        "no-dry-run",
        "no-quiet",
        "no-cached",
        "no-force",
        "no-ignore-unmatch",
        "no-sparse",
        "no-pathspec-from-file",
        "no-pathspec-file-nul",
    ],
    short_valued: "",
    short_optional: "",
};

/// `git mv`.
pub const MV: Grammar = Grammar {
    long: &[
        "verbose",
        "dry-run",
        "force",
        "sparse",
        "no-verbose",
        "no-dry-run",
        "no-force",
        "no-sparse",
    ],
    short_valued: "",
    short_optional: "",
};

/// `git read-tree`.
pub const READ_TREE: Grammar = Grammar {
    long: &[
        "super-prefix=",
        "index-output=",
        "empty",
        "verbose",
        "trivial",
        "aggressive",
        "reset",
        "prefix=",
        "exclude-per-directory=",
        "dry-run",
        "no-sparse-checkout",
        "debug-unpack",
        "recurse-submodules",
        "quiet",
        "sparse-checkout",
        "no-super-prefix",
        "no-empty",
        "no-verbose",
        "no-trivial",
        "no-aggressive",
        "no-reset",
        "no-dry-run",
        "no-debug-unpack",
        "no-recurse-submodules",
        "no-quiet",
    ],
    short_valued: "",
    short_optional: "",
};

/// `git checkout-index`.
pub const CHECKOUT_INDEX: Grammar = Grammar {
    long: &[
        "all",
        "ignore-skip-worktree-bits",
        "force",
        "quiet",
        "no-create",
        "index",
        "stdin",
        "temp",
        "prefix=",
        "stage=",
        "create",
        "no-all",
        "no-ignore-skip-worktree-bits",
        "no-force",
        "no-quiet",
        "no-index",
        "no-stdin",
        "no-temp",
        "no-prefix",
    ],
    short_valued: "",
    short_optional: "",
};

/// `git apply`.
pub const APPLY: Grammar = Grammar {
    long: &[
        "exclude=",
        "include=",
        "no-add",
        "stat",
        "allow-binary-replacement",
        "binary",
        "numstat",
        "summary",
        "check",
        "index",
        "intent-to-add",
        "cached",
        "unsafe-paths",
        "apply",
        "3way",
        "ours",
        "theirs",
        "union",
        "build-fake-ancestor=",
        "whitespace=",
        "ignore-space-change",
        "ignore-whitespace",
        "reverse",
        "unidiff-zero",
        "reject",
        "allow-overlap",
        "verbose",
        "quiet",
        "inaccurate-eof",
        "recount",
        "directory=",
        "allow-empty",
        "add",
        "no-stat",
        "no-allow-binary-replacement",
        "no-binary",
        "no-numstat",
        "no-summary",
        "no-check",
        "no-index",
        "no-intent-to-add",
        "no-cached",
        "no-unsafe-paths",
        "no-apply",
        "no-3way",
        "no-build-fake-ancestor",
        "no-whitespace",
        "no-ignore-space-change",
        "no-ignore-whitespace",
        "no-reverse",
        "no-unidiff-zero",
        "no-reject",
        "no-allow-overlap",
        "no-verbose",
        "no-quiet",
        "no-inaccurate-eof",
        "no-recount",
        "no-directory",
        "no-allow-empty",
    ],
    short_valued: "pC",
    short_optional: "",
};

/// `git update-index`.
pub const UPDATE_INDEX: Grammar = Grammar {
    long: &[
        "ignore-submodules",
        "add",
        "replace",
        "remove",
        "unmerged",
        "refresh",
        "really-refresh",
        "cacheinfo",
        "chmod=",
        "assume-unchanged",
        "no-assume-unchanged",
        "skip-worktree",
        "no-skip-worktree",
        "ignore-skip-worktree-entries",
        "info-only",
        "force-remove",
        "stdin",
        "index-info",
        "unresolve",
        "again",
        "ignore-missing",
        "verbose",
        "clear-resolve-undo",
        "index-version=",
        "show-index-version",
        "split-index",
        "untracked-cache",
        "test-untracked-cache",
        "force-untracked-cache",
        "force-write-index",
        "fsmonitor",
        "fsmonitor-valid",
        "no-fsmonitor-valid",
        "no-ignore-submodules",
        "no-add",
        "no-replace",
        "no-remove",
        "no-unmerged",
        "no-ignore-skip-worktree-entries",
        "no-info-only",
        "no-force-remove",
        "no-ignore-missing",
        "no-verbose",
        "no-index-version",
        "no-show-index-version",
        "no-split-index",
        "no-untracked-cache",
        "no-test-untracked-cache",
        "no-force-untracked-cache",
        "no-force-write-index",
        "no-fsmonitor",
    ],
    short_valued: "",
    short_optional: "",
};

/// `git worktree remove`.
pub const WORKTREE_REMOVE: Grammar = Grammar {
    long: &["force", "no-force"],
    short_valued: "",
    short_optional: "",
};

/// A subcommand the gate does not read option by option (`rebase`, `merge`, …).
pub const ANY: Grammar = Grammar {
    long: &[],
    short_valued: "",
    short_optional: "",
};

#[cfg(test)]
mod tests {
    use super::*;

    fn options(grammar: &Grammar, line: &str) -> Vec<String> {
        let words: Vec<Word> = line.split(' ').map(Word::plain).collect();
        grammar.parse(&words).options
    }

    #[test]
    fn unique_prefixes_name_their_option() {
        assert_eq!(options(&RESET, "--har"), vec!["--hard"]);
        assert_eq!(options(&CLEAN, "--forc -d"), vec!["--force", "-d"]);
        assert_eq!(options(&ADD, "--al"), vec!["--all"]);
        assert_eq!(options(&ADD, "--upd"), vec!["--update"]);
        // `--i` is interactive, intent-to-add, ignore-…: git refuses it.
        assert_eq!(options(&ADD, "--i"), vec!["--i"]);
        assert!(!RESET
            .parse(&[Word::plain("--hard"), Word::plain("--no-hard")])
            .has(&["--hard"]));
    }

    #[test]
    fn values_and_clusters() {
        let words: Vec<Word> = "-am msg -- a b".split(' ').map(Word::plain).collect();
        let args = COMMIT.parse(&words);
        assert_eq!(args.options, vec!["-a", "-m"]);
        assert_eq!(args.value("-m").map(|w| w.text.as_str()), Some("msg"));
        assert_eq!(args.paths(0).len(), 2);
        let words: Vec<Word> = "--mess x f".split(' ').map(Word::plain).collect();
        let args = COMMIT.parse(&words);
        assert_eq!(args.operands.len(), 1);
        let words: Vec<Word> = "-uno f".split(' ').map(Word::plain).collect();
        assert_eq!(COMMIT.parse(&words).operands.len(), 1);
    }
}
