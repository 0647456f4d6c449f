//! The state as files: paths, canonical TOML, and the reverse.
//!
//! Every entity is one file whose path follows from its id, so a file's
//! history is the entity's history (`git log -p refs/loopx/state -- <path>`).
//! Serialization is canonical (fixed key order and formatting): the same
//! state always gives the same bytes, blobs and tree ids.

use serde::{Serialize, de::DeserializeOwned};

use super::{
    Agent, AgentId, Entities, Evidence, FORMAT, Gate, GateId, Goal, GoalId, Machine, MachineName,
    Meta, Signer, SignerName, State, Todo, TodoId,
};
use crate::error::{Code, Refusal};

/// The format file at the root of the tree.
pub const META: &str = "loopx.toml";

pub fn goal_path(id: &GoalId) -> String {
    format!("goals/{id}.toml")
}

pub fn agent_path(id: &AgentId) -> String {
    format!("agents/{id}.toml")
}

/// Todos fan out by the first two hex digits of the id, so no tree object
/// grows past a few hundred entries at 10,000 todos.
pub fn todo_path(id: &TodoId) -> String {
    format!("todos/{}/{id}.toml", &id.hex()[..2])
}

pub fn quota_path(agent: &AgentId) -> String {
    format!("quota/{agent}.toml")
}

pub fn gate_path(id: &GateId) -> String {
    format!("gates/{id}.toml")
}

pub fn signer_path(name: &SignerName) -> String {
    format!("signers/{name}.toml")
}

pub fn machine_path(name: &MachineName) -> String {
    format!("machines/{name}.toml")
}

/// Evidence fans out by month, then by the first two hex digits of its id,
/// so a month's records can be read alone.
pub fn evidence_path(e: &Evidence) -> String {
    let month = &e.at.to_string()[..7];
    format!("{EVIDENCE}/{month}/{}/{}.toml", &e.id.hex()[..2], e.id)
}

/// The folder that holds the evidence.
pub const EVIDENCE: &str = "evidence";

/// Archived todos keep their fan-out under `archive/`.
pub fn archived_todo_path(id: &TodoId) -> String {
    format!("archive/{}", todo_path(id))
}

/// The folder that holds the archive.
pub const ARCHIVE: &str = "archive";

/// A file to write (`Some(bytes)`) or delete (`None`).
pub type Change = (String, Option<Vec<u8>>);

/// Canonical TOML of one entity.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    toml::to_string(value)
        .expect("model types always serialize to TOML")
        .into_bytes()
}

/// Every file of a state, for the first tick.
pub fn encode_all(state: &State) -> Vec<Change> {
    let empty = State {
        meta: state.meta.clone(),
        ..State::default()
    };
    let mut out = vec![(META.to_owned(), Some(encode(&state.meta)))];
    out.extend(changes(&empty, state, &Records::default()));
    out
}

/// What an op wrote outside the live state: evidence records (append-only)
/// and todos moved to the archive. Neither is loaded with the state, so
/// reads stay proportional to the live set.
#[derive(Clone, Copy, Debug, Default)]
pub struct Records<'a> {
    pub evidence: &'a [Evidence],
    pub archived: Option<&'a std::collections::BTreeMap<TodoId, crate::model::Todo>>,
}

/// The files that differ between two states: entities compared in memory,
/// only the changed ones serialized; plus the records the op wrote.
pub fn changes(old: &State, new: &State, records: &Records<'_>) -> Vec<Change> {
    let mut out = Vec::new();
    if old.meta != new.meta {
        out.push((META.to_owned(), Some(encode(&new.meta))));
    }
    diff_map(&old.goals, &new.goals, goal_path, &mut out);
    diff_map(&old.agents, &new.agents, agent_path, &mut out);
    diff_map(&old.todos, &new.todos, todo_path, &mut out);
    diff_map(&old.gates, &new.gates, gate_path, &mut out);
    diff_map(&old.quota, &new.quota, quota_path, &mut out);
    diff_map(&old.signers, &new.signers, signer_path, &mut out);
    diff_map(&old.machines, &new.machines, machine_path, &mut out);
    for e in records.evidence {
        out.push((evidence_path(e), Some(encode(e))));
    }
    for (id, t) in records.archived.into_iter().flatten() {
        out.push((archived_todo_path(id), Some(encode(t))));
    }
    out
}

