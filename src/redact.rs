//! Secret redaction: the one place that decides what looks like a secret in
//! text that is about to enter the history (a command's output tail, its
//! argv, an evidence summary and the commit subject made from it).
//!
//! Pure and line-based, so `run` can stream gigabytes through it: a [`Lines`]
//! carries the only state that spans lines (inside a PEM private-key block).
//! What counts as a secret:
//! - `KEY=VALUE`, `KEY: VALUE`, `"KEY": "VALUE"`, `KEY<tab>VALUE` where the
//!   key names a secret (password, passwd, secret, token, api_key, apikey,
//!   access_key, private_key, passphrase, credentials, auth, bearer);
//! - `Authorization:` headers, `Bearer …` credentials, URL userinfo
//!   (`https://user:pass@host`);
//! - whole PEM private-key blocks;
//! - well-known token shapes: GitHub, GitLab, AWS, Slack (tokens and
//!   webhooks), Stripe, OpenAI and Anthropic, Google, npm, JWTs.
//!
//! A false positive costs a few characters of a log; a false negative is a
//! secret replicated to every clone forever. Ordinary output (hashes, commit
//! ids, UUIDs, base64) must still come through untouched: see the corpus
//! tests below.

use std::borrow::Cow;

/// What replaces a secret.
pub const MARK: &str = "[REDACTED]";

/// A line after redaction.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// Nothing in it looked secret.
    Same,
    /// Some of it did; this is what is left.
    Changed(String),
    /// A private-key body line after the first: dropped, so the record does
    /// not even tell the key's length.
    Dropped,
}

/// Redacts text line by line, remembering whether a PEM private-key block is
/// open.
#[derive(Debug, Default)]
pub struct Lines {
    in_pem: bool,
    pem_marked: bool,
}

impl Lines {
    pub fn new() -> Self {
        Self::default()
    }

    /// Redacts one line (without its line break).
    pub fn line(&mut self, line: &str) -> Line {
        if self.in_pem {
            if let Some(end) = line.find("-----END ") {
                self.in_pem = false;
                let mut out = String::new();
                if !self.pem_marked && !line[..end].trim().is_empty() {
                    out.push_str(MARK);
                }
                let rest = &line[end..];
                out.push_str(&redact_line(rest).unwrap_or_else(|| rest.to_owned()));
                return Line::Changed(out);
            }
            if self.pem_marked {
                return Line::Dropped;
            }
            self.pem_marked = true;
            return Line::Changed(MARK.to_owned());
        }
        // A private key opening on this line: keep the header, hide the
        // rest of the line and every line up to the footer.
        if let Some(begin) = pem_begin(line) {
            let after_header = begin.1;
            let rest = &line[after_header..];
            let head = &line[..after_header];
            let head = redact_line(head).unwrap_or_else(|| head.to_owned());
            if let Some(end) = rest.find("-----END ") {
                // The whole block on one line (JSON with `\n` escapes).
                let tail = &rest[end..];
                return Line::Changed(format!(
                    "{head}{MARK}{}",
                    redact_line(tail).unwrap_or_else(|| tail.to_owned())
                ));
            }
            self.in_pem = true;
            self.pem_marked = !rest.trim().is_empty();
            let mark = if self.pem_marked { MARK } else { "" };
            return Line::Changed(format!("{head}{mark}"));
        }
        match redact_line(line) {
            Some(s) => Line::Changed(s),
            None => Line::Same,
        }
    }
}

/// Redacts a whole text (many lines).
pub fn text(s: &str) -> Cow<'_, str> {
    let mut lines = Lines::new();
    let mut out = String::new();
    let mut changed = false;
    for (i, l) in s.split('\n').enumerate() {
        let piece = match lines.line(l) {
            Line::Same => l.to_owned(),
            Line::Changed(c) => {
                changed = true;
                c
            }
            Line::Dropped => {
                changed = true;
                continue;
            }
        };
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&piece);
    }
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(s)
    }
}

/// Redacts an argv: each argument as text, and the value after a flag that
/// names a secret (`--password hunter2`, `--token abc`).
pub fn argv(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut next_is_secret = false;
    for arg in argv {
        if next_is_secret && !arg.starts_with('-') {
            out.push(MARK.to_owned());
            next_is_secret = false;
            continue;
        }
        next_is_secret = arg.starts_with('-')
            && !arg.contains('=')
            && is_secret_key(arg.trim_start_matches('-'));
        out.push(text(arg).into_owned());
    }
    out
}

