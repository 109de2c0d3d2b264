//! The command line of a shell tool call, split as a POSIX shell would split it: quoting
//! (`'…'`, `"…"`, `\`), the operators that sequence commands (`;`, `&&`, `||`, `|`, `&`,
//! newlines), subshells and groups (`( … )`, `{ …; }`), command substitutions (`$( … )`,
//! backquotes: their commands are commands of the line too), comments, redirections and
//! here-documents (their bodies are data, not commands).
//!
//! Nothing is expanded: a word that holds a parameter, a substitution or an unquoted glob
//! character keeps its text and says so ([`Word::dynamic`], [`Word::glob`]), so the caller
//! can be careful with what it cannot know. Why not `shlex` or `shell-words`: both split one
//! command's words but know no operators, and finding the operators needs the same
//! quote-aware scan that splitting is; one scanner that does both is smaller than a crate
//! plus a second scanner around it.

/// One word of a simple command, its quotes removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The text, with quoting removed and nothing expanded.
    pub text: String,
    /// Holds `$…`, `$(…)` or a backquoted command: its value is only known when it runs.
    pub dynamic: bool,
    /// Holds an unquoted `*`, `?` or `[`: the shell may expand it to file names.
    pub glob: bool,
}

impl Word {
    /// A plain word (for tests).
    #[cfg(test)]
    pub fn plain(text: &str) -> Self {
        Self {
            text: text.to_string(),
            dynamic: false,
            glob: false,
        }
    }
}

/// A simple command: its words, redirections and leading assignments left out.
pub type Command = Vec<Word>;

/// Why a command line could not be split.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    /// A quote, substitution or group is not closed.
    #[error("unterminated {0}")]
    Unterminated(&'static str),
    /// Substitutions or `sh -c` strings nested deeper than is sensible.
    #[error("nested too deeply")]
    TooDeep,
}

/// How deep substitutions may nest.
const MAX_DEPTH: usize = 8;

/// Splits `line` into its simple commands, in order of appearance (the commands of a
/// substitution come before the command that uses it).
#[cfg(test)]
pub fn split(line: &str) -> Result<Vec<Command>, SplitError> {
    let mut out = Vec::new();
    Scanner::new(line, 0).run(&mut out)?;
    Ok(out)
}

/// Splits `line` at nesting `depth` (for `sh -c` strings found by the caller).
pub fn split_nested(line: &str, depth: usize) -> Result<Vec<Command>, SplitError> {
    if depth > MAX_DEPTH {
        return Err(SplitError::TooDeep);
    }
    let mut out = Vec::new();
    Scanner::new(line, depth).run(&mut out)?;
    Ok(out)
}

struct Scanner<'a> {
    chars: Vec<char>,
    pos: usize,
    depth: usize,
    /// Here-document delimiters whose bodies start after the next newline: (word, strip tabs).
    heredocs: Vec<(String, bool)>,
    _line: std::marker::PhantomData<&'a str>,
}

/// The word being built.
#[derive(Default)]
struct Pending {
    text: String,
    started: bool,
    quoted: bool,
    dynamic: bool,
    glob: bool,
}

impl Pending {
    fn take(&mut self) -> Option<Word> {
        if !self.started {
            return None;
        }
        let word = Word {
            text: std::mem::take(&mut self.text),
            dynamic: self.dynamic,
            glob: self.glob,
        };
        *self = Self::default();
        Some(word)
    }

    fn push(&mut self, c: char) {
        self.started = true;
        self.text.push(c);
    }
}

/// What a redirection operator leaves for its next word.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    Word,
    Target,
    HereDoc { strip: bool },
}

