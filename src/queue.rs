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
//! loopx). It is held only from reading the tip to the compare-and-swap:
//! never across a child process, a signature, a notification or the
//! network. The kernel drops the lock when its holder exits, however it
//! exits.
//!
//! A holder can still be stuck: a loopx stopped (`SIGSTOP`, a debugger),
//! or hung, or another program holding the file. A waiter looks at the
//! holder the kernel names (`/proc/locks`): one that is stopped or gone is
//! passed at once, another program after [`GRACE`], and a loopx that has
//! held the lock longer than [`HOLD_BOUND`] (a tick holds it for
//! milliseconds) while asleep and using no CPU is passed too. A holder
//! that is running is waited for, however loaded the machine: it is
//! working. The holder writes its pid, start time and when it took the
//! lock into the file. Each pass is appended to `<git dir>/loopx/
//! queue-passed` (the time and why), which `doctor` reads. A writer that
//! waited [`PATIENCE`] in a long queue goes on too.

use std::fs::File;
use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rustix::fs::{FlockOperation, flock};

/// How long a writer waits in a queue of live, working writers before it
/// writes without its turn.
pub const PATIENCE: Duration = Duration::from_secs(5);

/// How long one holder may keep the lock before waiters pass it: far
/// longer than a tick holds it (reading the tip to the compare-and-swap).
pub const HOLD_BOUND: Duration = Duration::from_millis(1000);

/// How long a waiter gives a holder that has not said who it is (a new
/// holder writes at once; another program never does).
pub const GRACE: Duration = Duration::from_millis(25);

/// How often a waiter looks at the holder.
const LOOK_EVERY: Duration = Duration::from_millis(5);

/// The lock file, under the common git dir.
pub const LOCK_FILE: &str = "loopx/writers.lock";

/// The log of writers that passed a stuck holder, under the common git dir.
pub const PASSED_FILE: &str = "loopx/queue-passed";

/// The log is cut when it grows past this.
const PASSED_MAX: u64 = 64 * 1024;

/// Whether this process holds its turn (a tick inside a tick must not wait
/// for itself).
static HELD: AtomicBool = AtomicBool::new(false);

/// A writer's turn: held until dropped.
pub struct Turn {
    file: Option<File>,
    /// Why the writer went on without its turn, when it passed a holder.
    passed: Option<String>,
}

impl Turn {
    /// Whether this writer holds the lock (false when it goes unqueued).
    pub fn held(&self) -> bool {
        self.file.is_some()
    }

