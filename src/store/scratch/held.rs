//! A state tree held decoded across the ticks of a chain, for `verify`:
//! each tick's changes edit it in place and only the trees they pass
//! through are serialized and hashed again. Blobs are hashed, never stored,
//! and no tree is read twice: the next tick starts from the tree this one
//! made, already in memory. The ids are git's (the same bytes gix's tree
//! editor writes); anything this does not handle the way that editor does
//! (a path through a file, a file where a folder is, a folder removed as a
//! file, a stored tree out of git's order) is reported as [`Edit::Unusual`]
//! and the caller asks the editor instead.

use anyhow::{Context, Result, anyhow};
use gix::ObjectId;
use gix::objs::tree::{EntryKind, EntryMode, name_order};
use std::cmp::Ordering;

/// One entry of a held tree.
struct Node {
    name: Box<[u8]>,
    mode: EntryMode,
    /// The object's id; for a subtree edited since it was last hashed, the
    /// old one (see [`Dir::dirty`]).
    id: ObjectId,
    /// A subtree's entries once read or edited (None: not read yet, `id`
    /// names it).
    dir: Option<Box<Dir>>,
}

impl Node {
    fn is_tree(&self) -> bool {
        self.mode.is_tree()
    }
}

/// The entries of one tree, in git's order.
#[derive(Default)]
struct Dir {
    entries: Vec<Node>,
    /// Passed through by an edit since it was last hashed: written again
    /// (or dropped when empty), as gix's editor does with every tree an
    /// edit passes through.
    dirty: bool,
}

impl Dir {
    /// Where `name` is (Ok) or would go (Err) as a tree or as a file.
    fn find(&self, name: &[u8], as_tree: bool) -> std::result::Result<usize, usize> {
        self.entries
            .binary_search_by(|e| name_order(&e.name, e.is_tree(), name, as_tree))
    }
}

/// What an edit made.
pub(super) enum Edit {
    /// The new tree's id.
    Done(ObjectId),
    /// A case left to gix's editor; nothing is held any more.
    Unusual,
}

/// A file to write (`Some(bytes)`) or delete (`None`).
type Change = (String, Option<Vec<u8>>);

/// The tree a chain's check holds, and the id it has.
#[derive(Default)]
pub(super) struct Held {
    root: Dir,
    /// The id of the tree held (None: nothing held).
    root_id: Option<ObjectId>,
    /// Serialization buffer, reused.
    buf: Vec<u8>,
}

impl Held {
    /// The id of the tree that `changes` make of tree `base`, which is held
    /// from now on.
    pub(super) fn edit(
        &mut self,
        repo: &gix::Repository,
        base: ObjectId,
        changes: &[Change],
    ) -> Result<Edit> {
        let done = self.edit_inner(repo, base, changes);
        if !matches!(done, Ok(Edit::Done(_))) {
            self.forget();
        }
        done
    }

    /// Whether tree `base` has a file (a blob, executable or not) at
    /// `path`, as gix's path lookup finds it.
    pub(super) fn has_file(
        &mut self,
        repo: &gix::Repository,
        base: ObjectId,
        path: &str,
    ) -> Result<Option<bool>> {
        let found = self.has_file_inner(repo, base, path);
        if !matches!(found, Ok(Some(_))) {
            self.forget();
        }
        found
    }

    fn forget(&mut self) {
        self.root = Dir::default();
        self.root_id = None;
    }

