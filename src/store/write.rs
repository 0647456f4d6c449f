//! Writing: commits, and the one door through which refs move
//! ([`Writer`]: compare-and-swaps and multi-ref transactions, under the
//! `cas.lock` flock).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{Context, Result, anyhow};
use gix::refs::Target;
use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};

use super::{CasError, Oid, Person, Store, Tip, edit_tree, lock, vanished_directory};

impl Store {
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

    /// The lock file git and gix create while updating the state ref.
    pub fn lock_path(&self) -> PathBuf {
        self.lock_path_of(&self.state_ref)
    }

    fn lock_path_of(&self, name: &str) -> PathBuf {
        self.common_dir().join(format!("{name}.lock"))
    }
}

/// One ref a [`Writer::transaction`] moves: to `new` (None: deleted),
/// only if it still points at `expected` (None: only if it does not
/// exist).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefMove {
    pub name: String,
    pub new: Option<Oid>,
    pub expected: Option<Oid>,
}

/// The one door through which refs move: every compare-and-swap, every
/// multi-ref transaction and every deletion of a ref loopx owns. Built by
/// [`Store::writer`] (only `tx` and `sync::execute` call it) and by
/// [`Store::repair_writer`] (only `loopx doctor`'s repairs); the layering
/// test holds both to those callers, and the compiler holds every ref
/// move to this type.
pub struct Writer<'s> {
    store: &'s Store,
}

impl Store {
    /// The writer of the state's ticks and of sync's records: for `tx`
    /// and `sync::execute` only.
    pub fn writer(&self) -> Writer<'_> {
        Writer { store: self }
    }

    /// The writer of `loopx doctor --fix`'s repairs (a lost tip put back,
    /// orphan goal refs removed): for `cmd/doctor.rs` only.
    pub fn repair_writer(&self) -> Writer<'_> {
        Writer { store: self }
    }
}

impl Writer<'_> {
    /// Moves the state ref to `new` only if it still points at `expected`
    /// (`None`: only if it does not exist yet).
    pub fn cas(
        &self,
        new: Oid,
        expected: Option<Oid>,
        reflog: &str,
        committer: &Person,
    ) -> Result<(), CasError> {
        let name = self.store.state_ref.clone();
        self.cas_ref(&name, new, expected, reflog, committer)
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
        let one = RefMove {
            name: name.to_owned(),
            new: Some(new),
            expected,
        };
        self.transaction(std::slice::from_ref(&one), reflog, committer)
    }

    /// Moves several refs in one gix transaction: every lock is taken and
    /// every expected old value checked before any ref moves, so a failed
    /// precondition (or a busy lock) moves nothing. The refs then move in
    /// the order given; no files backend is atomic across refs against a
    /// crash, so a caller puts its commit point last (`goal split`: the
    /// goal refs, then the shared ref) and its readers ignore what the
    /// commit point does not name.
    pub fn transaction(
        &self,
        moves: &[RefMove],
        reflog: &str,
        committer: &Person,
    ) -> Result<(), CasError> {
        let mut edits = Vec::with_capacity(moves.len());
        for m in moves {
            edits.push(edit_of(m, reflog)?);
        }
        // No loopx writer here can then mistake these locks for abandoned
        // ones (`lock.rs`).
        let _guard = lock::guard(self.store.common_dir());
        let who = gix::actor::Signature {
            name: committer.name.as_str().into(),
            email: committer.email.as_str().into(),
            time: gix::date::Time::now_utc(),
        };
        let mut buf = gix::date::parse::TimeBuf::default();
        match self
            .store
            .repo
            .edit_references_as(edits, Some(who.to_ref(&mut buf)))
        {
            Ok(_) => Ok(()),
            Err(e) => {
                let must_exist = moves.iter().any(|m| m.expected.is_some());
                if e.classify().is_conflict() || (must_exist && e.classify().is_not_found()) {
                    Err(CasError::Moved)
                } else if e.classify().is_retryable() {
                    // The lock of the ref gix names, else the first one's.
                    let text = format!("{e:#}");
                    let name = moves
                        .iter()
                        .map(|m| m.name.as_str())
                        .find(|n| text.contains(n))
                        .or(moves.first().map(|m| m.name.as_str()))
                        .unwrap_or_default();
                    let lock = self.store.lock_path_of(name);
                    let age = std::fs::metadata(&lock)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| SystemTime::now().duration_since(t).ok());
                    Err(CasError::Locked { lock, age })
                } else {
                    let names: Vec<&str> = moves.iter().map(|m| m.name.as_str()).collect();
                    Err(CasError::Other(
                        anyhow::Error::new(e).context(format!("moving {}", names.join(", "))),
                    ))
                }
            }
        }
    }

    /// Deletes a ref loopx owns: whatever it points at (`expected` None),
    /// or only while it points at `expected`.
    pub fn delete_ref(&self, name: &str, expected: Option<Oid>) -> Result<()> {
        let full: gix::refs::FullName = name
            .try_into()
            .map_err(|e| anyhow!("{name} is not a valid ref name: {e}"))?;
        let edit = RefEdit {
            name: full,
            deref: false,
            change: Change::Delete {
                expected: match expected {
                    Some(old) => PreviousValue::MustExistAndMatch(Target::Object(old.0)),
                    None => PreviousValue::Any,
                },
                log: RefLog::AndReference,
            },
        };
        let _guard = lock::guard(self.store.common_dir());
        self.store
            .repo
            .edit_references([edit])
            .with_context(|| format!("deleting {name}"))?;
        Ok(())
    }

    /// Removes a ref lock file whose writer is gone (see `lock.rs`); true
    /// when it did, and the compare-and-swap can be tried again at once.
    pub fn recover_lock(&self, lock: &Path) -> bool {
        lock::recover(self.store.common_dir(), lock)
    }
}

/// The gix edit of one move.
fn edit_of(m: &RefMove, reflog: &str) -> Result<RefEdit, CasError> {
    let name = m.name.as_str();
    let full: gix::refs::FullName = name
        .try_into()
        .map_err(|e| CasError::Other(anyhow!("{name} is not a valid ref name: {e}")))?;
    let expected = match m.expected {
        Some(old) => PreviousValue::MustExistAndMatch(Target::Object(old.0)),
        None => PreviousValue::MustNotExist,
    };
    let change = match m.new {
        Some(new) => Change::Update {
            log: LogChange {
                mode: RefLog::AndReference,
                // loopx's refs keep a reflog whatever
                // core.logAllRefUpdates says (it covers only branches),
                // so `doctor --fix` can put back a lost tip.
                force_create_reflog: name.starts_with("refs/loopx/"),
                message: reflog.into(),
            },
            expected,
            new: Target::Object(new.0),
        },
        None => Change::Delete {
            expected,
            log: RefLog::AndReference,
        },
    };
    Ok(RefEdit {
        name: full,
        deref: false,
        change,
    })
}