    /// Why this writer went on without the lock, when a holder was stuck.
    pub fn passed(&self) -> Option<&str> {
        self.passed.as_deref()
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
/// read-only git dir, no `flock`, a stuck holder, a tick already holding it
/// in this process) the writer goes on unqueued.
pub fn wait(common_dir: &Path, patience: Duration) -> Turn {
    let none = Turn {
        file: None,
        passed: None,
    };
    if HELD.load(Ordering::SeqCst) {
        return none;
    }
    let path = common_dir.join(LOCK_FILE);
    let Ok(file) = crate::lockfile::open(&path) else {
        return none;
    };
    // Free: the common case, without a thread.
    let (file, passed) = match flock(&file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => (Some(file), None),
        Err(rustix::io::Errno::WOULDBLOCK) => queue(file, &path, patience),
        Err(_) => (None, None),
    };
    if let Some(f) = &file {
        HELD.store(true, Ordering::SeqCst);
        say_who(f);
    }
    if let Some(why) = &passed {
        log_pass(common_dir, why);
    }
    Turn { file, passed }
}

/// Blocks on the lock in a helper thread, looking at the holder meanwhile;
/// the kernel wakes the thread the moment the lock is free. Returns the
/// file holding the lock, or why the waiter went on without it. A thread
/// whose waiter went on lets go of the lock as soon as it gets it.
fn queue(file: File, path: &Path, patience: Duration) -> (Option<File>, Option<String>) {
    let (tx, rx) = mpsc::sync_channel(1);
    std::thread::spawn(move || {
        if flock(&file, FlockOperation::LockExclusive).is_ok() {
            // Fails when the waiter gave up: dropping the file unlocks.
            let _ = tx.send(file);
        }
    });
    let started = Instant::now();
    let mut foreign_since: Option<Instant> = None;
    let mut idle: Option<(u32, u64)> = None;
    loop {
        match look(path) {
            Holder::Working => {
                foreign_since = None;
                idle = None;
            }
            Holder::Foreign(pid) => {
                if foreign_since.get_or_insert_with(Instant::now).elapsed() >= GRACE {
                    return (None, Some(Holder::Foreign(pid).why()));
                }
            }
            // Asleep past the bound, and no CPU time used between two looks.
            Holder::Idle { pid, cpu, held } => {
                if idle == Some((pid, cpu)) {
                    return (None, Some(Holder::Idle { pid, cpu, held }.why()));
                }
                idle = Some((pid, cpu));
            }
            stuck => return (None, Some(stuck.why())),
        }
        if started.elapsed() >= patience {
            return (
                None,
                Some(format!(
                    "waited {}s in the queue of writers",
                    patience.as_secs()
                )),
            );
        }
        if let Ok(f) = rx.recv_timeout(LOOK_EVERY) {
            return (Some(f), None);
        }
    }
}

/// What a waiter makes of the lock's holder, the process the kernel names
/// in `/proc/locks`.
#[derive(Debug, PartialEq, Eq)]
enum Holder {
    /// Running, or within [`HOLD_BOUND`], or a loopx that has just taken
    /// the lock (or no holder is known: the lock was just let go, or there
    /// is no `/proc/locks`).
    Working,
    /// A process that is not loopx (a plain `flock`, an editor).
    Foreign(u32),
    /// The holder is gone (a child it forked holds the file on).
    Gone(u32),
    /// The holder is stopped (`SIGSTOP`, a debugger).
    Stopped(u32),
    /// A loopx holder asleep past [`HOLD_BOUND`], with the CPU time it has
    /// used so far.
    Idle { pid: u32, cpu: u64, held: Duration },
}

impl Holder {
    fn why(&self) -> String {
        match self {
            Holder::Working => "the holder is working".to_owned(),
            Holder::Foreign(pid) => format!("its holder (pid {pid}) is not loopx"),
            Holder::Gone(pid) => format!("its holder (pid {pid}) is gone"),
            Holder::Stopped(pid) => format!("its holder (pid {pid}) is stopped"),
            Holder::Idle { pid, held, .. } => format!(
                "its holder (pid {pid}) has held it for {} ms without working",
                held.as_millis()
            ),
        }
    }
}

/// The holder of the lock at `path`: the kernel's word for which process
/// it is, its own record for when it took the lock.
fn look(path: &Path) -> Holder {
    use std::os::unix::fs::MetadataExt;
    let Ok(ino) = std::fs::metadata(path).map(|m| m.ino()) else {
        return Holder::Working;
    };
    let Some(pid) = flock_holder(ino) else {
        return Holder::Working;
    };
    // A holder that has just let go and exited is not a gone holder: the
    // kernel must still name it after it is found gone.
    let gone = || {
        if flock_holder(ino) == Some(pid) {
            Holder::Gone(pid)
        } else {
            Holder::Working
        }
    };
    let Some(p) = process(pid) else {
        return gone();
    };
    match p.state {
        'T' | 't' => return Holder::Stopped(pid),
        'Z' | 'X' => return gone(),
        _ => {}
    }
    let record = std::fs::read_to_string(path).unwrap_or_default();
    let mut words = record.split_whitespace().map(str::parse::<u64>);
    match (words.next(), words.next(), words.next()) {
        (Some(Ok(r)), Some(Ok(start)), Some(Ok(at_ms)))
            if r == u64::from(pid) && start == p.start =>
        {
            let held = Duration::from_millis(unix_ms().saturating_sub(at_ms));
            if held > HOLD_BOUND && p.state == 'S' {
                Holder::Idle {
                    pid,
                    cpu: p.cpu,
                    held,
                }
            } else {
                Holder::Working
            }
        }
        // Not its record yet: a loopx that has just taken the lock, or
        // another program.
        _ if same_program(pid) => Holder::Working,
        _ => Holder::Foreign(pid),
    }
}

/// The process holding the `flock` on inode `ino`, from `/proc/locks` (a
/// waiter's line has `->`).
fn flock_holder(ino: u64) -> Option<u32> {
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    locks.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.get(1) != Some(&"FLOCK") {
            return None;
        }
        let file_ino: u64 = f.get(5)?.rsplit(':').next()?.parse().ok()?;
        (file_ino == ino).then(|| f.get(4)?.parse().ok()).flatten()
    })
}

/// Whether process `pid` runs the same program as this one.
fn same_program(pid: u32) -> bool {
    let exe = |p: &str| std::fs::read_link(format!("/proc/{p}/exe")).ok();
    exe(&pid.to_string()).is_some_and(|e| Some(e) == exe("self"))
}

