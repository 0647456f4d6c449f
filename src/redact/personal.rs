//! Personal data by shape, for text that leaves the team (a shared
//! trajectory): emails, phone numbers, IBANs, the word after `password`,
//! SSH key fingerprints and home or temporary paths.
//!
//! Stricter than the secret rules, which guard what enters the history: a
//! false positive here costs a word of a shared page. Dates, times, ids,
//! commit hashes, version numbers and dollar amounts still pass (see the
//! tests below).

use std::collections::BTreeMap;

/// What [`scrub`] removes, each with the mark that replaces it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Email,
    Phone,
    Iban,
    Password,
    Fingerprint,
    Path,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::Email,
        Kind::Phone,
        Kind::Iban,
        Kind::Password,
        Kind::Fingerprint,
        Kind::Path,
    ];

    /// What replaces it.
    pub fn mark(self) -> &'static str {
        match self {
            Kind::Email => "[email]",
            Kind::Phone => "[phone]",
            Kind::Iban => "[iban]",
            Kind::Password => "[password]",
            Kind::Fingerprint => "[key fingerprint]",
            Kind::Path => "[path]",
        }
    }

    /// What it is, in the plural, for a banner.
    pub fn plural(self) -> &'static str {
        match self {
            Kind::Email => "emails",
            Kind::Phone => "phone numbers",
            Kind::Iban => "IBANs",
            Kind::Password => "words after “password”, “passphrase” or “PIN”",
            Kind::Fingerprint => "SSH key fingerprints",
            Kind::Path => "home and temporary paths",
        }
    }
}

/// How many of each kind were removed.
pub type Counts = BTreeMap<Kind, usize>;

/// `s` with every email, phone number, IBAN, password-like value, SSH key
/// fingerprint and machine path replaced by its [`Kind::mark`], counting
/// each in `counts`.
pub fn scrub(s: &str, counts: &mut Counts) -> String {
    let mut spans: Vec<(usize, usize, Kind)> = Vec::new();
    emails(s, &mut spans);
    ibans(s, &mut spans);
    phones(s, &mut spans);
    passwords(s, &mut spans);
    words(s, &mut spans);
    spans.sort_unstable_by_key(|&(start, end, _)| (start, std::cmp::Reverse(end)));
    let mut out = String::with_capacity(s.len());
    let mut at = 0;
    for (start, end, kind) in spans {
        if start < at {
            continue;
        }
        out.push_str(&s[at..start]);
        out.push_str(kind.mark());
        *counts.entry(kind).or_default() += 1;
        at = end;
    }
    out.push_str(&s[at..]);
    out
}

/// A character that continues a word or an id on either side of a match.
fn joins(c: Option<char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || c == '_')
}

fn before(s: &str, i: usize) -> Option<char> {
    s[..i].chars().next_back()
}

fn after(s: &str, i: usize) -> Option<char> {
    s[i..].chars().next()
}

/// `user@host.tld`, wherever it stands (inside parentheses, before `'s`,
/// after `mailto:`).
fn emails(s: &str, spans: &mut Vec<(usize, usize, Kind)>) {
    let b = s.as_bytes();
    let user = |c: u8| c.is_ascii_alphanumeric() || b"._%+-".contains(&c);
    let host = |c: u8| c.is_ascii_alphanumeric() || c == b'.' || c == b'-';
    for (at, _) in s.match_indices('@') {
        let mut start = at;
        while start > 0 && user(b[start - 1]) {
            start -= 1;
        }
        let mut end = at + 1;
        while end < b.len() && host(b[end]) {
            end += 1;
        }
        while end > at + 1 && matches!(b[end - 1], b'.' | b'-') {
            end -= 1;
        }
        while start < at && b[start] == b'.' {
            start += 1;
        }
        let domain = &s[at + 1..end];
        let tld = domain.rsplit('.').next().unwrap_or_default();
        if start < at
            && domain.contains('.')
            && !domain.starts_with('.')
            && tld.len() >= 2
            && tld.bytes().all(|c| c.is_ascii_alphabetic())
        {
            spans.push((start, end, Kind::Email));
        }
    }
}

