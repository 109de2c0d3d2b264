//! The command line of a shell tool call, split as a POSIX shell (bash) would split it:
//! quoting (`'…'`, `"…"`, `\`, ANSI-C `$'…'` with its escapes, `$"…"`), the operators that
//! sequence commands (`;`, `&&`, `||`, `|`, `&`, newlines), subshells and groups (`( … )`,
//! `{ …; }`), command substitutions (`$( … )`, backquotes: their commands are commands of the
//! line too), comments, redirections, here-strings and here-documents (their bodies are the
//! command's standard input, kept for a shell that reads its script from there).
//!
//! Quote removal happens before anything is decided, so `gi''t`, `g"i"t`, `g\it` and
//! `$'\x67it'` are all the word `git`. Nothing is expanded: a word that holds a parameter, a
//! substitution, a brace expansion or an unquoted glob character keeps its text and says so
//! ([`Word::dynamic`], [`Word::glob`]), so the caller can be careful with what it cannot
//! know.
//!
//! A part that does not parse (an unclosed quote, too deep a nesting) does not spoil the
//! rest: the commands before it are returned and the part is [`Split::unreadable`], as bash
//! runs the complete commands of the lines before a syntax error. The work is linear in the
//! line (each nesting level reads its text once more, at most [`MAX_DEPTH`] levels) and
//! capped at [`MAX_CHARS`] characters and [`MAX_COMMANDS`] commands.
//!
//! Why not `shlex` or `shell-words`: both split one command's words but know no operators,
//! here-documents or ANSI-C quoting, and finding the operators needs the same quote-aware scan
//! that splitting is; one scanner that does both is smaller than a crate plus a second scanner
//! around it.

/// One word of a simple command, its quotes removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The text, with quoting removed and nothing expanded.
    pub text: String,
    /// Holds `$…`, `$(…)`, a backquoted command or a brace expansion: its value is only known
    /// when it runs.
    pub dynamic: bool,
    /// Holds an unquoted `*`, `?` or `[`: the shell may expand it to file names.
    pub glob: bool,
}

impl Word {
    /// A word of known text (no expansion).
    pub fn plain(text: &str) -> Self {
        Self {
            text: text.to_string(),
            dynamic: false,
            glob: false,
        }
    }

    /// A word whose value is only known when the line runs (`text` says what it stands for).
    pub fn unknown(text: &str) -> Self {
        Self {
            text: text.to_string(),
            dynamic: true,
            glob: false,
        }
    }
}

/// A simple command: its words (redirections left out) and what feeds its standard input.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Command {
    /// The words, leading assignments included.
    pub words: Vec<Word>,
    /// The body of a here-document or here-string given to it.
    pub stdin_text: Option<String>,
    /// Its standard input is the pipe from the command before it.
    pub piped: bool,
}

/// Why (part of) a command line could not be split.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    /// A quote, substitution or group is not closed.
    #[error("unterminated {0}")]
    Unterminated(&'static str),
    /// Substitutions or `sh -c` strings nested deeper than is sensible.
    #[error("nested too deeply")]
    TooDeep,
    /// More text or commands than the gate reads.
    #[error("longer than the gate reads")]
    TooLong,
}

/// A part of the line that could not be split, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// The part's text, from the start of the command it broke in (cut to 200 characters).
    pub text: String,
    /// Why.
    pub error: SplitError,
}

/// The commands of a line, in order of appearance (the commands of a substitution come before
/// the command that uses it), and the part that could not be read, if any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Split {
    /// The complete commands before any unreadable part.
    pub commands: Vec<Command>,
    /// From where reading failed to the end of the line.
    pub unreadable: Option<Unreadable>,
}

/// How deep substitutions may nest.
pub const MAX_DEPTH: usize = 8;

/// The longest line read, in characters.
pub const MAX_CHARS: usize = 4 << 20;

/// The most commands read from one line (substitutions included).
pub const MAX_COMMANDS: usize = 200_000;

/// Splits `line`; what does not parse is [`Split::unreadable`].
pub fn split(line: &str) -> Split {
    split_at_depth(line, 0)
}

