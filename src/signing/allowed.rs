//! The trust root: an allowed-signers file in git's own format
//! (`ssh-keygen(1)` "ALLOWED SIGNERS"), named by git config
//! `loopx.allowedSignersFile`, else git's `gpg.ssh.allowedSignersFile`.
//!
//! Each line is `principals [options] keytype base64 [comment]`. loopx
//! honours the `namespaces` option (it must include `loopx` when present)
//! and `valid-after`/`valid-before` (judged at the op's time); lines it
//! cannot use (`cert-authority`, RSA keys) still count as "lists anyone", so
//! a file loopx cannot read never switches enforcement off.
//!
//! Fail closed: once a clone has loaded a file that lists anyone, it keeps
//! a mark under its git dir (`loopx/signatures-enforced`). From then on a
//! missing, unreadable or empty file (or no file configured) does not mean
//! "trust nobody, check nothing": it is [`AllowedSigners::broken`], and
//! every human act is refused until the file is back.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use ssh_key::PublicKey;
use ssh_key::public::KeyData;

use crate::config::Config;
use crate::error::{Code, Refusal};
use crate::store::Store;
use crate::time::Timestamp;

/// One usable line of the file.
#[derive(Clone, Debug)]
pub struct Entry {
    pub principals: Vec<String>,
    pub key: KeyData,
    /// The key as `type base64`.
    pub openssh: String,
    pub namespaces: Option<Vec<String>>,
    pub valid_after: Option<Timestamp>,
    pub valid_before: Option<Timestamp>,
}

/// The allowed signers of this machine, loaded once per invocation.
#[derive(Clone, Debug, Default)]
pub struct AllowedSigners {
    /// The file, if git config names one.
    pub path: Option<PathBuf>,
    pub entries: Vec<Entry>,
    /// Lines that name a signer, usable or not.
    pub listed: usize,
    /// Lines loopx cannot use, with why (for `signer list`).
    pub skipped: Vec<(usize, String)>,
    /// Why the trust root is unusable although this clone has enforced
    /// signatures before (the file is missing, unreadable or empty): then
    /// signatures stay enforced and every human act is refused.
    pub broken: Option<String>,
}

impl AllowedSigners {
    /// No signers: every human act is accepted unsigned, as before.
    pub fn none() -> Self {
        Self::default()
    }

    /// Reads the file git config names; none configured, or a missing
    /// file, lists nobody, unless this clone has enforced signatures
    /// before: then the trust root is [`broken`](Self::broken). `home`
    /// is where `~/` points.
    pub fn read(store: &Store, config: &Config, home: Option<&Path>) -> Result<Self> {
        let mark = store.common_dir().join("loopx").join("signatures-enforced");
        let Some(path) = configured_path(config, home, store.root()) else {
            let mut out = Self::none();
            if mark.exists() {
                out.broken = Some(
                    "git config loopx.allowedSignersFile (or gpg.ssh.allowedSignersFile) names no file"
                        .to_owned(),
                );
            }
            return Ok(out);
        };
        let (text, unusable, unreadable) = match std::fs::read_to_string(&path) {
            Ok(t) => (t, None, false),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (
                String::new(),
                Some(format!("{} is missing", path.display())),
                false,
            ),
            Err(e) => (
                String::new(),
                Some(format!("{} cannot be read ({e})", path.display())),
                true,
            ),
        };
        let mut out = Self::parse(&text);
        out.path = Some(path.clone());
        if out.enforced() {
            if !mark.exists() {
                // Remembered, so a file that goes away later fails closed.
                keep_mark(&mark, &path)?;
            }
        } else if mark.exists() || unreadable {
            // A file that cannot be read never switches the check off.
            out.broken =
                Some(unusable.unwrap_or_else(|| format!("{} lists nobody", path.display())));
        }
        Ok(out)
    }

