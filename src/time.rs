//! Instants and durations as loopx writes them.
//!
//! A [`Timestamp`] is UTC with whole seconds, written RFC 3339
//! (`2026-11-30T09:00:00Z`); a [`Span`] is a count of seconds written as
//! `30s`, `45m`, `2h`, `1d` or combinations (`1h30m`). Both serialize as
//! strings, so the stored TOML is canonical. The clock itself lives in the
//! context (`LOOPX_NOW`); nothing here reads the environment.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A UTC instant with whole-second precision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The instant `secs` seconds after the Unix epoch.
    pub fn from_unix(secs: i64) -> Self {
        Timestamp(secs)
    }

    /// The system clock, truncated to whole seconds.
    pub fn system_now() -> Self {
        Timestamp(Utc::now().timestamp())
    }

    /// Seconds since the Unix epoch.
    pub fn unix(self) -> i64 {
        self.0
    }

    /// Parses RFC 3339 (`2026-11-30T09:00:00Z`, any offset; fractions are
    /// truncated).
    pub fn parse(s: &str) -> Result<Self, String> {
        if let Some(t) = Timestamp::parse_canonical(s) {
            return Ok(t);
        }
        DateTime::parse_from_rfc3339(s.trim())
            .map(|t| Timestamp(t.timestamp()))
            .map_err(|e| {
                format!("{s:?} is not an RFC 3339 time such as 2026-11-30T09:00:00Z ({e})")
            })
    }

    /// The form loopx writes (`2026-11-30T09:00:00Z`), read without the
    /// general parser: a state holds several times per todo. None for
    /// anything else, including a date that does not exist and a leap
    /// second, which [`Timestamp::parse`] leaves to chrono.
    fn parse_canonical(s: &str) -> Option<Self> {
        let b = s.as_bytes();
        if b.len() != 20
            || b[4] != b'-'
            || b[7] != b'-'
            || b[10] != b'T'
            || b[13] != b':'
            || b[16] != b':'
            || b[19] != b'Z'
        {
            return None;
        }
        let num = |from: usize, to: usize| {
            b[from..to].iter().try_fold(0i64, |n, &c| {
                c.is_ascii_digit().then(|| n * 10 + i64::from(c - b'0'))
            })
        };
        let (y, m, d) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
        let (hh, mm, ss) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
        let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
        let month_days = match m {
            1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
            4 | 6 | 9 | 11 => 30,
            2 if leap => 29,
            2 => 28,
            _ => return None,
        };
        if d < 1 || d > month_days || hh > 23 || mm > 59 || ss > 59 {
            return None;
        }
        // Days from 1970-01-01 to the civil date (proleptic Gregorian).
        let (y, m) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let doy = (153 * m + 2) / 5 + d - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        let days = era * 146_097 + doe - 719_468;
        Some(Timestamp(days * 86_400 + hh * 3600 + mm * 60 + ss))
    }

    pub fn plus(self, span: Span) -> Self {
        Timestamp(self.0.saturating_add(span.0))
    }

    pub fn minus(self, span: Span) -> Self {
        Timestamp(self.0.saturating_sub(span.0))
    }

    /// The span from `earlier` to `self`, zero when `earlier` is later.
    pub fn since(self, earlier: Timestamp) -> Span {
        Span((self.0 - earlier.0).max(0))
    }

    fn datetime(self) -> DateTime<Utc> {
        Utc.timestamp_opt(self.0, 0)
            .single()
            .unwrap_or(DateTime::<Utc>::MIN_UTC)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Years 0 to 9999 by hand (the inverse of `parse_canonical`): a
        // state writes several times per todo. chrono for the rest.
        let days = self.0.div_euclid(86_400);
        let secs = self.0.rem_euclid(86_400);
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        let y = yoe + era * 400 + i64::from(m <= 2);
        if !(0..=9999).contains(&y) {
            return f.write_str(&self.datetime().to_rfc3339_opts(SecondsFormat::Secs, true));
        }
        write!(
            f,
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
            secs / 3600,
            secs / 60 % 60,
            secs % 60
        )
    }
}