impl<'a> Scanner<'a> {
    fn new(line: &'a str, depth: usize) -> Self {
        Self {
            chars: line.chars().collect(),
            pos: 0,
            depth,
            heredocs: Vec::new(),
            _line: std::marker::PhantomData,
        }
    }

    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn run(&mut self, out: &mut Vec<Command>) -> Result<(), SplitError> {
        let mut command: Command = Vec::new();
        let mut word = Pending::default();
        let mut expect = Expect::Word;
        // Finishes the word: a redirection's target is dropped, a here-document's delimiter
        // is remembered, anything else joins the command.
        let finish = |word: &mut Pending,
                      expect: &mut Expect,
                      command: &mut Command,
                      heredocs: &mut Vec<(String, bool)>| {
            if let Some(done) = word.take() {
                match *expect {
                    Expect::Word => command.push(done),
                    Expect::Target => {}
                    Expect::HereDoc { strip } => heredocs.push((done.text, strip)),
                }
                *expect = Expect::Word;
            }
        };
        let end = |command: &mut Command, out: &mut Vec<Command>| {
            let done = std::mem::take(command);
            let done = drop_group_words(done);
            if !done.is_empty() {
                out.push(done);
            }
        };
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\r' => {
                    finish(&mut word, &mut expect, &mut command, &mut self.heredocs);
                    self.pos += 1;
                }
                '\n' => {
                    finish(&mut word, &mut expect, &mut command, &mut self.heredocs);
                    end(&mut command, out);
                    self.pos += 1;
                    self.skip_heredoc_bodies();
                }
                ';' | '&' | '|' | '(' | ')' => {
                    // `2>&1`, `>&2`: `&` right after a redirection is part of it.
                    if c == '&' && expect == Expect::Target && !word.started {
                        self.pos += 1;
                        continue;
                    }
                    finish(&mut word, &mut expect, &mut command, &mut self.heredocs);
                    end(&mut command, out);
                    self.pos += 1;
                    // `&>` redirects; `&&`, `||`, `;;`, `|&` are one operator.
                    if c == '&' && self.peek(0) == Some('>') {
                        self.pos += 1;
                        if self.peek(0) == Some('>') {
                            self.pos += 1;
                        }
                        expect = Expect::Target;
                    } else if matches!(c, '&' | '|' | ';')
                        && matches!(self.peek(0), Some(next) if next == c || next == '&')
                    {
                        self.pos += 1;
                    }
                }
                '<' | '>' => {
                    // A word of digits right before is the file descriptor, not a word.
                    if word.started
                        && !word.quoted
                        && !word.text.is_empty()
                        && word.text.chars().all(|d| d.is_ascii_digit())
                    {
                        word = Pending::default();
                    } else {
                        finish(&mut word, &mut expect, &mut command, &mut self.heredocs);
                    }
                    self.pos += 1;
                    expect = Expect::Target;
                    if c == '<' && self.peek(0) == Some('<') {
                        self.pos += 1;
                        if self.peek(0) == Some('<') {
                            // `<<<` here-string: the next word is data.
                            self.pos += 1;
                        } else {
                            let strip = self.peek(0) == Some('-');
                            if strip {
                                self.pos += 1;
                            }
                            expect = Expect::HereDoc { strip };
                        }
                    } else if matches!(self.peek(0), Some('>' | '&' | '|'))
                        || (c == '<' && self.peek(0) == Some('>'))
                    {
                        self.pos += 1;
                    }
                }
                '#' if !word.started => {
                    while let Some(next) = self.peek(0) {
                        if next == '\n' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                '\'' => {
                    self.pos += 1;
                    word.started = true;
                    word.quoted = true;
                    loop {
                        match self.peek(0) {
                            None => return Err(SplitError::Unterminated("single quote")),
                            Some('\'') => {
                                self.pos += 1;
                                break;
                            }
                            Some(inner) => {
                                word.text.push(inner);
                                self.pos += 1;
                            }
                        }
                    }
                }
                '"' => {
                    self.pos += 1;
                    word.started = true;
                    word.quoted = true;
                    loop {
                        match self.peek(0) {
                            None => return Err(SplitError::Unterminated("double quote")),
                            Some('"') => {
                                self.pos += 1;
                                break;
                            }
                            Some('\\') => {
                                match self.peek(1) {
                                    Some(next @ ('$' | '`' | '"' | '\\')) => word.text.push(next),
                                    Some('\n') => {}
                                    Some(next) => {
                                        word.text.push('\\');
                                        word.text.push(next);
                                    }
                                    None => return Err(SplitError::Unterminated("double quote")),
                                }
                                self.pos += 2;
                            }
                            Some('$') => self.dollar(&mut word, out)?,
                            Some('`') => self.backquote(&mut word, out)?,
                            Some(inner) => {
                                word.text.push(inner);
                                self.pos += 1;
                            }
                        }
                    }
                }
                '\\' => {
                    match self.peek(1) {
                        Some('\n') => {}
                        Some(next) => word.push(next),
                        None => word.started = true,
                    }
                    self.pos += 2;
                }
                '$' => self.dollar(&mut word, out)?,
                '`' => self.backquote(&mut word, out)?,
                '*' | '?' | '[' => {
                    word.glob = true;
                    word.push(c);
                    self.pos += 1;
                }
                _ => {
                    word.push(c);
                    self.pos += 1;
                }
            }
        }
        finish(&mut word, &mut expect, &mut command, &mut self.heredocs);
        end(&mut command, out);
        Ok(())
    }

    /// After a newline: skips the bodies of the here-documents opened on the line before.
    fn skip_heredoc_bodies(&mut self) {
        for (delimiter, strip) in std::mem::take(&mut self.heredocs) {
            loop {
                let start = self.pos;
                while self.peek(0).is_some_and(|c| c != '\n') {
                    self.pos += 1;
                }
                let line: String = self.chars[start..self.pos].iter().collect();
                if self.peek(0).is_some() {
                    self.pos += 1;
                }
                let line = if strip {
                    line.trim_start_matches('\t')
                } else {
                    &line
                };
                if line == delimiter || self.peek(0).is_none() {
                    break;
                }
            }
        }
    }

    /// `$…` at the cursor: a parameter, `${…}`, `$(…)` (its commands are split too) or
    /// `$((…))`. Marks the word dynamic.
    fn dollar(&mut self, word: &mut Pending, out: &mut Vec<Command>) -> Result<(), SplitError> {
        word.started = true;
        word.dynamic = true;
        word.text.push('$');
        self.pos += 1;
        match self.peek(0) {
            Some('(') => {
                let arithmetic = self.peek(1) == Some('(');
                let start = self.pos + 1;
                let end = self.matching(start, '(', ')')?;
                let inner: String = self.chars[start..end].iter().collect();
                word.text.push('(');
                word.text.push_str(&inner);
                word.text.push(')');
                self.pos = end + 1;
                if !arithmetic {
                    out.extend(split_nested(&inner, self.depth + 1)?);
                }
            }
            Some('{') => {
                let start = self.pos + 1;
                let end = self.matching(start, '{', '}')?;
                let inner: String = self.chars[self.pos..=end].iter().collect();
                word.text.push_str(&inner);
                self.pos = end + 1;
            }
            _ => {
                while let Some(c) = self.peek(0) {
                    if c.is_ascii_alphanumeric() || c == '_' {
                        word.text.push(c);
                        self.pos += 1;
                    } else {
                        if word.text == "$" && "?#@*!$-0123456789".contains(c) {
                            word.text.push(c);
                            self.pos += 1;
                        }
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    /// A backquoted command at the cursor: split as commands of the line; the word is dynamic.
    fn backquote(&mut self, word: &mut Pending, out: &mut Vec<Command>) -> Result<(), SplitError> {
        word.started = true;
        word.dynamic = true;
        let start = self.pos + 1;
        let mut end = start;
        loop {
            match self.chars.get(end) {
                None => return Err(SplitError::Unterminated("backquote")),
                Some('\\') => end += 2,
                Some('`') => break,
                Some(_) => end += 1,
            }
        }
        let inner: String = self.chars[start..end].iter().collect();
        word.text.push('`');
        word.text.push_str(&inner);
        word.text.push('`');
        self.pos = end + 1;
        out.extend(split_nested(&inner, self.depth + 1)?);
        Ok(())
    }

    /// The index of the `close` that closes the group opened just before `start`, skipping
    /// quoted text.
    fn matching(&self, start: usize, open: char, close: char) -> Result<usize, SplitError> {
        let mut depth = 1usize;
        let mut at = start;
        let mut quote: Option<char> = None;
        while let Some(&c) = self.chars.get(at) {
            match quote {
                Some(q) => {
                    if c == '\\' && q == '"' {
                        at += 1;
                    } else if c == q {
                        quote = None;
                    }
                }
                None => match c {
                    '\'' | '"' => quote = Some(c),
                    '\\' => at += 1,
                    _ if c == open => depth += 1,
                    _ if c == close => {
                        depth -= 1;
                        if depth == 0 {
                            return Ok(at);
                        }
                    }
                    _ => {}
                },
            }
            at += 1;
        }
        Err(SplitError::Unterminated(if open == '(' {
            "substitution"
        } else {
            "parameter"
        }))
    }
}

/// Drops the words that only group commands (`{`, `}`) and keywords in front of a command
/// (`!`, `then`, `do`, …), so the command's own name comes first.
fn drop_group_words(mut command: Command) -> Command {
    const KEYWORDS: &[&str] = &[
        "{", "}", "!", "then", "else", "elif", "do", "done", "fi", "if", "while", "until", "time",
    ];
    while command
        .first()
        .is_some_and(|word| !word.dynamic && KEYWORDS.contains(&word.text.as_str()))
    {
        command.remove(0);
    }
    if command.last().is_some_and(|word| word.text == "}") {
        command.pop();
    }
    command
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn texts(line: &str) -> Vec<Vec<String>> {
        split(line)
            .unwrap()
            .into_iter()
            .map(|command| command.into_iter().map(|word| word.text).collect())
            .collect()
    }

    #[test]
    fn operators_sequence_commands() {
        assert_eq!(
            texts("git add -A && git commit -m 'a b' ; ls|wc -l || true & echo x"),
            vec![
                vec!["git", "add", "-A"],
                vec!["git", "commit", "-m", "a b"],
                vec!["ls"],
                vec!["wc", "-l"],
                vec!["true"],
                vec!["echo", "x"],
            ]
        );
        assert_eq!(texts("a&&b"), vec![vec!["a"], vec!["b"]]);
        assert_eq!(texts("a\nb\n\n"), vec![vec!["a"], vec!["b"]]);
    }

    #[test]
    fn quoting_is_removed_and_kept_together() {
        assert_eq!(
            texts(r#"git commit -m "fix: a && b; c" -m 'x '"y" a\ b"#),
            vec![vec![
                "git",
                "commit",
                "-m",
                "fix: a && b; c",
                "-m",
                "x y",
                "a b"
            ]]
        );
        assert_eq!(
            texts(r#"echo "a\"b\\c\$d""#),
            vec![vec!["echo", r#"a"b\c$d"#]]
        );
        assert_eq!(texts("echo ''"), vec![vec!["echo", ""]]);
        assert!(split("echo 'open").is_err());
        assert!(split("echo \"open").is_err());
        assert!(split("echo $(open").is_err());
    }

    #[test]
    fn subshells_groups_and_substitutions() {
        assert_eq!(
            texts("(cd sub && git stash) ; { git status; }"),
            vec![
                vec!["cd", "sub"],
                vec!["git", "stash"],
                vec!["git", "status"]
            ]
        );
        let commands = split("echo $(git stash list | head -1) `git reset --hard`").unwrap();
        let names: Vec<&str> = commands.iter().map(|c| c[0].text.as_str()).collect();
        assert_eq!(names, vec!["git", "head", "git", "echo"]);
        assert!(commands[3][1].dynamic && commands[3][2].dynamic);
        assert!(split("echo $HOME ${X:-y}").unwrap()[0][1].dynamic);
        assert!(split("git add *.ts").unwrap()[0][2].glob);
        assert!(!split("git add '*.ts'").unwrap()[0][2].glob);
        assert_eq!(
            texts("if git diff --quiet; then echo ok; fi"),
            vec![vec!["git", "diff", "--quiet"], vec!["echo", "ok"],]
        );
    }

    #[test]
    fn redirections_comments_and_heredocs_are_not_words() {
        assert_eq!(
            texts("git status >out.txt 2>&1 </dev/null # git stash\ngit log &>/dev/null"),
            vec![vec!["git", "status"], vec!["git", "log"]]
        );
        assert_eq!(
            texts("cat <<EOF > f\ngit stash\ngit reset --hard\nEOF\ngit diff"),
            vec![vec!["cat"], vec!["git", "diff"]]
        );
        assert_eq!(texts("cat <<<'git stash'"), vec![vec!["cat"]]);
        assert_eq!(texts("echo a 2> err"), vec![vec!["echo", "a"]]);
    }
}
