//! One notification per gate: `git config loopx.notify "CMD ARG…"` runs
//! once for each open gate that waits on a human (a human-only kind), with
//! the gate as JSON on stdin, after any command that moved the state ref
//! (a tick, or a sync that brought ticks in).
//!
//! Nothing of it runs inside the command: [`after`] only looks whether a
//! gate is due and, if one is, the command starts a detached runner (`loopx
//! notify-run`, in a process group of its own) and returns. The runner
//! ([`run_pending`]) is one per clone at a time (`.git/loopx/notify.lock`;
//! a command that finds one running leaves `.git/loopx/notify-pending`,
//! which the running one picks up before it ends). It sends at most
//! [`CONCURRENCY`] at once, each in a process group of its own with its
//! time limit (`loopx.notifyTimeout`), and ends the whole group at the
//! limit and when the command exits.
//!
//! Once per gate, never lost: a success is written down at once under
//! `.git/loopx/notify-sent/` (so this clone never sends it again), then
//! recorded as a `gate.notified` tick, so clones that sync it stay quiet.
//! A failure is remembered under `.git/loopx/notify-failed/` (the reason,
//! shown by `status`, and when to try again) and retried after a later
//! tick once its back-off (1 minute, doubling to 1 hour) has passed.
//!
//! This module takes the repository handle and explicit values (the time,
//! how to load the state, how to record a gate as notified) and never
//! prints: starting the runner, loading through the cache and writing the
//! tick are the commands' (`cmd::run`, `cmd/notify_run.rs`).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::model::{Gate, GateId, State};
use crate::repo::Repo;
use crate::store::Oid;
use crate::time::Timestamp;

/// A word for a POSIX shell: as is when it is plain, else single-quoted.
pub fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.,:/=@+%".contains(c));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The command that answers `gate` with `option`, ready to paste.
pub fn answer_command(gate: &Gate, option: &str) -> String {
    answer_command_in(None, gate, option)
}

/// [`answer_command`], run in `dir` when one is given (`loopx -C DIR …`):
/// a command that works from anywhere.
pub fn answer_command_in(dir: Option<&std::path::Path>, gate: &Gate, option: &str) -> String {
    let at = dir.map_or(String::new(), |d| {
        format!("-C {} ", shell_word(&d.to_string_lossy()))
    });
    format!(
        "loopx {at}gate answer {} --choice {}",
        gate.id,
        shell_word(option)
    )
}

/// Where a notification comes from: the repository, as the payload names
/// it (the command that starts the runner finds it out).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Place {
    /// The repository's folder (its main worktree): what `-C` takes.
    pub path: std::path::PathBuf,
    /// The folder's name, for a title.
    pub name: String,
    /// Where its remote (`loopx.remote`, else `origin`) fetches from, git's
    /// `insteadOf` rules applied and credentials taken out (`git::url`);
    /// None without one.
    pub url: Option<String>,
    /// The state ref (a goal's own on a clone that works one goal).
    #[serde(rename = "ref")]
    pub state_ref: String,
}

/// What the command reads on stdin.
#[derive(Serialize)]
struct Payload<'a> {
    id: &'a GateId,
    goal: &'a str,
    kind: &'static str,
    blocks: String,
    question: &'a str,
    options: &'a [String],
    opened_by: String,
    opened_at: String,
    /// One command per option, ready to paste anywhere (`loopx -C PATH …`).
    answer_commands: Vec<String>,
    /// The repository the gate is in.
    repository: &'a Place,
}

/// How many notify commands run at once.
pub const CONCURRENCY: usize = 4;
/// The first back-off after a failure; it doubles up to [`BACKOFF_MAX`].
const BACKOFF: i64 = 60;
const BACKOFF_MAX: i64 = 3600;
/// How long a notify command's group has between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_millis(500);

/// The tip before a command, when notifications are configured: the
/// argument [`after`] compares against.
pub fn before(repo: &Repo) -> Option<Option<Oid>> {
    repo.config().notify.as_ref()?;
    Some(repo.store().tip().ok()?.map(|t| t.commit))
}

