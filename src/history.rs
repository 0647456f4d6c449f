//! The history of the state ref, read-only: what a tick argument names, and
//! each commit with its tick message parsed. `log`, `show`, `diff` and
//! `status --at` read through here; nothing here writes.
//!
//! A tick argument ([`Rev`]) is a tick number (bare digits), a commit id
//! prefix (at least 4 hex digits), a full ref name (`refs/…`) or a time as
//! every time flag takes it ([`When`]: a duration ago, a date, an RFC 3339
//! time; the newest commit at or before it). Tick numbers are found by
//! walking first parents from the tip, which stops as soon as the tick is
//! reached, since tick numbers decrease along the chain.

use std::fmt;
use std::str::FromStr;

use anyhow::Result;
use serde::Serialize;

use crate::diff::{self, FileStatus, Tone};
use crate::error::{Code, Refusal};
use crate::op::Op;
use crate::op::message::{self, Parsed};
use crate::repo::Repo;
use crate::store::{Entry, FileChange, Oid, PrefixMatch, Tip};
use crate::time::{Timestamp, When};
use crate::tx;

/// Shown in place of the operation for a commit that is not a loopx tick.
pub const NOT_A_TICK: &str = "(not a loopx tick)";
/// Shown in place of the operation for a tick this loopx cannot read (an
/// operation from a newer loopx, a damaged message).
pub const UNREADABLE: &str = "(unreadable tick)";

/// What a tick argument names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rev {
    /// A tick number, from 1.
    Tick(u64),
    /// The newest commit at or before this time (a duration: that long
    /// before now).
    Time(When),
    /// A commit id prefix, lowercase hex.
    Commit(String),
    /// A full ref name, `refs/…`.
    Ref(String),
}

impl FromStr for Rev {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
            let n: u64 = t
                .parse()
                .map_err(|_| format!("{s:?} is too large for a tick number"))?;
            if n == 0 {
                return Err("there is no tick 0: ticks start at 1".to_owned());
            }
            return Ok(Rev::Tick(n));
        }
        if t.starts_with("refs/") {
            return Ok(Rev::Ref(t.to_owned()));
        }
        // Before commit prefixes: a duration of days alone (`100d`) is hex
        // too, and reads as the duration; a commit id takes more digits.
        if let Ok(time) = t.parse::<When>() {
            return Ok(Rev::Time(time));
        }
        if (4..=64).contains(&t.len()) && t.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(Rev::Commit(t.to_ascii_lowercase()));
        }
        Err(format!(
            "{s:?} names no tick: give a tick number (7), a commit id prefix of at least 4 hex digits, a full ref name (refs/loopx/state) or a time: {}",
            crate::time::WHEN_FORMS
        ))
    }
}

impl fmt::Display for Rev {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rev::Tick(n) => write!(f, "tick {n}"),
            Rev::Time(When::At(t)) => write!(f, "{t}"),
            Rev::Time(When::From(span)) => write!(f, "{span} ago"),
            Rev::Commit(hex) => write!(f, "commit {hex}"),
            Rev::Ref(name) => f.write_str(name),
        }
    }
}

/// One commit of the state's history, with its message parsed when it is
/// a loopx tick.
pub struct Tick {
    pub entry: Entry,
    /// The parsed message, or why this commit is not a loopx tick (someone
    /// committed onto the ref by hand).
    pub parsed: Result<Parsed, String>,
}

impl Tick {
    pub fn read(entry: Entry) -> Tick {
        let parsed = message::parse(&entry.message);
        Tick { entry, parsed }
    }

    /// The tick number: from the parsed message, else from a `Loopx-Tick`
    /// trailer alone.
    pub fn number(&self) -> Option<u64> {
        match &self.parsed {
            Ok(p) => Some(p.tick),
            Err(_) => message::tick_of(&self.entry.message),
        }
    }