    /// Holds tree `base`, reading its root unless it is held already.
    /// False: it is not in git's order.
    fn hold(&mut self, repo: &gix::Repository, base: ObjectId) -> Result<bool> {
        if self.root_id == Some(base) {
            return Ok(true);
        }
        self.forget();
        match read_dir(repo, base)? {
            Some(dir) => {
                self.root = dir;
                self.root_id = Some(base);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn has_file_inner(
        &mut self,
        repo: &gix::Repository,
        base: ObjectId,
        path: &str,
    ) -> Result<Option<bool>> {
        if !self.hold(repo, base)? {
            return Ok(None);
        }
        let mut dir = &mut self.root;
        let mut parts = path.split('/').peekable();
        while let Some(name) = parts.next() {
            let name = name.as_bytes();
            // gix's lookup takes the first entry of that name, tree or not.
            let Some(i) = dir.entries.iter().position(|e| &*e.name == name) else {
                return Ok(Some(false));
            };
            if parts.peek().is_none() {
                return Ok(Some(dir.entries[i].mode.is_blob()));
            }
            if !dir.entries[i].is_tree() {
                return Ok(Some(false));
            }
            match subdir(repo, &mut dir.entries[i])? {
                Some(d) => dir = d,
                None => return Ok(None),
            }
        }
        Ok(Some(false))
    }

    fn edit_inner(
        &mut self,
        repo: &gix::Repository,
        base: ObjectId,
        changes: &[Change],
    ) -> Result<Edit> {
        if !self.hold(repo, base)? {
            return Ok(Edit::Unusual);
        }
        let hash = repo.object_hash();
        self.root.dirty = true;
        for (path, bytes) in changes {
            let blob = match bytes {
                Some(b) => Some(
                    gix::objs::compute_hash(hash, gix::objs::Kind::Blob, b)
                        .map_err(|e| anyhow!("{e}"))
                        .with_context(|| format!("hashing {path}"))?,
                ),
                None => None,
            };
            if !edit_path(repo, &mut self.root, path, blob)? {
                return Ok(Edit::Unusual);
            }
        }
        let id = write(&mut self.root, hash, &mut self.buf, true)?
            .expect("the root tree is always written");
        self.root_id = Some(id);
        Ok(Edit::Done(id))
    }
}

/// Reads tree `id`'s entries; None when they are not in git's order.
fn read_dir(repo: &gix::Repository, id: ObjectId) -> Result<Option<Dir>> {
    if id.is_empty_tree() {
        return Ok(Some(Dir::default()));
    }
    let tree = repo
        .find_tree(id)
        .with_context(|| format!("reading the state tree {id}"))?;
    let mut entries: Vec<Node> = Vec::new();
    for e in gix::objs::TreeRefIter::from_bytes(&tree.data, repo.object_hash()) {
        let e = e
            .map_err(|e| anyhow!("{e}"))
            .with_context(|| format!("decoding tree {id}"))?;
        let node = Node {
            name: e.filename.to_vec().into_boxed_slice(),
            mode: e.mode,
            id: e.oid.to_owned(),
            dir: None,
        };
        if let Some(last) = entries.last()
            && name_order(&last.name, last.is_tree(), &node.name, node.is_tree()) != Ordering::Less
        {
            return Ok(None);
        }
        entries.push(node);
    }
    Ok(Some(Dir {
        entries,
        dirty: false,
    }))
}

/// The entries of subtree `node`, read on first use; None when they are
/// not in git's order.
fn subdir<'a>(repo: &gix::Repository, node: &'a mut Node) -> Result<Option<&'a mut Dir>> {
    if node.dir.is_none() {
        match read_dir(repo, node.id)? {
            Some(d) => node.dir = Some(Box::new(d)),
            None => return Ok(None),
        }
    }
    Ok(node.dir.as_deref_mut())
}

/// Writes `blob` at `path` (None: removes the file), marking every tree it
/// passes through. False: a case left to gix's editor.
fn edit_path(
    repo: &gix::Repository,
    root: &mut Dir,
    path: &str,
    blob: Option<ObjectId>,
) -> Result<bool> {
    let mut dir = root;
    let mut parts = path.split('/').peekable();
    while let Some(name) = parts.next() {
        let name = name.as_bytes();
        if name.is_empty() {
            return Ok(false);
        }
        if parts.peek().is_none() {
            return Ok(match (dir.find(name, false), blob) {
                (Ok(i), Some(id)) => {
                    let e = &mut dir.entries[i];
                    e.id = id;
                    e.mode = EntryKind::Blob.into();
                    true
                }
                (Ok(i), None) => {
                    dir.entries.remove(i);
                    true
                }
                // A folder of that name: the editor replaces it (or
                // refuses to remove it).
                (Err(_), _) if dir.find(name, true).is_ok() => false,
                (Err(at), Some(id)) => {
                    dir.entries.insert(
                        at,
                        Node {
                            name: name.into(),
                            mode: EntryKind::Blob.into(),
                            id,
                            dir: None,
                        },
                    );
                    true
                }
                (Err(_), None) => true,
            });
        }
        // gix's editor looks for a file of that name first.
        if dir.find(name, false).is_ok() {
            return Ok(false);
        }
        let i = match dir.find(name, true) {
            Ok(i) => i,
            // Removing below a folder that is not there changes nothing.
            Err(_) if blob.is_none() => return Ok(true),
            Err(at) => {
                dir.entries.insert(
                    at,
                    Node {
                        name: name.into(),
                        mode: EntryKind::Tree.into(),
                        id: ObjectId::null(repo.object_hash()),
                        dir: Some(Box::default()),
                    },
                );
                at
            }
        };
        let Some(sub) = subdir(repo, &mut dir.entries[i])? else {
            return Ok(false);
        };
        sub.dirty = true;
        dir = sub;
    }
    Ok(true)
}

/// Hashes `dir` and every marked tree below it, dropping the ones left
/// empty; None when `dir` is empty and not the root.
fn write(
    dir: &mut Dir,
    hash: gix::hash::Kind,
    buf: &mut Vec<u8>,
    root: bool,
) -> Result<Option<ObjectId>> {
    let mut emptied = false;
    for e in &mut dir.entries {
        if let Some(sub) = e.dir.as_deref_mut()
            && sub.dirty
        {
            match write(sub, hash, buf, false)? {
                Some(id) => e.id = id,
                None => emptied = true,
            }
        }
    }
    if emptied {
        dir.entries.retain(|e| {
            !e.dir
                .as_deref()
                .is_some_and(|d| d.entries.is_empty() && d.dirty)
        });
    }
    if dir.entries.is_empty() && !root {
        // Left marked, so its parent drops it.
        return Ok(None);
    }
    dir.dirty = false;
    buf.clear();
    let mut mode = [0u8; 6];
    for e in &dir.entries {
        buf.extend_from_slice(e.mode.as_bytes(&mut mode));
        buf.push(b' ');
        buf.extend_from_slice(&e.name);
        buf.push(0);
        buf.extend_from_slice(e.id.as_bytes());
    }
    gix::objs::compute_hash(hash, gix::objs::Kind::Tree, buf)
        .map(Some)
        .map_err(|e| anyhow!("{e}"))
        .context("hashing a state tree")
}
