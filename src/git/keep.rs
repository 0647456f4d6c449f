//! A kept ssh session per hub (issue 28): a no-op sync over ssh in one
//! exchange on the wire.
//!
//! Even through a warm shared connection (`git/ssh.rs`), every git
//! process costs three exchanges: open a channel and wait for its
//! confirmation (RFC 4254 §5.1), exec and wait for the server's first
//! answer, send the end and wait for the exit status. So a sync that finds
//! the hub where it left it kept costing 4–5 round trips.
//!
//! After loopx's first fetch from an ssh hub, a *keeper* starts beside the
//! shared connection: `loopx ssh-keep` (hidden), detached, in the same
//! private socket directory. It holds a `git-upload-pack` session open on
//! the hub in git's protocol v2 (`GIT_PROTOCOL=version=2`, sent with
//! `SendEnv`) and listens on a unix socket there. A sync asks it for the
//! tips of its state refs ([`tips`]): one `ls-refs` request on the open
//! session, one exchange. When every tip equals the remote-tracking ref,
//! there is nothing to fetch and no git process runs; otherwise the
//! normal `git fetch` runs, unchanged (the question is then one exchange
//! more than before).
//!
//! The keeper never answers from memory: every question is an `ls-refs`
//! on a session that has not read the refs yet (upload-pack keeps what it
//! read for its life, so each session answers one question and the keeper
//! opens the next one after answering). Anything else falls back to git's own processes,
//! silently and never with a different answer: no keeper, a stale
//! socket, a keeper for another URL, no answer within [`ASK_LIMIT`], a
//! hub that does not speak v2 over ssh (its sshd does not accept
//! `GIT_PROTOCOL`: the keeper sees a v0 answer and exits at once).
//!
//! The keeper exits when nobody asked it anything for [`IDLE`] (ssh's
//! `ControlPersist`), when its session ends (the shared connection went,
//! the hub closed it), or when a request to the hub hangs. It runs only
//! where loopx shares ssh connections itself (the user did not configure
//! ssh's multiplexing or command), and `git config loopx.sshKeep false`
//! turns it off.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use sha2::Digest;

use super::ssh;

mod push;

pub use push::push;

/// How long a keeper waits for a question before it exits: the shared
/// connection's own `ControlPersist`.
pub const IDLE: Duration = Duration::from_secs(300);

/// How long a sync waits for the keeper's answer before it runs `git
/// fetch` instead (one round trip to the hub, far less than this).
pub const ASK_LIMIT: Duration = Duration::from_secs(3);

/// How long one request to the hub may take inside the keeper (its first
/// answer included) before the keeper gives up and exits.
const HUB_LIMIT: Duration = Duration::from_secs(30);

/// How long a push relayed through the keeper may take on the hub (its
/// hooks included) before the keeper gives up and exits.
const PUSH_LIMIT: Duration = Duration::from_secs(300);

/// The hub's tips of `refs` (full names) through the kept session for
/// `url`, each None when the hub has no such ref; None when there is no
/// keeper to ask or it did not answer (then run git). Never starts one.
pub fn tips(
    git_dir: &Path,
    url: &str,
    refs: &[&str],
    limit: Duration,
) -> Option<Vec<Option<String>>> {
    let socket = socket(git_dir, url)?;
    ask(&socket, url, refs, limit.min(ASK_LIMIT)).ok()
}

/// Starts a keeper for `url` when one should run and none answers: after a
/// fetch that went through git (so its ssh joins the connection that fetch
/// left open). Never fails.
pub fn ensure(git_dir: &Path, url: &str) {
    let Some(socket) = socket(git_dir, url) else {
        return;
    };
    if held(&socket, ASK_LIMIT) || refused_lately(&socket) {
        return;
    }
    let (Some(ssh), Ok(exe)) = (ssh::shared(git_dir, url), std::env::current_exe()) else {
        return;
    };
    // The hub's URL and the ssh command go through stdin, not argv: argv
    // is anyone's to read in `ps` for as long as the keeper lives.
    let spawned = Command::new(exe)
        .arg("ssh-keep")
        .arg(&socket)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
    if let Ok(mut child) = spawned {
        if let Some(mut input) = child.stdin.take() {
            let _ = input.write_all(format!("{url}\n{ssh}\n").as_bytes());
        }
        // Reaped when it exits, if this process (`loopx mcp`) is still here.
        std::thread::spawn(move || child.wait());
    }
}

