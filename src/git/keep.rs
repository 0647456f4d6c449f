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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use sha2::Digest;

use super::ssh;

/// How long a keeper waits for a question before it exits: the shared
/// connection's own `ControlPersist`.
pub const IDLE: Duration = Duration::from_secs(300);

/// How long a sync waits for the keeper's answer before it runs `git
/// fetch` instead (one round trip to the hub, far less than this).
pub const ASK_LIMIT: Duration = Duration::from_secs(3);

/// How long one request to the hub may take inside the keeper (its first
/// answer included) before the keeper gives up and exits.
const HUB_LIMIT: Duration = Duration::from_secs(30);

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
    if UnixStream::connect(&socket).is_ok() || refused_lately(&socket) {
        return;
    }
    let (Some(ssh), Ok(exe)) = (ssh::shared(git_dir, url), std::env::current_exe()) else {
        return;
    };
    let spawned = Command::new(exe)
        .arg("ssh-keep")
        .arg(&socket)
        .arg(url)
        .arg(&ssh)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
    if let Ok(mut child) = spawned {
        // Reaped when it exits, if this process (`loopx mcp`) is still here.
        std::thread::spawn(move || child.wait());
    }
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
    remote_command(url)?;
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
/// destination, the remote command), as git would run `git-upload-pack`.
fn remote_command(url: &str) -> Option<Vec<String>> {
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
    args.push(format!("git-upload-pack {}", ssh::quote(path)));
    Some(args)
}

/// One question to the keeper at `socket`: `ls-refs URL`, then the refs,
/// then an empty line. Its answer: `ok URL`, a line `OID REF` per ref the
/// hub has, an empty line.
fn ask(socket: &Path, url: &str, refs: &[&str], limit: Duration) -> Result<Vec<Option<String>>> {
    let mut s = UnixStream::connect(socket)?;
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

/// `loopx ssh-keep SOCKET URL SSH`: the keeper itself. Returns when it
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
pub fn serve(socket: &Path, url: &str, ssh_command: &str) -> Result<()> {
    let args = remote_command(url).context("not an ssh URL")?;
    let line = std::iter::once(ssh_command.to_owned())
        .chain(args.iter().map(|a| ssh::quote(a)))
        .collect::<Vec<_>>()
        .join(" ");
    let keeper = Arc::new(Keeper {
        socket: socket.to_path_buf(),
        busy: AtomicU64::new(now_ms()),
        idle: AtomicU64::new(now_ms()),
        mine: Mutex::new(None),
        waiting: Mutex::new(None),
    });
    watch(&keeper);
    let session = match Session::open(&line) {
        Ok(s) => s,
        Err(e) => {
            // Not v2 (the hub's sshd does not accept GIT_PROTOCOL): no
            // keeper for a while, rather than one refused every sync.
            let _ = std::fs::write(refused(socket), format!("{e:#}\n"));
            return Err(e);
        }
    };
    *keeper.waiting.lock().unwrap_or_else(|e| e.into_inner()) = Some(session);
    keeper.busy.store(0, Ordering::SeqCst);
    let listener = listen(socket)?;
    let _ = std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600));
    if let Ok(m) = std::fs::symlink_metadata(socket) {
        *keeper.mine.lock().unwrap_or_else(|e| e.into_inner()) = Some((m.dev(), m.ino()));
    }
    for conn in listener.incoming() {
        let Ok(mut conn) = conn else { continue };
        keeper.idle.store(now_ms(), Ordering::SeqCst);
        let _ = conn.set_read_timeout(Some(ASK_LIMIT));
        let _ = conn.set_write_timeout(Some(ASK_LIMIT));
        let Ok(refs) = question(&mut conn, url) else {
            let _ = conn.write_all(b"error\n");
            continue;
        };
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
        let answer = session.ls_refs(&refs);
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
        drop(conn);
        // The next question's session, opened now.
        match Session::open(&line) {
            Ok(next) => *keeper.waiting.lock().unwrap_or_else(|e| e.into_inner()) = Some(next),
            Err(_) => keeper.exit(1),
        }
        keeper.busy.store(0, Ordering::SeqCst);
        keeper.idle.store(now_ms(), Ordering::SeqCst);
    }
    Ok(())
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
}