/// An IBAN: a country code, two check digits and up to 30 letters or
/// digits, written whole or in groups split by single spaces, whose
/// ISO 13616 checksum holds (so an ordinary word rarely passes).
fn ibans(s: &str, spans: &mut Vec<(usize, usize, Kind)>) {
    let b = s.as_bytes();
    let mut i = 0;
    while i + 4 <= b.len() {
        let starts = b[i].is_ascii_alphabetic()
            && b[i + 1].is_ascii_alphabetic()
            && b[i + 2].is_ascii_digit()
            && b[i + 3].is_ascii_digit()
            && !joins(before(s, i));
        if !starts {
            i += 1;
            continue;
        }
        // The compact characters and where each ends in `s`.
        let mut chars: Vec<(u8, usize)> = Vec::new();
        let mut j = i;
        while j < b.len() && chars.len() < 34 {
            if b[j].is_ascii_alphanumeric() {
                chars.push((b[j].to_ascii_uppercase(), j + 1));
                j += 1;
            } else if b[j] == b' ' && b.get(j + 1).is_some_and(u8::is_ascii_alphanumeric) {
                j += 1;
            } else {
                break;
            }
        }
        let found = (15..=chars.len()).rev().find(|&n| {
            let end = chars[n - 1].1;
            !joins(after(s, end)) && iban_checksum(chars[..n].iter().map(|c| c.0))
        });
        match found {
            Some(n) => {
                let end = chars[n - 1].1;
                spans.push((i, end, Kind::Iban));
                i = end;
            }
            None => i += 1,
        }
    }
}

/// ISO 13616: the first four characters moved to the end, letters as
/// 10–35, the number modulo 97 is 1.
fn iban_checksum(chars: impl Iterator<Item = u8> + Clone) -> bool {
    let moved = chars.clone().skip(4).chain(chars.take(4));
    let mut rem: u32 = 0;
    for c in moved {
        let v = match c {
            b'0'..=b'9' => u32::from(c - b'0'),
            b'A'..=b'Z' => u32::from(c - b'A') + 10,
            _ => return false,
        };
        rem = if v >= 10 {
            (rem * 100 + v) % 97
        } else {
            (rem * 10 + v) % 97
        };
    }
    rem == 1
}

/// A phone number: `+` and 7 to 15 digits, or 9 to 15 digits in groups
/// split by single spaces, `-`, `.`, `/` or a parenthesised area code,
/// with three groups or more, a parenthesis, or a national `0` first.
/// Dates (`2026-12-07`), IPv4 addresses, versions, amounts with commas and
/// bare numbers (a Unix time) are not phone numbers.
fn phones(s: &str, spans: &mut Vec<(usize, usize, Kind)>) {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let opens = (c == b'+' || c == b'(') && b.get(i + 1).is_some_and(u8::is_ascii_digit)
            || c.is_ascii_digit();
        if !opens || joins(before(s, i)) || matches!(before(s, i), Some('-' | '.' | '/' | '+')) {
            i += 1;
            continue;
        }
        let plus = c == b'+';
        let mut j = if plus { i + 1 } else { i };
        let mut groups: Vec<usize> = Vec::new();
        let mut seps: Vec<u8> = Vec::new();
        let mut paren = false;
        loop {
            let open = b.get(j) == Some(&b'(');
            if open {
                paren = true;
                j += 1;
            }
            let g = b[j..].iter().take_while(|c| c.is_ascii_digit()).count();
            if g == 0 {
                break;
            }
            j += g;
            groups.push(g);
            if open {
                if b.get(j) != Some(&b')') {
                    break;
                }
                j += 1;
            }
            // A separator counts only before another group.
            let Some(sep @ (b' ' | b'-' | b'.' | b'/')) = b.get(j).copied() else {
                break;
            };
            let k = if b.get(j + 1) == Some(&b' ') && sep != b' ' {
                j + 2
            } else {
                j + 1
            };
            let more = b.get(k).is_some_and(u8::is_ascii_digit)
                || (b.get(k) == Some(&b'(') && b.get(k + 1).is_some_and(u8::is_ascii_digit));
            if !more {
                break;
            }
            seps.push(sep);
            j = k;
        }
        let end = j;
        let digits: usize = groups.iter().sum();
        let date = groups.len() >= 3
            && groups[..3] == [4, 2, 2]
            && seps[..2]
                .iter()
                .all(|&c| c == b'-' || c == b'/' || c == b'.');
        let ipv4 = groups.len() == 4 && seps.iter().all(|&c| c == b'.');
        let decimal = groups.len() == 2 && seps == [b'.'];
        let ok = !joins(after(s, end))
            && !matches!(after(s, end), Some(':'))
            && !date
            && !ipv4
            && !decimal
            && if plus {
                (7..=15).contains(&digits)
            } else {
                (9..=15).contains(&digits)
                    && groups.len() >= 2
                    && (groups.len() >= 3 || paren || b[i] == b'0')
            };
        if ok {
            spans.push((i, end, Kind::Phone));
            i = end;
        } else {
            i = end.max(i + 1);
        }
    }
}