    /// The operation kind, or what stands in for it: [`NOT_A_TICK`], or
    /// [`UNREADABLE`] for a message with a tick number that does not parse.
    pub fn kind(&self) -> &'static str {
        match (self.op(), self.number()) {
            (Some(op), _) => op.change.kind(),
            (None, Some(_)) => UNREADABLE,
            (None, None) => NOT_A_TICK,
        }
    }

    pub fn op(&self) -> Option<&Op> {
        self.parsed.as_ref().ok().map(|p| &p.op)
    }

    /// The op's time for a tick, the commit's author time otherwise.
    pub fn time(&self) -> Timestamp {
        self.op()
            .map_or(Timestamp::from_unix(self.entry.time), |op| op.at)
    }

    /// The subject without the actor that ends it: `claim t-… "…"`.
    pub fn subject(&self) -> String {
        match &self.parsed {
            Ok(p) => {
                let suffix = format!(" — {}", p.op.actor.name());
                p.subject
                    .strip_suffix(&suffix)
                    .unwrap_or(&p.subject)
                    .to_owned()
            }
            Err(_) => self
                .entry
                .message
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned(),
        }
    }

    /// The acting agent or human; for a commit that is not a tick, its
    /// author's name.
    pub fn actor_name(&self) -> &str {
        match self.op() {
            Some(op) => op.actor.name(),
            None => &self.entry.author.name,
        }
    }

    /// The commit's author as git shows it: `Name <email>`.
    pub fn author(&self) -> String {
        format!("{} <{}>", self.entry.author.name, self.entry.author.email)
    }
}

/// The ticks from `start` back along the first parents, newest first.
pub fn walk(repo: &Repo, start: Oid) -> Result<crate::store::FirstParents<'_>> {
    Ok(repo.store().history(start))
}

/// The history a reader of the state shows from `start`: its first-parent
/// chain, or, on the shared ref of a state split into a ref per goal
/// (format 6), every ref's chain merged newest first (`tx::goalref`).
pub fn walk_view(repo: &Repo, start: Oid) -> Result<crate::tx::goalref::Merged<'_>> {
    let tips = crate::tx::goalref::view_tips(repo.store(), start)?;
    Ok(crate::tx::goalref::walk(repo.store(), &tips))
}

/// One commit of the history.
pub fn entry(repo: &Repo, commit: Oid) -> Result<Entry> {
    repo.store().entry(commit)
}

/// The entry at the tip of the state ref.
pub fn tip_entry(repo: &Repo) -> Result<Entry> {
    entry(repo, tip(repo)?.commit)
}

/// A file as it was at a tree, if it existed.
pub fn file_at(repo: &Repo, tree: Oid, path: &str) -> Result<Option<Vec<u8>>> {
    repo.store().read_file(tree, path)
}

/// Every evidence record in a state's tree (they only grow, so a live
/// tick never loads them).
pub fn evidence_at(repo: &Repo, tree: Oid) -> Result<Vec<crate::model::Evidence>> {
    let files = repo
        .store()
        .read_files_under(tree, crate::model::files::EVIDENCE)?;
    Ok(crate::model::files::decode_evidence(
        files.iter().map(|(p, b)| (p.as_str(), b.as_slice())),
    )?)
}

/// The files that differ between two trees.
pub fn diff_trees(repo: &Repo, a: Option<Oid>, b: Oid) -> Result<Vec<FileChange>> {
    repo.store().diff_trees(a, b)
}

/// The tip of the state ref, or how to create one.
pub fn tip(repo: &Repo) -> Result<Tip> {
    repo.store()
        .tip()?
        .ok_or_else(|| tx::no_state_at(repo.state_ref()).into())
}

impl Rev {
    /// The time a time argument names, a duration counted back from `now`;
    /// None for the other kinds.
    pub fn time(&self, now: Timestamp) -> Option<Timestamp> {
        match self {
            Rev::Time(w) => Some(w.back_from(now)),
            _ => None,
        }
    }
}

/// The commit a tick argument names (`now`: what a duration counts back
/// from).
pub fn resolve(repo: &Repo, rev: &Rev, now: Timestamp) -> Result<Entry> {
    match rev {
        Rev::Tick(n) => find_tick(repo, &tip(repo)?, *n),
        Rev::Time(w) => at_time(repo, &tip(repo)?, w.back_from(now)),
        Rev::Commit(hex) => match repo.store().commit_by_prefix(hex)? {
            PrefixMatch::One(id) => repo.store().entry(id),
            PrefixMatch::None => Err(Refusal::error(
                Code::UnknownCommit,
                format!("no commit id starts with {hex}"),
            )
            .with_hint("`loopx log` lists the ticks with their tick numbers")
            .into()),
            PrefixMatch::Many(n) => Err(Refusal::usage(
                Code::AmbiguousCommit,
                format!("{hex} is the start of {n} commit ids"),
            )
            .with_hint("type more digits of the commit id")
            .into()),
        },
        Rev::Ref(name) => match repo.store().resolve(name)? {
            Some(tip) => repo.store().entry(tip.commit),
            None => Err(
                Refusal::error(Code::UnknownRef, format!("there is no ref {name}"))
                    .with_hint(format!("give a full ref name such as {}", repo.state_ref()))
                    .into(),
            ),
        },
    }
}

