//! Reading: the state ref's tip, commits, messages and trees, each object
//! read within its size bound.

use std::path::Path;

use anyhow::{Context, Result, anyhow};
use gix::bstr::ByteSlice;
use gix::objs::tree::EntryKind;

use super::{MAX_OBJECT, Oid, Store, Tip};
use crate::error::{Code, Refusal};

impl Store {
    /// The commit HEAD points at, if it is born (the project's code, for
    /// evidence records; loopx never moves HEAD).
    pub fn head(&self) -> Option<String> {
        self.repo.head_id().ok().map(|id| id.to_string())
    }

    /// The worktree, if the repository has one.
    pub fn workdir(&self) -> Option<&Path> {
        self.repo.workdir()
    }

    /// The commit the state ref points at, if the ref exists.
    pub fn tip(&self) -> Result<Option<Tip>> {
        self.resolve(&self.state_ref)
    }

    /// The object id the state ref names, if the ref exists: the ref file
    /// (or packed-refs) alone, without opening the object database or
    /// peeling, so it is the key of the local cache. A ref that points at
    /// anything but a commit never matches a cached commit, so the caller
    /// falls back to [`Store::tip`].
    pub fn tip_id(&self) -> Result<Option<Oid>> {
        let name = &self.state_ref;
        let Some(r) = self
            .repo
            .try_find_reference(name.as_str())
            .with_context(|| format!("reading the ref {name}"))?
        else {
            return Ok(None);
        };
        match r.try_id() {
            Some(id) => Ok(Some(Oid(id.detach()))),
            None => Ok(self.tip()?.map(|t| t.commit)),
        }
    }

    /// The commit a ref points at, with its tree and tick.
    pub fn resolve(&self, name: &str) -> Result<Option<Tip>> {
        let Some(mut r) = self
            .repo
            .try_find_reference(name)
            .with_context(|| format!("reading the ref {name}"))?
        else {
            return Ok(None);
        };
        let id = r
            .peel_to_id()
            .with_context(|| format!("resolving the ref {name}"))?
            .detach();
        self.tip_at(Oid(id)).map(Some)
    }

    /// The tree and tick of a commit.
    pub fn tip_at(&self, commit: Oid) -> Result<Tip> {
        let c = self
            .bounded_commit(commit.0)
            .with_context(|| format!("reading commit {commit}"))?;
        let tree = c
            .tree_id()
            .with_context(|| format!("reading the tree of {commit}"))?;
        let msg = c.message_raw_sloppy().to_str_lossy();
        let tick = match crate::trailer::tick(&msg) {
            Some(t) => t,
            // Someone committed onto the ref by hand: count on from the
            // newest real tick below it, so numbering stays consecutive.
            None => self.tick_below(commit)?,
        };
        Ok(Tip {
            commit,
            tree: Oid(tree.detach()),
            tick,
        })
    }

    /// The tick number a commit without a `Loopx-Tick` trailer stands for:
    /// the newest trailer below it plus the commits in between.
    fn tick_below(&self, commit: Oid) -> Result<u64> {
        let mut steps = 0;
        let mut next = Some(commit);
        while let Some(id) = next {
            let c = self
                .bounded_commit(id.0)
                .with_context(|| format!("reading commit {id}"))?;
            if steps > 0
                && let Some(t) = crate::trailer::tick(&c.message_raw_sloppy().to_str_lossy())
            {
                return Ok(t + steps);
            }
            steps += 1;
            next = c.parent_ids().next().map(|p| Oid(p.detach()));
        }
        Ok(steps)
    }

    /// Whether the object database holds `id`.
    pub fn has_object(&self, id: Oid) -> bool {
        self.repo.has_object(id.0)
    }

    /// The commits the state ref pointed at, newest first, from its reflog
    /// (`<common dir>/logs/<ref>`; empty when there is none). Read as text,
    /// so it works while the ref names a commit that is gone.
    pub fn state_reflog(&self) -> Vec<Oid> {
        let path = self.common_dir().join("logs").join(&self.state_ref);
        let Ok(text) = std::fs::read_to_string(path) else {
            return Vec::new();
        };
        let mut out: Vec<Oid> = Vec::new();
        for line in text.lines().rev() {
            let Some(new) = line.split_whitespace().nth(1) else {
                continue;
            };
            if let Ok(id) = gix::ObjectId::from_hex(new.as_bytes())
                && !id.is_null()
                && !out.contains(&Oid(id))
            {
                out.push(Oid(id));
            }
        }
        out
    }