/// Whether anything in `s` looks like a secret.
pub fn looks_secret(s: &str) -> bool {
    matches!(text(s), Cow::Owned(_))
}

/// The first argument of `argv` that carries a secret-looking value.
pub fn secret_arg(argv: &[String]) -> Option<usize> {
    let redacted = self::argv(argv);
    redacted.iter().zip(argv).position(|(r, a)| r != a)
}

/// `-----BEGIN … PRIVATE KEY-----` (or `… PRIVATE KEY BLOCK-----`): the
/// header's start and end.
fn pem_begin(line: &str) -> Option<(usize, usize)> {
    let start = line.find("-----BEGIN ")?;
    let label_start = start + "-----BEGIN ".len();
    let close = line[label_start..].find("-----")? + label_start;
    let label = &line[label_start..close];
    label
        .contains("PRIVATE")
        .then_some((start, close + "-----".len()))
}

/// Cheap test that a line has nothing any rule could match; most output
/// lines stop here, in one pass over the bytes. Key-value pairs, URLs and
/// headers all need `=`, `:`, a tab or `@`; a bare token needs one of the
/// known prefixes at the start of a word.
fn quiet(line: &str) -> bool {
    let b = line.as_bytes();
    let mut prev_token = false;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'=' | b':' | b'\t' | b'@' => return false,
            b'g' | b'A' | b'x' | b's' | b'r' | b'n' | b'e' | b'B' | b'b' if !prev_token => {
                let rest = &b[i..];
                const PREFIXES: [&[u8]; 11] = [
                    b"gh",
                    b"github_pat_",
                    b"glpat-",
                    b"AKIA",
                    b"ASIA",
                    b"AIza",
                    b"xox",
                    b"sk",
                    b"rk_",
                    b"npm_",
                    b"eyJ",
                ];
                let bearer = rest.len() >= 6 && rest[..6].eq_ignore_ascii_case(b"bearer");
                if bearer || PREFIXES.iter().any(|p| rest.starts_with(p)) {
                    return false;
                }
            }
            _ => {}
        }
        prev_token = is_token_byte(c);
    }
    true
}

