//! The trajectory's redaction: names to roles, the names the person lists
//! removed, personal data by shape (`crate::redact::personal`) and secrets
//! (`crate::redact`), counting what went so the page can say it.

use super::*;
use crate::redact::personal::{self, Counts, Kind};

/// Makes text fit to share: secrets redacted, names replaced by roles,
/// listed names removed, emails, phone numbers, IBANs, password-like
/// values, SSH key fingerprints and machine paths removed.
pub(super) struct Redactor {
    anonymize: bool,
    /// A name (agent id, human name, email) and the role that replaces it.
    roles: Vec<(String, String)>,
    agents: usize,
    humans: usize,
    /// The names the person listed, with the parts of each that stand for
    /// it alone (a capitalised part of three letters or more).
    listed: Vec<String>,
    parts: Vec<String>,
    /// What was removed, for the banner: personal data by kind, secrets,
    /// listed names.
    pub(super) counts: Counts,
    pub(super) secrets: usize,
    pub(super) names: usize,
}

/// What replaces a listed name.
pub(super) const NAME_MARK: &str = "[name]";

impl Redactor {
    pub(super) fn new(anonymize: bool, listed: Vec<String>) -> Self {
        let mut parts: Vec<String> = Vec::new();
        for n in &listed {
            for p in n.split_whitespace() {
                let capital = p.chars().next().is_some_and(char::is_uppercase);
                if capital && p.chars().count() >= 3 && !listed.contains(&p.to_owned()) {
                    parts.push(p.to_owned());
                }
            }
        }
        Redactor {
            anonymize,
            roles: Vec::new(),
            agents: 0,
            humans: 0,
            listed,
            parts,
            counts: Counts::new(),
            secrets: 0,
            names: 0,
        }
    }

