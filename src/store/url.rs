//! Which store a daemon uses (docs/protocol.md 12.1): `sqlite` (the default) or a
//! `postgres://` URL. The URL's password never leaves this type: [`StoreUrl`]'s `Display` and
//! `Debug` show it redacted, and only the backend reads the full URL.

use std::fmt;

/// A parsed `--store` / `WIT_STORE` value.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// The embedded SQLite database `.wit/state.db`.
    Sqlite,
    /// A PostgreSQL server.
    Postgres {
        /// The URL as given (credentials included): for the connection only.
        url: String,
    },
}

/// A store value that is neither `sqlite` nor a PostgreSQL URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown store {shown:?}: use `sqlite` or a `postgres://` URL")]
pub struct StoreUrlError {
    /// The value, redacted.
    pub shown: String,
}

impl StoreUrl {
    /// Parses `sqlite` (or an empty value) or a `postgres://` / `postgresql://` URL.
    pub fn parse(value: &str) -> Result<StoreUrl, StoreUrlError> {
        let value = value.trim();
        if value.is_empty() || value.eq_ignore_ascii_case("sqlite") {
            return Ok(StoreUrl::Sqlite);
        }
        if value.starts_with("postgres://") || value.starts_with("postgresql://") {
            return Ok(StoreUrl::Postgres {
                url: value.to_owned(),
            });
        }
        Err(StoreUrlError {
            shown: redact(value),
        })
    }

    /// Whether several daemons can share this store.
    pub fn is_shared(&self) -> bool {
        matches!(self, StoreUrl::Postgres { .. })
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreUrl::Sqlite => f.write_str("sqlite"),
            StoreUrl::Postgres { url } => f.write_str(&redact(url)),
        }
    }
}

impl fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StoreUrl({self})")
    }
}

/// Where the password of `url`'s user part is (byte range), if it has one. The user part
/// ends at the *last* `@`: a password may hold an unencoded `/`, `?` or `@`, so the
/// authority cannot be cut at the first `/` first. When the path or query holds an `@` too,
/// more than the password is taken for it, which only ever hides more.
pub fn password_span(url: &str) -> Option<std::ops::Range<usize>> {
    let (scheme, rest) = url.split_once("://")?;
    let start = scheme.len() + "://".len();
    let (user_info, _) = rest.rsplit_once('@')?;
    let colon = user_info.find(':')?;
    Some(start + colon + 1..start + user_info.len())
}

/// `url` with the password of its user part and any `password=` parameter replaced by `***`.
pub fn redact(url: &str) -> String {
    let mut out = url.to_owned();
    if let Some(span) = password_span(url) {
        out.replace_range(span, "***");
    }
    if let Some(at) = out.find("password=") {
        let value_start = at + "password=".len();
        let value_end = out[value_start..]
            .find('&')
            .map_or(out.len(), |i| value_start + i);
        out.replace_range(value_start..value_end, "***");
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn parses_sqlite_and_postgres() {
        assert_eq!(StoreUrl::parse("sqlite").unwrap(), StoreUrl::Sqlite);
        assert_eq!(StoreUrl::parse("").unwrap(), StoreUrl::Sqlite);
        assert!(StoreUrl::parse("postgres://h/db").unwrap().is_shared());
        assert!(StoreUrl::parse("postgresql://h/db").unwrap().is_shared());
        let err = StoreUrl::parse("mysql://u:secret@h/db").unwrap_err();
        assert!(!err.to_string().contains("secret"), "{err}");
    }

    #[test]
    fn never_shows_the_password() {
        let url =
            StoreUrl::parse("postgres://wit:s3cret@db.example:5432/wit?sslmode=disable").unwrap();
        assert_eq!(
            url.to_string(),
            "postgres://wit:***@db.example:5432/wit?sslmode=disable"
        );
        assert!(!format!("{url:?}").contains("s3cret"));
        assert_eq!(
            redact("postgres://h/db?user=wit&password=s3cret&sslmode=require"),
            "postgres://h/db?user=wit&password=***&sslmode=require"
        );
        assert_eq!(redact("postgres://wit@h/db"), "postgres://wit@h/db");
        assert_eq!(redact("postgres://u:p@ss@h/db"), "postgres://u:***@h/db");
        // Issue 20 item 7: unencoded `/`, `?` and `:` in a password stay hidden.
        assert_eq!(redact("postgres://u:se/cr3t@h/db"), "postgres://u:***@h/db");
        assert_eq!(
            redact("postgresql://u:a/b?c:d@h:5432/db?sslmode=disable"),
            "postgresql://u:***@h:5432/db?sslmode=disable"
        );
        assert_eq!(password_span("postgres://h/db"), None);
    }
}
