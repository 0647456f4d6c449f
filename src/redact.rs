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
    // A bare 40-character secret (AWS) is a long run of base64 characters.
    let mut run = 0;
    let by_first = rules_by_first();
    for (i, &c) in b.iter().enumerate() {
        run = if c.is_ascii_alphanumeric() || c == b'/' || c == b'+' {
            run + 1
        } else {
            0
        };
        if run >= 40 {
            return false;
        }
        if !prev_token
            && by_first[c as usize]
                .iter()
                .any(|r| b[i..].starts_with(r.prefix.as_bytes()))
        {
            return false;
        }
        match c {
            b'=' | b':' | b'\t' | b'@' | b'~' => return false,
            b'_' if b[i..].starts_with(b"_mmk") => return false,
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
    prefixed(line, &mut spans);
    bare_aws_secret(line, &mut spans);
    azure_client_secret(line, &mut spans);
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
    secret_parts(&key_parts(key))
}

/// [`is_secret_key`] of a key already split into its parts.
fn secret_parts(parts: &[String]) -> bool {
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
            || (matches!(
                p.as_str(),
                "api" | "access" | "private" | "secret" | "account" | "signing" | "master"
            ) && matches!(next, Some("key")))
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
        // A key that only names a service or a key (`ADAFRUIT_IO_KEY`,
        // `AccountKey`) is taken as a secret only when its value looks
        // like a credential.
        let parts = key_parts(key);
        let weak = !secret_parts(&parts);
        if weak && !credential_hint_parts(&parts) {
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
                        if k > 0 && (!weak || token_like(&line[j + 1..j + 1 + k])) {
                            spans.push((j + 1, j + 1 + k));
                        }
                        i = j + 1 + k + 1;
                        continue;
                    }
                    None => line.len(),
                }
            }
            _ if weak => {
                let end = line[j..]
                    .find([' ', '\t', '&', ';', ',', '"', '\'', '<', '>', ')'])
                    .map_or(line.len(), |k| j + k);
                if !token_like(&line[j..end]) {
                    i = end.max(i + 1);
                    continue;
                }
                end
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

/// Services whose keys gitleaks' default rules look for beside their name.
/// Sorted, for a binary search.
const SERVICES: &[&str] = &[
    "adafruit",
    "adobe",
    "airtable",
    "algolia",
    "alibaba",
    "anthropic",
    "artifactory",
    "asana",
    "atlassian",
    "aws",
    "azure",
    "beamer",
    "bitbucket",
    "bittrex",
    "cloudflare",
    "codecov",
    "cohere",
    "coinbase",
    "confluence",
    "confluent",
    "contentful",
    "databricks",
    "datadog",
    "digitalocean",
    "discord",
    "doppler",
    "drone",
    "dropbox",
    "etsy",
    "facebook",
    "fastly",
    "finicity",
    "finnhub",
    "flickr",
    "freshbooks",
    "gcp",
    "gitlab",
    "gitter",
    "gocardless",
    "hashicorp",
    "heroku",
    "hubspot",
    "huggingface",
    "intercom",
    "jfrog",
    "jira",
    "kraken",
    "kucoin",
    "launchdarkly",
    "linear",
    "linkedin",
    "lob",
    "looker",
    "mailchimp",
    "mailgun",
    "mapbox",
    "mattermost",
    "meraki",
    "messagebird",
    "netlify",
    "newrelic",
    "npm",
    "nuget",
    "nytimes",
    "okta",
    "openai",
    "plaid",
    "privateai",
    "pulumi",
    "pypi",
    "rapidapi",
    "sendbird",
    "sendgrid",
    "sentry",
    "shopify",
    "sidekiq",
    "slack",
    "snyk",
    "sonar",
    "sonarqube",
    "squarespace",
    "stripe",
    "sumologic",
    "telegram",
    "terraform",
    "travis",
    "twilio",
    "twitch",
    "twitter",
    "typeform",
    "vault",
    "yandex",
    "zendesk",
];

/// A key that names a credential only loosely: a part `key`, `keys`,
/// `creds`, `pat`, `sid`, or a service whose keys gitleaks' default rules
/// look for next to its name (`ADAFRUIT_IO_KEY=…`, `"heroku": "…"`). Its
/// value is redacted only when it looks like a credential ([`token_like`]).
fn credential_hint_parts(parts: &[String]) -> bool {
    parts.iter().any(|p| {
        matches!(
            p.as_str(),
            "key" | "keys" | "creds" | "cred" | "pat" | "sid" | "pw" | "signature" | "sig"
        ) || SERVICES.binary_search(&p.as_str()).is_ok()
    })
}

/// Whether a value looks like a credential rather than a word: at least 16
/// characters of base64, hex or token alphabets with no space, letters and
/// digits both, and not a reference (`$X`) or a path.
fn token_like(v: &str) -> bool {
    let v = v.trim_matches(['"', '\'']);
    v.len() >= 16
        && !v.starts_with('$')
        && !v.starts_with('/')
        && v.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"_-+/=.~".contains(&c))
        && v.bytes().any(|c| c.is_ascii_digit())
        && v.bytes().any(|c| c.is_ascii_alphabetic())
}

