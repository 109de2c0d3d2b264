//! PowerShell command lines for the shell gate (Claude Code's `PowerShell` tool, and the
//! `PowerShell` shell of its PreSkillShellCommand hook): a line of plain words — single- and
//! double-quoted strings without expansions, `;`, `|`, `&&`, `||`, the `&` call operator,
//! redirections, `#` comments, backtick line continuations — is rewritten as the POSIX shell
//! line that runs the same programs with the same arguments, which the shell gate then reads
//! like any other ([`super::shell`]). Anything whose arguments PowerShell computes at run time
//! (`$variables`, `$(…)`, `@splats`, script blocks, sub-expressions, arrays, backtick escapes,
//! a nested `pwsh`) cannot be read that way: [`as_posix`] says so, and the gate says it cannot
//! tell rather than guessing.
//!
//! PowerShell's quoting, as its `about_Quoting_Rules` gives it: inside `'…'` everything is
//! literal and `''` is one quote; inside `"…"` `` ` `` escapes, `$` expands and `""` is one
//! quote; outside quotes `` ` `` escapes the next character and a backslash is an ordinary
//! character (unlike the POSIX shell's).

use super::shell_quote;

/// Why a PowerShell line cannot be read as plain words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unreadable(pub String);

/// One token of a PowerShell line.
enum Token {
    /// A word (its text after quoting is removed).
    Word(String),
    /// An operator copied to the POSIX line as it is (`;`, `|`, `&&`, `||`, redirections).
    Operator(String),
}

/// The POSIX shell line that runs what the PowerShell line `line` runs; [`Unreadable`] when
/// the line computes its arguments at run time.
pub fn as_posix(line: &str) -> Result<String, Unreadable> {
    let tokens = tokens(line)?;
    let mut out = Vec::with_capacity(tokens.len());
    let mut command_start = true;
    for token in tokens {
        match token {
            Token::Operator(op) => {
                command_start = !op.contains('>') && !op.contains('<');
                out.push(op);
            }
            // `& 'git' stash`: the call operator runs its next word.
            Token::Word(word) if command_start && word == "&" => {}
            Token::Word(word) => {
                let lower = word.to_ascii_lowercase();
                let program = lower.rsplit(['/', '\\']).next().unwrap_or(&lower);
                if command_start
                    && ["pwsh", "pwsh.exe", "powershell", "powershell.exe"].contains(&program)
                {
                    return Err(Unreadable(format!(
                        "it runs a nested PowerShell (`{word}`)"
                    )));
                }
                let word = if command_start && program == "git.exe" {
                    "git".to_string()
                } else {
                    word
                };
                out.push(posix_word(&word));
                command_start = false;
            }
        }
    }
    Ok(out.join(" "))
}

/// `word` as one POSIX shell word: as it is when it holds only characters the shell leaves
/// alone, else single-quoted.
fn posix_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./:=%+,-@^".contains(c));
    if plain {
        word.to_string()
    } else {
        shell_quote(word)
    }
}