/// Redacts one line, or None when nothing in it looks secret.
fn redact_line(line: &str) -> Option<String> {
    if quiet(line) {
        return None;
    }
    let mut spans: Vec<(usize, usize)> = Vec::new();
    authorization(line, &mut spans);
    key_values(line, &mut spans);
    bearer(line, &mut spans);
    url_userinfo(line, &mut spans);
    slack_webhook(line, &mut spans);
    shapes(line, &mut spans);
    if spans.is_empty() {
        return None;
    }
    spans.sort_unstable();
    let mut out = String::with_capacity(line.len());
    let mut at = 0;
    for (start, end) in spans {
        let start = start.max(at);
        if end <= start {
            continue;
        }
        out.push_str(&line[at..start]);
        out.push_str(MARK);
        at = end;
    }
    out.push_str(&line[at..]);
    (out != line).then_some(out)
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// The parts of a key: `AWS_SECRET_ACCESS_KEY` → aws, secret, access, key;
/// `apiKey` → api, key; `X-Auth-Token` → x, auth, token.
fn key_parts(key: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        if !c.is_ascii_alphanumeric() {
            if !cur.is_empty() {
                parts.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !cur.is_empty() {
            parts.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        cur.push(c.to_ascii_lowercase());
    }
    if !cur.is_empty() {
        parts.push(cur);
    }
    parts
}

/// Whether a key (an environment variable, a JSON or YAML key, a flag's
/// name) names a secret.
pub fn is_secret_key(key: &str) -> bool {
    let parts = key_parts(key);
    let ends = |p: &str, w: &str| p.ends_with(w);
    parts.iter().enumerate().any(|(i, p)| {
        let next = parts.get(i + 1).map(String::as_str);
        ends(p, "password")
            || ends(p, "passwd")
            || ends(p, "passphrase")
            || ends(p, "secret")
            || ends(p, "token")
            || ends(p, "apikey")
            || ends(p, "credentials")
            || ends(p, "credential")
            || p == "privatekey"
            || p == "accesskey"
            || p == "auth"
            || p == "authorization"
            || p == "bearer"
            || p == "pwd" && parts.len() > 1
            || (matches!(p.as_str(), "api" | "access" | "private" | "secret")
                && matches!(next, Some("key")))
    })
}

/// `Authorization: …` and `Proxy-Authorization: …`: everything after the
/// colon.
fn authorization(line: &str, spans: &mut Vec<(usize, usize)>) {
    let lower = line.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find("authorization") {
        let at = from + i;
        from = at + "authorization".len();
        let rest = &lower[from..];
        let rest_trim = rest.trim_start_matches(['"', '\'']).trim_start();
        if let Some(after) = rest_trim.strip_prefix(':') {
            let value_start = line.len() - after.len();
            let value = &line[value_start..];
            let lead = value.len() - value.trim_start().len();
            let start = value_start + lead;
            let end = value_end_rest(line, start);
            if is_reference(&line[start..end]) {
                continue;
            }
            if end > start {
                spans.push((start, end));
            }
        }
    }
}

/// The end of a value that runs to the end of the line, or to its closing
/// quote when it starts with one.
fn value_end_rest(line: &str, start: usize) -> usize {
    let b = line.as_bytes();
    if let Some(&q) = b.get(start).filter(|q| **q == b'"' || **q == b'\'') {
        return line[start + 1..]
            .find(q as char)
            .map_or(line.len(), |i| start + 1 + i + 1);
    }
    line.trim_end().len().max(start)
}

/// `KEY=VALUE`, `KEY: VALUE`, `"KEY": "VALUE"`, `KEY := VALUE`, `KEY<tab>VALUE`.
fn key_values(line: &str, spans: &mut Vec<(usize, usize)>) {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        // A key: a run of key characters.
        if !(b[i].is_ascii_alphanumeric() || b[i] == b'_') {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'_' | b'-' | b'.')) {
            i += 1;
        }
        let key = &line[start..i];
        // The separator, with optional quotes and spaces around it.
        let mut j = i;
        if j < b.len() && matches!(b[j], b'"' | b'\'') {
            j += 1;
        }
        let sep_start = j;
        while j < b.len() && b[j] == b' ' {
            j += 1;
        }
        let (sep, len) = match b.get(j) {
            Some(b'=') if b.get(j + 1) == Some(&b'>') => ('=', 2),
            Some(b'=') => ('=', 1),
            Some(b':') if b.get(j + 1) == Some(&b'=') => ('=', 2),
            Some(b':') if b.get(j + 1) != Some(&b'/') => (':', 1),
            _ if j < b.len() && b[sep_start] == b'\t' => ('\t', 0),
            _ => continue,
        };
        if !is_secret_key(key) {
            continue;
        }
        j += len;
        while j < b.len() && matches!(b[j], b' ' | b'\t') {
            j += 1;
        }
        // A reference is no secret: `TOKEN=$API_TOKEN`, `${X}`, `$(cmd)`.
        if j >= b.len() || is_reference(&line[j..]) {
            continue;
        }
        let end = match b[j] {
            b'"' | b'\'' => {
                let q = b[j] as char;
                match line[j + 1..].find(q) {
                    // Keep the quotes: `"password": "[REDACTED]"`.
                    Some(k) => {
                        if k > 0 {
                            spans.push((j + 1, j + 1 + k));
                        }
                        i = j + 1 + k + 1;
                        continue;
                    }
                    None => line.len(),
                }
            }
            // `KEY: VALUE` (YAML, headers, prose): a passphrase may have
            // spaces, so the rest of the line.
            _ if sep == ':' => line.trim_end().len(),
            // `KEY=VALUE` ends at a space or a separator of a query string.
            _ => line[j..]
                .find([' ', '\t', '&', ';', ',', '"', '\''])
                .map_or(line.len(), |k| j + k),
        };
        if end > j {
            spans.push((j, end));
        }
        i = end.max(i + 1);
    }
}

/// `Bearer xyz` anywhere (a curl command line, a log).
fn bearer(line: &str, spans: &mut Vec<(usize, usize)>) {
    let lower = line.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find("bearer ") {
        let at = from + i;
        from = at + "bearer ".len();
        let rest = &line[from..];
        let lead = rest.len() - rest.trim_start().len();
        let start = from + lead;
        let end = line[start..]
            .find([' ', '\t', '"', '\'', ','])
            .map_or(line.len(), |k| start + k);
        if end > start && !is_reference(&line[start..end]) {
            spans.push((start, end));
        }
    }
}

/// A value that names where the secret is rather than holding it:
/// `$TOKEN`, `${TOKEN}`, `$(cat f)`, optionally after a scheme (`Bearer
/// $TOKEN`) or in quotes.
fn is_reference(value: &str) -> bool {
    let v = value.trim_start_matches(['"', '\'']);
    let v = match v.split_once(' ') {
        Some((scheme, rest)) if scheme.chars().all(|c| c.is_ascii_alphabetic()) => {
            rest.trim_start()
        }
        _ => v,
    };
    v.starts_with('$')
}

/// `scheme://user:password@host`: the password.
fn url_userinfo(line: &str, spans: &mut Vec<(usize, usize)>) {
    let mut from = 0;
    while let Some(i) = line[from..].find("://") {
        let start = from + i + 3;
        from = start;
        let auth_end = line[start..]
            .find(['/', ' ', '\t', '"', '\'', '<', '>', '?', '#'])
            .map_or(line.len(), |k| start + k);
        let Some(at) = line[start..auth_end].rfind('@') else {
            continue;
        };
        let userinfo = &line[start..start + at];
        match userinfo.find(':') {
            Some(c) if c + 1 < userinfo.len() => spans.push((start + c + 1, start + at)),
            // A token as the user name (`https://ghp_…@github.com`) is caught
            // by its shape; a plain user (`ssh://git@host`) is no secret.
            _ => {}
        }
    }
}

/// `https://hooks.slack.com/services/T…/B…/…` and `…/workflows/…`.
fn slack_webhook(line: &str, spans: &mut Vec<(usize, usize)>) {
    let mut from = 0;
    while let Some(i) = line[from..].find("hooks.slack.com/") {
        let start = from + i + "hooks.slack.com/".len();
        let end = line[start..]
            .find([' ', '\t', '"', '\'', '<', '>', ')'])
            .map_or(line.len(), |k| start + k);
        from = end.max(start);
        let path = &line[start..end];
        let cut = path.find('/').map_or(start, |k| start + k + 1);
        if end > cut {
            spans.push((cut, end));
        }
    }
}

/// Well-known token shapes, each starting at a word boundary.
fn shapes(line: &str, spans: &mut Vec<(usize, usize)>) {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if !(b[i].is_ascii_alphanumeric()) || (i > 0 && is_token_byte(b[i - 1])) {
            i += 1;
            continue;
        }
        let start = i;
        let mut end = i;
        while end < b.len() && is_token_byte(b[end]) {
            end += 1;
        }
        let word = &line[start..end];
        if let Some(len) = shape(word, &line[start..]) {
            spans.push((start, start + len));
            i = start + len;
        } else {
            i = end;
        }
    }
}

