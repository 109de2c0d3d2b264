//! The times every face shows: now, the protocol's ISO 8601 times read back, time left.

use std::time::{SystemTime, UNIX_EPOCH};

/// The current time in unix milliseconds.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Parses `YYYY-MM-DDTHH:MM:SS(.fff)Z` into unix milliseconds.
pub fn parse_iso_ms(text: &str) -> Option<i64> {
    let text = text.strip_suffix('Z')?;
    let (date, time) = text.split_once('T')?;
    let mut date_parts = date.split('-');
    let year: i64 = date_parts.next()?.parse().ok()?;
    let month: i64 = date_parts.next()?.parse().ok()?;
    let day: i64 = date_parts.next()?.parse().ok()?;
    let (clock, fraction) = time.split_once('.').unwrap_or((time, "0"));
    let mut clock_parts = clock.split(':');
    let hour: i64 = clock_parts.next()?.parse().ok()?;
    let minute: i64 = clock_parts.next()?.parse().ok()?;
    let second: i64 = clock_parts.next()?.parse().ok()?;
    let millis: i64 = format!("{fraction:0<3}").get(..3)?.parse().ok()?;
    // Days from civil (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis)
}

/// Formats a remaining time compactly: `45s`, `9m 59s`, `1h 05m`, `2d 03h`; `expired` at or
/// below zero.
pub fn format_left(ms: i64) -> String {
    if ms <= 0 {
        return "expired".to_string();
    }
    let seconds = (ms + 999) / 1000;
    let (d, h, m, s) = (
        seconds / 86_400,
        seconds % 86_400 / 3_600,
        seconds % 3_600 / 60,
        seconds % 60,
    );
    if d > 0 {
        format!("{d}d {h:02}h")
    } else if h > 0 {
        format!("{h}h {m:02}m")
    } else if m > 0 {
        format!("{m}m {s:02}s")
    } else {
        format!("{s}s")
    }
}

/// ` until <time> (<left> left)` for an ISO expiry, as of `now_ms`.
pub fn until_text(expires_at: &str, now_ms: i64) -> String {
    match parse_iso_ms(expires_at) {
        Some(at) if at > now_ms => {
            format!(" until {expires_at} ({} left)", format_left(at - now_ms))
        }
        Some(_) => format!(" until {expires_at} (expired)"),
        None => format!(" until {expires_at}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_timestamps_parse() {
        assert_eq!(parse_iso_ms("1970-01-01T00:00:00.000Z"), Some(0));
        assert_eq!(
            parse_iso_ms("2026-01-15T10:30:00.250Z"),
            Some(1_768_473_000_250)
        );
        assert_eq!(parse_iso_ms("2000-02-29T00:00:01Z"), Some(951_782_401_000));
        assert_eq!(parse_iso_ms("nonsense"), None);
    }

    #[test]
    fn time_left_reads_well() {
        assert_eq!(format_left(0), "expired");
        assert_eq!(format_left(-5), "expired");
        assert_eq!(format_left(1), "1s");
        assert_eq!(format_left(45_000), "45s");
        assert_eq!(format_left(599_001), "10m 00s");
        assert_eq!(format_left(3_900_000), "1h 05m");
        assert_eq!(format_left(183_600_000), "2d 03h");
        assert_eq!(
            until_text("1970-01-01T00:00:01.000Z", 0),
            " until 1970-01-01T00:00:01.000Z (1s left)"
        );
    }
}