/// Splits `line` at nesting `depth` (for `sh -c` strings, `eval` and aliases found by the
/// caller).
pub fn split_at_depth(line: &str, depth: usize) -> Split {
    let mut out = Vec::new();
    if depth > MAX_DEPTH {
        return Split {
            commands: out,
            unreadable: Some(unreadable_part(line, SplitError::TooDeep)),
        };
    }
    let mut scanner = Scanner::new(line, depth);
    if scanner.chars.len() > MAX_CHARS {
        scanner.chars.truncate(MAX_CHARS);
        scanner.too_long = true;
    }
    let unreadable = match scanner.run(&mut out) {
        Ok(()) if scanner.too_long => {
            let start = scanner.command_start.min(scanner.chars.len());
            let text: String = scanner.chars[start..].iter().take(200).collect();
            Some(unreadable_part(&text, SplitError::TooLong))
        }
        Ok(()) => None,
        Err(error) => {
            let start = scanner.command_start.min(scanner.chars.len());
            let text: String = scanner.chars[start..].iter().take(200).collect();
            Some(unreadable_part(&text, error))
        }
    };
    Split {
        commands: out,
        unreadable,
    }
}

fn unreadable_part(text: &str, error: SplitError) -> Unreadable {
    Unreadable {
        text: text.chars().take(200).collect(),
        error,
    }
}

/// Splits a nested text (a substitution's): any part that does not parse fails the whole.
fn split_nested(line: &str, depth: usize, out: &mut Vec<Command>) -> Result<(), SplitError> {
    let split = split_at_depth(line, depth);
    out.extend(split.commands);
    match split.unreadable {
        Some(part) => Err(part.error),
        None => Ok(()),
    }
}

struct Scanner {
    chars: Vec<char>,
    pos: usize,
    depth: usize,
    /// Here-documents whose bodies start after the next newline.
    heredocs: Vec<HereDoc>,
    /// Where the command being read started (for the unreadable part).
    command_start: usize,
    /// The line was cut at [`MAX_CHARS`].
    too_long: bool,
}

/// A here-document opened on the current line.
struct HereDoc {
    delimiter: String,
    strip_tabs: bool,
    /// The index in the output of the command it feeds, once that command is complete.
    command: Option<usize>,
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
    HereString,
}

/// The command being read.
#[derive(Default)]
struct Building {
    command: Command,
    /// Here-documents (indices into the scanner's list) this command opened.
    heredocs: Vec<usize>,
    /// Whether the operator that ended the command before was a pipe.
    piped: bool,
}

impl Scanner {
    fn new(line: &str, depth: usize) -> Self {
        Self {
            chars: line.chars().collect(),
            pos: 0,
            depth,
            heredocs: Vec::new(),
            command_start: 0,
            too_long: false,
        }
    }

    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    /// Finishes the word: a redirection's target is dropped, a here-document's delimiter is
    /// remembered, a here-string is the command's input, anything else joins the command.
    fn finish(&mut self, word: &mut Pending, expect: &mut Expect, building: &mut Building) {
        if let Some(done) = word.take() {
            match *expect {
                Expect::Word => building.command.words.push(done),
                Expect::Target => {}
                Expect::HereDoc { strip } => {
                    building.heredocs.push(self.heredocs.len());
                    self.heredocs.push(HereDoc {
                        delimiter: done.text,
                        strip_tabs: strip,
                        command: None,
                    });
                }
                Expect::HereString => building.command.stdin_text = Some(done.text),
            }
            *expect = Expect::Word;
        }
    }

    /// Ends the command being read; `next_piped` says whether the next one reads its output.
    fn end(
        &mut self,
        building: &mut Building,
        out: &mut Vec<Command>,
        next_piped: bool,
    ) -> Result<(), SplitError> {
        let mut done = std::mem::take(building);
        done.command.piped = done.piped;
        drop_group_words(&mut done.command.words);
        if !done.command.words.is_empty() {
            if out.len() >= MAX_COMMANDS {
                return Err(SplitError::TooLong);
            }
            for index in done.heredocs {
                if let Some(heredoc) = self.heredocs.get_mut(index) {
                    heredoc.command = Some(out.len());
                }
            }
            out.push(done.command);
        }
        building.piped = next_piped;
        self.command_start = self.pos;
        Ok(())
    }

