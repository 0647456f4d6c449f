//! A runtime's "usage limit reached" report, read for `quota park`: when
//! does the limit reset? Claude Code's `StopFailure` event says
//! `error_type = "rate_limit"` and words the rest for people ("Claude usage
//! limit reached. Your limit will reset at 3pm (UTC).", "resets 9am",
//! "try again in 5 hours"), so this reads the few shapes those messages
//! take, and falls back to a short park when none is readable.

use crate::time::{Span, Timestamp};

/// How long to park when the message gives no time loopx can read (or a
/// time in a zone other than UTC): long enough that one failed call an
/// hour is the worst case, never a retry storm.
pub const FALLBACK: Span = Span::hours(1);

/// When a usage limit that `text` reports resets, after `now`: a relative
/// "in N minutes|hours|seconds", or a clock time after "reset(s)" (`3pm`,
/// `9:30am`, `15:00`) read as UTC when the message names UTC or no zone.
/// `None` when the text holds neither.
pub fn reset_time(text: &str, now: Timestamp) -> Option<Timestamp> {
    let lower = text.to_ascii_lowercase();
    relative(&lower)
        .map(|d| now.plus(d))
        .or_else(|| clock(&lower, now))
}

/// "in 5 hours", "in 30 minutes", "after 90 seconds", "in 2h".
fn relative(text: &str) -> Option<Span> {
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == ',' || c == '.')
        .filter(|w| !w.is_empty())
        .collect();
    for (i, w) in words.iter().enumerate() {
        if !matches!(*w, "in" | "after") {
            continue;
        }
        let Some(count) = words.get(i + 1) else {
            continue;
        };
        if let Ok(d) = Span::parse(count) {
            return Some(d);
        }
        let Ok(n) = count.parse::<i64>() else {
            continue;
        };
        let unit = match words.get(i + 2).map_or("", |u| u.trim_end_matches('s')) {
            "second" | "sec" => 1,
            "minute" | "min" => 60,
            "hour" | "hr" => 3600,
            _ => continue,
        };
        return Some(Span::seconds(n.checked_mul(unit)?));
    }
    None
}

/// A clock time after "reset", "resets" or "reset at": the next such time
/// after `now`, in UTC. A zone other than UTC named right after it
/// (`3pm (Europe/Paris)`) cannot be read without a zone database: `None`.
fn clock(text: &str, now: Timestamp) -> Option<Timestamp> {
    let at = text.find("reset")?;
    let rest = &text[at..];
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    let rest = rest.trim_start();
    let rest = rest.strip_prefix("at ").unwrap_or(rest).trim_start();
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let mut hour: i64 = digits.parse().ok()?;
    let mut tail = &rest[digits.len()..];
    let mut minute: i64 = 0;
    if let Some(m) = tail.strip_prefix(':') {
        let mm: String = m.chars().take_while(char::is_ascii_digit).collect();
        minute = mm.parse().ok()?;
        tail = &m[mm.len()..];
    }
    let tail = tail.trim_start();
    let tail = if let Some(t) = tail.strip_prefix("am") {
        if hour == 12 {
            hour = 0;
        }
        t
    } else if let Some(t) = tail.strip_prefix("pm") {
        if hour < 12 {
            hour += 12;
        }
        t
    } else {
        tail
    };
    if hour > 23 || minute > 59 {
        return None;
    }
    // A zone in parentheses right after the time must be UTC; a bare
    // word after it is not a zone unless it says UTC or GMT.
    let tail = tail.trim_start();
    if let Some(inner) = tail.strip_prefix('(') {
        let zone = inner.split(')').next().unwrap_or("").trim();
        if !matches!(zone, "utc" | "gmt" | "z") {
            return None;
        }
    }
    let day = now.unix().div_euclid(86_400) * 86_400;
    let mut t = Timestamp::from_unix(day + hour * 3600 + minute * 60);
    if t <= now {
        t = t.plus(Span::hours(24));
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    const NOW: &str = "2026-11-30T10:20:00Z";

    fn reset(text: &str) -> Option<String> {
        reset_time(text, t(NOW)).map(|t| t.to_string())
    }

    #[test]
    fn clock_times_after_reset_are_the_next_such_time_in_utc() {
        for (text, want) in [
            (
                "Claude usage limit reached. Your limit will reset at 3pm (UTC).",
                "2026-11-30T15:00:00Z",
            ),
            ("5-hour limit reached ∙ resets 9am", "2026-12-01T09:00:00Z"),
            ("Limit reached, resets 9:30am UTC", "2026-12-01T09:30:00Z"),
            ("usage limit: resets at 15:45", "2026-11-30T15:45:00Z"),
            ("resets 12am", "2026-12-01T00:00:00Z"),
            ("resets 12pm", "2026-11-30T12:00:00Z"),
        ] {
            assert_eq!(reset(text).as_deref(), Some(want), "{text}");
        }
    }

    #[test]
    fn relative_times_count_from_now() {
        for (text, want) in [
            (
                "Rate limit exceeded, try again in 5 hours",
                "2026-11-30T15:20:00Z",
            ),
            ("retry after 90 seconds.", "2026-11-30T10:21:30Z"),
            ("please retry in 30 minutes", "2026-11-30T10:50:00Z"),
            ("limit resets in 2h", "2026-11-30T12:20:00Z"),
        ] {
            assert_eq!(reset(text).as_deref(), Some(want), "{text}");
        }
    }

    #[test]
    fn unreadable_times_and_other_zones_give_none() {
        for text in [
            "Rate limit exceeded: 100 requests per minute",
            "Your limit will reset at 3pm (Europe/Paris)",
            "resets 25pm",
            "resets at 9:75",
            "",
        ] {
            assert_eq!(reset(text), None, "{text}");
        }
    }
}