/// After a command: whether the ref moved since `before` and a gate is due
/// in the state `load` gives (asked only then). If so, the pending mark is
/// left for the runner, and the caller starts it (`loopx notify-run`,
/// detached). Never fails.
pub fn after(
    repo: &Repo,
    before: Option<Option<Oid>>,
    now: Timestamp,
    load: impl FnOnce() -> Option<State>,
) -> bool {
    let Some(before) = before else { return false };
    let Ok(Some(tip)) = repo.store().tip() else {
        return false;
    };
    if Some(tip.commit) == before {
        return false;
    }
    let Some(state) = load() else { return false };
    let dirs = Dirs::of(repo);
    if due(&dirs, &state, now).is_empty() && unrecorded(&dirs, &state).is_empty() {
        return false;
    }
    let _ = std::fs::create_dir_all(&dirs.base)
        .and_then(|()| std::fs::write(dirs.base.join(PENDING), b""));
    true
}

/// Starts `loopx notify-run` detached in `dir` (as `agent`, when one acts):
/// its own process group, no terminal. A thread reaps it if this process
/// outlives it (`loopx mcp`).
pub fn start_runner(dir: &std::path::Path, agent: Option<&str>) -> anyhow::Result<()> {
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe()?;
    let mut c = Command::new(exe);
    c.current_dir(dir);
    if let Some(id) = agent {
        c.arg("--agent").arg(id);
    }
    let mut child = c
        .arg("notify-run")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()?;
    std::thread::spawn(move || child.wait());
    Ok(())
}

/// Where a clone keeps its notification records.
struct Dirs {
    base: PathBuf,
    sent: PathBuf,
    failed: PathBuf,
}

const PENDING: &str = "notify-pending";
const LOCK: &str = "notify.lock";

impl Dirs {
    fn of(repo: &Repo) -> Dirs {
        let base = repo.store().common_dir().join("loopx");
        Dirs {
            sent: base.join("notify-sent"),
            failed: base.join("notify-failed"),
            base,
        }
    }
}

/// Open human-only gates without a `notified` record, not sent from this
/// clone already, and not backed off: oldest first.
fn due<'s>(dirs: &Dirs, state: &'s State, now: Timestamp) -> Vec<&'s Gate> {
    let now = now.unix();
    let mut due: Vec<&Gate> = state
        .gates
        .values()
        .filter(|g| g.is_open() && g.kind.human_only() && g.notified.is_none())
        .filter(|g| !dirs.sent.join(g.id.as_str()).exists())
        .filter(|g| backoff(&dirs.failed.join(g.id.as_str())).is_none_or(|(_, next)| next <= now))
        .collect();
    due.sort_by_key(|g| (g.opened_at, g.id.clone()));
    due
}

/// Open gates this clone notified whose `gate.notified` tick has not
/// landed. The notes of gates recorded or closed since are removed.
fn unrecorded(dirs: &Dirs, state: &State) -> Vec<GateId> {
    let Ok(entries) = std::fs::read_dir(&dirs.sent) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name().into_string().ok()?;
            match state.gates.values().find(|g| g.id.as_str() == name) {
                Some(g) if g.is_open() && g.notified.is_none() => Some(g.id.clone()),
                // Not in this state yet (a tick of it not synced here).
                None => None,
                Some(_) => {
                    let _ = std::fs::remove_file(e.path());
                    None
                }
            }
        })
        .collect()
}

/// A failure marker's attempts and the time (unix seconds) of the next try.
fn backoff(marker: &std::path::Path) -> Option<(u32, i64)> {
    let text = std::fs::read_to_string(marker).ok()?;
    let line = text.lines().nth(1)?;
    let mut w = line.split_whitespace();
    match (w.next(), w.next(), w.next(), w.next()) {
        (Some("attempts"), Some(n), Some("next"), Some(at)) => {
            Some((n.parse().ok()?, at.parse().ok()?))
        }
        _ => None,
    }
}

/// How the runner reaches the state: it loads the live state, and records
/// a sent notification as a `gate.notified` tick (true: it landed).
pub struct Runner<'a> {
    pub load: &'a dyn Fn() -> Option<State>,
    pub record: &'a dyn Fn(&GateId) -> bool,
    /// The repository, as the payload names it.
    pub place: &'a Place,
}