impl FromStr for Timestamp {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Timestamp::parse(s)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(Text("an RFC 3339 time", Timestamp::parse))
    }
}

/// A visitor for a value written as a string: borrows the text where the
/// format allows (the state cache's JSON), so reading a time or an id
/// allocates nothing beyond the value itself. `.0` says what is expected.
pub(crate) struct Text<T>(pub &'static str, pub fn(&str) -> Result<T, String>);

impl<T> serde::de::Visitor<'_> for Text<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<T, E> {
        (self.1)(s).map_err(E::custom)
    }
}

/// A non-negative duration in whole seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Span(i64);

impl Span {
    /// The longest duration loopx takes: ten years. Longer leases or windows
    /// would push times past what RFC 3339 can write.
    pub const MAX: Span = Span(3650 * 86_400);

    pub const fn seconds(secs: i64) -> Self {
        Span(secs)
    }

    pub const fn minutes(m: i64) -> Self {
        Span(m * 60)
    }

    pub const fn hours(h: i64) -> Self {
        Span(h * 3600)
    }

    pub fn as_secs(self) -> i64 {
        self.0
    }

    /// Parses `30s`, `45m`, `2h`, `1d`, `1w` and combinations such as `1h30m`.
    pub fn parse(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "{s:?} is not a duration: write it as 30s, 45m, 2h, 1d or a combination such as 1h30m"
            )
        };
        let mut total: i64 = 0;
        let mut digits = String::new();
        let mut any = false;
        for c in s.trim().chars() {
            if c.is_ascii_digit() {
                digits.push(c);
                continue;
            }
            let unit = match c {
                's' => 1,
                'm' => 60,
                'h' => 3600,
                'd' => 86_400,
                'w' => 604_800,
                _ => return Err(bad()),
            };
            let n: i64 = digits.parse().map_err(|_| bad())?;
            total = n
                .checked_mul(unit)
                .and_then(|v| total.checked_add(v))
                .ok_or_else(bad)?;
            digits.clear();
            any = true;
        }
        if !digits.is_empty() || !any {
            return Err(bad());
        }
        if total > Span::MAX.0 {
            return Err(format!(
                "{s:?} is longer than loopx accepts: a duration is at most {} (3650d)",
                Span::MAX
            ));
        }
        Ok(Span(total))
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            return f.write_str("0s");
        }
        let mut rest = self.0;
        for (unit, secs) in [("d", 86_400), ("h", 3600), ("m", 60), ("s", 1)] {
            if rest >= secs {
                write!(f, "{}{unit}", rest / secs)?;
                rest %= secs;
            }
        }
        Ok(())
    }
}

impl FromStr for Span {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Span::parse(s)
    }
}

/// A time as a flag takes it (`--since`, `--until`, `--at`): what `git log
/// --since` takes that reads one way only. A duration counted from now
/// (`2h`, `3d`, `90m`, `1h30m`), back for a start and forward for an end
/// (each flag's help says which); an RFC 3339 time; a date `YYYY-MM-DD`
/// (its midnight) or `YYYY-MM-DD HH:MM[:SS]` (a `T` may stand for the
/// space), both read as UTC; or `@SECONDS` since the Unix epoch. The one
/// parser every time flag uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    At(Timestamp),
    From(Span),
}

/// What a time flag takes, for its error message.
pub const WHEN_FORMS: &str = "a duration (30m, 12h, 3d), a date (2026-11-30 or 2026-11-30 09:00, UTC), an RFC 3339 time (2026-11-30T09:00:00Z) or @UNIX-SECONDS";

impl When {
    /// The time this names as a start: a duration is that long before `now`.
    pub fn back_from(self, now: Timestamp) -> Timestamp {
        match self {
            When::At(t) => t,
            When::From(span) => now.minus(span),
        }
    }

