//! The only module that uses gix: the state ref, its trees and blobs, and
//! the compare-and-swap that moves it; `history.rs` reads along the chain.
//!
//! The store knows files (paths and bytes) and commits, never the model. It
//! never touches HEAD, the index, the worktree or `refs/heads/*`, and it
//! never walks history to read the tip.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, anyhow};
use gix::bstr::ByteSlice;
use gix::objs::tree::EntryKind;
use gix::refs::Target;
use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};

use crate::error::{Code, Refusal};

mod history;
mod lock;
mod scratch;

pub use history::{Entry, FileChange, FirstParents, PrefixMatch};
pub use scratch::Scratch;

/// Whether `name` is one of the refs loopx keeps for itself beside the
/// state (sync's records and backups), which can never be a state ref.
fn is_own_ref(name: &str) -> bool {
    ["synced", "verified", "backup", "remotes", "fetching"]
        .iter()
        .any(|own| name.starts_with(&format!("refs/loopx/{own}/")))
}

/// The default state ref; git config `loopx.ref` overrides it.
pub const DEFAULT_REF: &str = "refs/loopx/state";

/// The memory the delta-base cache of packed reads may use.
const PACK_CACHE_BYTES: usize = 1024 * 1024;

/// An object id, opaque outside the store.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct Oid(gix::ObjectId);

impl Oid {
    /// An id made of byte `n` repeated, for tests that need distinct ids.
    #[cfg(test)]
    pub fn from_hex_for_tests(n: u8) -> Self {
        Oid(gix::ObjectId::from_bytes_or_panic(&[n; 20]))
    }

    /// An object id from its full hex digits (SHA-1 or SHA-256), without a
    /// repository: the fast start-up path reads ids from files.
    pub fn from_hex(hex: &str) -> Option<Oid> {
        gix::ObjectId::from_hex(hex.as_bytes()).ok().map(Oid)
    }

    /// The first `n` hex digits, for display.
    pub fn short(&self, n: usize) -> String {
        let s = self.0.to_string();
        s[..n.min(s.len())].to_owned()
    }
}

impl std::fmt::Display for Oid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// The commit a ref points at, with its tree and tick number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tip {
    pub commit: Oid,
    pub tree: Oid,
    pub tick: u64,
}

/// A name and email for a commit signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Person {
    pub name: String,
    pub email: String,
}

/// The largest commit or blob loopx reads from a state's history: far
/// over what a tick writes (a file is at most 256 KiB, an op's texts at
/// most 64 KiB each), far under what could exhaust memory. Checked from
/// the object's header, so a huge object a remote pushed is refused
/// without being loaded.
pub const MAX_OBJECT: u64 = 4 << 20;

/// Why a compare-and-swap did not move the ref.
#[derive(Debug)]
pub enum CasError {
    /// Another writer moved (or deleted, or created) the ref first.
    Moved,
    /// The ref's lock file is held; `age` is how old the lock file is.
    Locked {
        lock: PathBuf,
        age: Option<Duration>,
    },
    Other(anyhow::Error),
}

pub struct Store {
    repo: gix::Repository,
    state_ref: String,
}