/// The characters a token of a [`Rule`] is made of after its prefix.
#[derive(Clone, Copy)]
enum Set {
    /// Letters and digits.
    Alnum,
    /// Letters, digits, `_` and `-`.
    Word,
    /// Lowercase or uppercase hex digits.
    Hex,
    /// Uppercase letters and digits.
    Upper,
    /// Word characters and `.`, `=`, `+`, `/`, `~` (dotted or base64 tokens).
    Dotted,
    /// Word characters and `.` (no `/`, so a path never fits).
    Dots,
    /// Lowercase letters only (Hugging Face).
    Letters,
}

impl Set {
    fn has(self, c: u8) -> bool {
        match self {
            Set::Alnum => c.is_ascii_alphanumeric(),
            Set::Word => c.is_ascii_alphanumeric() || c == b'_' || c == b'-',
            Set::Hex => c.is_ascii_hexdigit(),
            Set::Upper => c.is_ascii_uppercase() || c.is_ascii_digit(),
            Set::Dotted => c.is_ascii_alphanumeric() || b"_-.=+/~".contains(&c),
            Set::Dots => c.is_ascii_alphanumeric() || b"_-.".contains(&c),
            Set::Letters => c.is_ascii_alphabetic(),
        }
    }
}

/// A token shape: a fixed prefix at the start of a word, then at least
/// `min` characters of `set` (exactly `min` when `exact`).
struct Rule {
    /// What the docs call it (the gitleaks rule it stands for).
    name: &'static str,
    prefix: &'static str,
    set: Set,
    min: usize,
    exact: bool,
}

const fn r(name: &'static str, prefix: &'static str, set: Set, min: usize) -> Rule {
    Rule {
        name,
        prefix,
        set,
        min,
        exact: false,
    }
}

const fn x(name: &'static str, prefix: &'static str, set: Set, len: usize) -> Rule {
    Rule {
        name,
        prefix,
        set,
        min: len,
        exact: true,
    }
}