/// The length of the token at the start of `word` (a run of token
/// characters) if it has a known shape; `rest` is the line from there, for
/// JWTs, whose parts are joined by dots.
fn shape(word: &str, rest: &str) -> Option<usize> {
    let body = |prefix: &str, min: usize| {
        word.strip_prefix(prefix)
            .filter(|b| b.len() >= min)
            .map(|_| word.len())
    };
    let upper_body = |prefix: &str, len: usize| {
        let b = word.strip_prefix(prefix)?;
        (b.len() >= len
            && b.as_bytes()[..len]
                .iter()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()))
        .then_some(prefix.len() + len)
    };
    for p in ["ghp_", "gho_", "ghs_", "ghr_", "ghu_"] {
        if let Some(n) = body(p, 30) {
            return Some(n);
        }
    }
    if let Some(n) = body("github_pat_", 22)
        .or_else(|| body("glpat-", 20))
        .or_else(|| body("npm_", 30))
        .or_else(|| body("AIza", 30))
        .or_else(|| body("sk_live_", 16))
        .or_else(|| body("rk_live_", 16))
        .or_else(|| body("sk_test_", 16))
        .or_else(|| body("sk-ant-", 20))
        .or_else(|| body("sk-", 20))
        .or_else(|| upper_body("AKIA", 16))
        .or_else(|| upper_body("ASIA", 16))
    {
        return Some(n);
    }
    for p in ["xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "xoxe-"] {
        if let Some(n) = body(p, 10) {
            return Some(n);
        }
    }
    if word.starts_with("eyJ") {
        return jwt(rest);
    }
    None
}