impl Store {
    /// Opens the repository containing `dir`, as git would find it.
    pub fn discover(dir: &Path) -> Result<Store> {
        // As git opens it: a repository owned by another user is refused
        // unless `safe.directory` (system or global config) names it, so
        // loopx never runs that user's `loopx.notify` or validations; and
        // objects are read as written, never through `refs/replace/*`
        // (gix has no grafts), so the history is the one the ids name.
        let mut trust = gix::sec::trust::Mapping::<gix::open::Options>::default();
        for options in [&mut trust.full, &mut trust.reduced] {
            *options = std::mem::take(options)
                .bail_if_untrusted(true)
                .config_overrides(["core.useReplaceRefs=false"]);
        }
        let opened = gix::ThreadSafeRepository::discover_opts(dir, Default::default(), trust)
            .map(gix::Repository::from);
        let mut repo = opened.map_err(|e| {
            let text = format!("{e:#}");
            if text.contains("not owned by the current user") {
                return Refusal::rule(
                    Code::UnsafeRepository,
                    format!(
                        "the git repository at {} is owned by another user, and git's safe.directory does not name it: loopx refuses it as git does",
                        dir.display()
                    ),
                )
                .with_hint(
                    "run loopx as the repository's owner; or, if you trust that user, `git config --global --add safe.directory PATH` (the path git names)",
                );
            }
            let text = e.to_string();
            let message = if text.contains("Could not find a git repository") {
                format!("{} is not inside a git repository", dir.display())
            } else {
                format!(
                    "cannot open the git repository at {}: {text}",
                    dir.display()
                )
            };
            Refusal::error(Code::NotARepository, message).with_hint(
                "run loopx inside a git repository (`git init` makes one), or pass -C PATH",
            )
        })?;
        let state_ref = match repo.config_snapshot().string("loopx.ref") {
            Some(name) => {
                let name = name.to_str_lossy().into_owned();
                if !name.starts_with("refs/")
                    || gix::refs::FullName::try_from(name.as_str()).is_err()
                {
                    return Err(Refusal::usage(
                        Code::BadConfig,
                        format!("git config loopx.ref = {name:?} is not a full ref name"),
                    )
                    .with_hint("use a name such as refs/loopx/state, or unset it")
                    .into());
                }
                // The state is never a branch or a tag: loopx would commit
                // onto the project's history and sync would push it.
                if !name.starts_with("refs/loopx/") || is_own_ref(&name) {
                    return Err(Refusal::usage(
                        Code::BadConfig,
                        format!(
                            "git config loopx.ref = {name:?} is not under refs/loopx/, or is one of loopx's own refs"
                        ),
                    )
                    .with_hint("the state lives under refs/loopx/, such as refs/loopx/state or refs/loopx/goals/api; fix or unset it")
                    .into());
                }
                name
            }
            None => DEFAULT_REF.to_owned(),
        };
        // Packed state files are deltas of one another; without a cache of
        // delta bases every file read inflates its whole delta chain again.
        repo.objects.set_pack_cache(|| {
            Box::new(gix::odb::pack::cache::lru::MemoryCappedHashmap::new(
                PACK_CACHE_BYTES,
            ))
        });
        Ok(Store { repo, state_ref })
    }

    /// The ref that holds the state.
    pub fn state_ref(&self) -> &str {
        &self.state_ref
    }

    /// The directory shared by all worktrees of the repository.
    pub fn common_dir(&self) -> &Path {
        self.repo.common_dir()
    }

    /// The repository's own git dir (a linked worktree's, not the common
    /// one).
    pub fn git_dir(&self) -> &Path {
        self.repo.git_dir()
    }