/// Token shapes by prefix, after gitleaks' default rules (written here,
/// not copied; docs/gates.md lists them). The older shapes of [`shape`]
/// (GitHub, GitLab PATs, AWS access keys, Slack, Stripe, OpenAI and
/// Anthropic, Google API keys, npm, JWTs) stay there.
const RULES: &[Rule] = &[
    r("1Password secret key", "A3-", Set::Word, 30),
    r(
        "1Password service account token",
        "ops_eyJ",
        Set::Dotted,
        50,
    ),
    x("Adobe client secret", "p8e-", Set::Alnum, 32),
    r("age secret key", "AGE-SECRET-KEY-1", Set::Upper, 58),
    x("Airtable personal access token", "pat", Set::Dots, 79),
    x("Alibaba access key id", "LTAI", Set::Alnum, 20),
    r("Artifactory API key", "AKCp", Set::Alnum, 69),
    r("Artifactory reference token", "cmVmd", Set::Alnum, 59),
    x("AWS access key (A3T)", "A3T", Set::Upper, 17),
    x("AWS access key (ABIA)", "ABIA", Set::Upper, 16),
    x("AWS access key (ACCA)", "ACCA", Set::Upper, 16),
    r("Amazon Bedrock API key", "ABSK", Set::Dotted, 100),
    r(
        "Amazon Bedrock short-lived API key",
        "bedrock-api-key-",
        Set::Dotted,
        20,
    ),
    x("ClickHouse Cloud secret key", "4b1d", Set::Alnum, 38),
    r("Clojars API token", "CLOJARS_", Set::Alnum, 60),
    r("Cloudflare origin CA key", "v1.0-", Set::Word, 150),
    r("Databricks API token", "dapi", Set::Hex, 32),
    r("DigitalOcean access token", "doo_v1_", Set::Hex, 64),
    r(
        "DigitalOcean personal access token",
        "dop_v1_",
        Set::Hex,
        64,
    ),
    r("DigitalOcean refresh token", "dor_v1_", Set::Hex, 64),
    r("Doppler API token", "dp.pt.", Set::Alnum, 40),
    r("Duffel API token (test)", "duffel_test_", Set::Dotted, 40),
    r("Duffel API token (live)", "duffel_live_", Set::Dotted, 40),
    r("Dynatrace API token", "dt0c01.", Set::Dotted, 80),
    r("EasyPost API token", "EZAK", Set::Alnum, 54),
    r("EasyPost test API token", "EZTK", Set::Alnum, 54),
    r("Facebook page access token (EAAC)", "EAAC", Set::Alnum, 100),
    r("Facebook page access token (EAAM)", "EAAM", Set::Alnum, 100),
    r(
        "Flutterwave secret or encryption key",
        "FLWSECK_TEST-",
        Set::Word,
        12,
    ),
    r("Flutterwave public key", "FLWPUBK_TEST-", Set::Word, 32),
    r("Fly.io access token (fo1_)", "fo1_", Set::Word, 43),
    r("Fly.io macaroon (fm1a_)", "fm1a_", Set::Dotted, 100),
    r("Fly.io macaroon (fm1r_)", "fm1r_", Set::Dotted, 100),
    r("Fly.io macaroon (fm2_)", "fm2_", Set::Dotted, 100),
    r("Frame.io API token", "fio-u-", Set::Dotted, 64),
    r("GitLab CI/CD job token", "glcbt-", Set::Word, 20),
    r("GitLab deploy token", "gldt-", Set::Word, 20),
    r("GitLab feature flag client token", "glffct-", Set::Word, 20),
    r("GitLab feed token", "glft-", Set::Word, 20),
    r("GitLab incoming mail token", "glimt-", Set::Word, 25),
    r("GitLab Kubernetes agent token", "glagent-", Set::Word, 50),
    r("GitLab OAuth application secret", "gloas-", Set::Word, 64),
    r("GitLab pipeline trigger token", "glptt-", Set::Hex, 40),
    r(
        "GitLab runner registration token",
        "GR1348941",
        Set::Word,
        20,
    ),
    r("GitLab runner authentication token", "glrt-", Set::Word, 20),
    r("GitLab SCIM token", "glsoat-", Set::Word, 20),
    r("GitLab session cookie", "_gitlab_session=", Set::Alnum, 32),
    r("Grafana API key", "eyJrIjoi", Set::Dotted, 70),
    r("Grafana Cloud API token", "glc_", Set::Dotted, 32),
    r("Grafana service account token", "glsa_", Set::Word, 40),
    x("Harness personal access token", "pat.", Set::Dots, 68),
    x("Harness service account token", "sat.", Set::Dots, 68),
    r("Heroku API key v2", "HRKU-AA", Set::Word, 58),
    x("Hugging Face access token", "hf_", Set::Letters, 34),
    x(
        "Hugging Face organization token",
        "api_org_",
        Set::Letters,
        34,
    ),
    x("Infracost API token", "ico-", Set::Alnum, 32),
    r("42 Intra client secret (ud)", "s-s4t2ud-", Set::Hex, 64),
    r("42 Intra client secret (af)", "s-s4t2af-", Set::Hex, 64),
    r("JWT, base64-encoded", "ZXlKaGJHY2lPaU", Set::Dotted, 40),
    r("Linear API key", "lin_api_", Set::Alnum, 40),
    r("Notion API token", "ntn_", Set::Alnum, 46),
    x("Octopus Deploy API key", "API-", Set::Upper, 26),
    r("OpenShift user token", "sha256~", Set::Word, 43),
    r("Perplexity API key", "pplx-", Set::Alnum, 48),
    r("PlanetScale API token", "pscale_tkn_", Set::Dotted, 32),
    r("PlanetScale OAuth token", "pscale_oauth_", Set::Dotted, 32),
    r("PlanetScale password", "pscale_pw_", Set::Dotted, 32),
    r("Postman API token", "PMAK-", Set::Word, 59),
    x("Prefect API token", "pnu_", Set::Alnum, 36),
    x("Pulumi API token", "pul-", Set::Hex, 40),
    r("PyPI upload token", "pypi-", Set::Word, 50),
    r("ReadMe API token", "rdme_", Set::Alnum, 70),
    r("RubyGems API token", "rubygems_", Set::Hex, 48),
    r("Scalingo API token", "tk-us-", Set::Word, 48),
    x("SendGrid API token", "SG.", Set::Dotted, 66),
    r("Sendinblue API token", "xkeysib-", Set::Word, 80),
    r("Sentry organization token", "sntrys_eyJ", Set::Dotted, 60),
    r("Sentry user token", "sntryu_", Set::Hex, 64),
    r("SettleMint application token", "sm_aat_", Set::Alnum, 16),
    r("SettleMint personal token", "sm_pat_", Set::Alnum, 16),
    r("SettleMint service token", "sm_sat_", Set::Alnum, 16),
    r("Shippo API token (live)", "shippo_live_", Set::Hex, 40),
    r("Shippo API token (test)", "shippo_test_", Set::Hex, 40),
    x("Shopify access token", "shpat_", Set::Hex, 32),
    x("Shopify custom app token", "shpca_", Set::Hex, 32),
    x("Shopify private app token", "shppa_", Set::Hex, 32),
    x("Shopify shared secret", "shpss_", Set::Hex, 32),
    r("Slack app-level token", "xapp-", Set::Word, 20),
    r("Slack legacy token (xoxo)", "xoxo-", Set::Word, 10),
    r("Sourcegraph access token", "sgp_", Set::Word, 40),
    r("Square access token (EAAA)", "EAAA", Set::Word, 22),
    r("Square access token (sq0atp-)", "sq0atp-", Set::Word, 22),
    r("Square OAuth secret (sq0csp-)", "sq0csp-", Set::Word, 22),
    r("Stripe restricted test key", "rk_test_", Set::Alnum, 10),
    r("Stripe secret key (prod)", "sk_prod_", Set::Alnum, 10),
    r("Stripe restricted key (prod)", "rk_prod_", Set::Alnum, 10),
    x("Twilio API key", "SK", Set::Hex, 32),
    r("HashiCorp Vault batch token", "hvb.", Set::Word, 138),
    r("HashiCorp Vault service token", "hvs.", Set::Word, 90),
    r("Google OAuth access token", "ya29.", Set::Word, 20),
    x("Mailgun API key", "key-", Set::Hex, 32),
];