/// `eyJ….eyJ….sig`: three base64url parts joined by dots.
fn jwt(rest: &str) -> Option<usize> {
    let b = rest.as_bytes();
    let mut at = 0;
    for part in 0..3 {
        let start = at;
        while at < b.len() && (b[at].is_ascii_alphanumeric() || b[at] == b'_' || b[at] == b'-') {
            at += 1;
        }
        if at - start < 8 || (part == 1 && !rest[start..].starts_with("eyJ")) {
            return None;
        }
        if part < 2 {
            if b.get(at) != Some(&b'.') {
                return None;
            }
            at += 1;
        }
    }
    Some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Secrets that must not survive, each in the context it is found in.
    /// The fakes are built from pieces so no scanner mistakes this file for
    /// a leak.
    fn secret_corpus() -> Vec<(String, &'static str)> {
        let x36 = "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8";
        let up16 = "Q3VJ7Z2WXK5LMN4P";
        vec![
            (format!("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCY{x36}"), "wJalr"),
            (format!("AWS_ACCESS_KEY_ID=AKIA{up16}"), up16),
            (format!("found key AKIA{up16} in config"), up16),
            (format!("session ASIA{up16}"), up16),
            (format!("GH_PAT=ghp_{x36}"), x36),
            (format!("remote: gho_{x36}"), x36),
            (format!("ghs_{x36} used"), x36),
            (format!("ghr_{x36}"), x36),
            (format!("github_pat_11ABCDEFG0_{x36}"), x36),
            (format!("token glpat-{}", &x36[..20]), &x36[..20]),
            ("git clone https://user:hunter2pass@example.com/repo.git".to_owned(), "hunter2pass"),
            (format!("https://x-access-token:ghs_{x36}@github.com/o/r"), x36),
            ("postgres://app:Pg-s3cret!@db.internal:5432/app".to_owned(), "Pg-s3cret!"),
            (format!("STRIPE=sk_live_{x36}"), x36),
            (format!("rk_live_{x36}"), x36),
            (format!("curl -u sk_test_{x36}:"), x36),
            (format!("Slack: xoxb-1234567890-{}", &x36[..24]), &x36[..24]),
            (format!("xoxp-1234567890-{}", &x36[..24]), &x36[..24]),
            (
                "post to https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"
                    .to_owned(),
                "XXXXXXXXXXXXXXXXXXXXXXXX",
            ),
            (format!("OPENAI_API_KEY=sk-proj-{x36}"), x36),
            (format!("key sk-{x36}"), x36),
            (format!("anthropic sk-ant-api03-{x36}{x36}"), x36),
            (format!("google AIzaSyA-{x36}"), x36),
            (format!("//registry.npmjs.org/:_authToken=npm_{x36}"), x36),
            (format!("npm_{x36}"), x36),
            (
                "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
                    .to_owned(),
                "dozjgNryP4J3jVmNHl0w5N",
            ),
            ("password=hunter2".to_owned(), "hunter2"),
            ("DB_PASSWORD: correct horse battery".to_owned(), "correct horse"),
            ("\"password\": \"hunter2x\"".to_owned(), "hunter2x"),
            ("{\"api_key\":\"k-123456\"}".to_owned(), "k-123456"),
            ("passphrase: open sesame now".to_owned(), "open sesame"),
            ("login\tada\tpassword\ts3cr3tTab".to_owned(), "s3cr3tTab"),
            ("password\thunter2tab".to_owned(), "hunter2tab"),
            ("client_secret = abcdef123".to_owned(), "abcdef123"),
            ("token=s3cr3t".to_owned(), "s3cr3t"),
            ("MY_TOKEN: tok-value-1".to_owned(), "tok-value-1"),
            ("apiKey: 'q9w8e7r6'".to_owned(), "q9w8e7r6"),
            ("APIKEY=abc123xyz".to_owned(), "abc123xyz"),
            ("access_key = zxcvbn987".to_owned(), "zxcvbn987"),
            ("private_key=pk-material".to_owned(), "pk-material"),
            ("credentials: user:pw-777".to_owned(), "pw-777"),
            ("GIT_AUTH=authvalue9".to_owned(), "authvalue9"),
            ("Authorization: Basic dXNlcjpwYXNz".to_owned(), "dXNlcjpwYXNz"),
            ("authorization: token abcdef0123".to_owned(), "abcdef0123"),
            ("-H 'Authorization: Bearer abc.def.ghi'".to_owned(), "abc.def"),
            ("curl -H \"X-Auth-Token: t0k3n-xyz\"".to_owned(), "t0k3n-xyz"),
            ("sent Bearer zzzyyyxxx111".to_owned(), "zzzyyyxxx111"),
            ("BEARER upper-case-credential".to_owned(), "upper-case-credential"),
            ("bearer: hdr-secret".to_owned(), "hdr-secret"),
            ("url?access_token=qs-secret&x=1".to_owned(), "qs-secret"),
            ("export SECRET='sq secret val'".to_owned(), "sq secret"),
            ("mysql_pwd=root123".to_owned(), "root123"),
            ("setting passwd := pw-assign".to_owned(), "pw-assign"),
        ]
    }

    #[test]
    fn every_secret_in_the_corpus_is_redacted() {
        let corpus = secret_corpus();
        assert!(corpus.len() >= 40, "{} samples", corpus.len());
        for (line, secret) in &corpus {
            let out = text(line);
            assert!(!out.contains(secret), "{line:?} kept {secret:?}: {out:?}");
            assert!(out.contains(MARK), "{line:?} → {out:?}");
            assert!(looks_secret(line), "{line:?}");
        }
    }

    #[test]
    fn ordinary_output_is_untouched() {
        let ordinary = [
            "commit 526803bf2b7b811fc1a8ed90c67c0eff0789b0e3",
            "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "id 6f1c2e9a-3b4d-4c5e-8f7a-9b0c1d2e3f4a",
            "SGVsbG8gd29ybGQhIFRoaXMgaXMgYmFzZTY0IHRlc3QgZGF0YQ==",
            "data: dGVzdCBkYXRhIGZvciBiYXNlNjQgZW5jb2Rpbmc=",
            "test result: ok. 12 passed; 0 failed; 0 ignored",
            "Author: Ada Lovelace <ada@example.com>",
            "git@github.com:loopx-project/loopx-rs.git",
            "ssh://git@example.com/repo.git",
            "https://example.com/path?page=2&sort=asc",
            "Compiling loopx v0.1.0 (/work/loopx)",
            "max_tokens: 4096, input_tokens: 1200",
            "tokenizer=bpe",
            "task-1234567890abcdefghijklmnop done",
            "desk-0123456789abcdefghijklm",
            "PWD=/home/ada/src",
            "curl -H \"Authorization: Bearer $API_TOKEN\" https://example.com",
            "TOKEN=$(cat ~/.token) make deploy",
            "password: ${DB_PASSWORD}",
            "-----BEGIN CERTIFICATE-----",
            "MIIBszCCAVmgAwIBAgIUQ0r7Zt8ZL4K9cVvR0nQp2J1m6uYwCgYIKoZIzj0EAwIw",
            "-----END CERTIFICATE-----",
            "error[E0308]: mismatched types",
            "  --> src/main.rs:4:5",
            "time=2026-11-30T10:00:00Z level=info msg=started",
            "sk: 3 skipped",
            "eyJ is how a JSON object starts in base64",
            "ghp_short",
            "the token is refreshed every hour",
            "AKIAshort",
            "",
        ];
        for line in ordinary {
            assert_eq!(text(line), line, "{line:?} was changed");
        }
    }

    #[test]
    fn values_are_replaced_and_context_kept() {
        assert_eq!(text("token=abc123 ok"), "token=[REDACTED] ok");
        assert_eq!(text("password = hunter2"), "password = [REDACTED]");
        assert_eq!(
            text("{\"password\": \"x1\", \"user\": \"ada\"}"),
            "{\"password\": \"[REDACTED]\", \"user\": \"ada\"}"
        );
        assert_eq!(
            text("git clone https://ada:pw@example.com/r"),
            "git clone https://ada:[REDACTED]@example.com/r"
        );
        assert_eq!(
            text("Authorization: Bearer abc.def"),
            "Authorization: [REDACTED]"
        );
    }

    #[test]
    fn pem_private_keys_go_whole() {
        let pem = "before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\nline2\nline3\n-----END RSA PRIVATE KEY-----\nafter";
        assert_eq!(
            text(pem),
            "before\n-----BEGIN RSA PRIVATE KEY-----\n[REDACTED]\n-----END RSA PRIVATE KEY-----\nafter"
        );
        let one_line =
            r#"{"key": "-----BEGIN PRIVATE KEY-----\nMIIEv\n-----END PRIVATE KEY-----\n"}"#;
        let out = text(one_line);
        assert!(!out.contains("MIIEv"), "{out}");
        let open = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA";
        assert!(!text(open).contains("b3Blbn"));
    }

    #[test]
    fn argv_values_after_secret_flags() {
        let a: Vec<String> = ["deploy", "--token", "abc", "--name", "x", "--password=pw"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        assert_eq!(
            argv(&a),
            [
                "deploy",
                "--token",
                MARK,
                "--name",
                "x",
                "--password=[REDACTED]"
            ]
        );
        assert_eq!(secret_arg(&a), Some(2));
        let plain: Vec<String> = ["cargo", "test", "--", "--nocapture"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        assert_eq!(secret_arg(&plain), None);
    }
}