    /// Parses the text of an allowed-signers file.
    pub fn parse(text: &str) -> Self {
        let mut out = Self::none();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            out.listed += 1;
            match parse_line(line) {
                Ok(entry) => out.entries.push(entry),
                Err(why) => out.skipped.push((i + 1, why)),
            }
        }
        out
    }

    /// Whether the file lists anyone, or this clone enforced signatures
    /// before and its file is now unusable: then every human act must be
    /// signed by an allowed signer.
    pub fn enforced(&self) -> bool {
        self.listed > 0 || self.broken.is_some()
    }

    /// The principal allowed to sign with `key` in namespace `loopx` (at
    /// `at`, when the time matters).
    pub fn principal(&self, key: &KeyData, at: Option<Timestamp>) -> Option<&str> {
        self.entries
            .iter()
            .filter(|e| &e.key == key)
            .filter(|e| {
                e.namespaces
                    .as_ref()
                    .is_none_or(|ns| ns.iter().any(|n| n == super::NAMESPACE))
            })
            .filter(|e| match at {
                Some(at) => {
                    e.valid_after.is_none_or(|t| at >= t) && e.valid_before.is_none_or(|t| at < t)
                }
                None => true,
            })
            .find_map(|e| e.principals.first().map(String::as_str))
    }

    /// Whether a key (OpenSSH form) is listed, for `signer list`.
    pub fn trusts(&self, openssh: &str) -> Option<&str> {
        let key = PublicKey::from_openssh(openssh).ok()?;
        self.principal(key.key_data(), None)
    }

    /// The file, for messages.
    pub fn describe_path(&self) -> String {
        self.path.as_ref().map_or_else(
            || "the allowed-signers file (git config loopx.allowedSignersFile)".to_owned(),
            |p| p.display().to_string(),
        )
    }
}

/// The file git config names, with `~/` expanded and a relative path taken
/// from the repository root (`root`).
pub fn configured_path(config: &Config, home: Option<&Path>, root: &Path) -> Option<PathBuf> {
    let raw = config.allowed_signers_file.as_deref()?;
    Some(expand(raw, home, root))
}

/// Expands `~/` (from HOME) and makes a relative path relative to `base`.
pub fn expand(raw: &str, home: Option<&Path>, base: &Path) -> PathBuf {
    let raw = raw.trim();
    if let (Some(rest), Some(home)) = (raw.strip_prefix("~/"), home) {
        return home.join(rest);
    }
    let p = PathBuf::from(raw);
    if p.is_absolute() { p } else { base.join(p) }
}

/// Appends a signer line (`principal namespaces="loopx" key`) to the file,
/// creating it (and its folder) when missing.
pub fn append(path: &Path, principal: &str, openssh: &str) -> Result<()> {
    use std::io::Write;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let existing = std::fs::read_to_string(path).unwrap_or_default();
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    let sep = if existing.is_empty() || existing.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    writeln!(f, "{sep}{principal} namespaces=\"loopx\" {openssh}")
        .with_context(|| format!("writing {}", path.display()))
}

fn parse_line(line: &str) -> Result<Entry, String> {
    let (principals, rest) = split_field(line);
    if principals.is_empty() {
        return Err("no principals".to_owned());
    }
    let principals: Vec<String> = principals
        .trim_matches('"')
        .split(',')
        .map(str::to_owned)
        .collect();
    let rest = rest.trim_start();
    // Options come before the key type when the next field is not one.
    let (options, key_text) = if looks_like_key_type(rest) {
        ("", rest)
    } else {
        let (opts, after) = split_field(rest);
        (opts, after.trim_start())
    };
    let mut namespaces = None;
    let mut valid_after = None;
    let mut valid_before = None;
    for opt in split_options(options) {
        let (name, value) = match opt.split_once('=') {
            Some((n, v)) => (n.to_ascii_lowercase(), v.trim_matches('"').to_owned()),
            None => (opt.to_ascii_lowercase(), String::new()),
        };
        match name.as_str() {
            "namespaces" => {
                namespaces = Some(value.split(',').map(str::to_owned).collect());
            }
            "valid-after" => valid_after = Some(parse_time(&value)?),
            "valid-before" => valid_before = Some(parse_time(&value)?),
            "cert-authority" => return Err("cert-authority lines are not supported".to_owned()),
            other => return Err(format!("unknown option {other}")),
        }
    }
    let mut fields = key_text.split_whitespace();
    let (Some(kind), Some(b64)) = (fields.next(), fields.next()) else {
        return Err("no key".to_owned());
    };
    let openssh = super::normalize_key(&format!("{kind} {b64}"))?;
    let key = PublicKey::from_openssh(&openssh).map_err(|e| e.to_string())?;
    Ok(Entry {
        principals,
        key: key.key_data().clone(),
        openssh,
        namespaces,
        valid_after,
        valid_before,
    })
}