    fn run(&mut self, out: &mut Vec<Command>) -> Result<(), SplitError> {
        let mut building = Building::default();
        let mut word = Pending::default();
        let mut expect = Expect::Word;
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\r' => {
                    self.finish(&mut word, &mut expect, &mut building);
                    self.pos += 1;
                }
                '\n' => {
                    self.finish(&mut word, &mut expect, &mut building);
                    self.pos += 1;
                    self.end(&mut building, out, false)?;
                    self.read_heredoc_bodies(out);
                    self.command_start = self.pos;
                }
                ';' | '&' | '|' | '(' | ')' => {
                    // `2>&1`, `>&2`: `&` right after a redirection is part of it.
                    if c == '&' && expect == Expect::Target && !word.started {
                        self.pos += 1;
                        continue;
                    }
                    self.finish(&mut word, &mut expect, &mut building);
                    self.pos += 1;
                    let mut piped = false;
                    // `&>` redirects; `&&`, `||`, `;;`, `|&` are one operator.
                    if c == '&' && self.peek(0) == Some('>') {
                        self.pos += 1;
                        if self.peek(0) == Some('>') {
                            self.pos += 1;
                        }
                        self.end(&mut building, out, false)?;
                        expect = Expect::Target;
                        continue;
                    }
                    if c == '|' {
                        piped = self.peek(0) != Some('|');
                    }
                    if matches!(c, '&' | '|' | ';')
                        && matches!(self.peek(0), Some(next) if next == c || next == '&')
                    {
                        self.pos += 1;
                    }
                    self.end(&mut building, out, piped)?;
                }
                '<' | '>' if self.peek(1) == Some('(') => {
                    // Process substitution: a word whose commands are commands of the line.
                    let start = self.pos + 2;
                    let end = self.matching(start, '(', ')')?;
                    let inner: String = self.chars[start..end].iter().collect();
                    self.pos = end + 1;
                    split_nested(&inner, self.depth + 1, out)?;
                    word.started = true;
                    word.dynamic = true;
                    word.text.push(c);
                    word.text.push_str("(…)");
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
                        self.finish(&mut word, &mut expect, &mut building);
                    }
                    self.pos += 1;
                    expect = Expect::Target;
                    if c == '<' && self.peek(0) == Some('<') {
                        self.pos += 1;
                        if self.peek(0) == Some('<') {
                            self.pos += 1;
                            expect = Expect::HereString;
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
                    self.double_quoted(&mut word, out)?;
                }
                '\\' => {
                    match self.peek(1) {
                        Some('\n') => {}
                        Some(next) => {
                            word.push(next);
                            word.quoted = true;
                        }
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
                '{' if word.started || self.brace_expansion_ahead() => {
                    // `src/{a,b}.ts`, `{1..3}`: expanded by the shell into several words.
                    word.dynamic |= self.brace_expansion_ahead();
                    word.push(c);
                    self.pos += 1;
                }
                '~' if !word.started && matches!(self.peek(1), None | Some('/' | ' ')) => {
                    match std::env::var("HOME") {
                        Ok(home) if !home.is_empty() => {
                            word.started = true;
                            word.text.push_str(&home);
                        }
                        _ => {
                            word.push(c);
                            word.dynamic = true;
                        }
                    }
                    self.pos += 1;
                }
                _ => {
                    word.push(c);
                    self.pos += 1;
                }
            }
        }
        self.finish(&mut word, &mut expect, &mut building);
        self.end(&mut building, out, false)?;
        Ok(())
    }