/// What `loopx ssh-keep` reads on its stdin: the hub's URL and the ssh
/// command, a line each.
pub fn read_orders(input: &mut impl BufRead) -> Result<(String, String)> {
    let mut url = String::new();
    let mut ssh = String::new();
    input.read_line(&mut url)?;
    input.read_line(&mut ssh)?;
    let (Some(url), Some(ssh)) = (url.strip_suffix('\n'), ssh.strip_suffix('\n')) else {
        bail!("expected the hub's URL and the ssh command on stdin, a line each");
    };
    Ok((url.to_owned(), ssh.to_owned()))
}

/// The file a keeper leaves beside its socket when the hub would not
/// speak v2 to it.
fn refused(socket: &Path) -> PathBuf {
    let mut name = socket.as_os_str().to_owned();
    name.push(".no-v2");
    PathBuf::from(name)
}

/// Whether a keeper found, less than [`IDLE`] ago, that the hub does not
/// speak v2 over ssh.
fn refused_lately(socket: &Path) -> bool {
    std::fs::metadata(refused(socket))
        .and_then(|m| m.modified())
        .is_ok_and(|t| t.elapsed().is_ok_and(|age| age < IDLE))
}

/// Where the keeper for `url` listens, when one may run: an ssh URL whose
/// connections loopx shares itself, `loopx.sshKeep` not false, a private
/// socket directory.
fn socket(git_dir: &Path, url: &str) -> Option<PathBuf> {
    remote_command(url, UPLOAD)?;
    ssh::shared(git_dir, url)?;
    if !enabled(git_dir) {
        return None;
    }
    let dir = ssh::socket_dir(git_dir)?;
    let h = sha2::Sha256::digest(url.as_bytes());
    let name: String = h[..8].iter().map(|b| format!("{b:02x}")).collect();
    Some(dir.join(format!("k{name}")))
}

/// `git config loopx.sshKeep` (a boolean; on unless false).
fn enabled(git_dir: &Path) -> bool {
    let v = super::config_values(git_dir, "loopx.sshKeep").unwrap_or_default();
    !v.last().is_some_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "false" | "no" | "off" | "0"
        )
    })
}

/// ssh's arguments for `url` after the ssh command (`-p PORT`, the
/// destination, the remote command), as git would run `program`
/// (`git-upload-pack`, `git-receive-pack`).
fn remote_command(url: &str, program: &str) -> Option<Vec<String>> {
    let t = ssh::Target::of(url)?;
    let path = match ["ssh://", "git+ssh://", "ssh+git://"]
        .iter()
        .find_map(|p| url.strip_prefix(p))
    {
        Some(rest) => {
            let path = &rest[rest.find('/')?..];
            // `ssh://host/~user/x` is `~user/x`, as git reads it.
            path.strip_prefix('/')
                .filter(|p| p.starts_with('~'))
                .unwrap_or(path)
        }
        None => url.split_once(':').map(|(_, p)| p)?,
    };
    // git percent-decodes an `ssh://` path; no keeper rather than ask the
    // hub about another path than git's fetch does.
    if path.is_empty() || path.contains('%') {
        return None;
    }
    let mut args = vec!["-o".to_owned(), "SendEnv=GIT_PROTOCOL".to_owned()];
    if let Some(p) = &t.port {
        args.extend(["-p".to_owned(), p.clone()]);
    }
    // Nothing after this is an option to ssh.
    args.push("--".to_owned());
    args.push(match &t.user {
        Some(u) => format!("{u}@{}", t.host),
        None => t.host.clone(),
    });
    args.push(format!("{program} {}", ssh::quote(path)));
    Some(args)
}

/// One question to the keeper at `socket`: `ls-refs URL`, then the refs,
/// then an empty line. Its answer: `ok URL`, a line `OID REF` per ref the
/// hub has, an empty line.
fn ask(socket: &Path, url: &str, refs: &[&str], limit: Duration) -> Result<Vec<Option<String>>> {
    let mut s = connect(socket, limit)?;
    s.set_read_timeout(Some(limit))?;
    s.set_write_timeout(Some(limit))?;
    let mut q = format!("ls-refs {url}\n");
    for r in refs {
        if r.contains(['\n', ' ']) {
            bail!("a ref name with a space");
        }
        q.push_str(r);
        q.push('\n');
    }
    q.push('\n');
    s.write_all(q.as_bytes())?;
    let mut answer = String::new();
    s.read_to_string(&mut answer)?;
    // The whole answer ends with an empty line; anything short of it was
    // cut (a keeper that died while answering).
    let Some(body) = answer.strip_suffix("\n\n") else {
        bail!("the keeper's answer was cut short");
    };
    let mut lines = body.split('\n');
    if lines.next() != Some(&format!("ok {url}")) {
        bail!("the keeper did not answer for {url}");
    }
    let mut found = Vec::new();
    for l in lines {
        let (oid, name) = l.split_once(' ').context("a malformed answer")?;
        if oid.len() < 40 || !oid.bytes().all(|b| b.is_ascii_hexdigit()) {
            bail!("a malformed object id");
        }
        found.push((name.to_owned(), oid.to_owned()));
    }
    Ok(refs
        .iter()
        .map(|r| found.iter().find(|(n, _)| n == r).map(|(_, o)| o.clone()))
        .collect())
}