/// Writes this process's record into the lock file it holds.
fn say_who(mut file: &File) {
    let Some(me) = process(std::process::id()) else {
        return;
    };
    let record = format!("{} {} {}\n", std::process::id(), me.start, unix_ms());
    let _ = file
        .set_len(0)
        .and_then(|()| rustix::io::pwrite(file, record.as_bytes(), 0).map_err(Into::into))
        .and_then(|_| file.flush());
}

/// What `/proc/<pid>/stat` says of a process.
pub(crate) struct Proc {
    pub(crate) state: char,
    /// Its parent.
    pub(crate) ppid: i32,
    /// User and system CPU time, in clock ticks.
    cpu: u64,
    /// Start time, in clock ticks after boot (tells a reused pid apart).
    start: u64,
}

/// `None` when the process does not exist (or there is no /proc).
pub(crate) fn process(pid: u32) -> Option<Proc> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid …`: comm may hold spaces and parentheses.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let num = |i: usize| f.get(i)?.parse::<u64>().ok();
    // Fields 14, 15 and 22 of the line: utime, stime, starttime.
    Some(Proc {
        state: f.first()?.chars().next()?,
        ppid: f.get(1)?.parse().ok()?,
        cpu: num(11)? + num(12)?,
        start: num(19)?,
    })
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Appends a pass to the log (the time and why), cutting it when it grew
/// past [`PASSED_MAX`].
fn log_pass(common_dir: &Path, why: &str) {
    let path = common_dir.join(PASSED_FILE);
    let big = std::fs::metadata(&path).is_ok_and(|m| m.len() > PASSED_MAX);
    let file = File::options()
        .create(true)
        .append(!big)
        .write(true)
        .truncate(big)
        .open(&path);
    if let Ok(mut f) = file {
        let _ = writeln!(f, "{} {why}", unix_ms() / 1000);
    }
}

/// Why the lock's holder is stuck right now, if the lock is held by a
/// process that is stopped, gone, hung or not loopx (for `doctor`).
pub fn stuck(common_dir: &Path) -> Option<String> {
    let path = common_dir.join(LOCK_FILE);
    let file = File::options().read(true).write(true).open(&path).ok()?;
    match flock(&file, FlockOperation::NonBlockingLockExclusive) {
        // Free (closing the file lets go at once).
        Ok(()) => None,
        Err(rustix::io::Errno::WOULDBLOCK) => match look(&path) {
            Holder::Working => None,
            stuck => Some(stuck.why()),
        },
        Err(_) => None,
    }
}

/// The passes logged so far, oldest first: (unix seconds, why).
pub fn passes(common_dir: &Path) -> Vec<(i64, String)> {
    std::fs::read_to_string(common_dir.join(PASSED_FILE))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (at, why) = l.split_once(' ')?;
            Some((at.parse().ok()?, why.to_owned()))
        })
        .collect()
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
        // and gives up after its patience: the holder is this live process,
        // which took the lock a moment ago.
        let path = dir.path().join(LOCK_FILE);
        assert_eq!(look(&path), Holder::Working);
        let other = File::options().read(true).write(true).open(&path).unwrap();
        assert_eq!(
            flock(&other, FlockOperation::NonBlockingLockExclusive),
            Err(rustix::io::Errno::WOULDBLOCK)
        );
        let (got, why) = queue(other, &path, Duration::from_millis(20));
        assert!(got.is_none());
        assert!(why.unwrap().contains("in the queue"));
        drop(first);
        let again = wait(dir.path(), PATIENCE);
        assert!(again.file.is_some(), "free again once the holder is gone");
        // (One test: the turn is per process.) The holder is the one the
        // kernel names, and its record says since when.
        assert_eq!(look(&path), Holder::Working, "it just took it");
        let me = process(std::process::id()).unwrap();
        let long_ago = unix_ms() - 5000;
        std::fs::write(
            &path,
            format!("{} {} {long_ago}\n", std::process::id(), me.start),
        )
        .unwrap();
        // Long held, but this process is running this line, not asleep
        // (unless the kernel caught it between two instructions).
        assert!(matches!(look(&path), Holder::Working | Holder::Idle { .. }));
        // No record of its own: the holder runs this same program.
        std::fs::write(&path, "").unwrap();
        assert_eq!(look(&path), Holder::Working);
        drop(again);
        assert_eq!(look(&path), Holder::Working, "free: nobody to look at");
    }
}
