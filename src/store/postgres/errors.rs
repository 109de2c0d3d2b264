//! How PostgreSQL failures become [`StoreError`]s: a server that cannot be reached, a broken
//! connection or a call that timed out is [`StoreError::Unavailable`] (nothing was changed,
//! the caller may try again once it is back); anything else the server refused is
//! [`StoreError::Postgres`]. Messages are built from the redacted URL only, and any trace of
//! the password is scrubbed from the driver's text as well.

use crate::store::StoreError;

/// SQLSTATEs that mean "the server is not there or did not answer in time": the connection
/// exception class (08), shutdowns (57P01-57P03), too many connections (53300), a statement
/// or lock timeout (57014, 55P03).
const UNAVAILABLE_CODES: &[&str] = &["57P01", "57P02", "57P03", "53300", "57014", "55P03"];

/// Names the store in errors: the redacted URL with the project, and the password to scrub.
#[derive(Clone)]
pub(super) struct StoreName {
    /// The redacted URL with the project, as [`super::PgStore::describe`] shows it.
    pub(super) shown: String,
    /// The URL's password as written and decoded, if it has one: never allowed into a
    /// message.
    secrets: Vec<String>,
}

impl StoreName {
    /// The name of the store at `shown`, whose password (if any) is among `secrets`.
    pub(super) fn new(shown: String, mut secrets: Vec<String>) -> StoreName {
        secrets.retain(|s| !s.is_empty());
        // Longest first, so a password that contains another one is scrubbed whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        StoreName { shown, secrets }
    }

    /// `text` without the password.
    pub(super) fn scrub(&self, text: &str) -> String {
        self.secrets.iter().fold(text.to_owned(), |text, secret| {
            text.replace(secret.as_str(), "***")
        })
    }

    /// The store is unavailable because of `reason`.
    pub(super) fn unavailable(&self, reason: &str) -> StoreError {
        StoreError::Unavailable {
            store: self.shown.clone(),
            reason: self.scrub(reason),
        }
    }

    /// The server refused something: `message`.
    pub(super) fn refused(&self, message: &str) -> StoreError {
        StoreError::Postgres {
            store: self.shown.clone(),
            message: self.scrub(message),
        }
    }

    /// The store error for a driver error.
    pub(super) fn error(&self, err: &postgres::Error) -> StoreError {
        if is_unavailable(err) {
            self.unavailable(&describe(err))
        } else {
            self.refused(&describe(err))
        }
    }
}

/// Whether `err` means the connection is gone or the server did not answer (rather than a
/// statement the server refused).
pub(super) fn is_unavailable(err: &postgres::Error) -> bool {
    if err.is_closed() {
        return true;
    }
    match err.code() {
        Some(code) => {
            let code = code.code();
            code.starts_with("08") || UNAVAILABLE_CODES.contains(&code)
        }
        // No SQLSTATE: the driver's own failure. A value that did not convert is a refusal;
        // I/O errors, timeouts and failed connects mean the server is not there.
        None => {
            let text = err.to_string();
            std::error::Error::source(err).is_some_and(|s| s.is::<std::io::Error>())
                || text.contains("timeout")
                || text.contains("connect")
                || text.contains("closed")
                || text.contains("unexpected EOF")
        }
    }
}

/// Whether a transaction that failed to begin with `err` may begin again on another
/// connection: the connection was dead (`closed`: an idle pooled connection the server
/// dropped), not a timeout (waiting again would only double the wait).
pub(super) fn is_retryable_at_begin(err: &postgres::Error, closed: bool) -> bool {
    let timed_out = err
        .code()
        .is_some_and(|c| matches!(c.code(), "57014" | "55P03"));
    (closed || is_unavailable(err)) && !timed_out
}

/// The driver's message, with the server's detail when there is one.
fn describe(err: &postgres::Error) -> String {
    match err.as_db_error() {
        Some(db) => format!("{}: {} ({})", db.severity(), db.message(), db.code().code()),
        None => match std::error::Error::source(err) {
            Some(source) => format!("{err}: {source}"),
            None => err.to_string(),
        },
    }
}