/// The value after `password`, `passwd`, `passphrase`, `passcode`, `pwd` or
/// `PIN`: the next word when it follows `:`, `=`, `is`, `was` or `to`, or
/// when it holds a digit or a symbol (`password hunter2`); `password reset`
/// is left alone.
fn passwords(s: &str, spans: &mut Vec<(usize, usize, Kind)>) {
    const KEYS: [&str; 6] = ["password", "passwd", "passphrase", "passcode", "pwd", "pin"];
    let words = split_words(s);
    let bare = |w: &str| {
        w.trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase()
    };
    let is_key = |w: &str| {
        let key = bare(w);
        KEYS.iter().any(|k| {
            key == *k || key.ends_with(&format!("_{k}")) || key.ends_with(&format!("-{k}"))
        })
    };
    for (k, &(ws, we)) in words.iter().enumerate() {
        let word = &s[ws..we];
        // `db_password=abc`, `pin:1234` in one word.
        if let Some(cut) = word.find(['=', ':'])
            && is_key(&word[..cut])
            && cut + 1 < word.len()
        {
            let v = word[cut + 1..].trim_end_matches(['.', ',', ';', ')', '"', '\'']);
            if !v.is_empty() && !v.starts_with('[') {
                spans.push((ws + cut + 1, ws + cut + 1 + v.len(), Kind::Password));
            }
            continue;
        }
        if !is_key(word) {
            continue;
        }
        let mut marked = word.trim_end().ends_with([':', '=']);
        let mut n = k + 1;
        if let Some(&(a, b)) = words.get(n)
            && matches!(&s[a..b], ":" | "=" | "is" | "was" | "to" | "is:" | "now")
        {
            marked = true;
            n += 1;
        }
        let Some(&(a, b)) = words.get(n) else {
            continue;
        };
        let value = s[a..b].trim_end_matches(['.', ',', ';', ')', '"', '\'']);
        let value = value.trim_start_matches(['"', '\'', '(']);
        let off = a + s[a..b].find(value).unwrap_or(0);
        let strong = value
            .chars()
            .any(|c| c.is_ascii_digit() || !(c.is_alphanumeric() || c == '-'));
        if !value.is_empty() && (marked || strong) && !value.starts_with('[') {
            spans.push((off, off + value.len(), Kind::Password));
        }
    }
}

