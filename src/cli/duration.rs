//! Durations on the command line: `90s`, `10m`, `2h`, `1h30m`, `500ms`, `7d`.
//!
//! A unit is always required: a bare number is an error, never silently milliseconds.

use std::time::Duration;

pub use crate::doorway::clock::format_left;

/// Parses a duration made of one or more `<integer><unit>` parts, units `ms`, `s`, `m`, `h`,
/// `d` (e.g. `90s`, `10m`, `1h30m`). Zero, a bare number, an unknown unit and overflow are
/// errors with a message that says what is accepted.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let hint = "use a number with a unit, e.g. 90s, 10m, 2h or 1h30m (units: ms, s, m, h, d)";
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(format!("empty duration; {hint}"));
    }
    let mut total_ms: u64 = 0;
    let mut rest = trimmed;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(format!("invalid duration `{text}`; {hint}"));
        }
        let (number, after) = rest.split_at(digits);
        let unit_len = after.bytes().take_while(u8::is_ascii_alphabetic).count();
        let (unit, after) = after.split_at(unit_len);
        let per_unit: u64 = match unit {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            "" => return Err(format!("`{text}` has no unit; {hint}")),
            other => return Err(format!("unknown unit `{other}` in `{text}`; {hint}")),
        };
        let value: u64 = number
            .parse()
            .map_err(|_| format!("duration `{text}` is too large"))?;
        total_ms = value
            .checked_mul(per_unit)
            .and_then(|part| total_ms.checked_add(part))
            .ok_or_else(|| format!("duration `{text}` is too large"))?;
        rest = after;
    }
    if total_ms == 0 {
        return Err(format!("duration `{text}` is zero; {hint}"));
    }
    Ok(Duration::from_millis(total_ms))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    fn ms(text: &str) -> u128 {
        match parse_duration(text) {
            Ok(duration) => duration.as_millis(),
            Err(error) => panic!("{text}: {error}"),
        }
    }

    #[test]
    fn units_are_understood() {
        assert_eq!(ms("90s"), 90_000);
        assert_eq!(ms("10m"), 600_000);
        assert_eq!(ms("2h"), 7_200_000);
        assert_eq!(ms("7d"), 604_800_000);
        assert_eq!(ms("500ms"), 500);
        assert_eq!(ms("1h30m"), 5_400_000);
        assert_eq!(ms(" 5m "), 300_000);
    }

    #[test]
    fn bare_numbers_and_garbage_are_errors() {
        for bad in [
            "", "600", "10", "m", "10x", "1.5h", "-5m", "10m5", "s10", "0s", "0m0s",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} should be rejected");
        }
        let error = parse_duration("600").unwrap_err();
        assert!(error.contains("no unit"), "{error}");
    }

    #[test]
    fn overflow_is_an_error() {
        assert!(parse_duration("99999999999999999999s").is_err());
        assert!(parse_duration("18446744073709551615d").is_err());
    }
}