/// The rules whose prefix starts with each byte, so a word is compared
/// with the few that could match it, never with all of them.
fn rules_by_first() -> &'static [Vec<&'static Rule>] {
    static BY_FIRST: std::sync::OnceLock<Vec<Vec<&'static Rule>>> = std::sync::OnceLock::new();
    BY_FIRST.get_or_init(|| {
        let mut t: Vec<Vec<&'static Rule>> = vec![Vec::new(); 256];
        for r in RULES {
            if let Some(&c) = r.prefix.as_bytes().first() {
                t[c as usize].push(r);
            }
        }
        t
    })
}

/// The tokens of [`RULES`], each at the start of a word.
fn prefixed(line: &str, spans: &mut Vec<(usize, usize)>) {
    let b = line.as_bytes();
    let by_first = rules_by_first();
    let mut i = 0;
    while i < b.len() {
        let candidates = &by_first[b[i] as usize];
        if candidates.is_empty() || (i > 0 && is_token_byte(b[i - 1])) {
            i += 1;
            continue;
        }
        let hit = candidates.iter().find_map(|r| {
            let body = line[i..].strip_prefix(r.prefix)?.as_bytes();
            let n = body.iter().take_while(|c| r.set.has(**c)).count();
            let fits = if r.exact { n == r.min } else { n >= r.min };
            fits.then_some(i + r.prefix.len() + n)
        });
        match hit {
            Some(end) => {
                spans.push((i, end));
                i = end;
            }
            None => i += 1,
        }
    }
    maxmind(line, spans);
}

/// `XXXXXX_<29>_mmk`: a MaxMind license key, known by its suffix.
fn maxmind(line: &str, spans: &mut Vec<(usize, usize)>) {
    let mut from = 0;
    while let Some(k) = line[from..].find("_mmk") {
        let end = from + k + 4;
        from = end;
        if end < 40 || line.as_bytes().get(end).is_some_and(|c| is_token_byte(*c)) {
            continue;
        }
        let start = end - 40;
        let t = &line.as_bytes()[start..end];
        if (start == 0 || !is_token_byte(line.as_bytes()[start - 1]))
            && t[6] == b'_'
            && t[36] == b'_'
            && t[..6]
                .iter()
                .chain(&t[7..36])
                .all(u8::is_ascii_alphanumeric)
        {
            spans.push((start, end));
        }
    }
}