/// SSH key fingerprints and machine paths, word by word (a word keeps the
/// punctuation around it).
fn words(s: &str, spans: &mut Vec<(usize, usize, Kind)>) {
    let trim: &[char] = &[
        '<', '>', '(', ')', '[', ']', '{', '}', ',', ';', '"', '\'', '`', '.', ':', '!', '?',
    ];
    for (st, en) in split_words(s) {
        let word = &s[st..en];
        let core_start = st + (word.len() - word.trim_start_matches(trim).len());
        let core_end = st + word.trim_end_matches(trim).len();
        if core_end <= core_start {
            continue;
        }
        let core = &s[core_start..core_end];
        if core.starts_with("SHA256:") || core.starts_with("MD5:") {
            spans.push((core_start, core_end, Kind::Fingerprint));
        } else if is_machine_path(core) {
            spans.push((core_start, core_end, Kind::Path));
        }
    }
}

/// The byte ranges of the words of `s` (runs of non-white-space).
fn split_words(s: &str) -> Vec<(usize, usize)> {
    let mut words = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices() {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some(i),
            (true, Some(st)) => {
                words.push((st, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(st) = start {
        words.push((st, s.len()));
    }
    words
}

/// A home or temporary path (`/home/…`, `/Users/…`, `/root/…`, `/tmp/…`,
/// `/var/folders/…`, `~/…`, `C:\…`), also after `=`.
pub fn is_machine_path(s: &str) -> bool {
    [
        "/home/",
        "/Users/",
        "/root/",
        "/tmp/",
        "/var/folders/",
        "~/",
    ]
    .iter()
    .any(|p| s.starts_with(p) || s.contains(&format!("={p}")))
        || (s.len() > 3 && s.as_bytes()[1] == b':' && s.as_bytes()[2] == b'\\')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(s: &str) -> String {
        scrub(s, &mut Counts::new())
    }

    #[test]
    fn personal_data_goes() {
        for (text, gone) in [
            ("ask maria.gonzalez@acme-corp.com's team", "maria.gonzalez"),
            ("(mailto:ops+pager@example.co.uk)", "ops+pager"),
            ("call +49 151 1234 5678 today", "151 1234"),
            ("call +4915112345678", "4915112345678"),
            ("US (555) 123-4567, ext", "123-4567"),
            ("555-123-4567", "123-4567"),
            ("UK 020 7946 0958.", "7946 0958"),
            ("030/12345678", "12345678"),
            ("pay DE89 3704 0044 0532 0130 00 now", "3704 0044"),
            ("pay GB82WEST12345698765432.", "GB82WEST"),
            ("password hunter2", "hunter2"),
            ("the password is swordfish", "swordfish"),
            ("Password: letmein", "letmein"),
            ("db_password=abc", "abc"),
            ("PIN 4921", "4921"),
            (
                "key SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s",
                "uNiVz",
            ),
            ("notes in /home/grace/work/x.log", "grace"),
        ] {
            let o = out(text);
            assert!(!o.contains(gone), "{text:?} → {o:?}");
        }
    }

    #[test]
    fn ordinary_text_stays() {
        for text in [
            "2026-12-07 16:57 and 2026-12-07T16:57:00Z, at 1765126620",
            "tick 120 of 5000, 3 goals, 6 agents",
            "t-3fa9c2d1 and g-0a1b2c3d, commit 526803bf2b7b811fc1a8ed90c67c0eff0789b0e3",
            "spent $1,234.56 of $12,000.00 (0.75 USD per 1,000,000 tokens)",
            "version 1.18.33 on 127.0.0.1:8080 and 192.168.100.200",
            "the password reset flow, password manager",
            "pin the version, PIN code",
            "issue #1234567890 and PR 42",
            "Step 12 of the parser",
            "Write the parser in src/parse.rs",
        ] {
            assert_eq!(out(text), text, "{text:?} was changed");
        }
    }

    #[test]
    fn counts_say_what_went() {
        let mut c = Counts::new();
        let o = scrub("a@b.io, c@d.io; call +1 555 010 9999", &mut c);
        assert_eq!(o, "[email], [email]; call [phone]");
        assert_eq!(c[&Kind::Email], 2);
        assert_eq!(c[&Kind::Phone], 1);
    }
}