    /// The time this names as an end: a duration is that long after `now`.
    pub fn on_from(self, now: Timestamp) -> Timestamp {
        match self {
            When::At(t) => t,
            When::From(span) => now.plus(span),
        }
    }
}

/// A date or a date and time without a zone, read as UTC: `YYYY-MM-DD`,
/// `YYYY-MM-DD HH:MM` or `YYYY-MM-DD HH:MM:SS` (or with a `T`).
fn parse_naive(s: &str) -> Option<Timestamp> {
    use chrono::{NaiveDate, NaiveDateTime};
    if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return Some(Timestamp(d.and_hms_opt(0, 0, 0)?.and_utc().timestamp()));
    }
    for form in [
        "%Y-%m-%d %H:%M",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%dT%H:%M:%S",
    ] {
        if let Ok(t) = NaiveDateTime::parse_from_str(s, form) {
            return Some(Timestamp(t.and_utc().timestamp()));
        }
    }
    None
}

impl FromStr for When {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        if let Ok(span) = Span::parse(t) {
            return Ok(When::From(span));
        }
        if let Some(secs) = t.strip_prefix('@')
            && !secs.is_empty()
            && secs.bytes().all(|b| b.is_ascii_digit())
            && let Ok(n) = secs.parse::<i64>()
        {
            return Ok(When::At(Timestamp(n)));
        }
        if let Some(at) = parse_naive(t) {
            return Ok(When::At(at));
        }
        Timestamp::parse(t)
            .map(When::At)
            .map_err(|_| format!("{s:?} is not a time: write {WHEN_FORMS}"))
    }
}

impl Serialize for Span {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Span {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(Text("a duration such as 45m", Span::parse))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_time_flag_takes_a_duration_or_a_time() {
        use super::{Span, Timestamp, When};
        let now = Timestamp::parse("2026-11-30T12:00:00Z").unwrap();
        let w: When = "2h".parse().unwrap();
        assert_eq!(w, When::From(Span::hours(2)));
        assert_eq!(w.back_from(now).to_string(), "2026-11-30T10:00:00Z");
        assert_eq!(w.on_from(now).to_string(), "2026-11-30T14:00:00Z");
        let at: When = "2026-11-30T09:00:00+01:00".parse().unwrap();
        assert_eq!(at.back_from(now).to_string(), "2026-11-30T08:00:00Z");
        assert_eq!(at.on_from(now), at.back_from(now));
        let bad = "yesterday".parse::<When>().unwrap_err();
        assert!(
            bad.contains("not a time") && bad.contains("RFC 3339") && bad.contains("date"),
            "{bad}"
        );
    }

    #[test]
    fn a_time_flag_takes_what_git_log_since_takes_unambiguously() {
        use super::{Span, Timestamp, When};
        let at = |s: &str| match s.parse::<When>() {
            Ok(When::At(t)) => t.to_string(),
            other => panic!("{s}: {other:?}"),
        };
        assert_eq!(at("2026-12-07"), "2026-12-07T00:00:00Z");
        assert_eq!(at("2026-12-07 16:57"), "2026-12-07T16:57:00Z");
        assert_eq!(at("2026-12-07 16:57:09"), "2026-12-07T16:57:09Z");
        assert_eq!(at("2026-12-07T16:57"), "2026-12-07T16:57:00Z");
        assert_eq!(at(" 2026-12-07T16:57:09Z "), "2026-12-07T16:57:09Z");
        assert_eq!(at("@0"), "1970-01-01T00:00:00Z");
        assert_eq!(
            at("@1796000000"),
            Timestamp::from_unix(1_796_000_000).to_string()
        );
        assert_eq!("3d".parse::<When>(), Ok(When::From(Span::hours(72))));
        assert_eq!("90m".parse::<When>(), Ok(When::From(Span::minutes(90))));
        for bad in [
            "",
            "@",
            "@-5",
            "@1.5",
            "12/07/2026",
            "07-12-2026",
            "2026-13-01",
            "2026-02-30",
            "2026-12-07 25:00",
            "yesterday",
            "2 hours ago",
            "10",
        ] {
            assert!(bad.parse::<When>().is_err(), "{bad:?}");
        }
    }

