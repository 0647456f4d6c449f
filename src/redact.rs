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

mod keys;
pub mod personal;
#[doc(hidden)]
pub mod samples;
mod shapes;

pub use keys::is_secret_key;
use keys::{authorization, bearer, key_values, url_userinfo};
pub use shapes::shape_names;
use shapes::{
    azure_client_secret, bare_aws_secret, prefixed, rules_by_first, shapes, slack_webhook,
};

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

#[cfg(test)]
mod tests {
    use super::keys::{SERVICES, credential_hint_parts, key_parts};
    use super::shapes::RULES;
    use super::*;

    #[test]
    fn every_secret_in_the_corpus_is_redacted() {
        let corpus = samples::corpus();
        assert!(corpus.len() >= 40, "{} samples", corpus.len());
        for (line, secret) in &corpus {
            let out = text(line);
            assert!(!out.contains(secret), "{line:?} kept {secret:?}: {out:?}");
            assert!(out.contains(MARK), "{line:?} → {out:?}");
            assert!(looks_secret(line), "{line:?}");
        }
    }

    #[test]
    fn every_sample_of_every_shape_is_redacted() {
        let all = samples::every_shape();
        assert!(all.len() > RULES.len() + 40, "{} samples", all.len());
        for (line, secret) in &all {
            let out = text(line);
            assert!(
                !out.contains(secret.as_str()),
                "{line:?} kept {secret:?}: {out:?}"
            );
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

    #[test]
    fn every_prefixed_shape_is_redacted_in_prose_json_and_env() {
        for rule in RULES {
            let token = samples::token(rule, 0);
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
                    &samples::token(rule, 0)[rule.prefix.len()..][..rule.min / 2]
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
