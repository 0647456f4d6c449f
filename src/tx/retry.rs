//! What a writer does about a busy ref: how long it retries, when a lock
//! is stale, and the jitter that keeps racing writers apart.

use crate::error::{Code, Refusal};
use crate::store::Store;
use anyhow::Result;
use std::time::Duration;

/// How long a tick keeps retrying before giving up with exit 4.
pub(super) const RETRY_FOR: Duration = Duration::from_secs(30);

/// A lock file older than this is stale: its writer died.
pub const STALE_LOCK: Duration = Duration::from_secs(10);

/// A random fraction in [0, 1). Not from the seeded id source, or racing
/// test processes with the same seed would retry in lockstep.
pub fn jitter() -> f64 {
    let mut b = [0u8; 2];
    let _ = getrandom::fill(&mut b);
    f64::from(u16::from_le_bytes(b)) / 65536.0
}

/// What a writer does about a busy ref lock: true when its writer was gone
/// and the lock was removed (try again at once), false to wait a little,
/// and the stale-lock refusal when a live process held it too long.
pub fn recover_lock(store: &Store, lock: &std::path::Path, age: Option<Duration>) -> Result<bool> {
    if store.writer().recover_lock(lock) {
        return Ok(true);
    }
    if age.is_some_and(|a| a >= STALE_LOCK) {
        return Err(stale_lock(lock, age).into());
    }
    Ok(false)
}

/// The error for a state ref whose lock is stale (or held too long).
pub fn stale_lock(lock: &std::path::Path, age: Option<Duration>) -> Refusal {
    let age = age.map_or("of unknown age".to_owned(), |a| {
        format!("{}s old", a.as_secs())
    });
    Refusal::error(
        Code::StaleLock,
        format!("the state ref is locked by {} ({age})", lock.display()),
    )
    .with_hint(format!(
        "a writer died while holding it; if no loopx or git process is running, `loopx doctor --fix` removes it (or: rm {})",
        lock.display()
    ))
}
