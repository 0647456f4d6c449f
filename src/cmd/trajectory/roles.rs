//! The trajectory's redaction: names to roles, emails, key fingerprints and
//! machine paths hidden, secrets through `crate::redact`.

use super::*;

/// Makes text fit to share: secrets redacted, names replaced by roles,
/// emails, SSH key fingerprints and machine paths removed.
pub(super) struct Redactor {
    anonymize: bool,
    /// A name (agent id, human name, email) and the role that replaces it.
    roles: Vec<(String, String)>,
    agents: usize,
    humans: usize,
}

impl Redactor {
    pub(super) fn new(anonymize: bool) -> Self {
        Redactor {
            anonymize,
            roles: Vec::new(),
            agents: 0,
            humans: 0,
        }
    }

    /// The role of an actor (its name with `--keep-names`).
    pub(super) fn role(&mut self, a: &Actor) -> String {
        match a {
            Actor::Agent(id) => self.agent(id),
            Actor::Human { name, email } => {
                if !self.anonymize {
                    return name.clone();
                }
                if let Some((_, r)) = self.roles.iter().find(|(n, _)| n == name) {
                    return r.clone();
                }
                self.humans += 1;
                let r = format!("human-{}", self.humans);
                self.roles.push((name.clone(), r.clone()));
                // The email goes with every other email (scrub).
                let _ = email;
                r
            }
        }
    }

    pub(super) fn agent(&mut self, id: &crate::model::AgentId) -> String {
        if !self.anonymize {
            return id.to_string();
        }
        if let Some((_, r)) = self.roles.iter().find(|(n, _)| n == id.as_str()) {
            return r.clone();
        }
        self.agents += 1;
        let r = format!("agent-{}", self.agents);
        self.roles.push((id.to_string(), r.clone()));
        r
    }

    pub(super) fn text(&self, s: &str) -> String {
        let mut out = crate::redact::text(s).into_owned();
        if !self.anonymize {
            return out;
        }
        // Longest names first, so `agent-10` is not read as `agent-1`.
        let mut roles: Vec<&(String, String)> = self.roles.iter().collect();
        roles.sort_by_key(|(n, _)| std::cmp::Reverse(n.len()));
        for (name, role) in roles {
            if !name.is_empty() {
                out = replace_word(&out, name, role);
            }
        }
        scrub(&out)
    }
}

/// `name` replaced by `role` where it stands alone, not inside a longer id
/// or word (a letter, digit, `-` or `_` next to it continues it).
pub(super) fn replace_word(s: &str, name: &str, role: &str) -> String {
    let part = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_');
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(name) {
        let before = out.chars().last().or_else(|| rest[..i].chars().last());
        let before = if i > 0 {
            rest[..i].chars().last()
        } else {
            before
        };
        let after = rest[i + name.len()..].chars().next();
        out.push_str(&rest[..i]);
        if part(before) || part(after) {
            out.push_str(name);
        } else {
            out.push_str(role);
        }
        rest = &rest[i + name.len()..];
    }
    out.push_str(rest);
    out
}

/// Emails, SSH key fingerprints and machine paths out of `s`, word by word
/// (a word keeps the punctuation around it).
pub(super) fn scrub(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if word.is_empty() {
            return;
        }
        let trim: &[char] = &[
            '<', '>', '(', ')', '[', ']', '{', '}', ',', ';', '"', '\'', '`', '.', ':', '!', '?',
        ];
        let start = word.len() - word.trim_start_matches(trim).len();
        let end = word.trim_end_matches(trim).len().max(start);
        let (pre, core, post) = (&word[..start], &word[start..end], &word[end..]);
        let replaced = if is_email(core) {
            Some("[email]")
        } else if core.starts_with("SHA256:") || core.starts_with("MD5:") {
            Some("[key fingerprint]")
        } else if is_machine_path(core) {
            Some("[path]")
        } else {
            None
        };
        match replaced {
            Some(r) => {
                out.push_str(pre);
                out.push_str(r);
                out.push_str(post);
            }
            None => out.push_str(word),
        }
        word.clear();
    };
    for c in s.chars() {
        if c.is_whitespace() {
            flush(&mut word, &mut out);
            out.push(c);
        } else {
            word.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

pub(super) fn is_email(s: &str) -> bool {
    let Some((user, host)) = s.split_once('@') else {
        return false;
    };
    !user.is_empty()
        && host.contains('.')
        && !host.starts_with('.')
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
}

pub(super) fn is_machine_path(s: &str) -> bool {
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