    /// Every git config file this store's settings came from or could have
    /// come from: the system, installation, XDG and global files where the
    /// environment puts them (whether or not they exist), the repository's
    /// `config` and `config.worktree`, and every file gix actually read
    /// (include targets among them). What the fast start-up path keys its
    /// settings by (`crate::fast`).
    pub fn config_files(&self) -> Vec<PathBuf> {
        use gix::config::Source;
        let mut env = |name: &str| std::env::var_os(name);
        let mut out: Vec<PathBuf> = [
            Source::GitInstallation,
            Source::System,
            Source::Git,
            Source::User,
        ]
        .into_iter()
        .filter_map(|s| s.storage_location(&mut env))
        .collect();
        out.push(self.common_dir().join("config"));
        out.push(self.git_dir().join("config.worktree"));
        for section in self.repo.config_snapshot().plumbing().sections() {
            if let Some(p) = &section.meta().path {
                out.push(p.clone());
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        out.retain(|p| seen.insert(p.clone()));
        out
    }

    /// The worktree root, or the git dir of a bare repository.
    pub fn root(&self) -> &Path {
        self.repo.workdir().unwrap_or_else(|| self.repo.git_dir())
    }

    /// Records under the git dir (`loopx/NAME`) that something happened
    /// once; true the first time only. Best effort: a read-only git dir
    /// answers true every time.
    pub fn mark_once(&self, name: &str) -> bool {
        let marker = self.common_dir().join("loopx").join(name);
        if marker.exists() {
            return false;
        }
        let _ = std::fs::create_dir_all(marker.parent().expect("has a parent"))
            .and_then(|()| std::fs::write(&marker, b"shown\n"));
        true
    }

    /// A git config value as a string.
    pub fn config(&self, key: &str) -> Option<String> {
        self.repo
            .config_snapshot()
            .string(key)
            .map(|v| v.to_str_lossy().into_owned())
    }

    /// Every value of a multi-valued git config key (`remote.<r>.fetch`),
    /// as read when the store was opened.
    pub fn config_values(&self, key: &str) -> Vec<String> {
        self.repo
            .config_snapshot()
            .strings(key)
            .unwrap_or_default()
            .iter()
            .map(|v| v.to_str_lossy().into_owned())
            .collect()
    }

    /// A git config value set in the repository's own or the user's global
    /// config only: never the system's, the environment's or `-c`.
    pub fn config_local_or_global(&self, key: &str) -> Option<String> {
        use gix::config::Source;
        self.repo
            .config_snapshot()
            .string_filter(key, |m| {
                matches!(
                    m.source,
                    Source::Local | Source::Worktree | Source::User | Source::Git
                )
            })
            .map(|v| v.to_str_lossy().into_owned())
    }

    /// A git config value as a boolean.
    pub fn config_bool(&self, key: &str) -> Option<bool> {
        self.repo.config_snapshot().boolean(key)
    }

    /// The user's configured identity (`user.name`/`user.email`, or the
    /// `GIT_AUTHOR_*` environment), if complete.
    pub fn user(&self) -> Option<Person> {
        self.identity("author")
    }

    /// The configured committer, if complete.
    pub fn committer(&self) -> Option<Person> {
        self.identity("committer")
    }

    /// A name and email as gix's `Repository::author()`/`committer()`
    /// resolve them (`GIT_AUTHOR_*`/`GIT_COMMITTER_*`, then `author.*`/
    /// `committer.*`, then `user.*`, then `EMAIL`, then gix's fallbacks;
    /// name and email independently), read from the same resolved config
    /// but without their timestamp: computing that makes gix ask for the
    /// local time zone, and jiff then lists the whole zoneinfo database,
    /// about a fifth of a tick's instructions. loopx writes its own times.
    fn identity(&self, role: &str) -> Option<Person> {
        let config = self.repo.config_snapshot();
        let first = |keys: &[&str]| {
            keys.iter()
                .find_map(|k| config.string(*k))
                .map(|v| v.to_str_lossy().trim().to_owned())
        };
        let name = first(&[
            &format!("{role}.name"),
            "user.name",
            &format!("gitoxide.{role}.nameFallback"),
        ])?;
        let email = first(&[
            &format!("{role}.email"),
            "user.email",
            "gitoxide.user.emailFallback",
            &format!("gitoxide.{role}.emailFallback"),
        ])?;
        (!name.is_empty() && !email.is_empty()).then_some(Person { name, email })
    }

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
    fn bounded_commit(&self, id: gix::ObjectId) -> Result<gix::Commit<'_>> {
        self.bounded(id, "commit")?;
        Ok(self.repo.find_commit(id)?)
    }

    /// A blob, refused unread when it is over [`MAX_OBJECT`].
    fn bounded_blob(&self, id: gix::ObjectId) -> Result<gix::Blob<'_>> {
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

    /// Writes the changed files on top of `base` (or an empty tree) and a
    /// commit with `parent`, without moving any ref. Returns the commit.
    pub fn write_commit(
        &self,
        parent: Option<&Tip>,
        changes: &[(String, Option<Vec<u8>>)],
        message: &str,
        author: &Person,
        committer: &Person,
        time_secs: i64,
    ) -> Result<Tip> {
        // A repack running meanwhile (the background one every
        // `loopx.autoPack` ticks) removes loose-object directories it has
        // emptied; gix creates the directory, then renames the object into
        // it, and fails when the directory went in between. Git retries
        // such a write; so does this (objects are named by their content,
        // so writing one again is harmless).
        let mut attempts = 0;
        loop {
            attempts += 1;
            match self.write_commit_once(parent, changes, message, author, committer, time_secs) {
                Err(e) if attempts < 5 && vanished_directory(&e) => continue,
                done => return done,
            }
        }
    }

    fn write_commit_once(
        &self,
        parent: Option<&Tip>,
        changes: &[(String, Option<Vec<u8>>)],
        message: &str,
        author: &Person,
        committer: &Person,
        time_secs: i64,
    ) -> Result<Tip> {
        let tree = edit_tree(&self.repo, parent.map(|p| p.tree), changes)?;
        let sig = |p: &'_ Person| gix::actor::Signature {
            name: p.name.as_str().into(),
            email: p.email.as_str().into(),
            time: gix::date::Time::new(time_secs, 0),
        };
        let (a, c) = (sig(author), sig(committer));
        let mut buf_a = gix::date::parse::TimeBuf::default();
        let mut buf_c = gix::date::parse::TimeBuf::default();
        let commit = self
            .repo
            .new_commit_as(
                c.to_ref(&mut buf_c),
                a.to_ref(&mut buf_a),
                message,
                tree,
                parent.map(|p| p.commit.0),
            )
            .context("writing the tick commit")?;
        Ok(Tip {
            commit: Oid(commit.id),
            tree: Oid(tree),
            tick: parent.map_or(0, |p| p.tick) + 1,
        })
    }