/// Connects to the keeper's socket, giving up after `limit`: a connect
/// to a unix socket whose keeper stopped accepting waits once its backlog
/// is full, and std has no timeout for it (the waiting thread is left
/// behind; it ends when the keeper goes).
fn connect(socket: &Path, limit: Duration) -> Result<UnixStream> {
    let (tx, rx) = std::sync::mpsc::channel();
    let path = socket.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(UnixStream::connect(path));
    });
    match rx.recv_timeout(limit) {
        Ok(s) => Ok(s?),
        Err(_) => bail!("the keeper did not accept within {limit:?}"),
    }
}

/// Whether a keeper holds `socket`: it accepts, or it does not accept
/// within `limit` (its backlog is full: alive but busy, as while it relays
/// a long push). Only a refused or missing socket is no keeper.
fn held(socket: &Path, limit: Duration) -> bool {
    match connect(socket, limit) {
        Ok(_) => true,
        Err(e) => e.downcast_ref::<std::io::Error>().is_none(),
    }
}

/// The programs a keeper's sessions run on the hub.
const UPLOAD: &str = "git-upload-pack";
const RECEIVE: &str = "git-receive-pack";

/// `loopx ssh-keep SOCKET` (URL and SSH on its stdin): the keeper itself. Returns when it
/// could not start (the hub does not speak v2 over ssh, another keeper
/// listens); else it exits the process when idle, when its waiting
/// session ends (the shared connection went, the hub closed it), or when
/// the hub does not answer.
///
/// Each session answers one question, then the keeper opens the next one
/// and waits with it: git's `upload-pack` reads refs once and keeps them in
/// memory for its life, so a session asked twice would answer the second
/// time with the refs as they were at the first. Opening the next session
/// (3 exchanges) happens after the answer went out, off any sync's way.
pub fn serve(socket: &Path, url: &str, ssh_command: &str, lead: bool) -> Result<()> {
    let line = |program: &str| -> Result<String> {
        let args = remote_command(url, program).context("not an ssh URL")?;
        Ok(std::iter::once(ssh_command.to_owned())
            .chain(args.iter().map(|a| ssh::quote(a)))
            .collect::<Vec<_>>()
            .join(" "))
    };
    let (upload, receive) = (line(UPLOAD)?, line(RECEIVE)?);
    let keeper = Arc::new(Keeper {
        socket: socket.to_path_buf(),
        busy: AtomicU64::new(now_ms()),
        idle: AtomicU64::new(now_ms()),
        mine: Mutex::new(None),
        waiting: Mutex::new(None),
        pushing: Mutex::new(None),
        opening: AtomicBool::new(false),
        receive,
        lead,
        started: AtomicBool::new(false),
        questions: AtomicU64::new(0),
        pushes: AtomicU64::new(0),
        relaying: AtomicU64::new(0),
        no_push: AtomicBool::new(false),
    });
    watch(&keeper);
    let session = match Session::open(&upload) {
        Ok(s) => s,
        Err(e) => {
            // Not v2 (the hub's sshd does not accept GIT_PROTOCOL): no
            // keeper for a while, rather than one refused every sync. Any
            // other failure (the network, a login) only ends this keeper:
            // the next fetch starts another.
            if e.downcast_ref::<NotV2>().is_some() {
                let _ = std::fs::write(refused(socket), format!("{e:#}\n"));
            }
            keeper.busy.store(0, Ordering::SeqCst);
            return Err(e);
        }
    };
    *keeper.waiting.lock().unwrap_or_else(|e| e.into_inner()) = Some(session);
    keeper.busy.store(0, Ordering::SeqCst);
    // Else another keeper listens there.
    let Ok(listener) = listen(socket) else {
        keeper.exit(1)
    };
    keeper.started.store(true, Ordering::SeqCst);
    let _ = std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600));
    if let Ok(m) = std::fs::symlink_metadata(socket) {
        *keeper.mine.lock().unwrap_or_else(|e| e.into_inner()) = Some((m.dev(), m.ino()));
    }
    // The push session, off the way of the first question.
    keeper.open_push();
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        keeper.idle.store(now_ms(), Ordering::SeqCst);
        let _ = conn.set_read_timeout(Some(ASK_LIMIT));
        let _ = conn.set_write_timeout(Some(ASK_LIMIT));
        let mut conn = BufReader::new(conn);
        match question(&mut conn, url) {
            Ok(Question::LsRefs(refs)) => {
                keeper.questions.fetch_add(1, Ordering::SeqCst);
                answer_ls_refs(&keeper, conn.get_mut(), url, &refs, &upload);
            }
            Ok(Question::Push(commands)) => push::serve(&keeper, &mut conn, &commands),
            Ok(Question::Status) => {
                let ready = keeper
                    .pushing
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .is_some();
                let _ = conn.get_mut().write_all(
                    format!(
                        "ok ls-refs={} pushes={} push-ready={}\n",
                        keeper.questions.load(Ordering::SeqCst),
                        keeper.pushes.load(Ordering::SeqCst),
                        u8::from(ready)
                    )
                    .as_bytes(),
                );
            }
            Err(_) => {
                let _ = conn.get_mut().write_all(b"error\n");
            }
        }
        keeper.idle.store(now_ms(), Ordering::SeqCst);
    }
    Ok(())
}

