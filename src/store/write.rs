//! Writing: commits, and the compare-and-swap that moves a ref under the
//! `cas.lock` flock.

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