/// A bare AWS secret access key: exactly 40 characters of base64 (no `=`)
/// standing alone, with upper and lower case letters and digits, not all
/// hex (so commit ids and hashes pass).
fn bare_aws_secret(line: &str, spans: &mut Vec<(usize, usize)>) {
    let b = line.as_bytes();
    let in_run = |c: u8| c.is_ascii_alphanumeric() || c == b'/' || c == b'+';
    let mut i = 0;
    while i < b.len() {
        if !in_run(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && in_run(b[i]) {
            i += 1;
        }
        let t = &b[start..i];
        let alone = (start == 0 || !matches!(b[start - 1], b'_' | b'-' | b'=' | b'.'))
            && b.get(i)
                .is_none_or(|c| !matches!(c, b'_' | b'-' | b'=' | b'.'));
        if t.len() == 40
            && alone
            && t.iter().any(u8::is_ascii_uppercase)
            && t.iter().any(u8::is_ascii_lowercase)
            && t.iter().any(u8::is_ascii_digit)
            && !t.iter().all(u8::is_ascii_hexdigit)
            && t[0] != b'/'
        {
            spans.push((start, i));
        }
    }
}

/// An Azure AD client secret: three characters, a digit, `Q~`, then 31 to
/// 34 of `[A-Za-z0-9_~.-]`.
fn azure_client_secret(line: &str, spans: &mut Vec<(usize, usize)>) {
    let b = line.as_bytes();
    let set = |c: u8| c.is_ascii_alphanumeric() || b"_~.-".contains(&c);
    let mut from = 0;
    while let Some(k) = line[from..].find("Q~") {
        let q = from + k;
        from = q + 2;
        if q < 4 || !b[q - 1].is_ascii_digit() || !b[q - 4..q - 1].iter().all(|c| set(*c)) {
            continue;
        }
        let n = b[q + 2..].iter().take_while(|c| set(**c)).count();
        if (31..=34).contains(&n) {
            spans.push((q - 4, q + 2 + n));
        }
    }
}

/// The token shapes the redactor knows, for docs and tests: the names of
/// `RULES` and the older shapes.
pub fn shape_names() -> Vec<&'static str> {
    RULES
        .iter()
        .map(|r| r.name)
        .chain([
            "MaxMind license key",
            "AWS secret access key (bare)",
            "Azure AD client secret",
        ])
        .collect()
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

    /// A token of `rule`'s shape: its prefix and a body of its alphabet,
    /// `extra` characters longer than its minimum.
    fn sample(rule: &Rule, extra: usize) -> String {
        let pool: &[u8] = match rule.set {
            Set::Letters => b"qWeRtYuIoPaSdFgHjKlZxCvBnM",
            Set::Hex => b"0a1b2c3d4e5f6789",
            Set::Upper => b"Q7W3E9R2T5Y8U4I6O1PZ",
            _ => b"a1B2c3D4e5F6g7H8i9J0kLmNpQ",
        };
        let body: String = (0..rule.min + extra)
            .map(|i| pool[(i * 7 + 3) % pool.len()] as char)
            .collect();
        format!("{}{body}", rule.prefix)
    }

    #[test]
    fn every_prefixed_shape_is_redacted_in_prose_json_and_env() {
        for rule in RULES {
            let token = sample(rule, 0);
            for line in [
                format!("use {token} for now"),
                format!("{{\"value\": \"{token}\"}}"),
                format!("X={token}"),
                token.clone(),
            ] {
                let out = text(&line);
                assert!(
                    !out.contains(&token[rule.prefix.len()..]),
                    "{}: {line:?} → {out:?}",
                    rule.name
                );
            }
            if !rule.exact && rule.min > 1 {
                // Too short to be one: left alone by this rule.
                let short = format!(
                    "{}{}",
                    rule.prefix,
                    &sample(rule, 0)[rule.prefix.len()..][..rule.min / 2]
                );
                let line = format!("see {short} there");
                let out = text(&line);
                assert!(
                    out.contains(&short) || looks_secret(&short),
                    "{}: {short:?} → {out:?}",
                    rule.name
                );
            }
        }
        assert!(shape_names().len() > RULES.len());
    }

    /// The shapes a probe found stored verbatim (issue 25), one test each,
    /// in the context they were written in.
    macro_rules! probe {
        ($($name:ident: $line:expr, $secret:expr;)*) => {$(
            #[test]
            fn $name() {
                let line: String = $line;
                let secret: String = $secret;
                let out = text(&line);
                assert!(!out.contains(&secret), "{line:?} → {out:?}");
                assert!(out.contains(MARK), "{line:?} → {out:?}");
            }
        )*};
    }

    fn hex(n: usize) -> String {
        "3f9a0c7e1b5d2468".chars().cycle().take(n).collect()
    }

    fn mixed(n: usize) -> String {
        "Zx8Qw2Er5Ty7Ui0Op3As6Df9Gh1Jk4Lm"
            .chars()
            .cycle()
            .take(n)
            .collect()
    }

    probe! {
        hugging_face_token: format!("Title: rotate hf_{}", "qwertyuiopasdfghjklzxcvbnmqwertyui"), "hf_qwerty".to_owned();
        sendgrid_key: format!("note SG.{}.{}", mixed(22), mixed(43)), mixed(22);
        google_oauth_token: format!("ya29.{} expired", mixed(60)), mixed(60);
        digitalocean_pat: format!("dop_v1_{}", hex(64)), hex(64);
        shopify_token: format!("shpat_{} in the question", hex(32)), hex(32);
        azure_account_key: format!("DefaultEndpointsProtocol=https;AccountName=x;AccountKey={}==;EndpointSuffix=core", mixed(64)), mixed(64);
        twilio_api_key: format!("SK{} was pasted", hex(32)), hex(32);
        databricks_token: format!("dapi{}", hex(32)), hex(32);
        mailgun_key: format!("MAILGUN key-{}", hex(32)), hex(32);
        pypi_token: format!("twine upload -p pypi-AgEIcHlwaS5vcmc{}", mixed(60)), mixed(60);
        bare_aws_secret_key: "aws secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY here".to_owned(), "wJalrXUtnFEMI".to_owned();
        aws_abia_key: "ABIAQ7W3E9R2T5Y8U4I6".to_owned(), "Q7W3E9R2T5Y8U4I6".to_owned();
        gitlab_runner_token: format!("glrt-{}", mixed(20)), mixed(20);
        service_named_key: format!("ADAFRUIT_IO_KEY={}", mixed(32)), mixed(32);
        service_named_json: format!("{{\"heroku\": \"{}\"}}", mixed(36)), mixed(36);
        azure_ad_client_secret: format!("secret abc1Q~{}", mixed(32)), mixed(32);
        maxmind_license_key: format!("key Ab3dE5_{}_mmk", mixed(29)), mixed(29);
        stripe_restricted_test_key: format!("rk_test_{}", mixed(24)), mixed(24);
    }

    #[test]
    fn weak_keys_keep_ordinary_values() {
        for line in [
            "Fix the cache key: it collides on restart",
            "sort key = name",
            "PRIMARY_KEY=id",
            "heroku: deploy failed twice",
            "monkey=banana-split-dessert",
            "see src/store/history.rs and docs/format.md for the key",
            "commit 4b1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d",
            "path/to/the/patterns/in/a/long/directory/tree/of/the/project/file.rs",
            "API-docs are out of date",
            "SKIP this step",
            "key-value store",
            "ghp_ is GitHub's prefix",
        ] {
            assert_eq!(text(line), line, "{line:?} was changed");
        }
    }

    #[test]
    fn the_docs_list_every_shape() {
        let doc = include_str!("../docs/gates.md");
        for name in shape_names() {
            assert!(
                doc.contains(&format!("| {name} |")),
                "docs/gates.md does not list {name}"
            );
        }
    }

    #[test]
    fn service_names_hint_at_credentials_only_with_a_credential_value() {
        assert!(credential_hint_parts(&key_parts("ZENDESK_TOKEN_ID")));
        assert!(credential_hint_parts(&key_parts("adafruitKey")));
        assert!(credential_hint_parts(&key_parts("TWILIO_SID")));
        assert!(!credential_hint_parts(&key_parts("max_tokens")));
        assert_eq!(text("twilio=on"), "twilio=on");
        assert!(
            SERVICES.windows(2).all(|w| w[0] < w[1]),
            "SERVICES is sorted"
        );
    }
}