impl Keeper {
    fn exit(&self, code: i32) -> ! {
        leave(&self.socket, &self.mine);
        // The waiting session's ssh is killed and reaped, not only left to
        // its stdin closing: after a hung hub it might not read it.
        let waiting = self
            .waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(Session { mut child, .. }) = waiting {
            let _ = child.kill();
            let _ = child.wait();
        }
        std::process::exit(code)
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |d| d.as_millis() as u64)
        .max(1)
}

/// Exits the keeper when its waiting session ends, when a request to the
/// hub hangs past [`HUB_LIMIT`], and when nobody asked for [`IDLE`].
fn watch(keeper: &Arc<Keeper>) {
    let k = Arc::clone(keeper);
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(Duration::from_millis(200));
            let now = now_ms();
            let b = k.busy.load(Ordering::SeqCst);
            let hung = b != 0 && now.saturating_sub(b) > HUB_LIMIT.as_millis() as u64;
            let quiet = now.saturating_sub(k.idle.load(Ordering::SeqCst)) > IDLE.as_millis() as u64;
            let ended = k
                .waiting
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_mut()
                .is_some_and(|s| !matches!(s.child.try_wait(), Ok(None)));
            if hung || quiet || ended {
                k.exit(0);
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
/// answers there.
fn listen(socket: &Path) -> Result<UnixListener> {
    match UnixListener::bind(socket) {
        Ok(l) => Ok(l),
        Err(_) if UnixStream::connect(socket).is_ok() => bail!("a keeper already listens"),
        Err(_) => {
            let _ = std::fs::remove_file(socket);
            Ok(UnixListener::bind(socket)?)
        }
    }
}

/// Reads one question: `ls-refs URL` for this keeper's URL, ref names,
/// an empty line.
fn question(conn: &mut UnixStream, url: &str) -> Result<Vec<String>> {
    let mut r = BufReader::new(conn);
    let mut first = String::new();
    r.read_line(&mut first)?;
    if first.trim_end_matches('\n') != format!("ls-refs {url}") {
        bail!("a question for another URL");
    }
    let mut refs = Vec::new();
    loop {
        let mut l = String::new();
        if r.read_line(&mut l)? == 0 {
            bail!("cut short");
        }
        let l = l.trim_end_matches('\n');
        if l.is_empty() {
            return Ok(refs);
        }
        if !l.starts_with("refs/") || l.contains([' ', '\0']) || refs.len() >= 1000 {
            bail!("not a ref name");
        }
        refs.push(l.to_owned());
    }
}

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
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(line)
            .env("GIT_PROTOCOL", "version=2")
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
        let Session {
            mut child, input, ..
        } = self;
        drop(input);
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

    /// Reads the v2 capability advertisement; an error when the hub
    /// answers anything else (v0's ref list) or lacks `ls-refs`.
    fn advertisement(&mut self) -> Result<()> {
        let first = read_pkt(&mut self.output)?;
        if first != Pkt::Data(b"version 2\n".to_vec()) {
            bail!("the hub did not answer in protocol v2");
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
            remote_command("ssh://git@hub.example:2222/srv/team.git").unwrap(),
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
            remote_command("ssh://hub/~me/team.git").unwrap(),
            [
                "-o",
                "SendEnv=GIT_PROTOCOL",
                "--",
                "hub",
                "git-upload-pack '~me/team.git'"
            ]
        );
        assert_eq!(
            remote_command("git@github.com:team/it's.git").unwrap(),
            [
                "-o",
                "SendEnv=GIT_PROTOCOL",
                "--",
                "git@github.com",
                r"git-upload-pack 'team/it'\''s.git'"
            ]
        );
        assert_eq!(remote_command("https://hub.example/team.git"), None);
        assert_eq!(remote_command("ssh://hub"), None);
        assert_eq!(remote_command("ssh://hub/team%20x.git"), None);
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
                let (mut c, _) = l.accept().unwrap();
                let refs = question(&mut c, "ssh://h/x");
                assert!(refs.is_ok_and(|r| r == ["refs/loopx/state", "refs/loopx/goal/g"]));
                c.write_all(a.as_bytes()).unwrap();
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