    /// Whether the `{` at the cursor opens a brace expansion (`{a,b}`, `{1..3}`) before any
    /// space or operator.
    fn brace_expansion_ahead(&self) -> bool {
        let mut depth = 0usize;
        for &c in self.chars.iter().skip(self.pos).take(64) {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return false;
                    }
                }
                ',' if depth == 1 => return true,
                '.' if depth == 1 => return true,
                ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>' => return false,
                _ => {}
            }
        }
        false
    }

    /// The inside of `"…"` from the cursor (just after the opening quote) to its close.
    fn double_quoted(
        &mut self,
        word: &mut Pending,
        out: &mut Vec<Command>,
    ) -> Result<(), SplitError> {
        word.started = true;
        word.quoted = true;
        loop {
            match self.peek(0) {
                None => return Err(SplitError::Unterminated("double quote")),
                Some('"') => {
                    self.pos += 1;
                    return Ok(());
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
                Some('$') if self.peek(1) == Some('\'') => {
                    // No ANSI-C quoting inside double quotes.
                    word.text.push('$');
                    self.pos += 1;
                }
                Some('$') => self.dollar(word, out)?,
                Some('`') => self.backquote(word, out)?,
                Some(inner) => {
                    word.text.push(inner);
                    self.pos += 1;
                }
            }
        }
    }

    /// After a newline: reads the bodies of the here-documents opened on the line before,
    /// each the standard input of its command.
    fn read_heredoc_bodies(&mut self, out: &mut [Command]) {
        for heredoc in std::mem::take(&mut self.heredocs) {
            let mut body = String::new();
            loop {
                let start = self.pos;
                while self.peek(0).is_some_and(|c| c != '\n') {
                    self.pos += 1;
                }
                let line: String = self.chars[start..self.pos].iter().collect();
                let at_end = self.peek(0).is_none();
                if !at_end {
                    self.pos += 1;
                }
                let line = if heredoc.strip_tabs {
                    line.trim_start_matches('\t').to_string()
                } else {
                    line
                };
                if line == heredoc.delimiter {
                    break;
                }
                body.push_str(&line);
                body.push('\n');
                if at_end {
                    break;
                }
            }
            if let Some(command) = heredoc.command.and_then(|at| out.get_mut(at)) {
                command.stdin_text = Some(body);
            }
        }
    }

    /// `$…` at the cursor: ANSI-C `$'…'`, `$"…"`, a parameter, `${…}`, `$(…)` (its commands
    /// are split too) or `$((…))`. All but the quotes mark the word dynamic.
    fn dollar(&mut self, word: &mut Pending, out: &mut Vec<Command>) -> Result<(), SplitError> {
        word.started = true;
        match self.peek(1) {
            Some('\'') => {
                self.pos += 2;
                word.quoted = true;
                return self.ansi_c(word);
            }
            Some('"') => {
                self.pos += 2;
                return self.double_quoted(word, out);
            }
            _ => {}
        }
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
                    split_nested(&inner, self.depth + 1, out)?;
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
                        if word.text.ends_with('$') && "?#@*!$-0123456789".contains(c) {
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

    /// The inside of `$'…'` from the cursor to its close, escapes decoded as bash does.
    fn ansi_c(&mut self, word: &mut Pending) -> Result<(), SplitError> {
        loop {
            match self.peek(0) {
                None => return Err(SplitError::Unterminated("ANSI-C quote")),
                Some('\'') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some('\\') => {
                    self.pos += 1;
                    let Some(escape) = self.peek(0) else {
                        return Err(SplitError::Unterminated("ANSI-C quote"));
                    };
                    self.pos += 1;
                    let simple = match escape {
                        'a' => Some('\x07'),
                        'b' => Some('\x08'),
                        'e' | 'E' => Some('\x1b'),
                        'f' => Some('\x0c'),
                        'n' => Some('\n'),
                        'r' => Some('\r'),
                        't' => Some('\t'),
                        'v' => Some('\x0b'),
                        '\\' | '\'' | '"' | '?' => Some(escape),
                        _ => None,
                    };
                    if let Some(c) = simple {
                        word.text.push(c);
                        continue;
                    }
                    let (radix, most) = match escape {
                        '0'..='7' => {
                            self.pos -= 1;
                            (8, 3)
                        }
                        'x' => (16, 2),
                        'u' => (16, 4),
                        'U' => (16, 8),
                        'c' => {
                            // Control character: `\cX`.
                            if let Some(next) = self.peek(0) {
                                self.pos += 1;
                                let code = (next.to_ascii_uppercase() as u32) & 0x1f;
                                word.text.extend(char::from_u32(code));
                            }
                            continue;
                        }
                        other => {
                            word.text.push('\\');
                            word.text.push(other);
                            continue;
                        }
                    };
                    let mut value = 0u32;
                    let mut digits = 0;
                    while digits < most {
                        match self.peek(0).and_then(|d| d.to_digit(radix)) {
                            Some(d) => {
                                value = value * radix + d;
                                digits += 1;
                                self.pos += 1;
                            }
                            None => break,
                        }
                    }
                    if digits == 0 {
                        word.text.push('\\');
                        word.text.push(escape);
                    } else if radix == 8 || escape == 'x' {
                        // A byte; bytes above ASCII only form text together, which the gate
                        // need not read (no command name or option is outside ASCII).
                        word.text.extend(char::from_u32(value & 0xff));
                    } else {
                        word.text.extend(char::from_u32(value));
                    }
                }
                Some(inner) => {
                    word.text.push(inner);
                    self.pos += 1;
                }
            }
        }
    }

    /// A backquoted command at the cursor: split as commands of the line; the word is dynamic.
    fn backquote(&mut self, word: &mut Pending, out: &mut Vec<Command>) -> Result<(), SplitError> {
        word.started = true;
        word.dynamic = true;
        let start = self.pos + 1;
        let mut end = start;
        let mut inner = String::new();
        loop {
            match self.chars.get(end) {
                None => return Err(SplitError::Unterminated("backquote")),
                Some('\\') => {
                    // Inside backquotes `\` keeps its meaning only before `$`, `` ` `` or `\`.
                    match self.chars.get(end + 1) {
                        Some(next @ ('$' | '`' | '\\')) => inner.push(*next),
                        Some(next) => {
                            inner.push('\\');
                            inner.push(*next);
                        }
                        None => return Err(SplitError::Unterminated("backquote")),
                    }
                    end += 2;
                }
                Some('`') => break,
                Some(c) => {
                    inner.push(*c);
                    end += 1;
                }
            }
        }
        word.text.push('`');
        word.text.push_str(&inner);
        word.text.push('`');
        self.pos = end + 1;
        split_nested(&inner, self.depth + 1, out)
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
                    if c == '\\' && q != '\'' {
                        at += 1;
                    } else if c == q {
                        quote = None;
                    }
                }
                None => match c {
                    '\'' | '"' | '`' => quote = Some(c),
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
fn drop_group_words(words: &mut Vec<Word>) {
    const KEYWORDS: &[&str] = &[
        "{", "}", "!", "then", "else", "elif", "do", "done", "fi", "if", "while", "until", "time",
    ];
    let leading = words
        .iter()
        .take_while(|word| !word.dynamic && KEYWORDS.contains(&word.text.as_str()))
        .count();
    words.drain(..leading);
    if words.last().is_some_and(|word| word.text == "}") {
        words.pop();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn texts(line: &str) -> Vec<Vec<String>> {
        let split = split(line);
        assert_eq!(split.unreadable, None, "{line}");
        split
            .commands
            .into_iter()
            .map(|command| command.words.into_iter().map(|word| word.text).collect())
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
        let piped = split("ls | xargs rm").commands;
        assert!(!piped[0].piped && piped[1].piped);
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
        for spelled in [
            "gi''t",
            "g\"i\"t",
            "g\\it",
            "$'\\x67it'",
            "$'\\147it'",
            "$'g\\u0069t'",
            "$\"git\"",
        ] {
            assert_eq!(
                texts(&format!("{spelled} stash")),
                vec![vec!["git", "stash"]],
                "{spelled}"
            );
        }
        assert_eq!(texts(r"echo $'it\'s'"), vec![vec!["echo", "it's"]]);
    }

    #[test]
    fn a_part_that_does_not_parse_leaves_the_rest() {
        let split = split("git stash\necho 'oops");
        assert_eq!(split.commands.len(), 1);
        let part = split.unreadable.unwrap();
        assert_eq!(part.text, "echo 'oops");
        assert_eq!(part.error, SplitError::Unterminated("single quote"));
        let split = super::split("git stash; echo \"open");
        assert_eq!(split.commands[0].words[1].text, "stash");
        assert!(super::split("echo $(open").unreadable.is_some());
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
        let commands = split("echo $(git stash list | head -1) `git reset --hard`").commands;
        let names: Vec<&str> = commands.iter().map(|c| c.words[0].text.as_str()).collect();
        assert_eq!(names, vec!["git", "head", "git", "echo"]);
        assert!(commands[3].words[1].dynamic && commands[3].words[2].dynamic);
        assert!(split("echo $HOME ${X:-y}").commands[0].words[1].dynamic);
        assert!(split("git add *.ts").commands[0].words[2].glob);
        assert!(!split("git add '*.ts'").commands[0].words[2].glob);
        assert!(split("git checkout -- src/{a,b}.ts").commands[0].words[3].dynamic);
        assert!(!split("git log --format=%H stash@{0}").commands[0].words[3].dynamic);
        assert_eq!(
            texts("if git diff --quiet; then echo ok; fi"),
            vec![vec!["git", "diff", "--quiet"], vec!["echo", "ok"],]
        );
        assert_eq!(
            texts("diff <(git show HEAD:a) a"),
            vec![vec!["git", "show", "HEAD:a"], vec!["diff", "<(…)", "a"]]
        );
    }

    #[test]
    fn redirections_comments_and_heredocs_are_not_words() {
        assert_eq!(
            texts("git status >out.txt 2>&1 </dev/null # git stash\ngit log &>/dev/null"),
            vec![vec!["git", "status"], vec!["git", "log"]]
        );
        let split = split("cat <<EOF > f\ngit stash\ngit reset --hard\nEOF\ngit diff");
        assert_eq!(split.commands.len(), 2);
        assert_eq!(
            split.commands[0].stdin_text.as_deref(),
            Some("git stash\ngit reset --hard\n")
        );
        let here = super::split("bash <<<'git stash'");
        assert_eq!(here.commands[0].stdin_text.as_deref(), Some("git stash"));
        assert_eq!(texts("echo a 2> err"), vec![vec!["echo", "a"]]);
    }

    #[test]
    fn work_is_capped() {
        let deep = "$(".repeat(20) + &")".repeat(20);
        assert_eq!(
            split(&format!("echo {deep}")).unreadable.unwrap().error,
            SplitError::TooDeep
        );
        let many = "true;".repeat(MAX_COMMANDS + 10);
        let split = split(&many);
        assert_eq!(split.commands.len(), MAX_COMMANDS);
        assert_eq!(split.unreadable.unwrap().error, SplitError::TooLong);
    }
}