    use super::*;

    #[test]
    fn spans_parse_and_print_canonically() {
        for (input, secs, shown) in [
            ("30s", 30, "30s"),
            ("45m", 2700, "45m"),
            ("2h", 7200, "2h"),
            ("1d", 86_400, "1d"),
            ("1h30m", 5400, "1h30m"),
            ("90m", 5400, "1h30m"),
            ("1w", 604_800, "7d"),
        ] {
            let span = Span::parse(input).expect(input);
            assert_eq!(span.as_secs(), secs, "{input}");
            assert_eq!(span.to_string(), shown, "{input}");
        }
        for bad in ["", "10", "m", "1x", "-5m", "1.5h", "99999999999999999999d"] {
            assert!(Span::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_canonical_fast_path_agrees_with_chrono() {
        let chrono = |s: &str| {
            DateTime::parse_from_rfc3339(s)
                .ok()
                .map(|t| Timestamp(t.timestamp()))
        };
        // Every 7,919 s from 1900 to 2200, and the edges of the format;
        // the hand-made display agrees with chrono's too.
        let mut t = -2_208_988_800i64;
        while t < 7_258_118_400 {
            let s = Timestamp(t).to_string();
            assert_eq!(
                s,
                Timestamp(t)
                    .datetime()
                    .to_rfc3339_opts(SecondsFormat::Secs, true)
            );
            assert_eq!(Timestamp::parse_canonical(&s), Some(Timestamp(t)), "{s}");
            t += 7_919;
        }
        for t in [i64::MIN, -62_167_219_201, 253_402_300_800, i64::MAX] {
            assert_eq!(
                Timestamp(t).to_string(),
                Timestamp(t)
                    .datetime()
                    .to_rfc3339_opts(SecondsFormat::Secs, true)
            );
        }
        for s in [
            "0000-01-01T00:00:00Z",
            "9999-12-31T23:59:59Z",
            "2000-02-29T12:00:00Z",
            "2024-02-29T00:00:00Z",
            "1969-12-31T23:59:59Z",
        ] {
            assert_eq!(Timestamp::parse_canonical(s), chrono(s), "{s}");
            assert!(chrono(s).is_some(), "{s}");
        }
        for s in [
            "1900-02-29T00:00:00Z",
            "2100-02-29T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-00-10T00:00:00Z",
            "2026-01-00T00:00:00Z",
            "2026-01-01T24:00:00Z",
            "2026-01-01T23:60:00Z",
            "2026-06-30T23:59:60Z",
            "2026-01-01T00:00:00+00:00",
            "2026-01-01 00:00:00Z",
            "2026-1-01T00:00:00Z ",
            "+026-01-01T00:00:00Z",
        ] {
            assert_eq!(Timestamp::parse_canonical(s), None, "{s}");
        }
        // What the fast path leaves alone still parses as before.
        assert_eq!(
            Timestamp::parse("2026-01-01T01:00:00+01:00"),
            Ok(Timestamp::parse("2026-01-01T00:00:00Z").unwrap())
        );
    }

    #[test]
    fn timestamps_round_trip_rfc3339() {
        let t = Timestamp::parse("2026-11-30T09:00:00+01:00").unwrap();
        assert_eq!(t.to_string(), "2026-11-30T08:00:00Z");
        assert_eq!(Timestamp::parse(&t.to_string()).unwrap(), t);
        assert_eq!(
            t.plus(Span::minutes(45)).to_string(),
            "2026-11-30T08:45:00Z"
        );
        assert!(Timestamp::parse("yesterday").is_err());
    }
}