fn looks_like_key_type(s: &str) -> bool {
    s.starts_with("ssh-") || s.starts_with("ecdsa-") || s.starts_with("sk-")
}

/// The next whitespace-separated field, honouring double quotes.
fn split_field(s: &str) -> (&str, &str) {
    let mut quoted = false;
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            c if c.is_whitespace() && !quoted => return (&s[..i], &s[i..]),
            _ => {}
        }
    }
    (s, "")
}

/// Comma-separated options, honouring double quotes.
fn split_options(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut quoted = false;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

/// `YYYYMMDD[HHMM[SS]][Z]` as ssh-keygen reads it (taken as UTC).
fn parse_time(v: &str) -> Result<Timestamp, String> {
    let digits = v.trim_end_matches(['Z', 'z']);
    let bad = || format!("{v:?} is not a time (YYYYMMDD[HHMM[SS]][Z])");
    if !digits.bytes().all(|b| b.is_ascii_digit()) || ![8, 12, 14].contains(&digits.len()) {
        return Err(bad());
    }
    let part = |a: usize, b: usize| digits.get(a..b).unwrap_or("00");
    let text = format!(
        "{}-{}-{}T{}:{}:{}Z",
        &digits[..4],
        &digits[4..6],
        &digits[6..8],
        part(8, 10),
        part(10, 12),
        part(12, 14)
    );
    Timestamp::parse(&text).map_err(|_| bad())
}

/// Writes the mark that this clone enforces signatures (`file`, the
/// allowed-signers file, in it). Without the mark a file that goes away
/// later would switch the check off, so a mark that cannot be written is
/// an error, never skipped.
fn keep_mark(mark: &Path, file: &Path) -> Result<()> {
    let written = mark
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(mark, format!("{}\n", file.display())));
    written.map_err(|e| {
        Refusal::error(
            Code::NoTrustRoot,
            format!(
                "cannot keep the mark {} that this clone enforces signatures ({e}): without it, an allowed-signers file that goes away later would switch the check off",
                mark.display()
            ),
        )
        .with_hint(format!(
            "make {} a writable folder of this clone's own (remove what is in the way there), then run the command again",
            mark.parent().unwrap_or(mark).display()
        ))
        .into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJRqOlZ4qkWVuwIN6zT8Rtnu8VP+zkcei4lRZKsBty30";

    #[test]
    fn lines_with_and_without_options_parse() {
        let text = format!(
            "# comment\n\nada {KEY} ada@laptop\n\"bob,b@x\" namespaces=\"git,loopx\",valid-after=20260101 {KEY}\ncarol cert-authority {KEY}\n"
        );
        let s = AllowedSigners::parse(&text);
        assert_eq!(s.listed, 3);
        assert_eq!(s.entries.len(), 2);
        assert_eq!(s.entries[1].principals, ["bob", "b@x"]);
        assert_eq!(
            s.entries[1].namespaces.as_deref(),
            Some(&["git".to_owned(), "loopx".to_owned()][..])
        );
        assert_eq!(s.skipped.len(), 1);
        assert!(s.enforced());
        let key = &s.entries[0].key;
        assert_eq!(s.principal(key, None), Some("ada"));
    }

    #[test]
    fn a_namespace_list_without_loopx_does_not_count() {
        let s = AllowedSigners::parse(&format!("ada namespaces=\"git\" {KEY}\n"));
        assert!(s.enforced());
        assert_eq!(s.principal(&s.entries[0].key, None), None);
    }

    #[test]
    fn validity_is_judged_at_the_op_time() {
        let s = AllowedSigners::parse(&format!("ada valid-before=20260101 {KEY}\n"));
        let key = &s.entries[0].key;
        let early = Timestamp::parse("2025-06-01T00:00:00Z").unwrap();
        let late = Timestamp::parse("2026-06-01T00:00:00Z").unwrap();
        assert_eq!(s.principal(key, Some(early)), Some("ada"));
        assert_eq!(s.principal(key, Some(late)), None);
    }

    #[test]
    fn an_empty_file_enforces_nothing() {
        assert!(!AllowedSigners::parse("# nobody yet\n").enforced());
    }
}
