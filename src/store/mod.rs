//! The only module that uses gix: the state ref, its trees and blobs, and
//! the compare-and-swap that moves it; `history.rs` reads along the chain.
//!
//! The store knows files (paths and bytes) and commits, never the model. It
//! never touches HEAD, the index, the worktree or `refs/heads/*`, and it
//! never walks history to read the tip.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use gix::bstr::ByteSlice;
use gix::objs::tree::EntryKind;

use crate::error::{Code, Refusal};

mod config;
mod history;
mod lock;
pub mod mark;
mod read;
mod refs;
mod scratch;
mod write;

pub use history::{Entry, FileChange, FirstParents, PrefixMatch};
pub use scratch::Scratch;
pub use write::{RefMove, Writer};

/// Whether `name` is one of the refs loopx keeps for itself beside the
/// state (sync's records and backups), which can never be a state ref.
fn is_own_ref(name: &str) -> bool {
    ["synced", "verified", "backup", "remotes", "fetching"]
        .iter()
        .any(|own| name.starts_with(&format!("refs/loopx/{own}/")))
}

/// The default state ref; git config `loopx.ref` overrides it, and the
/// environment's [`REF_VAR`] both.
pub const DEFAULT_REF: &str = "refs/loopx/state";

/// The variable that names the state ref for one command, over git config
/// `loopx.ref`: a clone on a goal ref (`refs/loopx/goals/<goal>`) runs a
/// shared act with `LOOPX_REF=refs/loopx/state` (docs/scale.md).
pub const REF_VAR: &str = "LOOPX_REF";

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
    ///
    /// Decoded here, not by gix: its decoder asks the CPU for its vector
    /// features (`cpuid`) on first use, a trap to the hypervisor in a VM
    /// that costs more at start-up than the few ids a read decodes.
    pub fn from_hex(hex: &str) -> Option<Oid> {
        let hex = hex.as_bytes();
        if !matches!(hex.len(), 40 | 64) {
            return None;
        }
        let mut bytes = [0u8; 32];
        for (out, pair) in bytes.iter_mut().zip(hex.chunks_exact(2)) {
            *out = (nibble(pair[0])? << 4) | nibble(pair[1])?;
        }
        Some(Oid(gix::ObjectId::from_bytes_or_panic(
            &bytes[..hex.len() / 2],
        )))
    }

    /// The first `n` hex digits, for display.
    pub fn short(&self, n: usize) -> String {
        let s = self.to_string();
        s[..n.min(s.len())].to_owned()
    }
}

/// The value of one hex digit, either case (as git reads ids).
fn nibble(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Full lowercase hex, as git writes ids (encoded here for the reason
/// [`Oid::from_hex`] decodes here).
impl std::fmt::Display for Oid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let bytes = self.0.as_bytes();
        let mut hex = [0u8; 64];
        for (pair, b) in hex.chunks_exact_mut(2).zip(bytes) {
            pair[0] = DIGITS[usize::from(b >> 4)];
            pair[1] = DIGITS[usize::from(b & 0xf)];
        }
        let hex = std::str::from_utf8(&hex[..bytes.len() * 2]).map_err(|_| std::fmt::Error)?;
        f.write_str(hex)
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
        let from_env = crate::env::Env::process().get(REF_VAR).map(str::to_owned);
        let configured = from_env.or_else(|| {
            repo.config_snapshot()
                .string("loopx.ref")
                .map(|n| n.to_str_lossy().into_owned())
        });
        let state_ref = match configured {
            Some(name) => {
                if !name.starts_with("refs/")
                    || gix::refs::FullName::try_from(name.as_str()).is_err()
                {
                    return Err(Refusal::usage(
                        Code::BadConfig,
                        format!(
                            "{REF_VAR} or git config loopx.ref = {name:?} is not a full ref name"
                        ),
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
                            "{REF_VAR} or git config loopx.ref = {name:?} is not under refs/loopx/, or is one of loopx's own refs"
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

    /// The same repository with another state ref (a split state's other
    /// refs, synced in one fetch and one push): `name` must be a ref the
    /// caller read from this repository's own listing, or one of loopx's
    /// known state refs.
    pub fn for_ref(&self, name: &str) -> Store {
        Store {
            repo: self.repo.clone(),
            state_ref: name.to_owned(),
        }
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
        let vars = crate::env::Env::process();
        let mut env = |name: &str| vars.get_os(name).map(ToOwned::to_owned);
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

    /// Whether this is a bare repository (a hub): no worktree.
    pub fn is_bare(&self) -> bool {
        self.repo.workdir().is_none()
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
    fn ids_from_hex_are_what_gix_reads_and_nothing_else() {
        let sha1 = "0123456789abcdefABCDEF0123456789abcdef01";
        let sha256 = "00ff".repeat(16);
        for hex in [sha1, sha256.as_str()] {
            let want = gix::ObjectId::from_hex(hex.as_bytes()).unwrap();
            assert_eq!(Oid::from_hex(hex), Some(Oid(want)), "{hex}");
            assert_eq!(
                Oid::from_hex(hex).unwrap().to_string(),
                hex.to_ascii_lowercase()
            );
            assert_eq!(Oid(want).to_string(), want.to_string(), "as gix writes it");
        }
        for bad in [
            "",
            "0123",
            &sha1[..39],
            &format!("{sha1}0"),
            &sha1.replace('f', "g"),
            &sha1.replace('0', " "),
        ] {
            assert_eq!(Oid::from_hex(bad), None, "{bad:?}");
        }
    }

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
