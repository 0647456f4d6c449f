//! Reading the state's history: commits along first parents, one at a
//! time; files at a tree; tree diffs; and the questions sync asks (merge
//! base, ancestry), which follow first parents only and cost object reads
//! proportional to how far two chains diverged, never to the whole history.

use anyhow::{Context, Result, anyhow};
use gix::bstr::ByteSlice;

use super::{Oid, Person, Store};

/// One commit of the state's history.
#[derive(Clone, Debug)]
pub struct Entry {
    pub commit: Oid,
    pub tree: Oid,
    pub parent: Option<Oid>,
    /// How many parents the commit has (a tick has one, the first has none).
    pub parents: usize,
    pub message: String,
    /// Author time, seconds since the epoch.
    pub time: i64,
    /// Who wrote the commit: the acting agent or human for a tick, whoever
    /// committed by hand otherwise.
    pub author: Person,
}

/// Stops a walk along parents that comes back to a commit it already
/// passed. Object ids make a cycle impossible in history read as written
/// (the store never follows replace refs, and gix knows no grafts), so a
/// repeat means a forged or corrupt object store: the walk ends with an
/// error instead of spinning. Brent's method: one saved id, moved at
/// powers of two, finds any cycle within about twice its length plus the
/// distance to it, at no cost to an honest walk.
#[derive(Default)]
pub(super) struct CycleGuard {
    saved: Option<Oid>,
    steps: u64,
    span: u64,
}

impl CycleGuard {
    /// The error of a walk that reached `id` a second time.
    pub(super) fn repeated(id: Oid) -> Result<()> {
        Err(anyhow!(
            "the history loops: commit {id} is its own ancestor, which history read as written never is (a corrupt or forged object store)"
        ))
    }

    /// Records that the walk reached `id`; an error when it was there before.
    pub(super) fn step(&mut self, id: Oid) -> Result<()> {
        if self.saved == Some(id) {
            return Self::repeated(id);
        }
        self.steps += 1;
        if self.steps >= self.span.max(1) {
            self.saved = Some(id);
            self.span = self.span.max(1) * 2;
            self.steps = 0;
        }
        Ok(())
    }
}

impl Store {
    /// Reads one commit of the history.
    pub fn entry(&self, commit: Oid) -> Result<Entry> {
        let c = self
            .bounded_commit(commit.0)
            .with_context(|| format!("reading commit {commit}"))?;
        let decoded = c
            .decode()
            .with_context(|| format!("decoding commit {commit}"))?;
        let author = decoded.author().ok();
        let time = author.map(|a| a.seconds()).unwrap_or(0);
        let author = Person {
            name: author.map_or_else(String::new, |a| a.name.to_str_lossy().into_owned()),
            email: author.map_or_else(String::new, |a| a.email.to_str_lossy().into_owned()),
        };
        Ok(Entry {
            commit,
            tree: Oid(decoded.tree()),
            parent: decoded.parents().next().map(Oid),
            parents: decoded.parents().count(),
            message: decoded.message.to_str_lossy().into_owned(),
            time,
            author,
        })
    }

    /// Up to `limit` commits following first parents from `start`, newest
    /// first. Costs `limit` object reads, however long the history.
    pub fn first_parents(&self, start: Oid, limit: usize) -> Result<Vec<Entry>> {
        let mut out = Vec::new();
        let mut next = Some(start);
        let mut guard = CycleGuard::default();
        while let Some(id) = next {
            if out.len() >= limit {
                break;
            }
            guard.step(id)?;
            let e = self.entry(id)?;
            next = e.parent;
            out.push(e);
        }
        Ok(out)
    }
}

/// A file that differs between two trees, with both versions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    /// Slash-separated, relative to the tree's root.
    pub path: String,
    /// `None`: the file is new.
    pub old: Option<Vec<u8>>,
    /// `None`: the file was deleted.
    pub new: Option<Vec<u8>>,
}

/// What a commit id prefix names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrefixMatch {
    None,
    One(Oid),
    /// This many commits start with it.
    Many(usize),
}

/// Commits along first parents, newest first, read one at a time: taking
/// `n` of them costs `n` object reads, however long the history.
pub struct FirstParents<'s> {
    store: &'s Store,
    next: Option<Oid>,
    guard: CycleGuard,
}

impl Iterator for FirstParents<'_> {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Result<Entry>> {
        let id = self.next.take()?;
        if let Err(e) = self.guard.step(id) {
            return Some(Err(e));
        }
        Some(self.store.entry(id).inspect(|e| self.next = e.parent))
    }
}