/// Answers an `ls-refs` question on the waiting upload-pack session, then
/// opens the next one.
fn answer_ls_refs(
    keeper: &Keeper,
    conn: &mut UnixStream,
    url: &str,
    refs: &[String],
    upload: &str,
) {
    let taken = keeper
        .waiting
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    let Some(mut session) = taken else {
        let _ = conn.write_all(b"error\n");
        keeper.exit(1);
    };
    keeper.busy.store(now_ms(), Ordering::SeqCst);
    let answer = session.ls_refs(refs);
    session.close();
    let Ok(found) = answer else {
        let _ = conn.write_all(b"error\n");
        keeper.exit(1);
    };
    let mut a = format!("ok {url}\n");
    for (oid, name) in found {
        a.push_str(&format!("{oid} {name}\n"));
    }
    a.push('\n');
    let _ = conn.write_all(a.as_bytes());
    let _ = conn.shutdown(std::net::Shutdown::Both);
    // The next question's session, opened now.
    match Session::open(upload) {
        Ok(next) => *keeper.waiting.lock().unwrap_or_else(|e| e.into_inner()) = Some(next),
        Err(_) => keeper.exit(1),
    }
    keeper.busy.store(0, Ordering::SeqCst);
}

/// What the keeper's threads share.
struct Keeper {
    socket: PathBuf,
    /// When the current request to the hub began (ms), 0 when none runs.
    busy: AtomicU64,
    /// When the last question came (ms).
    idle: AtomicU64,
    /// The socket's device and inode once bound: removed on exit only if
    /// it is still this keeper's.
    mine: Mutex<Option<(u64, u64)>>,
    /// The session that answers the next question.
    waiting: Mutex<Option<Session>>,
    /// The receive-pack session that takes the next push, when one is
    /// ready.
    pushing: Mutex<Option<push::Session>>,
    /// Whether a receive-pack session is being opened.
    opening: AtomicBool,
    /// The shell line that opens a receive-pack session.
    receive: String,
    /// Whether the keeper leads its own process group (as `loopx ssh-keep`
    /// started by [`ensure`] does): every ssh it started is then in it.
    lead: bool,
    /// Whether it listens (else its watch never exits the process: a
    /// keeper that could not start returns instead).
    started: AtomicBool,
    /// How many `ls-refs` questions it took and pushes it sent to the hub
    /// (`status`).
    questions: AtomicU64,
    pushes: AtomicU64,
    /// When the push being relayed went to the hub (ms), 0 when none: the
    /// hub's hooks may take their time (the asker's own limit is
    /// `loopx.syncTimeout`), so a push hangs only past [`PUSH_LIMIT`].
    relaying: AtomicU64,
    /// Set once the hub's receive-pack lacked what a push through the
    /// keeper needs: pushes go through git from then on.
    no_push: AtomicBool,
}

impl Keeper {
    fn exit(&self, code: i32) -> ! {
        leave(&self.socket, &self.mine);
        // Every ssh it started is killed, not only left to its stdin
        // closing (after a hung hub it might not read it): the waiting
        // sessions, one taken out for a request, one being closed.
        let waiting = self
            .waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(Session { mut child, .. }) = waiting {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(s) = self
            .pushing
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            s.kill();
        }
        if self.lead {
            // The whole group, this keeper with it.
            let _ = rustix::process::kill_process_group(
                rustix::process::getpid(),
                rustix::process::Signal::KILL,
            );
        }
        std::process::exit(code)
    }

