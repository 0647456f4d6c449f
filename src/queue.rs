//! The queue of local writers: a tick holds an advisory lock (`flock`) on
//! `<git dir>/loopx/writers.lock` from reading the tip to moving the ref,
//! so writers on one machine take turns instead of racing.
//!
//! Without it, 16 processes writing at once all read the same tip, one
//! wins the compare-and-swap, and fifteen throw away a whole load, apply
//! and write, sleep and try again (about five lost attempts per tick, and
//! sleeps that overshoot the moment the ref is free). With it, a waiting
//! writer is woken by the kernel the moment the previous one is done, and
//! reads a tip nobody else on this machine is about to move.
//!
//! The lock is only an optimization: correctness stays with the
//! compare-and-swap on the ref, which still guards against writers that
//! do not queue (sync's replay on another clone, git by hand, an older
//! loopx). The kernel drops the lock when its holder exits, however it
//! exits, so it can never go stale. A writer that waited longer than
//! [`PATIENCE`] (a holder stopped in a debugger, a file system without
//! `flock`) goes on without it, as before.

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use rustix::fs::{FlockOperation, flock};

/// How long a writer waits for its turn before it writes without one.
pub const PATIENCE: Duration = Duration::from_secs(5);

/// The lock file, under the common git dir.
pub const LOCK_FILE: &str = "loopx/writers.lock";

/// Whether this process holds its turn (a tick inside a tick must not wait
/// for itself).
static HELD: AtomicBool = AtomicBool::new(false);

/// A writer's turn: held until dropped.
pub struct Turn {
    file: Option<File>,
}

impl Turn {
    /// Whether this writer holds the lock (false when it goes unqueued).
    pub fn held(&self) -> bool {
        self.file.is_some()
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        if self.file.is_some() {
            HELD.store(false, Ordering::SeqCst);
        }
        // Closing the file releases the lock.
    }
}

/// Waits for this writer's turn on the repository whose common git dir is
/// `common_dir`, at most `patience`. Never fails: without a turn (a
/// read-only git dir, no `flock`, a holder that does not let go, a tick
/// already holding it in this process) the writer goes on unqueued.
pub fn wait(common_dir: &Path, patience: Duration) -> Turn {
    let none = Turn { file: None };
    if HELD.load(Ordering::SeqCst) {
        return none;
    }
    let path = common_dir.join(LOCK_FILE);
    let open = || {
        File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
    };
    let file = match open() {
        Ok(f) => f,
        Err(_) => {
            let made = path
                .parent()
                .map(std::fs::create_dir_all)
                .is_some_and(|r| r.is_ok());
            match open() {
                Ok(f) if made => f,
                _ => return none,
            }
        }
    };
    // Free: the common case, without a thread.
    let file = match flock(&file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Some(file),
        Err(rustix::io::Errno::WOULDBLOCK) => queue(file, patience),
        Err(_) => None,
    };
    if file.is_some() {
        HELD.store(true, Ordering::SeqCst);
    }
    Turn { file }
}

/// Blocks on the lock in a helper thread, so the wait can end after
/// `patience`; the kernel wakes the thread the moment the lock is free.
/// A thread whose waiter gave up lets go of the lock as soon as it gets it.
fn queue(file: File, patience: Duration) -> Option<File> {
    let (tx, rx) = mpsc::sync_channel(1);
    std::thread::spawn(move || {
        if flock(&file, FlockOperation::LockExclusive).is_ok() {
            // Fails when the waiter gave up: dropping the file unlocks.
            let _ = tx.send(file);
        }
    });
    rx.recv_timeout(patience).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_turn_waits_and_one_in_the_same_process_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let first = wait(dir.path(), PATIENCE);
        assert!(first.file.is_some(), "the lock file is created");
        // Nested in the same process: no wait, no turn.
        let nested = wait(dir.path(), Duration::from_millis(10));
        assert!(nested.file.is_none());
        drop(nested);
        // Another holder (another open file, as another process has) waits
        // and gives up after its patience.
        let other = File::options()
            .read(true)
            .write(true)
            .open(dir.path().join(LOCK_FILE))
            .unwrap();
        assert_eq!(
            flock(&other, FlockOperation::NonBlockingLockExclusive),
            Err(rustix::io::Errno::WOULDBLOCK)
        );
        assert!(queue(other, Duration::from_millis(20)).is_none());
        drop(first);
        let again = wait(dir.path(), PATIENCE);
        assert!(again.file.is_some(), "free again once the holder is gone");
    }
}