    /// Moves the state ref to `new` only if it still points at `expected`
    /// (`None`: only if it does not exist yet).
    pub fn cas(
        &self,
        new: Oid,
        expected: Option<Oid>,
        reflog: &str,
        committer: &Person,
    ) -> Result<(), CasError> {
        self.cas_ref(&self.state_ref.clone(), new, expected, reflog, committer)
    }

    /// Compare-and-swap on any ref loopx owns.
    pub fn cas_ref(
        &self,
        name: &str,
        new: Oid,
        expected: Option<Oid>,
        reflog: &str,
        committer: &Person,
    ) -> Result<(), CasError> {
        let full: gix::refs::FullName = name
            .try_into()
            .map_err(|e| CasError::Other(anyhow!("{name} is not a valid ref name: {e}")))?;
        let edit = RefEdit {
            name: full,
            deref: false,
            change: Change::Update {
                log: LogChange {
                    mode: RefLog::AndReference,
                    // loopx's refs keep a reflog whatever
                    // core.logAllRefUpdates says (it covers only branches),
                    // so `doctor --fix` can put back a lost tip.
                    force_create_reflog: name.starts_with("refs/loopx/"),
                    message: reflog.into(),
                },
                expected: match expected {
                    Some(old) => PreviousValue::MustExistAndMatch(Target::Object(old.0)),
                    None => PreviousValue::MustNotExist,
                },
                new: Target::Object(new.0),
            },
        };
        // No loopx writer here can then mistake this lock for an
        // abandoned one (`lock.rs`).
        let _guard = lock::guard(self.common_dir());
        let who = gix::actor::Signature {
            name: committer.name.as_str().into(),
            email: committer.email.as_str().into(),
            time: gix::date::Time::now_utc(),
        };
        let mut buf = gix::date::parse::TimeBuf::default();
        match self
            .repo
            .edit_references_as([edit], Some(who.to_ref(&mut buf)))
        {
            Ok(_) => Ok(()),
            Err(e) => {
                if e.classify().is_conflict() || (expected.is_some() && e.classify().is_not_found())
                {
                    Err(CasError::Moved)
                } else if e.classify().is_retryable() {
                    let lock = self.lock_path_of(name);
                    let age = std::fs::metadata(&lock)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| SystemTime::now().duration_since(t).ok());
                    Err(CasError::Locked { lock, age })
                } else {
                    Err(CasError::Other(
                        anyhow::Error::new(e).context(format!("moving {name}")),
                    ))
                }
            }
        }
    }

    /// Deletes a ref loopx owns, whatever it points at.
    pub fn delete_ref(&self, name: &str) -> Result<()> {
        let full: gix::refs::FullName = name
            .try_into()
            .map_err(|e| anyhow!("{name} is not a valid ref name: {e}"))?;
        let edit = RefEdit {
            name: full,
            deref: false,
            change: Change::Delete {
                expected: PreviousValue::Any,
                log: RefLog::AndReference,
            },
        };
        self.repo
            .edit_references([edit])
            .with_context(|| format!("deleting {name}"))?;
        Ok(())
    }

    /// Removes a ref lock file whose writer is gone (see `lock.rs`); true
    /// when it did, and the compare-and-swap can be tried again at once.
    pub fn recover_lock(&self, lock: &Path) -> bool {
        lock::recover(self.common_dir(), lock)
    }

    /// The lock file git and gix create while updating the state ref.
    pub fn lock_path(&self) -> PathBuf {
        self.lock_path_of(&self.state_ref)
    }

    fn lock_path_of(&self, name: &str) -> PathBuf {
        self.common_dir().join(format!("{name}.lock"))
    }
}