/// `loopx notify-run`: sends what is due, one runner per clone at a time.
/// A runner that finds another at work leaves it the pending mark.
pub fn run_pending(repo: &Repo, now: Timestamp, runner: &Runner) -> anyhow::Result<()> {
    use rustix::fs::{FlockOperation, flock};
    let dirs = Dirs::of(repo);
    std::fs::create_dir_all(&dirs.base)?;
    let lock = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dirs.base.join(LOCK))?;
    let pending = dirs.base.join(PENDING);
    loop {
        if flock(&lock, FlockOperation::NonBlockingLockExclusive).is_err() {
            // Another runner is at work; it sees the pending mark.
            return Ok(());
        }
        while std::fs::remove_file(&pending).is_ok() {
            deliver(repo, &dirs, now, runner);
        }
        let _ = flock(&lock, FlockOperation::Unlock);
        // A command that came by between the last look and the unlock.
        if !pending.exists() {
            return Ok(());
        }
    }
}

/// Sends every due gate, [`CONCURRENCY`] at a time, and records each
/// result as it comes.
fn deliver(repo: &Repo, dirs: &Dirs, now: Timestamp, runner: &Runner) {
    let config = repo.config();
    let Some(argv) = config.notify.clone() else {
        return;
    };
    let limit = Duration::from_secs(config.notify_timeout.as_secs().unsigned_abs().max(1));
    let Some(state) = (runner.load)() else { return };
    for id in unrecorded(dirs, &state) {
        record(dirs, &id, runner);
    }
    let jobs: Vec<(GateId, Vec<u8>)> = due(dirs, &state, now)
        .into_iter()
        .filter_map(|g| Some((g.id.clone(), payload(g, runner.place).ok()?)))
        .collect();
    drop(state);
    let queue = std::sync::Mutex::new(jobs.into_iter());
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        for _ in 0..CONCURRENCY {
            let (queue, done_tx, argv) = (&queue, done_tx.clone(), &argv);
            s.spawn(move || {
                loop {
                    let next = queue.lock().ok().and_then(|mut q| q.next());
                    let Some((id, json)) = next else { break };
                    let result = notify(argv, &json, limit);
                    if done_tx.send((id, result)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(done_tx);
        for (id, result) in done_rx {
            match result {
                Ok(()) => {
                    // Written down before the tick: never sent twice here.
                    let _ = std::fs::create_dir_all(&dirs.sent)
                        .and_then(|()| std::fs::write(dirs.sent.join(id.as_str()), b""));
                    let _ = std::fs::remove_file(dirs.failed.join(id.as_str()));
                    record(dirs, &id, runner);
                }
                Err(why) => {
                    let marker = dirs.failed.join(id.as_str());
                    let attempts = backoff(&marker).map_or(0, |(n, _)| n) + 1;
                    let wait = (BACKOFF << (attempts - 1).min(10)).min(BACKOFF_MAX);
                    let next = now.unix() + wait;
                    let _ = std::fs::create_dir_all(&dirs.failed).and_then(|()| {
                        std::fs::write(&marker, format!("{why}\nattempts {attempts} next {next}\n"))
                    });
                }
            }
        }
    });
}

/// Records a sent notification as a `gate.notified` tick; the local
/// record goes once the tick has landed.
fn record(dirs: &Dirs, id: &GateId, runner: &Runner) {
    if (runner.record)(id) {
        let _ = std::fs::remove_file(dirs.sent.join(id.as_str()));
    }
}

/// Gates whose last notification failed on this clone, with the reason;
/// those since notified or closed are left out.
pub fn failed(repo: &Repo, state: &State) -> Vec<(GateId, String)> {
    let dirs = Dirs::of(repo);
    let Ok(entries) = std::fs::read_dir(&dirs.failed) else {
        return Vec::new();
    };
    let mut out: Vec<(GateId, String)> = entries
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name().into_string().ok()?;
            let g = state.gates.values().find(|g| g.id.as_str() == name)?;
            (g.is_open() && g.notified.is_none()).then(|| {
                let why = std::fs::read_to_string(e.path()).unwrap_or_default();
                let why = why.lines().next().unwrap_or_default();
                (g.id.clone(), why.trim().to_owned())
            })
        })
        .collect();
    out.sort();
    out
}

/// What the command reads on stdin for gate `g` of the repository at `place`.
fn payload(g: &Gate, place: &Place) -> serde_json::Result<Vec<u8>> {
    let mut json = serde_json::to_vec(&Payload {
        id: &g.id,
        goal: g.goal.as_str(),
        kind: g.kind.as_str(),
        blocks: g.blocks.to_string(),
        question: &g.question,
        options: &g.options,
        opened_by: g.opened_by.to_string(),
        opened_at: g.opened_at.to_string(),
        answer_commands: g
            .options
            .iter()
            .map(|o| answer_command_in(Some(&place.path), g, o))
            .collect(),
        repository: place,
    })?;
    json.push(b'\n');
    Ok(json)
}

/// Runs the command once with `json` on stdin, in a process group of its
/// own, within `limit`. The whole group is ended at the limit (TERM, then
/// KILL), and whatever it left running when the command exits.
fn notify(argv: &[String], json: &[u8], limit: Duration) -> Result<(), String> {
    use rustix::process::{Pid, Signal, kill_process_group, test_kill_process_group};
    use std::os::unix::process::CommandExt;
    // Its stderr goes to a file of its own (never a pipe a process it left
    // behind could hold open), whose tail a failure keeps.
    let stderr = tempfile::tempfile().map_err(|e| format!("cannot make a file for stderr: {e}"))?;
    let err_out = stderr
        .try_clone()
        .map_err(|e| format!("cannot make a file for stderr: {e}"))?;
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(err_out)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", argv[0]))?;
    let group = Pid::from_raw(child.id() as i32).expect("a pid is positive");
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read stdin is not an error; one that
        // does not read it all must not hold the runner past its limit.
        let json = json.to_vec();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&json);
        });
    }
    let start = Instant::now();
    let end_group = |child: &mut std::process::Child| {
        if test_kill_process_group(group).is_ok() {
            let _ = kill_process_group(group, Signal::TERM);
            let until = Instant::now() + GRACE;
            while Instant::now() < until && test_kill_process_group(group).is_ok() {
                let _ = child.try_wait();
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = kill_process_group(group, Signal::KILL);
        }
        let _ = child.wait();
    };
    loop {
        match child.try_wait() {
            Ok(Some(s)) => {
                end_group(&mut child);
                return if s.success() {
                    Ok(())
                } else {
                    Err(format!(
                        "`{}` exited with {s}{}",
                        argv.join(" "),
                        said(stderr)
                    ))
                };
            }
            Ok(None) if start.elapsed() >= limit => {
                end_group(&mut child);
                return Err(format!(
                    "`{}` ran longer than {}s and was stopped{}",
                    argv.join(" "),
                    limit.as_secs(),
                    said(stderr)
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// How many of the last lines of a failed command's stderr its reason
/// keeps, and at most how many characters of them.
const STDERR_LINES: usize = 3;
const STDERR_CHARS: usize = 400;

/// The tail of what a failed command wrote on stderr (`file`), as `: LINE
/// / LINE` (one line, for the failure record), or nothing when it said
/// nothing: curl's own line (`curl: (22) The requested URL returned
/// error: 500`), not only its exit status.
fn said(mut file: std::fs::File) -> String {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let len = file.seek(SeekFrom::End(0)).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(4096)));
    let mut bytes = Vec::new();
    let _ = file.take(4096).read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let tail = lines[lines.len().saturating_sub(STDERR_LINES)..].join(" / ");
    if tail.is_empty() {
        return String::new();
    }
    let mut tail: String = tail.chars().filter(|c| !c.is_control()).collect();
    if tail.chars().count() > STDERR_CHARS {
        tail = tail
            .chars()
            .skip(tail.chars().count() - STDERR_CHARS)
            .collect();
        tail.insert(0, '…');
    }
    format!(": {tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_keeps_the_last_lines_of_stderr_on_one_line() {
        use std::io::Write as _;
        let mut f = tempfile::tempfile().unwrap();
        write!(
            f,
            "  % Total\n\nstep 2\ncurl: (22) The requested URL returned error: 500\n"
        )
        .unwrap();
        assert_eq!(
            said(f),
            ": % Total / step 2 / curl: (22) The requested URL returned error: 500"
        );
        assert_eq!(said(tempfile::tempfile().unwrap()), "");
    }

    #[test]
    fn shell_words_survive_a_shell() {
        assert_eq!(shell_word("approve"), "approve");
        assert_eq!(shell_word("it's ok"), r"'it'\''s ok'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("$(rm -rf /)"), "'$(rm -rf /)'");
    }
}
