//! Ref locks whose writer is gone. git and gix lock a ref by creating
//! `<ref>.lock` and renaming it over the ref; a writer killed in between
//! (SIGKILL, a power cut) leaves the lock behind, and every later writer
//! would wait for it forever.
//!
//! loopx's own compare-and-swaps on a ref hold an advisory lock (`flock`)
//! on `<git dir>/loopx/cas.lock` for their few microseconds, which the
//! kernel drops when its holder dies, however it dies. So a writer that
//! finds a ref lock, and then gets that flock itself, knows that no loopx
//! process here is moving a ref: the ref lock's owner is gone, or is a git
//! process run by hand. Once the ref lock is older than [`ABANDONED`]
//! (far longer than any ref update takes), it is removed and the writer
//! goes on.

use std::fs::File;
use std::path::Path;
use std::time::{Duration, SystemTime};

use rustix::fs::{FlockOperation, flock};

/// A ref lock at least this old, while no loopx writer here is moving a
/// ref, is abandoned.
pub const ABANDONED: Duration = Duration::from_secs(1);

/// The flock file under the common git dir.
const CAS_LOCK: &str = "loopx/cas.lock";

/// Held while this process moves a ref (None where flock is unavailable:
/// a read-only git dir, a file system without it).
pub(super) struct Guard(#[allow(dead_code)] Option<File>);

fn open(common_dir: &Path) -> Option<File> {
    crate::lockfile::open(&common_dir.join(CAS_LOCK)).ok()
}

/// How long a compare-and-swap waits for the flock (another one here holds
/// it for microseconds) before it goes on without: a holder that is stopped
/// (a debugger, SIGSTOP) never stalls every other writer.
const PATIENCE: Duration = Duration::from_millis(200);

/// Takes the flock for one compare-and-swap.
pub(super) fn guard(common_dir: &Path) -> Guard {
    let Some(file) = open(common_dir) else {
        return Guard(None);
    };
    let started = std::time::Instant::now();
    loop {
        if flock(&file, FlockOperation::NonBlockingLockExclusive).is_ok() {
            return Guard(Some(file));
        }
        if started.elapsed() >= PATIENCE {
            return Guard(None);
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Removes `lock` when its writer is gone: no loopx writer here holds the
/// flock, and the lock is at least [`ABANDONED`] old. True when it was
/// removed (try again now).
pub(super) fn recover(common_dir: &Path, lock: &Path) -> bool {
    let Some(file) = open(common_dir) else {
        return false;
    };
    if flock(&file, FlockOperation::NonBlockingLockExclusive).is_err() {
        // A loopx writer here is moving a ref right now.
        return false;
    }
    let Ok(meta) = std::fs::metadata(lock) else {
        // Gone already: try again.
        return true;
    };
    let age = meta
        .modified()
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok());
    if age.is_none_or(|a| a < ABANDONED) {
        return false;
    }
    // Still the same lock file (not one a git process made just now).
    let same = std::fs::metadata(lock)
        .ok()
        .is_some_and(|m| m.modified().ok() == meta.modified().ok() && inode(&m) == inode(&meta));
    same && std::fs::remove_file(lock).is_ok()
}

#[cfg(unix)]
fn inode(m: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(m)
}

#[cfg(not(unix))]
fn inode(_: &std::fs::Metadata) -> u64 {
    0
}