/// Whether writing a loose object failed because its directory vanished
/// between gix creating it and moving the object in (see
/// [`Store::write_commit`]).
fn vanished_directory(e: &anyhow::Error) -> bool {
    let not_found = e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::NotFound)
    });
    let text = format!("{e:#}");
    (not_found || text.contains("No such file or directory"))
        && (text.contains("Could not persist loose object")
            || text.contains("Could not create object directory"))
}

/// Writes the changed files on top of tree `base` (None: the empty tree)
/// through `repo`'s object database and returns the new root tree.
pub(crate) fn edit_tree(
    repo: &gix::Repository,
    base: Option<Oid>,
    changes: &[(String, Option<Vec<u8>>)],
) -> Result<gix::ObjectId> {
    let base = match base {
        Some(b) => b.0,
        None => gix::ObjectId::empty_tree(repo.object_hash()),
    };
    let mut editor = repo.edit_tree(base).context("editing the state tree")?;
    for (path, bytes) in changes {
        match bytes {
            Some(bytes) => {
                // Written even when it exists (gix's `write_blob` would skip
                // it): like git, the fresh copy renews the object's time,
                // so a `loopx gc` running meanwhile does not prune, as old
                // and unreachable (a lost race's), a blob this tick is about
                // to make reachable again.
                let blob = gix::objs::Write::write_buf(&repo.objects, gix::objs::Kind::Blob, bytes)
                    .map_err(|e| anyhow!("{e:#}"))
                    .with_context(|| format!("writing {path}"))?;
                editor
                    .upsert(path.as_str(), EntryKind::Blob, blob)
                    .with_context(|| format!("adding {path} to the tree"))?;
            }
            None => {
                editor
                    .remove_leaf(path.as_str())
                    .with_context(|| format!("removing {path} from the tree"))?;
            }
        }
    }
    Ok(editor.write().context("writing the state tree")?.detach())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vanished_object_directory_is_told_apart_from_other_write_errors() {
        let gone = anyhow::Error::new(std::io::Error::from(std::io::ErrorKind::NotFound))
            .context("Could not persist loose object, path=\"objects/e7/51be\"")
            .context("writing todos/t.toml");
        assert!(vanished_directory(&gone));
        let denied = anyhow::Error::new(std::io::Error::from(std::io::ErrorKind::PermissionDenied))
            .context("Could not persist loose object");
        assert!(!vanished_directory(&denied));
        let other = anyhow::Error::new(std::io::Error::from(std::io::ErrorKind::NotFound))
            .context("reading commit 1234");
        assert!(!vanished_directory(&other));
    }
}