impl Store {
    /// Walks first parents from `start` lazily; an error ends the walk.
    pub fn history(&self, start: Oid) -> FirstParents<'_> {
        FirstParents {
            store: self,
            next: Some(start),
            guard: CycleGuard::default(),
        }
    }

    /// The commit whose id starts with `hex` (at least 4 hex digits).
    pub fn commit_by_prefix(&self, hex: &str) -> Result<PrefixMatch> {
        let prefix = gix::hash::Prefix::from_hex(hex)
            .map_err(|e| anyhow!("{hex:?} is not a commit id prefix: {e}"))?;
        let mut found = std::collections::HashSet::new();
        self.repo
            .objects
            .lookup_prefix(prefix, Some(&mut found))
            .with_context(|| format!("looking up objects starting with {hex}"))?;
        let mut commits = Vec::new();
        for id in found {
            let header = self
                .repo
                .find_header(id)
                .with_context(|| format!("reading object {id}"))?;
            if header.kind() == gix::object::Kind::Commit {
                commits.push(Oid(id));
            }
        }
        Ok(match commits.as_slice() {
            [] => PrefixMatch::None,
            [one] => PrefixMatch::One(*one),
            many => PrefixMatch::Many(many.len()),
        })
    }

    /// The bytes of one file of a tree, if it is there.
    pub fn read_file(&self, tree: Oid, path: &str) -> Result<Option<Vec<u8>>> {
        let tree_obj = self
            .repo
            .find_tree(tree.0)
            .with_context(|| format!("reading the state tree {tree}"))?;
        let Some(entry) = tree_obj
            .lookup_entry(path.split('/').map(str::as_bytes))
            .with_context(|| format!("looking up {path} in {tree}"))?
        else {
            return Ok(None);
        };
        if !entry.mode().is_blob() {
            return Ok(None);
        }
        let mut blob = self
            .bounded_blob(entry.oid().to_owned())
            .with_context(|| format!("reading {path}"))?;
        Ok(Some(blob.take_data()))
    }

    /// The files that differ from tree `old` (`None`: empty) to tree `new`,
    /// in tree order. Only changed subtrees are read.
    pub fn diff_trees(&self, old: Option<Oid>, new: Oid) -> Result<Vec<FileChange>> {
        use gix::diff::tree::recorder::Change as Rec;
        let hash = self.repo.object_hash();
        let old_data = match old {
            Some(id) => {
                self.repo
                    .find_tree(id.0)
                    .with_context(|| format!("reading the state tree {id}"))?
                    .detach()
                    .data
            }
            None => Vec::new(),
        };
        let new_data = self
            .repo
            .find_tree(new.0)
            .with_context(|| format!("reading the state tree {new}"))?
            .detach()
            .data;
        let mut recorder = gix::diff::tree::Recorder::default();
        gix::diff::tree(
            gix::objs::TreeRefIter::from_bytes(&old_data, hash),
            gix::objs::TreeRefIter::from_bytes(&new_data, hash),
            gix::diff::tree::State::default(),
            &self.repo.objects,
            &mut recorder,
        )
        .with_context(|| format!("comparing the state tree {new} with its base"))?;
        let blob = |mode: gix::objs::tree::EntryMode, id: gix::ObjectId, path: &str| {
            if !mode.is_blob() {
                return Ok(None);
            }
            self.bounded_blob(id)
                .map(|mut b| Some(b.take_data()))
                .with_context(|| format!("reading {path}"))
        };
        let mut out = Vec::new();
        for change in recorder.records {
            let (path, old, new) = match change {
                Rec::Addition {
                    entry_mode,
                    oid,
                    path,
                    ..
                } => {
                    let path = path.to_str_lossy().into_owned();
                    let new = blob(entry_mode, oid, &path)?;
                    (path, None, new)
                }
                Rec::Deletion {
                    entry_mode,
                    oid,
                    path,
                    ..
                } => {
                    let path = path.to_str_lossy().into_owned();
                    let old = blob(entry_mode, oid, &path)?;
                    (path, old, None)
                }
                Rec::Modification {
                    previous_entry_mode,
                    previous_oid,
                    entry_mode,
                    oid,
                    path,
                } => {
                    let path = path.to_str_lossy().into_owned();
                    let old = blob(previous_entry_mode, previous_oid, &path)?;
                    let new = blob(entry_mode, oid, &path)?;
                    (path, old, new)
                }
            };
            if old.is_some() || new.is_some() {
                out.push(FileChange { path, old, new });
            }
        }
        Ok(out)
    }
}