fn tokens(line: &str) -> Result<Vec<Token>, Unreadable> {
    let mut tokens = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars().peekable();
    let flush = |word: &mut Option<String>, tokens: &mut Vec<Token>| {
        if let Some(done) = word.take() {
            tokens.push(Token::Word(done));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\r' => flush(&mut word, &mut tokens),
            '\n' => {
                flush(&mut word, &mut tokens);
                tokens.push(Token::Operator(";".into()));
            }
            '#' if word.is_none() => {
                // A comment runs to the end of the line.
                for next in chars.by_ref() {
                    if next == '\n' {
                        tokens.push(Token::Operator(";".into()));
                        break;
                    }
                }
            }
            '`' => match chars.next() {
                Some('\n') => flush(&mut word, &mut tokens),
                Some('\r') if chars.peek() == Some(&'\n') => {
                    chars.next();
                    flush(&mut word, &mut tokens);
                }
                _ => return Err(Unreadable("it has a backtick escape".into())),
            },
            '\'' => {
                let text = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        None => return Err(Unreadable("a quote is not closed".into())),
                        Some('\'') if chars.peek() == Some(&'\'') => {
                            chars.next();
                            text.push('\'');
                        }
                        Some('\'') => break,
                        Some(other) => text.push(other),
                    }
                }
            }
            '"' => {
                let text = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        None => return Err(Unreadable("a quote is not closed".into())),
                        Some('"') if chars.peek() == Some(&'"') => {
                            chars.next();
                            text.push('"');
                        }
                        Some('"') => break,
                        Some('$') => {
                            return Err(Unreadable("a double-quoted string expands `$`".into()))
                        }
                        Some('`') => {
                            return Err(Unreadable(
                                "a double-quoted string has a backtick escape".into(),
                            ))
                        }
                        Some(other) => text.push(other),
                    }
                }
            }
            ';' => {
                flush(&mut word, &mut tokens);
                tokens.push(Token::Operator(";".into()));
            }
            '|' => {
                flush(&mut word, &mut tokens);
                let op = if chars.peek() == Some(&'|') {
                    chars.next();
                    "||"
                } else {
                    "|"
                };
                tokens.push(Token::Operator(op.into()));
            }
            '&' if chars.peek() == Some(&'&') => {
                chars.next();
                flush(&mut word, &mut tokens);
                tokens.push(Token::Operator("&&".into()));
            }
            '&' if word.is_none() => tokens.push(Token::Word("&".into())),
            '>' | '<' => {
                // `2>&1`, `*>`, `>>`, `<`: the stream number stays with the operator.
                let mut op = match word.take() {
                    Some(n) if n.len() == 1 && n.chars().all(|d| d.is_ascii_digit()) => n,
                    Some(star) if star == "*" => String::new(),
                    Some(other) => {
                        tokens.push(Token::Word(other));
                        String::new()
                    }
                    None => String::new(),
                };
                op.push(c);
                if chars.peek() == Some(&c) {
                    chars.next();
                    op.push(c);
                }
                if chars.peek() == Some(&'&') {
                    chars.next();
                    op.push('&');
                    if let Some(d) = chars.next_if(char::is_ascii_digit) {
                        op.push(d);
                    }
                }
                tokens.push(Token::Operator(op));
            }
            '$' | '@' | '(' | ')' | '{' | '}' | ',' | '[' => {
                return Err(Unreadable(format!(
                    "PowerShell computes part of it at run time (`{c}`)"
                )))
            }
            other => word.get_or_insert_with(String::new).push(other),
        }
    }
    flush(&mut word, &mut tokens);
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    #[test]
    fn plain_words_read_as_the_same_posix_line() {
        assert_eq!(as_posix("git stash").unwrap(), "git stash");
        assert_eq!(
            as_posix("cd C:\\repo; git.exe checkout -- src/a.ts").unwrap(),
            "cd 'C:\\repo' ; git checkout -- src/a.ts"
        );
        assert_eq!(as_posix("& 'git' stash push").unwrap(), "git stash push");
        assert_eq!(
            as_posix("git commit -m 'it''s done' && git push").unwrap(),
            "git commit -m 'it'\\''s done' && git push"
        );
        assert_eq!(
            as_posix("git reset --hard 2>&1 | Out-Null # comment").unwrap(),
            "git reset --hard 2>&1 | Out-Null"
        );
        assert_eq!(
            as_posix("git add `\n  -A").unwrap(),
            "git add -A",
            "a backtick continues the line"
        );
        assert_eq!(
            as_posix("git log\ngit stash").unwrap(),
            "git log ; git stash"
        );
        assert_eq!(
            as_posix("git commit -m \"say \"\"hi\"\"\"").unwrap(),
            "git commit -m 'say \"hi\"'"
        );
    }

    #[test]
    fn run_time_arguments_cannot_be_read() {
        for line in [
            "git stash $args",
            "git commit -m \"$msg\"",
            "git $(Get-Sub)",
            "git @splat",
            "git add a,b",
            "git commit -m \"a`tb\"",
            "pwsh -Command 'git stash'",
            "git stash 'open",
            "Invoke-Command { git stash }",
        ] {
            assert!(as_posix(line).is_err(), "{line}");
        }
    }
}