    /// Opens the next receive-pack session in the background, unless one
    /// is open or being opened.
    fn open_push(self: &Arc<Self>) {
        if self.no_push.load(Ordering::SeqCst) || self.opening.swap(true, Ordering::SeqCst) {
            return;
        }
        let k = Arc::clone(self);
        std::thread::spawn(move || {
            let ready = k
                .pushing
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_some();
            if !ready && let Ok(s) = push::Session::open(&k.receive) {
                *k.pushing.lock().unwrap_or_else(|e| e.into_inner()) = Some(s);
            }
            k.opening.store(false, Ordering::SeqCst);
        });
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |d| d.as_millis() as u64)
        .max(1)
}

/// Exits the keeper when its waiting session ends, when a request to the
/// hub hangs past [`HUB_LIMIT`], and when nobody asked for [`IDLE`]. A
/// receive-pack session that ended (the hub closed it) is dropped; the
/// next push opens another.
fn watch(keeper: &Arc<Keeper>) {
    let k = Arc::clone(keeper);
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(Duration::from_millis(200));
            let now = now_ms();
            let b = k.busy.load(Ordering::SeqCst);
            let p = k.relaying.load(Ordering::SeqCst);
            let hung = (b != 0 && now.saturating_sub(b) > HUB_LIMIT.as_millis() as u64)
                || (p != 0 && now.saturating_sub(p) > PUSH_LIMIT.as_millis() as u64);
            if !k.started.load(Ordering::SeqCst) {
                if b == 0 {
                    // It never started (and returned), or is about to.
                    if Arc::strong_count(&k) == 1 {
                        return;
                    }
                    continue;
                }
                if hung {
                    k.exit(1);
                }
                continue;
            }
            let quiet = now.saturating_sub(k.idle.load(Ordering::SeqCst)) > IDLE.as_millis() as u64;
            let ended = k
                .waiting
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_mut()
                .is_some_and(|s| !matches!(s.child.try_wait(), Ok(None)));
            // A push being relayed is seen to its end (its answer is the
            // asker's) before an ended question session stops the keeper.
            if hung || quiet || (ended && p == 0) {
                k.exit(0);
            }
            let mut pushing = k.pushing.lock().unwrap_or_else(|e| e.into_inner());
            if pushing.as_mut().is_some_and(|s| !s.alive())
                && let Some(s) = pushing.take()
            {
                s.close();
            }
        }
    });
}

/// Removes the keeper's socket, if it is still the one it bound (a newer
/// keeper may have replaced a socket it found dead).
fn leave(socket: &Path, mine: &Mutex<Option<(u64, u64)>>) {
    let ours = *mine.lock().unwrap_or_else(|e| e.into_inner());
    if let (Some((dev, ino)), Ok(m)) = (ours, std::fs::symlink_metadata(socket))
        && m.dev() == dev
        && m.ino() == ino
    {
        let _ = std::fs::remove_file(socket);
    }
}

/// Binds `socket`, replacing a dead keeper's; an error when a live one
/// answers there. Two keepers that both found the socket dead take turns
/// under a lock beside it (`SOCKET.lock`): else the second could remove
/// the socket the first had just bound, and the first would listen on a
/// name nobody can reach until it idled out.
fn listen(socket: &Path) -> Result<UnixListener> {
    let mut name = socket.as_os_str().to_owned();
    name.push(".lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(PathBuf::from(name))
        .context("the keeper's lock")?;
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
        .context("locking the keeper's lock")?;
    match UnixListener::bind(socket) {
        Ok(l) => Ok(l),
        Err(_) if held(socket, ASK_LIMIT) => bail!("a keeper already listens"),
        Err(_) => {
            let _ = std::fs::remove_file(socket);
            Ok(UnixListener::bind(socket)?)
        }
    }
}

/// A question to the keeper.
#[derive(Debug, PartialEq, Eq)]
enum Question {
    /// `ls-refs URL`, then ref names, an empty line.
    LsRefs(Vec<String>),
    /// `push URL`, then `OLD NEW REF` lines, an empty line.
    Push(Vec<(String, String, String)>),
    /// `status URL`: what it was asked and whether a push session is
    /// ready (for tests and people looking).
    Status,
}

/// Reads one question for this keeper's URL.
fn question(r: &mut impl BufRead, url: &str) -> Result<Question> {
    let mut first = String::new();
    r.read_line(&mut first)?;
    let first = first.trim_end_matches('\n');
    if first == format!("push {url}") {
        return Ok(Question::Push(push::commands(r)?));
    }
    if first == format!("status {url}") {
        return Ok(Question::Status);
    }
    if first != format!("ls-refs {url}") {
        bail!("a question for another URL");
    }
    let mut refs = Vec::new();
    while let Some(l) = block_line(r)? {
        if !l.starts_with("refs/") || l.contains([' ', '\0']) || refs.len() >= 1000 {
            bail!("not a ref name");
        }
        refs.push(l);
    }
    Ok(Question::LsRefs(refs))
}

/// The next line of a block of lines that ends with an empty one (the
/// socket's questions and answers): None at that empty line, an error when
/// the stream ends first.
fn block_line(r: &mut impl BufRead) -> Result<Option<String>> {
    let mut l = String::new();
    if r.read_line(&mut l)? == 0 {
        bail!("cut short");
    }
    l.truncate(l.trim_end_matches('\n').len());
    Ok((!l.is_empty()).then_some(l))
}

/// Runs `line` (ssh and its arguments) through the shell, with
/// `GIT_PROTOCOL` set to `protocol` (else unset): its pipes.
fn spawn(line: &str, protocol: Option<&str>) -> Result<(Child, ChildStdin, ChildStdout)> {
    let mut c = Command::new("sh");
    c.arg("-c").arg(line);
    match protocol {
        Some(p) => c.env("GIT_PROTOCOL", p),
        None => c.env_remove("GIT_PROTOCOL"),
    };
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("starting ssh")?;
    let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        bail!("no pipes to ssh");
    };
    Ok((child, input, output))
}