/// The entities whose files two states differ in, by kind, each in id
/// order: what a tick wrote or removed in the live state. For a state
/// cloned from the other (a tick's) only what the op wrote is compared, so
/// a cache can be brought up to date in place (`cache::update`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Touched {
    pub meta: bool,
    pub goals: Vec<GoalId>,
    pub agents: Vec<AgentId>,
    pub todos: Vec<TodoId>,
    pub gates: Vec<GateId>,
    pub quota: Vec<AgentId>,
    pub signers: Vec<SignerName>,
    pub machines: Vec<MachineName>,
}

impl Touched {
    pub fn is_empty(&self) -> bool {
        *self == Touched::default()
    }
}

/// What differs from `old` to `new` (see [`Touched`]).
pub fn touched(old: &State, new: &State) -> Touched {
    fn keys<K: Ord + Clone, V: PartialEq>(old: &Entities<K, V>, new: &Entities<K, V>) -> Vec<K> {
        old.changed(new)
            .into_iter()
            .filter(|k| old.get(*k) != new.get(*k))
            .cloned()
            .collect()
    }
    Touched {
        meta: old.meta != new.meta,
        goals: keys(&old.goals, &new.goals),
        agents: keys(&old.agents, &new.agents),
        todos: keys(&old.todos, &new.todos),
        gates: keys(&old.gates, &new.gates),
        quota: keys(&old.quota, &new.quota),
        signers: keys(&old.signers, &new.signers),
        machines: keys(&old.machines, &new.machines),
    }
}

/// The changed entries of one map: written ones in key order, then removed
/// ones in key order. Only the keys [`Entities::changed`] names are
/// compared: for a state cloned from `old` (a tick's), those the op wrote.
fn diff_map<K: Ord + Clone, V: Clone + PartialEq + Serialize>(
    old: &Entities<K, V>,
    new: &Entities<K, V>,
    path: impl Fn(&K) -> String,
    out: &mut Vec<Change>,
) {
    let mut gone = Vec::new();
    for k in old.changed(new) {
        match (old.get(k), new.get(k)) {
            (Some(a), Some(b)) if a == b => {}
            (_, Some(b)) => out.push((path(k), Some(encode(b)))),
            (Some(_), None) => gone.push((path(k), None)),
            (None, None) => {}
        }
    }
    out.append(&mut gone);
}

/// What kind of file a path is, by the layout of `docs/format.md`.
#[derive(Debug, PartialEq, Eq)]
pub enum Kind {
    Meta,
    Goal,
    Agent,
    Todo,
    /// A todo in the archive: not loaded with the state.
    Archived,
    Gate,
    Quota,
    Signer,
    Machine,
    /// An evidence record: not loaded with the state.
    Evidence,
    /// Not part of the layout this binary knows.
    Unknown,
}

pub fn kind_of(path: &str) -> Kind {
    let parts: Vec<&str> = path.split('/').collect();
    match parts.as_slice() {
        [META] => Kind::Meta,
        ["goals", f] if f.ends_with(".toml") => Kind::Goal,
        ["agents", f] if f.ends_with(".toml") => Kind::Agent,
        ["todos", _, f] if f.ends_with(".toml") => Kind::Todo,
        ["archive", "todos", _, f] if f.ends_with(".toml") => Kind::Archived,
        ["gates", f] if f.ends_with(".toml") => Kind::Gate,
        ["quota", f] if f.ends_with(".toml") => Kind::Quota,
        ["signers", f] if f.ends_with(".toml") => Kind::Signer,
        ["machines", f] if f.ends_with(".toml") => Kind::Machine,
        ["evidence", _, _, f] if f.ends_with(".toml") => Kind::Evidence,
        _ => Kind::Unknown,
    }
}