/// History questions sync asks. Ticks form one first-parent chain, so these
/// follow first parents only, and cost object reads proportional to how far
/// the two chains diverged, never to the whole history.
impl Store {
    /// The first parent of a commit, if it has one.
    pub fn first_parent(&self, commit: Oid) -> Result<Option<Oid>> {
        let c = self
            .bounded_commit(commit.0)
            .with_context(|| format!("reading commit {commit}"))?;
        Ok(c.parent_ids().next().map(|p| Oid(p.detach())))
    }

    /// The newest commit on both first-parent chains, or None when the
    /// chains share no commit (unrelated histories). Walks both chains one
    /// step at a time, so the cost is the longer distance to the base.
    pub fn merge_base(&self, a: Oid, b: Oid) -> Result<Option<Oid>> {
        let mut seen_a = std::collections::HashSet::new();
        let mut seen_b = std::collections::HashSet::new();
        let (mut next_a, mut next_b) = (Some(a), Some(b));
        while next_a.is_some() || next_b.is_some() {
            if let Some(c) = next_a {
                if seen_b.contains(&c) || next_b == Some(c) {
                    return Ok(Some(c));
                }
                if !seen_a.insert(c) {
                    CycleGuard::repeated(c)?;
                }
                next_a = self.first_parent(c)?;
            }
            if let Some(c) = next_b {
                if seen_a.contains(&c) {
                    return Ok(Some(c));
                }
                if !seen_b.insert(c) {
                    CycleGuard::repeated(c)?;
                }
                next_b = self.first_parent(c)?;
            }
        }
        Ok(None)
    }

    /// Whether `ancestor` is on the first-parent chain of `commit` (a commit
    /// counts as its own ancestor).
    pub fn is_ancestor(&self, ancestor: Oid, commit: Oid) -> Result<bool> {
        Ok(self.merge_base(ancestor, commit)? == Some(ancestor))
    }

    /// The commits from `tip` down its first parents to `base` (excluded),
    /// oldest first; every commit down to the root when `base` is None.
    /// Fails if `base` is not on the chain.
    pub fn chain_since(&self, tip: Oid, base: Option<Oid>) -> Result<Vec<Entry>> {
        let mut out = Vec::new();
        let mut next = Some(tip);
        let mut guard = CycleGuard::default();
        while let Some(id) = next {
            if Some(id) == base {
                out.reverse();
                return Ok(out);
            }
            guard.step(id)?;
            let e = self.entry(id)?;
            next = e.parent;
            out.push(e);
        }
        match base {
            None => {
                out.reverse();
                Ok(out)
            }
            Some(b) => Err(anyhow!(
                "commit {b} is not on the first-parent chain of {tip}"
            )),
        }
    }

    /// Like [`Store::chain_since`], but only the commit ids: cheap to hold
    /// for a long history.
    pub fn chain_ids_since(&self, tip: Oid, base: Option<Oid>) -> Result<Vec<Oid>> {
        let mut out = Vec::new();
        let mut next = Some(tip);
        let mut guard = CycleGuard::default();
        while let Some(id) = next {
            if Some(id) == base {
                out.reverse();
                return Ok(out);
            }
            guard.step(id)?;
            next = self.first_parent(id)?;
            out.push(id);
        }
        match base {
            None => {
                out.reverse();
                Ok(out)
            }
            Some(b) => Err(anyhow!(
                "commit {b} is not on the first-parent chain of {tip}"
            )),
        }
    }

    /// Whether `name` is a valid full ref name.
    pub fn is_ref_name(name: &str) -> bool {
        name.starts_with("refs/") && gix::refs::FullName::try_from(name).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::{CycleGuard, Oid};

    /// Walks `path` (ids by number) through a guard: the step that fails,
    /// if any.
    fn first_failure(path: impl Iterator<Item = u8>) -> Option<usize> {
        let mut guard = CycleGuard::default();
        path.enumerate()
            .find(|(_, n)| guard.step(Oid::from_hex_for_tests(*n)).is_err())
            .map(|(i, _)| i)
    }

    #[test]
    fn a_walk_without_repeats_never_fails() {
        assert_eq!(first_failure(0..=254), None);
    }

    #[test]
    fn every_cycle_is_caught_within_a_few_laps() {
        // A tail of `tail` commits, then a loop of `len` commits, forever.
        for tail in 0..20u8 {
            for len in 1..40u8 {
                let walk = (0..).map(|i: usize| {
                    if i < tail as usize {
                        i as u8
                    } else {
                        tail + ((i - tail as usize) % len as usize) as u8
                    }
                });
                let at = first_failure(walk.take(10_000))
                    .unwrap_or_else(|| panic!("tail {tail}, loop {len}: never caught"));
                assert!(
                    at <= 2 * (tail as usize + 2 * len as usize) + 2,
                    "tail {tail}, loop {len}: caught only at step {at}"
                );
            }
        }
    }
}
