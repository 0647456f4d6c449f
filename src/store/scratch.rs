//! Objects outside the state ref's own: trees built in memory for
//! `verify`, and the pushed objects a hub's `pre-receive` hook reads from
//! git's quarantine.

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::{Oid, PACK_CACHE_BYTES, Store, edit_tree};

mod held;
use held::{Edit, Held};

/// Builds trees in memory: what a tick's changes make of its parent's tree,
/// for `verify`. Nothing it writes reaches the object database, so checking
/// a long history leaves no loose objects behind.
///
/// It holds the last tree it made decoded (`held.rs`), so a chain's next
/// tick edits that tree in place and hashes only the trees its files pass
/// through; a case that path does not handle goes to gix's tree editor
/// over an object memory.
pub struct Scratch {
    repo: gix::Repository,
    /// Trees built since the memory was last emptied.
    built: std::cell::Cell<usize>,
    held: std::cell::RefCell<Held>,
}

/// The memory keeps the objects of this many trees: a chain's next tick
/// starts from the tree just built, so its base is read from memory rather
/// than inflated from a pack again. Objects are named by their contents,
/// so one kept is the object the id names.
const KEEP_TREES: usize = 64;

impl Scratch {
    /// The id of the tree that `changes` make of tree `base` (None: the
    /// empty tree).
    pub fn tree(&self, base: Option<Oid>, changes: &[(String, Option<Vec<u8>>)]) -> Result<Oid> {
        let start = base.map_or_else(
            || gix::ObjectId::empty_tree(self.repo.object_hash()),
            |b| b.0,
        );
        if let Edit::Done(id) = self.held.borrow_mut().edit(&self.repo, start, changes)? {
            return Ok(Oid(id));
        }
        self.edited(base, changes)
    }

    /// [`Scratch::tree`] by gix's tree editor alone.
    fn edited(&self, base: Option<Oid>, changes: &[(String, Option<Vec<u8>>)]) -> Result<Oid> {
        if self.built.get() >= KEEP_TREES {
            self.repo.objects.reset_object_memory();
            self.built.set(0);
        }
        let tree = edit_tree(&self.repo, base, changes);
        self.built.set(self.built.get() + 1);
        tree.map(Oid)
    }

    /// Whether tree `tree` has a file (a blob) at `path`: what
    /// [`Store::read_file`] finds, without reading the blob, and from the
    /// held tree when it is that one.
    pub fn has_file(&self, tree: Oid, path: &str) -> Result<bool> {
        if let Some(found) = self.held.borrow_mut().has_file(&self.repo, tree.0, path)? {
            return Ok(found);
        }
        let tree_obj = self
            .repo
            .find_tree(tree.0)
            .with_context(|| format!("reading the state tree {tree}"))?;
        Ok(tree_obj
            .lookup_entry(path.split('/').map(str::as_bytes))
            .with_context(|| format!("looking up {path} in {tree}"))?
            .is_some_and(|e| e.mode().is_blob()))
    }
}

impl Store {
    /// A [`Scratch`] over this repository's objects.
    pub fn scratch(&self) -> Scratch {
        Scratch {
            repo: self.repo.clone().with_object_memory(),
            built: std::cell::Cell::new(0),
            held: Default::default(),
        }
    }

    /// Reads objects also from `dirs` (object directories: the quarantine
    /// a `pre-receive` hook sees pushed objects in, and its alternates),
    /// as git does under `GIT_OBJECT_DIRECTORY` and
    /// `GIT_ALTERNATE_OBJECT_DIRECTORIES`. The returned directory holds the
    /// alternates file and must outlive the store's reads.
    pub fn with_object_dirs(&mut self, dirs: &[PathBuf]) -> Result<tempfile::TempDir> {
        let tmp = tempfile::Builder::new()
            .prefix("loopx-objects")
            .tempdir()
            .context("creating a temporary object directory")?;
        let objects = tmp.path().join("objects");
        std::fs::create_dir_all(objects.join("info"))
            .with_context(|| format!("creating {}", objects.display()))?;
        let mut list = String::new();
        for d in dirs
            .iter()
            .map(PathBuf::as_path)
            .chain([self.repo.objects.store_ref().path()])
        {
            let d = std::path::absolute(d).with_context(|| format!("resolving {}", d.display()))?;
            list.push_str(&d.to_string_lossy());
            list.push('\n');
        }
        let file = objects.join("info").join("alternates");
        std::fs::write(&file, list).with_context(|| format!("writing {}", file.display()))?;
        let hash = self.repo.object_hash();
        let odb = gix::odb::at(&objects, hash)
            .with_context(|| format!("opening the objects at {}", objects.display()))?;
        self.repo.objects = gix::OdbHandle::new(odb, hash);
        self.repo.objects.set_pack_cache(|| {
            Box::new(gix::odb::pack::cache::lru::MemoryCappedHashmap::new(
                PACK_CACHE_BYTES,
            ))
        });
        Ok(tmp)
    }
}

#[cfg(test)]
mod tests;