/// Tick number `n`, walking first parents from `tip` and stopping as soon
/// as the tick numbers fall to `n` or below.
fn find_tick(repo: &Repo, tip: &Tip, n: u64) -> Result<Entry> {
    let mut newest = None;
    for entry in repo.store().history(tip.commit) {
        let entry = entry?;
        let Some(tick) = message::tick_of(&entry.message) else {
            continue;
        };
        let newest = *newest.get_or_insert(tick);
        if tick == n {
            return Ok(entry);
        }
        if tick < n {
            return Err(no_tick(n, newest));
        }
    }
    Err(no_tick(n, newest.unwrap_or(0)))
}

fn no_tick(n: u64, newest: u64) -> anyhow::Error {
    Refusal::error(
        Code::UnknownTick,
        format!("there is no tick {n}; the newest is {newest}"),
    )
    .with_hint("`loopx log` lists the ticks")
    .into()
}

/// The newest commit at or before `t`.
fn at_time(repo: &Repo, tip: &Tip, t: Timestamp) -> Result<Entry> {
    let mut first = None;
    for entry in repo.store().history(tip.commit) {
        let entry = entry?;
        if entry.time <= t.unix() {
            return Ok(entry);
        }
        first = Some(entry.time);
    }
    let first = first.map_or_else(String::new, |f| {
        format!("; the first tick is at {}", Timestamp::from_unix(f))
    });
    Err(Refusal::error(
        Code::BeforeHistory,
        format!("there was no loopx state yet at {t}{first}"),
    )
    .with_hint("give a later time, or a tick number")
    .into())
}

/// The state as a commit of the history holds it.
pub fn load(repo: &Repo, entry: &Entry) -> Result<tx::Snapshot> {
    let tip = Tip {
        commit: entry.commit,
        tree: entry.tree,
        tick: message::tick_of(&entry.message).unwrap_or(0),
    };
    tx::snapshot(repo.store(), tip)
}

/// The files a commit changed, compared with its first parent (an empty
/// tree for the first tick).
pub fn changed_files(repo: &Repo, entry: &Entry) -> Result<Vec<FileChange>> {
    let base = match entry.parent {
        Some(p) => Some(self::entry(repo, p)?.tree),
        None => None,
    };
    diff_trees(repo, base, entry.tree)
}

/// One changed file with its unified diff, as `log -p`, `show` and
/// `diff -p` print it.
#[derive(Serialize)]
pub struct FileDiff {
    pub path: String,
    pub change: FileStatus,
    pub diff: String,
    /// The diff's lines with their tones, for a renderer to colour.
    #[serde(skip)]
    pub lines: Vec<(Tone, String)>,
}

/// The unified diff of each changed file (never coloured: a renderer
/// colours [`FileDiff::lines`] after escaping them).
pub fn file_diffs(changes: &[FileChange]) -> Vec<FileDiff> {
    changes
        .iter()
        .map(|c| {
            let lines = diff::unified_lines(&c.path, c.old.as_deref(), c.new.as_deref());
            let mut text = String::new();
            for (_, l) in &lines {
                text.push_str(l);
                text.push('\n');
            }
            FileDiff {
                path: c.path.clone(),
                change: FileStatus::of(c.old.as_deref(), c.new.as_deref()),
                diff: text,
                lines,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_arguments_parse_by_shape() {
        assert_eq!("7".parse(), Ok(Rev::Tick(7)));
        assert_eq!(
            "refs/loopx/state".parse(),
            Ok(Rev::Ref("refs/loopx/state".into()))
        );
        assert_eq!(
            "2026-11-30T09:00:00Z".parse(),
            Ok(Rev::Time(When::At(
                Timestamp::parse("2026-11-30T09:00:00Z").unwrap()
            )))
        );
        assert_eq!(
            "2h".parse(),
            Ok(Rev::Time(When::From(crate::time::Span::hours(2))))
        );
        assert_eq!(
            "2026-11-30".parse::<Rev>().map(|r| r.to_string()),
            Ok("2026-11-30T00:00:00Z".to_owned())
        );
        // A duration of days alone is a duration, not a commit prefix.
        assert_eq!(
            "100d".parse(),
            Ok(Rev::Time(When::From(crate::time::Span::hours(2400))))
        );
        assert_eq!("3FA9c2".parse(), Ok(Rev::Commit("3fa9c2".into())));
        // Bare digits are always a tick number, never a commit prefix.
        assert_eq!("1234".parse(), Ok(Rev::Tick(1234)));
        for bad in ["", "0", "abc", "tip", "HEAD~1", "99999999999999999999999"] {
            assert!(bad.parse::<Rev>().is_err(), "{bad:?}");
        }
    }
}
