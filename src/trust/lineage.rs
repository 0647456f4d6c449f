//! What a chain of ticks carries forward beyond its state: the state's
//! identity (the root tick's commit id, which every new signature binds),
//! the op ids already used along it (an op id appears once along a chain)
//! and the highest format so far (formats never go down, format 4 on).
//!
//! Verifying a range of ticks starts from a trusted commit, so the op ids
//! below it come from an index beside the cache
//! (`<git-common-dir>/loopx/op-index`): the op ids of one verified chain in
//! tick order, written after each verification. Derived and disposable like
//! the cache: a missing or unusable index costs one walk of the messages
//! down to the root, never a wrong answer, and a commit that is not on the
//! indexed chain is walked the same way.

use std::collections::HashSet;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;

use crate::op::message;
use crate::store::{Oid, Store};

/// The first line of the index file.
const MAGIC: &str = "loopx-op-index 1";

/// The identity, op ids and format of a chain up to one commit.
#[derive(Clone, Debug, Default)]
pub struct Lineage {
    /// The root tick's commit id (None: the chain is empty).
    pub root: Option<Oid>,
    /// The commit the chain ends at.
    pub tip: Option<Oid>,
    /// The op ids of the ticks, oldest first (tick `i + 1` at `i`).
    ops: Vec<String>,
    seen: HashSet<String>,
    /// The highest `Loopx-Format` along the chain (0: empty).
    pub format: u32,
    /// Agent ticks (format 5 on) verified here without a signature by a
    /// machine allowed to act for their agent, while the policy did not
    /// require one: `verify` warns of them. Not part of the index.
    pub unsigned_agent_ticks: Vec<u64>,
}

impl Lineage {
    /// Whether an op id was used along the chain.
    pub fn has(&self, op: &str) -> bool {
        self.seen.contains(op)
    }

    /// The tick at the end of the chain (0: empty).
    pub fn ticks(&self) -> usize {
        self.ops.len()
    }

    /// The state's identity as a signature binds it: the root commit id.
    pub fn state_id(&self) -> Option<String> {
        self.root.map(|r| r.to_string())
    }

    /// Extends the chain by one verified tick.
    pub fn push(&mut self, commit: Oid, op: &str, format: u32) {
        if self.root.is_none() {
            self.root = Some(commit);
        }
        self.tip = Some(commit);
        self.ops.push(op.to_owned());
        self.seen.insert(op.to_owned());
        self.format = self.format.max(format);
    }
}

fn path(store: &Store) -> PathBuf {
    store.common_dir().join("loopx").join("op-index")
}

/// The lineage of the chain ending at `commit`: from the index when it
/// covers `commit` (its tip is `commit`, an ancestor or a descendant of
/// it), else from the messages down to the root.
pub fn at(store: &Store, commit: Oid) -> Result<Lineage> {
    let tick = store.tip_at(commit)?.tick;
    if let Some(mut index) = read(store) {
        let itip = index.tip.expect("an index has a tip");
        if itip == commit {
            return Ok(index);
        }
        let itick = index.ticks() as u64;
        if tick > itick && store.is_ancestor(itip, commit)? {
            for e in store.chain_since(commit, Some(itip))? {
                push_entry(&mut index, e.commit, &e.message);
            }
            save(store, &index);
            return Ok(index);
        }
        if tick < itick && store.is_ancestor(commit, itip)? {
            let keep = usize::try_from(tick).unwrap_or(usize::MAX);
            let mut out = Lineage::default();
            for op in index.ops.drain(..keep) {
                out.seen.insert(op.clone());
                out.ops.push(op);
            }
            out.root = index.root;
            out.tip = Some(commit);
            // The highest format below: read back from the messages would
            // cost a walk; formats never go down, so the tip's is it.
            out.format = format_of(&store.message(commit)?);
            return Ok(out);
        }
    }
    let mut out = Lineage::default();
    for e in store.chain_since(commit, None)? {
        push_entry(&mut out, e.commit, &e.message);
    }
    // The op ids of a chain are a function of its commits: worth keeping
    // for the next command, verified or not.
    save(store, &out);
    Ok(out)
}

/// The state's identity for a new tick on top of `tip` (None: the first
/// tick, which has none yet).
pub fn state_id(store: &Store, tip: Option<Oid>) -> Result<Option<String>> {
    match tip {
        None => Ok(None),
        Some(t) => Ok(at(store, t)?.state_id()),
    }
}

fn push_entry(l: &mut Lineage, commit: Oid, msg: &str) {
    let op = message::op_id_of(msg).unwrap_or_default();
    l.push(commit, op, format_of(msg));
}

fn format_of(msg: &str) -> u32 {
    crate::trailer::value(msg, "Loopx-Format")
        .and_then(|f| f.parse().ok())
        .unwrap_or(0)
}

/// Reads the index; None when missing or unusable.
fn read(store: &Store) -> Option<Lineage> {
    let text = std::fs::read_to_string(path(store)).ok()?;
    let mut lines = text.lines();
    if lines.next()? != MAGIC {
        return None;
    }
    let root = store.oid(lines.next()?.strip_prefix("root ")?).ok()?;
    let tip = store.oid(lines.next()?.strip_prefix("tip ")?).ok()?;
    let format = lines.next()?.strip_prefix("format ")?.parse().ok()?;
    let mut out = Lineage {
        root: Some(root),
        tip: Some(tip),
        format,
        ..Lineage::default()
    };
    for l in lines {
        out.seen.insert(l.to_owned());
        out.ops.push(l.to_owned());
    }
    // An index whose length is not its tip's tick is not used.
    (store.tip_at(tip).ok()?.tick == out.ops.len() as u64).then_some(out)
}

/// Writes the index of a chain. Silent on failure: the index only ever
/// saves time.
pub fn save(store: &Store, l: &Lineage) {
    let (Some(root), Some(tip)) = (l.root, l.tip) else {
        return;
    };
    let file = path(store);
    let Some(dir) = file.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let mut body = format!("{MAGIC}\nroot {root}\ntip {tip}\nformat {}\n", l.format);
    for op in &l.ops {
        body.push_str(op);
        body.push('\n');
    }
    let Ok(mut tmp) = tempfile::NamedTempFile::new_in(dir) else {
        return;
    };
    if tmp.write_all(body.as_bytes()).is_ok() {
        let _ = tmp.persist(&file);
    }
}