/// Reaps a session's ssh in the background (its stdin already closed),
/// killing it if it outlives [`HUB_LIMIT`].
fn reap(mut child: Child) {
    std::thread::spawn(move || {
        let started = std::time::Instant::now();
        while matches!(child.try_wait(), Ok(None)) {
            if started.elapsed() > HUB_LIMIT {
                let _ = child.kill();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
}

/// The hub answered, but not in protocol v2 (its sshd does not pass
/// `GIT_PROTOCOL` on): the one failure that keeps keepers off a while.
#[derive(Debug)]
struct NotV2;

impl std::fmt::Display for NotV2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the hub did not answer in protocol v2")
    }
}

impl std::error::Error for NotV2 {}

/// One `git-upload-pack` session on the hub, in protocol v2, for one
/// question.
struct Session {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    /// The object format the hub advertised, sent back with each request.
    format: Option<String>,
}

/// A pkt-line as read: data, or one of the special packets.
#[derive(Debug, PartialEq, Eq)]
enum Pkt {
    Data(Vec<u8>),
    Flush,
    Delim,
    End,
}

impl Session {
    /// Runs `line` (ssh and its arguments) through the shell with
    /// `GIT_PROTOCOL=version=2` and reads the hub's advertisement.
    fn open(line: &str) -> Result<Session> {
        let (child, input, output) = spawn(line, Some("version=2"))?;
        let mut s = Session {
            child,
            input,
            output: BufReader::new(output),
            format: None,
        };
        if let Err(e) = s.advertisement() {
            s.close();
            return Err(e);
        }
        Ok(s)
    }

    /// Ends the session (upload-pack reads the end of its input and exits)
    /// and reaps it in the background.
    fn close(self) {
        let Session { child, input, .. } = self;
        drop(input);
        reap(child);
    }

    /// Reads the v2 capability advertisement; an error when the hub
    /// answers anything else (v0's ref list: [`NotV2`]) or lacks `ls-refs`.
    fn advertisement(&mut self) -> Result<()> {
        let first = read_pkt(&mut self.output)?;
        if first != Pkt::Data(b"version 2\n".to_vec()) {
            return Err(NotV2.into());
        }
        let mut ls_refs = false;
        loop {
            match read_pkt(&mut self.output)? {
                Pkt::Flush => break,
                Pkt::Data(d) => {
                    let l = String::from_utf8_lossy(&d);
                    let l = l.trim_end_matches('\n');
                    if l == "ls-refs" || l.starts_with("ls-refs=") {
                        ls_refs = true;
                    }
                    if let Some(f) = l.strip_prefix("object-format=") {
                        self.format = Some(f.to_owned());
                    }
                }
                _ => bail!("an unexpected packet in the advertisement"),
            }
        }
        if !ls_refs {
            bail!("the hub offers no ls-refs");
        }
        Ok(())
    }

    /// One `ls-refs` request for exactly `refs`: each `(oid, name)` the hub has.
    fn ls_refs(&mut self, refs: &[String]) -> Result<Vec<(String, String)>> {
        let mut req = pkt("command=ls-refs\n");
        if let Some(f) = &self.format {
            req.extend(pkt(&format!("object-format={f}\n")));
        }
        req.extend_from_slice(b"0001");
        for r in refs {
            req.extend(pkt(&format!("ref-prefix {r}\n")));
        }
        req.extend_from_slice(b"0000");
        self.input.write_all(&req)?;
        self.input.flush()?;
        let mut found = Vec::new();
        loop {
            match read_pkt(&mut self.output)? {
                Pkt::Flush => return Ok(found),
                Pkt::Data(d) => {
                    let l = String::from_utf8_lossy(&d);
                    let mut words = l.trim_end_matches('\n').split(' ');
                    let (Some(oid), Some(name)) = (words.next(), words.next()) else {
                        bail!("a malformed ls-refs line");
                    };
                    // ref-prefix matches prefixes; keep the exact names.
                    if refs.iter().any(|r| r == name) {
                        found.push((oid.to_owned(), name.to_owned()));
                    }
                }
                other => bail!("an unexpected packet: {other:?}"),
            }
        }
    }
}

/// `s` as a pkt-line.
fn pkt(s: &str) -> Vec<u8> {
    let mut v = format!("{:04x}", s.len() + 4).into_bytes();
    v.extend_from_slice(s.as_bytes());
    v
}

fn read_pkt(r: &mut impl Read) -> Result<Pkt> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let n = usize::from_str_radix(std::str::from_utf8(&len)?, 16)?;
    Ok(match n {
        0 => Pkt::Flush,
        1 => Pkt::Delim,
        2 => Pkt::End,
        3 => bail!("a malformed pkt-line length"),
        n => {
            let mut d = vec![0u8; n - 4];
            r.read_exact(&mut d)?;
            Pkt::Data(d)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_remote_command_is_what_git_runs_for_upload_pack() {
        assert_eq!(
            remote_command("ssh://git@hub.example:2222/srv/team.git", UPLOAD).unwrap(),
            [
                "-o",
                "SendEnv=GIT_PROTOCOL",
                "-p",
                "2222",
                "--",
                "git@hub.example",
                "git-upload-pack '/srv/team.git'"
            ]
        );
        assert_eq!(
            remote_command("ssh://hub/~me/team.git", RECEIVE).unwrap(),
            [
                "-o",
                "SendEnv=GIT_PROTOCOL",
                "--",
                "hub",
                "git-receive-pack '~me/team.git'"
            ]
        );
        assert_eq!(
            remote_command("git@github.com:team/it's.git", UPLOAD).unwrap(),
            [
                "-o",
                "SendEnv=GIT_PROTOCOL",
                "--",
                "git@github.com",
                r"git-upload-pack 'team/it'\''s.git'"
            ]
        );
        assert_eq!(remote_command("https://hub.example/team.git", UPLOAD), None);
        assert_eq!(remote_command("ssh://hub", UPLOAD), None);
        assert_eq!(remote_command("ssh://hub/team%20x.git", UPLOAD), None);
    }

    #[test]
    fn pkt_lines_round_trip_and_special_packets_are_told_apart() {
        let mut bytes = pkt("version 2\n");
        bytes.extend_from_slice(b"000100000002");
        let mut r = &bytes[..];
        assert_eq!(
            read_pkt(&mut r).unwrap(),
            Pkt::Data(b"version 2\n".to_vec())
        );
        assert_eq!(read_pkt(&mut r).unwrap(), Pkt::Delim);
        assert_eq!(read_pkt(&mut r).unwrap(), Pkt::Flush);
        assert_eq!(read_pkt(&mut r).unwrap(), Pkt::End);
        assert!(read_pkt(&mut &b"0003"[..]).is_err());
        assert!(read_pkt(&mut &b"zzzz"[..]).is_err());
    }

    /// Keepers that find the same dead keeper's socket take turns: one
    /// listens, on the name the socket has, and the others give up (never
    /// one left listening on a socket another removed).
    #[test]
    fn keepers_racing_for_a_stale_socket_leave_one_listening_where_it_is_found() {
        let tmp = tempfile::tempdir().unwrap();
        let sock = tmp.path().join("k");
        for _ in 0..300 {
            let _ = std::fs::remove_file(&sock);
            drop(UnixListener::bind(&sock).unwrap());
            // A child another test forks at this moment holds a copy of the
            // listener until it execs: wait until the socket is stale.
            let stale = (0..400).any(|_| {
                let dead = UnixStream::connect(&sock).is_err();
                if !dead {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                dead
            });
            assert!(stale, "a stale socket");
            let gate = std::sync::Barrier::new(8);
            let won: Vec<UnixListener> = std::thread::scope(|s| {
                let hs: Vec<_> = (0..8)
                    .map(|_| {
                        s.spawn(|| {
                            gate.wait();
                            listen(&sock).ok()
                        })
                    })
                    .collect();
                hs.into_iter().filter_map(|h| h.join().unwrap()).collect()
            });
            assert_eq!(won.len(), 1);
            let _c = UnixStream::connect(&sock).unwrap();
            won[0].set_nonblocking(true).unwrap();
            assert!(
                won[0].accept().is_ok(),
                "the one listening is the one found"
            );
            drop(won);
        }
    }

    /// Only a hub that answers in v0 keeps keepers off for a while; a
    /// failure to reach it (here an ssh that exits at once) does not.
    #[test]
    fn only_a_v0_answer_leaves_the_note_that_keeps_keepers_off() {
        let tmp = tempfile::tempdir().unwrap();
        let sock = tmp.path().join("k");
        assert!(serve(&sock, "ssh://h/x", "false", false).is_err());
        assert!(!refused(&sock).exists());
        assert!(!refused_lately(&sock));
        let v0 = String::from_utf8(pkt(&format!(
            "{} refs/heads/main\0multi_ack\n",
            "a".repeat(40)
        )))
        .unwrap()
        .replace('\0', "\\0");
        let ssh = format!("printf '{v0}0000'; :");
        let e = serve(&sock, "ssh://h/x", &ssh, false).unwrap_err();
        assert!(e.downcast_ref::<NotV2>().is_some(), "{e:#}");
        assert!(refused_lately(&sock));
    }

    /// A keeper that stopped accepting (stopped, hung) with its backlog
    /// full: a question gives up instead of waiting in `connect` forever.
    #[test]
    fn a_question_to_a_keeper_whose_backlog_is_full_gives_up() {
        let somaxconn: usize = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(4096);
        let files = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
        if files.is_some_and(|n| n < 2 * somaxconn as u64 + 256) {
            // Too few file descriptors here to fill a socket's backlog.
            #[allow(clippy::print_stderr)]
            {
                eprintln!("skipped: too few file descriptors to fill a socket's backlog");
            }
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let sock = tmp.path().join("k");
        let l = UnixListener::bind(&sock).unwrap();
        let made = Arc::new(AtomicU64::new(0));
        let filler = {
            let (sock, made) = (sock.clone(), Arc::clone(&made));
            std::thread::spawn(move || {
                let mut held = Vec::new();
                // Blocks once the backlog is full; ends when the listener goes.
                while let Ok(s) = UnixStream::connect(&sock) {
                    held.push(s);
                    made.fetch_add(1, Ordering::SeqCst);
                }
            })
        };
        // Until the filler stops getting through (a bound, not a timing).
        let mut last = u64::MAX;
        while made.load(Ordering::SeqCst) != last {
            last = made.load(Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(300));
        }
        let refs = ["refs/loopx/state"];
        assert!(ask(&sock, "ssh://h/x", &refs, Duration::from_millis(500)).is_err());
        drop(l);
        let _ = std::fs::remove_file(&sock);
        filler.join().unwrap();
    }

    /// A keeper's socket, served here by a thread that answers like one:
    /// the client reads the answer for its URL only, per ref, and treats a
    /// cut answer, another URL or silence as no answer.
    #[test]
    fn a_question_gets_each_refs_tip_and_anything_odd_is_no_answer() {
        let tmp = tempfile::tempdir().unwrap();
        let sock = tmp.path().join("k");
        let l = UnixListener::bind(&sock).unwrap();
        let oid = "a".repeat(40);
        let answers = [
            format!("ok ssh://h/x\n{oid} refs/loopx/state\n\n"),
            format!("ok ssh://h/y\n{oid} refs/loopx/state\n\n"),
            format!("ok ssh://h/x\n{oid} refs/loopx/state\n"),
            "error\n".to_owned(),
        ];
        let server = std::thread::spawn(move || {
            for a in answers {
                let (c, _) = l.accept().unwrap();
                let mut c = BufReader::new(c);
                let q = question(&mut c, "ssh://h/x").unwrap();
                let want = ["refs/loopx/state", "refs/loopx/goal/g"].map(str::to_owned);
                assert_eq!(q, Question::LsRefs(want.to_vec()));
                c.get_mut().write_all(a.as_bytes()).unwrap();
            }
        });
        let refs = ["refs/loopx/state", "refs/loopx/goal/g"];
        let limit = Duration::from_secs(5);
        assert_eq!(
            ask(&sock, "ssh://h/x", &refs, limit).unwrap(),
            [Some(oid.clone()), None]
        );
        for _ in 0..3 {
            assert!(ask(&sock, "ssh://h/x", &refs, limit).is_err());
        }
        server.join().unwrap();
        // Nobody listening (a dead keeper's socket): no answer.
        assert!(ask(&sock, "ssh://h/x", &refs, limit).is_err());
    }
}