/// A state file that does not parse, or does not belong where it is.
pub fn corrupt(path: &str, why: impl std::fmt::Display) -> Refusal {
    Refusal::error(
        Code::CorruptState,
        format!("the state file {path} is corrupt: {why}"),
    )
    .with_hint(crate::error::Hint::new(
        format!(
            "run {} for details; the previous tick's file is shown by `git show refs/loopx/state~1:<path>`",
            crate::error::N
        ),
        [crate::error::Next::Doctor],
    ))
}

fn parse<T: DeserializeOwned>(path: &str, bytes: &[u8]) -> Result<T, Refusal> {
    let text = std::str::from_utf8(bytes).map_err(|e| corrupt(path, format!("not UTF-8 ({e})")))?;
    toml::from_str(text).map_err(|e| corrupt(path, one_line(&e.to_string())))
}

/// toml's messages span several lines with a caret; keep the first line and
/// the message, which name the line and column.
fn one_line(msg: &str) -> String {
    let mut lines = msg.lines().filter(|l| !l.trim().is_empty());
    let head = lines.next().unwrap_or_default().trim().to_owned();
    let tail = msg.lines().last().unwrap_or_default().trim();
    if tail.is_empty() || head.contains(tail) {
        head
    } else {
        format!("{head}: {tail}")
    }
}

/// Reads the meta file first and refuses a format newer than this binary.
pub fn check_meta(bytes: Option<&[u8]>) -> Result<Meta, Refusal> {
    let bytes = bytes.ok_or_else(|| corrupt(META, "the file is missing"))?;
    let meta: Meta = parse(META, bytes)?;
    if meta.format > FORMAT {
        return Err(Refusal::error(
            Code::FormatTooNew,
            format!(
                "the state has format {} but this loopx understands format {FORMAT} at most",
                meta.format
            ),
        )
        .with_hint("upgrade loopx"));
    }
    Ok(meta)
}

/// Builds the state from the files of a tree. Unknown paths are ignored here
/// (`doctor` reports them).
pub fn decode<'a>(files: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> Result<State, Refusal> {
    let files: Vec<(&str, &[u8])> = files.into_iter().collect();
    let meta_bytes = files.iter().find(|(p, _)| *p == META).map(|(_, b)| *b);
    let mut decoder = Decoder::new(meta_bytes)?;
    for (path, bytes) in files {
        decoder.file(path, bytes)?;
    }
    Ok(decoder.finish())
}

/// [`decode`] one file at a time, for a reader that streams the tree
/// (`tx::snapshot`): the meta file first (a format newer than this binary
/// is refused before any other file is parsed), then every file in any
/// order.
pub struct Decoder {
    state: State,
}

impl Decoder {
    /// Starts from the meta file's bytes (`None`: it is missing).
    pub fn new(meta: Option<&[u8]>) -> Result<Decoder, Refusal> {
        Ok(Decoder {
            state: State {
                meta: check_meta(meta)?,
                ..State::default()
            },
        })
    }