    /// The role of an actor (its name with `--keep-names`).
    pub(super) fn role(&mut self, a: &Actor) -> String {
        match a {
            Actor::Agent(id) => self.agent(id),
            Actor::Human { name, .. } => {
                if !self.anonymize {
                    return name.clone();
                }
                if let Some((_, r)) = self.roles.iter().find(|(n, _)| n == name) {
                    return r.clone();
                }
                self.humans += 1;
                let r = format!("human-{}", self.humans);
                self.roles.push((name.clone(), r.clone()));
                // The email goes with every other email (personal::scrub).
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

    /// The one redaction pass every free text of the page and the JSON
    /// goes through, on the whole text (shorten after, never before):
    /// secrets; then, unless names are kept, personal data by shape, actors
    /// to roles and listed names to `[name]`.
    pub(super) fn text(&mut self, s: &str) -> String {
        let mut out = crate::redact::text(s).into_owned();
        let marks = |t: &str| t.matches(crate::redact::MARK).count();
        self.secrets += marks(&out).saturating_sub(marks(s));
        if !self.anonymize {
            return out;
        }
        // Shapes first: a name inside an email must not break its shape.
        out = personal::scrub(&out, &mut self.counts);
        // Longest names first, so `agent-10` is not read as `agent-1`.
        let mut roles: Vec<&(String, String)> = self.roles.iter().collect();
        roles.sort_by_key(|(n, _)| std::cmp::Reverse(n.len()));
        for (name, role) in roles {
            if !name.is_empty() {
                out = replace_word(&out, name, role);
            }
        }
        for name in self.listed.iter().chain(&self.parts) {
            let (o, n) = replace_name(&out, name);
            out = o;
            self.names += n;
        }
        out
    }

    /// What the page and the JSON say was removed, kind by kind, with
    /// how many places each was found in; and what is never removed.
    pub(super) fn report(&self) -> Redaction {
        let secrets = Removed {
            what: "secrets (tokens and keys of every shape in docs/gates.md, KEY=value pairs naming a secret, URL passwords, private keys)".to_owned(),
            mark: crate::redact::MARK,
            found: self.secrets,
        };
        if !self.anonymize {
            return Redaction {
                roles: "Names kept (--keep-names): not for sharing",
                removed: vec![secrets],
                kept: std::iter::once(
                    "agent and human names, emails, phone numbers, IBANs, password-like values, key fingerprints and paths (--keep-names)",
                )
                .chain(KEPT)
                .collect(),
                checklist: CHECKLIST.to_vec(),
            };
        }
        let mut removed = vec![secrets];
        for k in Kind::ALL {
            removed.push(Removed {
                what: k.plural().to_owned(),
                mark: k.mark(),
                found: self.counts.get(&k).copied().unwrap_or(0),
            });
        }
        removed.push(Removed {
            what: format!(
                "the names you listed with --redact-name ({}), as whole words in any case, and each capitalised part of three letters or more",
                self.listed.len()
            ),
            mark: NAME_MARK,
            found: self.names,
        });
        Redaction {
            roles: "Agent ids and the names of humans who acted are roles (agent-1, human-1)",
            removed,
            kept: KEPT.to_vec(),
            checklist: CHECKLIST.to_vec(),
        }
    }
}

/// What the redaction says it removed and what it leaves, in the JSON and
/// on the page.
#[derive(Serialize)]
pub(super) struct Redaction {
    pub(super) roles: &'static str,
    pub(super) removed: Vec<Removed>,
    pub(super) kept: Vec<&'static str>,
    pub(super) checklist: Vec<&'static str>,
}

#[derive(Serialize)]
pub(super) struct Removed {
    pub(super) what: String,
    pub(super) mark: &'static str,
    /// In how many places.
    pub(super) found: usize,
}

/// What no shape finds, said on every page.
const KEPT: [&str; 6] = [
    "names of people who did not act here and were not listed with --redact-name",
    "names of customers, companies, products and projects",
    "postal addresses, dates of birth and other personal details",
    "host names, internal URLs and IP addresses",
    "secrets of a shape loopx does not know",
    "what the text says: a decision, a plan or a number may be confidential",
];

/// The review a person still owes before sharing.
const CHECKLIST: [&str; 6] = [
    "Read the objective, every todo title and every gate question, answer and note.",
    "Search for names of people, customers and companies; run again with --redact-name for each.",
    "Search for host names, URLs and IP addresses of your systems.",
    "Look for long random strings: a secret of an unknown shape passes.",
    "Check that the work itself (plans, figures, decisions) may be shown.",
    "Open the page at the width it will be read at, and share the JSON only if it passed the same review.",
];

/// Every whole-word place of `name` in `s`, in any case, replaced by
/// [`NAME_MARK`], with how many there were.
fn replace_name(s: &str, name: &str) -> (String, usize) {
    let name: Vec<char> = name.chars().flat_map(char::to_lowercase).collect();
    if name.is_empty() {
        return (s.to_owned(), 0);
    }
    let part = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let chars: Vec<(usize, char)> = s.char_indices().collect();
    let lower: Vec<Vec<char>> = chars
        .iter()
        .map(|(_, c)| c.to_lowercase().collect())
        .collect();
    let mut out = String::with_capacity(s.len());
    let mut n = 0;
    let mut i = 0;
    let mut copied = 0;
    while i < chars.len() {
        // Match `name` against the lowercased characters from i.
        let mut k = 0;
        let mut j = i;
        while k < name.len() && j < chars.len() {
            let l = &lower[j];
            if name.len() - k < l.len() || name[k..k + l.len()] != l[..] {
                break;
            }
            k += l.len();
            j += 1;
        }
        let before = i.checked_sub(1).map(|p| chars[p].1);
        let after = chars.get(j).map(|c| c.1);
        if k == name.len() && !part(before) && !part(after) {
            out.push_str(&s[copied..chars[i].0]);
            out.push_str(NAME_MARK);
            copied = chars.get(j).map_or(s.len(), |c| c.0);
            n += 1;
            i = j;
        } else {
            i += 1;
        }
    }
    out.push_str(&s[copied..]);
    (out, n)
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