    /// Refuses an object over [`MAX_OBJECT`] from its header, before it
    /// is loaded.
    fn bounded(&self, id: gix::ObjectId, what: &str) -> Result<()> {
        let size = self
            .repo
            .find_header(id)
            .with_context(|| format!("reading the header of {what} {id}"))?
            .size();
        if size > MAX_OBJECT {
            return Err(Refusal::error(
                Code::TooLarge,
                format!(
                    "{what} {id} is {size} bytes, over loopx's limit of {} MiB for an object of the state (seen from its header; it was not read)",
                    MAX_OBJECT >> 20
                ),
            )
            .with_hint("no loopx tick writes an object this large: it was made by hand or pushed by something that is not loopx; `loopx verify` names the tick")
            .into());
        }
        Ok(())
    }

    /// A commit, refused unread when it is over [`MAX_OBJECT`].
    pub(super) fn bounded_commit(&self, id: gix::ObjectId) -> Result<gix::Commit<'_>> {
        self.bounded(id, "commit")?;
        Ok(self.repo.find_commit(id)?)
    }

    /// A blob, refused unread when it is over [`MAX_OBJECT`].
    pub(super) fn bounded_blob(&self, id: gix::ObjectId) -> Result<gix::Blob<'_>> {
        self.bounded(id, "blob")?;
        Ok(self.repo.find_blob(id)?)
    }

    /// A full hex object id, as git prints it.
    pub fn oid(&self, hex: &str) -> Result<Oid> {
        gix::ObjectId::from_hex(hex.as_bytes())
            .map(Oid)
            .map_err(|e| anyhow!("{hex:?} is not an object id: {e}"))
    }

    /// The full message of a commit.
    pub fn message(&self, commit: Oid) -> Result<String> {
        let c = self
            .bounded_commit(commit.0)
            .with_context(|| format!("reading commit {commit}"))?;
        Ok(c.message_raw_sloppy().to_str_lossy().into_owned())
    }

    /// Every blob of the live state under a tree, with its slash-separated
    /// path, in tree order. The `archive/` and `evidence/` folders only grow
    /// and are skipped, so reads stay proportional to the live state; see
    /// [`Store::read_files_under`].
    pub fn read_files(&self, tree: Oid) -> Result<Vec<(String, Vec<u8>)>> {
        let mut out = Vec::new();
        self.visit_files(tree, &mut |path, data| {
            out.push((path.to_owned(), data));
            Ok(())
        })?;
        Ok(out)
    }

    /// [`Store::read_files`] one blob at a time: `f` gets each path and its
    /// bytes, which are dropped before the next blob is read, so a caller
    /// that parses as it goes never holds every file at once.
    pub fn visit_files(
        &self,
        tree: Oid,
        f: &mut dyn FnMut(&str, Vec<u8>) -> Result<()>,
    ) -> Result<()> {
        self.walk(tree.0, String::new(), &["archive", "evidence"], f)
            .with_context(|| format!("reading the state tree {tree}"))
    }

    /// Every blob under the folder `dir` of a tree (paths from the root), or
    /// nothing if the folder does not exist.
    pub fn read_files_under(&self, tree: Oid, dir: &str) -> Result<Vec<(String, Vec<u8>)>> {
        let root = self
            .repo
            .find_tree(tree.0)
            .with_context(|| format!("reading the state tree {tree}"))?;
        let Some(entry) = root
            .lookup_entry_by_path(dir)
            .with_context(|| format!("looking up {dir} in the state tree"))?
        else {
            return Ok(Vec::new());
        };
        if !entry.mode().is_tree() {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        self.walk(entry.object_id(), dir.to_owned(), &[], &mut |path, data| {
            out.push((path.to_owned(), data));
            Ok(())
        })
        .with_context(|| format!("reading {dir} in the state tree"))?;
        Ok(out)
    }

    /// Reads every blob below `tree`; `skip` names top-level folders to
    /// leave out.
    fn walk(
        &self,
        tree: gix::ObjectId,
        prefix: String,
        skip: &[&str],
        out: &mut dyn FnMut(&str, Vec<u8>) -> Result<()>,
    ) -> Result<()> {
        let tree = self.repo.find_tree(tree)?;
        let entries: Vec<(EntryKind, String, gix::ObjectId)> = tree
            .decode()?
            .entries
            .iter()
            .map(|e| {
                (
                    e.mode.kind(),
                    e.filename.to_str_lossy().into_owned(),
                    e.oid.to_owned(),
                )
            })
            .collect();
        for (kind, name, oid) in entries {
            let path = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            match kind {
                EntryKind::Tree if skip.contains(&path.as_str()) => {}
                EntryKind::Tree => self.walk(oid, path, &[], out)?,
                EntryKind::Blob | EntryKind::BlobExecutable => {
                    let mut data = self
                        .bounded_blob(oid)
                        .with_context(|| format!("reading {path}"))?
                        .take_data();
                    // A blob decoded from a delta keeps the decoder's larger
                    // buffer; every file of the state is held at once.
                    data.shrink_to_fit();
                    out(&path, data)?;
                }
                _ => {}
            }
        }
        Ok(())
    }
}