    /// Adds one file of the tree (the meta file and paths outside the live
    /// state are skipped).
    pub fn file(&mut self, path: &str, bytes: &[u8]) -> Result<(), Refusal> {
        let state = &mut self.state;
        match kind_of(path) {
            Kind::Meta | Kind::Unknown | Kind::Archived | Kind::Evidence => {}
            Kind::Quota => {
                let q: super::quota::Ledger = parse(path, bytes)?;
                expect_path(path, &quota_path(&q.agent))?;
                state.quota.insert(q.agent.clone(), q);
            }
            Kind::Gate => {
                let g: Gate = parse(path, bytes)?;
                expect_path(path, &gate_path(&g.id))?;
                state.gates.insert(g.id.clone(), g);
            }
            Kind::Signer => {
                let s: Signer = parse(path, bytes)?;
                expect_path(path, &signer_path(&s.name))?;
                state.signers.insert(s.name.clone(), s);
            }
            Kind::Machine => {
                let m: Machine = parse(path, bytes)?;
                expect_path(path, &machine_path(&m.name))?;
                state.machines.insert(m.name.clone(), m);
            }
            Kind::Goal => {
                let g: Goal = parse(path, bytes)?;
                expect_path(path, &goal_path(&g.id))?;
                state.goals.insert(g.id.clone(), g);
            }
            Kind::Agent => {
                let a: Agent = parse(path, bytes)?;
                expect_path(path, &agent_path(&a.id))?;
                state.agents.insert(a.id.clone(), a);
            }
            Kind::Todo => {
                let t: Todo = parse(path, bytes)?;
                expect_path(path, &todo_path(&t.id))?;
                state.todos.insert(t.id.clone(), t);
            }
        }
        Ok(())
    }

    pub fn finish(self) -> State {
        self.state
    }
}

fn expect_path(path: &str, want: &str) -> Result<(), Refusal> {
    if path == want {
        Ok(())
    } else {
        Err(corrupt(path, format!("its id belongs at {want}")))
    }
}

/// Parses archived todo files (from the `archive/` subtree).
pub fn decode_archive<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Result<std::collections::BTreeMap<TodoId, Todo>, Refusal> {
    let mut out = std::collections::BTreeMap::new();
    for (path, bytes) in files {
        if kind_of(path) == Kind::Archived {
            let t: Todo = parse(path, bytes)?;
            expect_path(path, &archived_todo_path(&t.id))?;
            out.insert(t.id.clone(), t);
        }
    }
    Ok(out)
}

/// Parses one file by its path, for `doctor`: every error, not just the
/// first.
pub fn check_file(path: &str, bytes: &[u8]) -> Result<(), Refusal> {
    match kind_of(path) {
        Kind::Meta => check_meta(Some(bytes)).map(drop),
        Kind::Goal => parse::<Goal>(path, bytes).and_then(|g| expect_path(path, &goal_path(&g.id))),
        Kind::Agent => {
            parse::<Agent>(path, bytes).and_then(|a| expect_path(path, &agent_path(&a.id)))
        }
        Kind::Todo => parse::<Todo>(path, bytes).and_then(|t| expect_path(path, &todo_path(&t.id))),
        Kind::Archived => {
            parse::<Todo>(path, bytes).and_then(|t| expect_path(path, &archived_todo_path(&t.id)))
        }
        Kind::Gate => parse::<Gate>(path, bytes).and_then(|g| expect_path(path, &gate_path(&g.id))),
        Kind::Signer => {
            parse::<Signer>(path, bytes).and_then(|s| expect_path(path, &signer_path(&s.name)))
        }
        Kind::Machine => {
            parse::<Machine>(path, bytes).and_then(|m| expect_path(path, &machine_path(&m.name)))
        }
        Kind::Quota => parse::<super::quota::Ledger>(path, bytes)
            .and_then(|q| expect_path(path, &quota_path(&q.agent))),
        Kind::Evidence => {
            parse::<Evidence>(path, bytes).and_then(|e| expect_path(path, &evidence_path(&e)))
        }
        Kind::Unknown => Ok(()),
    }
}

/// Parses evidence files (from the `evidence/` subtree), oldest first.
pub fn decode_evidence<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Result<Vec<Evidence>, Refusal> {
    let mut out = Vec::new();
    for (path, bytes) in files {
        if kind_of(path) == Kind::Evidence {
            let e: Evidence = parse(path, bytes)?;
            expect_path(path, &evidence_path(&e))?;
            out.push(e);
        }
    }
    out.sort_by(|a, b| (a.at, &a.id).cmp(&(b.at, &b.id)));
    Ok(out)
}

#[cfg(test)]
mod tests;
