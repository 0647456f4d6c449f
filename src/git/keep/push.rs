//! The push half of the kept ssh session (issue 28): a push in one
//! exchange on the wire.
//!
//! Through a warm shared connection, `git push` still costs three
//! exchanges (open a channel, exec and read receive-pack's advertisement,
//! send the commands and the pack and read the report). The keeper also
//! holds a `git-receive-pack` session open on the hub, its advertisement
//! already read, off any sync's way. A push through it ([`push`]):
//!
//! 1. loopx asks the keeper over its socket (`push URL`, then a line `OLD
//!    NEW REF` per ref, then an empty line); the keeper answers `ready`
//!    with the capabilities and the tips the hub advertised, or `none`
//!    (no session ready: loopx runs `git push`);
//! 2. loopx packs what the hub lacks (`git pack-objects --stdout --thin
//!    --revs`: the new tips, minus the expected old ones and, for a ref new
//!    on the hub, minus the hub's advertised tips this clone has, as git's
//!    own push does) and sends it after a line `pack LEN`;
//! 3. the keeper, once it has the whole pack (a cut one goes nowhere),
//!    says `sending`, writes the commands and the pack to the hub in one
//!    go, says `sent`, and relays the hub's answer as it comes (the report
//!    and the hook's messages, side-band multiplexed);
//! 4. loopx reads that answer into the lines `git push --porcelain` would
//!    have printed, so one parser serves both.
//!
//! The compare-and-swap stays the hub's. Each command names the old id
//! loopx expects (its last synced tip, exactly what it gives `git push
//! --force-with-lease`), and receive-pack checks it under the ref's lock
//! when it updates the ref: the advertisement the keeper read earlier is
//! never trusted for the expected tip, only used to leave objects the hub
//! has out of the pack.
//!
//! Never a wrong answer, and never two pushes at once: anything before
//! `sending` (no keeper, a stale socket, no session ready, a hub that
//! lacks `report-status` or `side-band-64k`, a failed pack, no answer
//! within [`ASK_LIMIT`]) runs `git push` instead, as if there were no
//! keeper; so does a `none` after it (the session died before the hub
//! had the whole pack, and receive-pack updates nothing without it). Once
//! the keeper says `sending`, loopx waits for it up to the push's own
//! limit however slowly the pack goes out, and a keeper that stops then,
//! or a cut or late answer after `sent`, is a [`NetworkError`], as `git
//! push`'s would be (the ref may or may not have moved; the next sync
//! finds out). Were a push to land twice anyway, the same
//! compare-and-swap holds: the second finds the ref at the new tip (git
//! reports it up to date) or refuses it as stale (a lost race: sync
//! fetches and finds its own tick there).
//!
//! Like `git push --no-verify`, no local hook runs. Settings `git push`
//! honours that this path does not speak (`push.gpgSign`,
//! `push.pushOption`) send the push through git.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::{
    ASK_LIMIT, Keeper, Pkt, block_line, connect, now_ms, pkt, read_pkt, reap, socket, spawn,
};
use crate::git::remote::{NetworkError, Push};

/// The capabilities a push through the keeper needs: the per-ref report
/// (what `--porcelain` prints) and the side band (the hook's messages).
const NEEDED: [&str; 2] = ["report-status", "side-band-64k"];

/// Pushes `pushes` to `url` through its keeper: the output `git push
/// --porcelain` would have given, or a [`NetworkError`] once the commands
/// went out; None when there is no keeper or it could not take the push
/// before sending anything (then run `git push`).
pub fn push(git_dir: &Path, url: &str, pushes: &[Push], limit: Duration) -> Option<Result<Output>> {
    // A command needs the expected old id; one already at its commit is
    // git's to call up to date.
    if pushes.is_empty()
        || pushes
            .iter()
            .any(|p| p.expected.as_deref().is_none_or(|e| e == p.commit))
    {
        return None;
    }
    let socket = socket(git_dir, url)?;
    if git_would_do_more(git_dir) {
        return None;
    }
    let started = Instant::now();
    let ask = ASK_LIMIT.min(limit);
    let mut s = connect(&socket, ask).ok()?;
    s.set_read_timeout(Some(ask)).ok()?;
    s.set_write_timeout(Some(ask)).ok()?;
    let commands: Vec<(String, String, String)> = pushes
        .iter()
        .map(|p| {
            let old = match p.expected.as_deref() {
                Some("") | None => "0".repeat(p.commit.len()),
                Some(e) => e.to_owned(),
            };
            (old, p.commit.clone(), p.dst.clone())
        })
        .collect();
    let mut q = format!("push {url}\n");
    for (old, new, dst) in &commands {
        q.push_str(&format!("{old} {new} {dst}\n"));
    }
    q.push('\n');
    s.write_all(q.as_bytes()).ok()?;
    let mut r = BufReader::new(s.try_clone().ok()?);
    let (caps, tips) = ready(&mut r).ok()?;
    let pack = pack(
        git_dir,
        &commands,
        &tips,
        caps.iter().any(|c| c == "ofs-delta"),
    )
    .ok()?;
    // The pack's length first: the keeper sends nothing to the hub
    // unless the whole pack came (a cut one would leave receive-pack
    // waiting for the rest).
    s.write_all(format!("pack {}\n", pack.len()).as_bytes())
        .ok()?;
    s.write_all(&pack).ok()?;
    s.shutdown(std::net::Shutdown::Write).ok()?;
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    if line != "sending\n" {
        return None;
    }
    // The keeper is writing to the hub, at the network's pace: wait for
    // it as long as the push may take, never run `git push` beside it.
    let left = (started + limit).saturating_duration_since(Instant::now());
    s.set_read_timeout(Some(left.max(Duration::from_millis(1))))
        .ok()?;
    line.clear();
    let sent = r.read_line(&mut line);
    if line == "none\n" {
        // Its session died before the hub had the whole pack: nothing
        // can have landed.
        return None;
    }
    if sent.is_err() || line != "sent\n" {
        return Some(Err(NetworkError {
            stderr: "the kept ssh session stopped while it sent the push: it may or may not have landed; the next sync finds out".to_owned(),
            answered: false,
        }
        .into()));
    }
    // The hub has the commands: from here on, every failure is the push's.
    let mut timed = Deadline {
        inner: r,
        stream: s,
        until: started + limit,
    };
    Some(match read_answer(&mut timed) {
        Ok(answer) => Ok(porcelain(url, &commands, &answer)),
        Err(_) if timed.passed() => Err(NetworkError {
            stderr: format!(
                "git push did not finish within {}s (git config loopx.syncTimeout sets the limit)",
                limit.as_secs()
            ),
            answered: false,
        }
        .into()),
        Err(e) => Err(NetworkError {
            stderr: format!(
                "the remote end hung up unexpectedly ({e:#}): the push may or may not have landed; the next sync finds out"
            ),
            answered: false,
        }
        .into()),
    })
}

/// Whether the user's git config asks `git push` for something this path
/// does not do: a signed push, push options.
fn git_would_do_more(git_dir: &Path) -> bool {
    let set = crate::git::config_matching(git_dir, r"^push\.(gpgsign|pushoption)$");
    match set {
        Ok(set) => set.iter().any(|(k, v)| {
            k != "push.gpgsign"
                || !matches!(
                    v.trim().to_ascii_lowercase().as_str(),
                    "false" | "no" | "off" | "0"
                )
        }),
        Err(_) => true,
    }
}

/// Reads the keeper's `ready CAPS…` line and the advertised tips after it
/// (one per line, up to an empty line).
fn ready(r: &mut impl BufRead) -> Result<(Vec<String>, Vec<String>)> {
    let mut line = String::new();
    r.read_line(&mut line)?;
    let Some(caps) = line
        .strip_suffix('\n')
        .and_then(|l| l.strip_prefix("ready"))
    else {
        bail!("the keeper has no push session ready");
    };
    let caps = caps.split_whitespace().map(str::to_owned).collect();
    let mut tips = Vec::new();
    while let Some(l) = block_line(r)? {
        if !is_oid(&l) || tips.len() > 100_000 {
            bail!("a malformed tip");
        }
        tips.push(l);
    }
    Ok((caps, tips))
}

fn is_oid(s: &str) -> bool {
    matches!(s.len(), 40 | 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The pack of what the hub lacks for `commands`: the new tips, minus the
/// expected old ones (loopx has them: its last synced tips) and, when a
/// ref is new on the hub, minus the advertised tips this clone has.
fn pack(
    git_dir: &Path,
    commands: &[(String, String, String)],
    tips: &[String],
    ofs_delta: bool,
) -> Result<Vec<u8>> {
    let zero = |o: &str| o.bytes().all(|b| b == b'0');
    let mut revs = String::new();
    for (old, new, _) in commands {
        revs.push_str(&format!("{new}\n"));
        if !zero(old) {
            revs.push_str(&format!("^{old}\n"));
        }
    }
    if commands.iter().any(|(old, _, _)| zero(old)) && !tips.is_empty() {
        for t in present(git_dir, tips)? {
            revs.push_str(&format!("^{t}\n"));
        }
    }
    let mut args = vec!["pack-objects", "--stdout", "--thin", "--revs", "-q"];
    if ofs_delta {
        args.push("--delta-base-offset");
    }
    let out = with_input(git_dir, &args, revs.into_bytes())?;
    if !out.starts_with(b"PACK") {
        bail!("git pack-objects wrote no pack");
    }
    Ok(out)
}

/// Which of `oids` this clone has (`git cat-file --batch-check`).
fn present(git_dir: &Path, oids: &[String]) -> Result<Vec<String>> {
    let mut input = oids.join("\n");
    input.push('\n');
    let out = with_input(git_dir, &["cat-file", "--batch-check"], input.into_bytes())?;
    Ok(String::from_utf8_lossy(&out)
        .lines()
        .filter(|l| !l.ends_with(" missing"))
        .filter_map(|l| l.split(' ').next())
        .filter(|o| is_oid(o))
        .map(str::to_owned)
        .collect())
}

/// `git ARGS` fed `input`: its stdout, or an error when it failed.
fn with_input(git_dir: &Path, args: &[&str], input: Vec<u8>) -> Result<Vec<u8>> {
    let mut child = crate::git::git()
        .arg("--git-dir")
        .arg(git_dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("running git {}", args.join(" ")))?;
    let mut stdin = child.stdin.take().context("no stdin")?;
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let mut out = Vec::new();
    child
        .stdout
        .take()
        .context("no stdout")?
        .read_to_end(&mut out)?;
    let status = child.wait()?;
    let wrote = writer
        .join()
        .map_err(|_| anyhow::anyhow!("the writer panicked"))?;
    if !status.success() || wrote.is_err() {
        bail!("git {} failed", args.join(" "));
    }
    Ok(out)
}

/// A reader that gives up at a deadline (each read waits at most what is
/// left).
struct Deadline<R> {
    inner: R,
    stream: UnixStream,
    until: Instant,
}

impl<R> Deadline<R> {
    fn passed(&self) -> bool {
        Instant::now() >= self.until
    }
}

impl<R: Read> Read for Deadline<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        self.stream.set_read_timeout(Some(left))?;
        self.inner.read(buf)
    }
}

/// What the hub answered to a push: its report-status and what it said
/// on the side band.
#[derive(Debug, Default, PartialEq, Eq)]
struct Answer {
    /// `unpack ok` (None) or the unpack error.
    unpack: Option<String>,
    /// Each reported ref: None when updated, else the reason (`ng`).
    refs: Vec<(String, Option<String>)>,
    /// Band 2: the hub's messages (its hooks' output), as sent.
    remote: Vec<u8>,
}

/// Reads receive-pack's answer with `side-band-64k`: band 1 carries the
/// report (pkt-lines of their own), band 2 the hub's messages, band 3 a
/// fatal error; the whole ends with a flush. Anything malformed or cut
/// short is an error.
fn read_answer(r: &mut impl Read) -> Result<Answer> {
    let mut report = Vec::new();
    let mut answer = Answer::default();
    loop {
        match read_pkt(r)? {
            Pkt::Flush => break,
            Pkt::Data(d) => match d.split_first() {
                Some((&1, rest)) => report.extend_from_slice(rest),
                Some((&2, rest)) => answer.remote.extend_from_slice(rest),
                Some((&3, rest)) => bail!("remote error: {}", String::from_utf8_lossy(rest).trim()),
                _ => bail!("a packet on no side band"),
            },
            other => bail!("an unexpected packet: {other:?}"),
        }
    }
    let mut report = &report[..];
    let Pkt::Data(first) = read_pkt(&mut report)? else {
        bail!("no unpack status");
    };
    let first = String::from_utf8_lossy(&first);
    let Some(unpack) = first.trim_end_matches('\n').strip_prefix("unpack ") else {
        bail!("no unpack status");
    };
    answer.unpack = (unpack != "ok").then(|| unpack.to_owned());
    loop {
        match read_pkt(&mut report)? {
            Pkt::Flush => break,
            Pkt::Data(d) => {
                let l = String::from_utf8_lossy(&d);
                let l = l.trim_end_matches('\n');
                if let Some(name) = l.strip_prefix("ok ") {
                    answer.refs.push((name.to_owned(), None));
                } else if let Some(rest) = l.strip_prefix("ng ") {
                    let (name, why) = rest.split_once(' ').unwrap_or((rest, "failed"));
                    answer.refs.push((name.to_owned(), Some(why.to_owned())));
                } else {
                    bail!("a malformed report line");
                }
            }
            other => bail!("an unexpected packet in the report: {other:?}"),
        }
    }
    Ok(answer)
}

/// The output `git push --porcelain` prints for `answer`: stdout's lines
/// `FLAG TAB NEW:REF TAB SUMMARY`, stderr's `remote: …` lines and its
/// closing error, the exit status.
fn porcelain(url: &str, commands: &[(String, String, String)], answer: &Answer) -> Output {
    let mut stdout = format!("To {url}\n");
    let mut stderr = String::new();
    let remote = String::from_utf8_lossy(&answer.remote);
    let remote = remote.strip_suffix('\n').unwrap_or(&remote);
    if !remote.is_empty() {
        for l in remote.split('\n') {
            stderr.push_str(&format!("remote: {l}\n"));
        }
    }
    if let Some(why) = &answer.unpack {
        stderr.push_str(&format!("error: remote unpack failed: {why}\n"));
    }
    let mut failed = false;
    for (old, new, dst) in commands {
        let reported = answer.refs.iter().find(|(n, _)| n == dst);
        let (flag, summary) = match reported {
            Some((_, None)) if old.bytes().all(|b| b == b'0') => {
                ('*', "[new reference]".to_owned())
            }
            Some((_, None)) => (' ', format!("{}..{}", &old[..7], &new[..7])),
            Some((_, Some(why))) => ('!', format!("[remote rejected] ({why})")),
            None => (
                '!',
                "[remote failure] (remote failed to report status)".to_owned(),
            ),
        };
        failed |= flag == '!';
        stdout.push_str(&format!("{flag}\t{new}:{dst}\t{summary}\n"));
    }
    stdout.push_str("Done\n");
    if failed {
        stderr.push_str(&format!("error: failed to push some refs to '{url}'\n"));
    }
    Output {
        status: std::process::ExitStatus::from_raw(if failed { 1 << 8 } else { 0 }),
        stdout: stdout.into_bytes(),
        stderr: stderr.into_bytes(),
    }
}

/// A `git-receive-pack` session on the hub, its advertisement read: the
/// capabilities and the tips (objects the hub has).
pub(super) struct Session {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    caps: Vec<String>,
    tips: Vec<String>,
}

impl Session {
    /// Runs `line` (ssh and its arguments, receive-pack as the remote
    /// command) and reads the advertisement. receive-pack speaks v0 (it
    /// has no v2), so no `GIT_PROTOCOL` goes with it.
    pub(super) fn open(line: &str) -> Result<Session> {
        let (child, input, output) = spawn(line, None)?;
        let mut s = Session {
            child,
            input,
            output: BufReader::new(output),
            caps: Vec::new(),
            tips: Vec::new(),
        };
        match advertised(&mut s.output) {
            Ok((caps, tips)) => {
                s.caps = caps;
                s.tips = tips;
                Ok(s)
            }
            Err(e) => {
                s.close();
                Err(e)
            }
        }
    }

    /// Whether its ssh is still running.
    pub(super) fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    pub(super) fn close(self) {
        let Session { child, input, .. } = self;
        drop(input);
        reap(child);
    }

    /// Kills its ssh at once (the keeper's exit).
    pub(super) fn kill(self) {
        let Session { mut child, .. } = self;
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// receive-pack's advertisement: `OID REF\0CAPS` first (an empty
/// repository's is `capabilities^{}` with a zero id), then `OID REF` per
/// ref (`.have` for an alternate's), a flush. `version 1` may come first.
fn advertised(r: &mut impl Read) -> Result<(Vec<String>, Vec<String>)> {
    let mut caps = None;
    let mut tips: Vec<String> = Vec::new();
    loop {
        let d = match read_pkt(r)? {
            Pkt::Flush if caps.is_some() => break,
            Pkt::Data(d) => d,
            other => bail!("an unexpected packet in the advertisement: {other:?}"),
        };
        if caps.is_none() && d == b"version 1\n" {
            continue;
        }
        let (line, offered) = match d.iter().position(|b| *b == 0) {
            Some(i) => (&d[..i], Some(&d[i + 1..])),
            None => (&d[..], None),
        };
        match (caps.is_none(), offered) {
            (true, Some(c)) => {
                caps = Some(
                    String::from_utf8_lossy(c)
                        .split_whitespace()
                        .map(str::to_owned)
                        .collect::<Vec<_>>(),
                );
            }
            (false, None) => {}
            _ => bail!("the advertisement's capabilities are not on its first line"),
        }
        let line = String::from_utf8_lossy(line);
        let Some((oid, _name)) = line.trim_end_matches('\n').split_once(' ') else {
            bail!("a malformed advertisement line");
        };
        if !is_oid(oid) {
            bail!("the hub did not answer as receive-pack (protocol v0)");
        }
        if !oid.bytes().all(|b| b == b'0') && !tips.iter().any(|t| t == oid) {
            tips.push(oid.to_owned());
        }
    }
    Ok((caps.unwrap_or_default(), tips))
}

/// The commands receive-pack reads: `OLD NEW REF` per ref as pkt-lines,
/// the first one with the capabilities asked for (only ones `offered`),
/// then a flush. None when the hub lacks one this path needs.
fn request(commands: &[(String, String, String)], offered: &[String]) -> Option<Vec<u8>> {
    let has = |c: &str| offered.iter().any(|o| o == c);
    if !NEEDED.iter().all(|c| has(c)) {
        return None;
    }
    let mut asked: Vec<String> = NEEDED.iter().map(|c| (*c).to_owned()).collect();
    if has("quiet") {
        asked.push("quiet".to_owned());
    }
    if let Some(f) = offered.iter().find(|o| o.starts_with("object-format=")) {
        asked.push(f.clone());
    }
    if offered.iter().any(|o| o.starts_with("agent=")) {
        asked.push(format!("agent=loopx/{}", env!("CARGO_PKG_VERSION")));
    }
    let mut req = Vec::new();
    for (i, (old, new, dst)) in commands.iter().enumerate() {
        let line = if i == 0 {
            format!("{old} {new} {dst}\0{}\n", asked.join(" "))
        } else {
            format!("{old} {new} {dst}\n")
        };
        req.extend(pkt(&line));
    }
    req.extend_from_slice(b"0000");
    Some(req)
}

/// Reads the commands of a push question (after its `push URL` line):
/// `OLD NEW REF` lines up to an empty line.
pub(super) fn commands(r: &mut impl BufRead) -> Result<Vec<(String, String, String)>> {
    let mut found = Vec::new();
    while let Some(l) = block_line(r)? {
        let mut w = l.split(' ');
        let (Some(old), Some(new), Some(name), None) = (w.next(), w.next(), w.next(), w.next())
        else {
            bail!("a malformed command");
        };
        if !is_oid(old)
            || old.len() != new.len()
            || !is_oid(new)
            || !name.starts_with("refs/")
            || name.bytes().any(|b| b.is_ascii_control())
            || found.len() >= 100
        {
            bail!("a malformed command");
        }
        found.push((old.to_owned(), new.to_owned(), name.to_owned()));
    }
    if found.is_empty() {
        bail!("no command");
    }
    Ok(found)
}

/// The pack an asker sends after `ready`: a line `pack LEN`, then exactly
/// LEN bytes starting `PACK`. Anything short (an asker killed mid-write)
/// is refused, so a cut pack never reaches the hub.
fn whole_pack(conn: &mut impl BufRead) -> Result<Vec<u8>> {
    let mut line = String::new();
    conn.read_line(&mut line)?;
    let len: usize = line
        .strip_prefix("pack ")
        .and_then(|n| n.strip_suffix('\n'))
        .and_then(|n| n.parse().ok())
        .filter(|n| (32..=1 << 30).contains(n))
        .context("no pack length")?;
    let mut pack = vec![0u8; len];
    conn.read_exact(&mut pack)?;
    if !pack.starts_with(b"PACK") {
        bail!("not a pack");
    }
    Ok(pack)
}

/// The keeper's side of a push question: takes the waiting receive-pack
/// session (or says `none`), offers it, reads the pack, sends the commands
/// and the pack to the hub, says `sent` and relays the hub's answer. The
/// session is spent afterwards; the next one opens in the background.
pub(super) fn serve(
    keeper: &Arc<Keeper>,
    conn: &mut BufReader<UnixStream>,
    commands: &[(String, String, String)],
) {
    let taken = keeper
        .pushing
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    let Some(mut session) = taken else {
        let _ = conn.get_mut().write_all(b"none\n");
        keeper.open_push();
        return;
    };
    let Some(req) = request(commands, &session.caps) else {
        // A hub without what this path needs: git's push, always (no
        // session is opened for it again).
        keeper.no_push.store(true, Ordering::SeqCst);
        let _ = conn.get_mut().write_all(b"none\n");
        session.close();
        return;
    };
    let mut offer = format!("ready {}\n", session.caps.join(" "));
    for t in &session.tips {
        offer.push_str(t);
        offer.push('\n');
    }
    offer.push('\n');
    let got = conn
        .get_mut()
        .write_all(offer.as_bytes())
        .map_err(anyhow::Error::from)
        .and_then(|()| whole_pack(conn));
    let Ok(pack) = got else {
        // Nothing went to the hub: the session waits for the next push.
        *keeper.pushing.lock().unwrap_or_else(|e| e.into_inner()) = Some(session);
        return;
    };
    if conn.get_mut().write_all(b"sending\n").is_err() {
        *keeper.pushing.lock().unwrap_or_else(|e| e.into_inner()) = Some(session);
        return;
    }
    keeper.relaying.store(now_ms(), Ordering::SeqCst);
    let mut all = req;
    all.extend_from_slice(&pack);
    if session
        .input
        .write_all(&all)
        .and_then(|()| session.input.flush())
        .is_err()
    {
        // The session died (its ssh is gone): receive-pack updates nothing
        // without the whole pack, so git's push may run.
        let _ = conn.get_mut().write_all(b"none\n");
        session.close();
        keeper.relaying.store(0, Ordering::SeqCst);
        keeper.open_push();
        return;
    }
    keeper.pushes.fetch_add(1, Ordering::SeqCst);
    let mut listening = conn.get_mut().write_all(b"sent\n").is_ok();
    // Relayed to the end of receive-pack's output, even once the asker
    // left, so the hub's hooks never write into a closed pipe.
    let mut buf = [0u8; 65536];
    loop {
        match session.output.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if listening {
                    listening = conn.get_mut().write_all(&buf[..n]).is_ok();
                }
            }
        }
    }
    session.close();
    keeper.relaying.store(0, Ordering::SeqCst);
    keeper.open_push();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn band(n: u8, data: &[u8]) -> Vec<u8> {
        let mut v = format!("{:04x}", data.len() + 5).into_bytes();
        v.push(n);
        v.extend_from_slice(data);
        v
    }

    #[test]
    fn only_a_whole_pack_of_the_length_announced_is_taken() {
        let mut pack = b"PACK\0\0\0\x02\0\0\0\0".to_vec();
        pack.extend_from_slice(&[7u8; 20]);
        let mut whole = format!("pack {}\n", pack.len()).into_bytes();
        whole.extend_from_slice(&pack);
        assert_eq!(whole_pack(&mut &whole[..]).unwrap(), pack);
        // Cut short (the asker killed mid-write), no length, a length out
        // of bounds, not a pack.
        let cut = &whole[..whole.len() - 1];
        let mut not = format!("pack {}\n", pack.len()).into_bytes();
        not.extend_from_slice(&[b'X'; 32]);
        for bad in [
            cut.to_vec(),
            pack.clone(),
            b"pack 4\nPACK".to_vec(),
            b"pack x\n".to_vec(),
            not,
        ] {
            assert!(whole_pack(&mut &bad[..]).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_advertisement_gives_caps_and_tips_and_odd_ones_are_refused() {
        let a = "a".repeat(40);
        let b = "b".repeat(40);
        let mut bytes = pkt(&format!(
            "{a} refs/heads/main\0report-status side-band-64k quiet ofs-delta agent=git/2.47\n"
        ));
        bytes.extend(pkt(&format!("{b} refs/loopx/state\n")));
        bytes.extend(pkt(&format!("{a} refs/heads/other\n")));
        bytes.extend_from_slice(b"0000");
        let (caps, tips) = advertised(&mut &bytes[..]).unwrap();
        assert_eq!(
            caps,
            [
                "report-status",
                "side-band-64k",
                "quiet",
                "ofs-delta",
                "agent=git/2.47"
            ]
        );
        assert_eq!(tips, [a.clone(), b.clone()]);
        // An empty repository: no tips, the capabilities still.
        let mut empty = pkt(&format!(
            "{} capabilities^{{}}\0report-status\n",
            "0".repeat(40)
        ));
        empty.extend_from_slice(b"0000");
        let (caps, tips) = advertised(&mut &empty[..]).unwrap();
        assert_eq!((caps, tips), (vec!["report-status".to_owned()], vec![]));
        // A v2 answer (upload-pack's), a cut one, none at all, a bad id.
        for bad in [
            b"000eversion 2\n0000".to_vec(),
            pkt(&format!("{a} refs/heads/main\0report-status\n")),
            b"0000".to_vec(),
            {
                let mut v = pkt("zz refs/heads/main\0report-status\n");
                v.extend_from_slice(b"0000");
                v
            },
        ] {
            assert!(advertised(&mut &bad[..]).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_request_asks_only_what_was_offered_and_needs_report_and_side_band() {
        let (a, b) = ("a".repeat(40), "b".repeat(40));
        let cmds = vec![
            (a.clone(), b.clone(), "refs/loopx/state".to_owned()),
            ("0".repeat(40), b.clone(), "refs/loopx/goal/g".to_owned()),
        ];
        let offered: Vec<String> = ["report-status", "side-band-64k", "ofs-delta", "atomic"]
            .map(str::to_owned)
            .to_vec();
        let req = request(&cmds, &offered).unwrap();
        let mut r = &req[..];
        assert_eq!(
            read_pkt(&mut r).unwrap(),
            Pkt::Data(
                format!("{a} {b} refs/loopx/state\0report-status side-band-64k\n").into_bytes()
            )
        );
        assert_eq!(
            read_pkt(&mut r).unwrap(),
            Pkt::Data(format!("{} {b} refs/loopx/goal/g\n", "0".repeat(40)).into_bytes())
        );
        assert_eq!(read_pkt(&mut r).unwrap(), Pkt::Flush);
        assert!(r.is_empty());
        assert_eq!(request(&cmds, &offered[..1]), None);
    }

    #[test]
    fn the_answer_reads_as_git_pushs_porcelain_and_malformed_ones_are_errors() {
        let (a, b) = ("a".repeat(40), "b".repeat(40));
        let cmds = vec![
            (a.clone(), b.clone(), "refs/loopx/state".to_owned()),
            ("0".repeat(40), b.clone(), "refs/loopx/goal/g".to_owned()),
        ];
        let mut report = pkt("unpack ok\n");
        report.extend(pkt("ng refs/loopx/state pre-receive hook declined\n"));
        report.extend(pkt("ok refs/loopx/goal/g\n"));
        report.extend_from_slice(b"0000");
        let mut wire = band(2, b"loopx hub: refusing refs/loopx/state\nsecond ");
        wire.extend(band(1, &report[..10]));
        wire.extend(band(2, b"line\n"));
        wire.extend(band(1, &report[10..]));
        wire.extend_from_slice(b"0000");
        let answer = read_answer(&mut &wire[..]).unwrap();
        assert_eq!(answer.unpack, None);
        let out = porcelain("ssh://h/x", &cmds, &answer);
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            format!(
                "To ssh://h/x\n!\t{b}:refs/loopx/state\t[remote rejected] (pre-receive hook declined)\n\
                 *\t{b}:refs/loopx/goal/g\t[new reference]\nDone\n"
            )
        );
        assert_eq!(
            String::from_utf8(out.stderr).unwrap(),
            "remote: loopx hub: refusing refs/loopx/state\nremote: second line\n\
             error: failed to push some refs to 'ssh://h/x'\n"
        );
        assert!(!out.status.success());
        // A ref the report leaves out, as git says it.
        let mut report = pkt("unpack ok\n");
        report.extend_from_slice(b"0000");
        let mut wire = band(1, &report);
        wire.extend_from_slice(b"0000");
        let out = porcelain("u", &cmds[..1], &read_answer(&mut &wire[..]).unwrap());
        assert!(
            String::from_utf8(out.stdout)
                .unwrap()
                .contains("[remote failure] (remote failed to report status)")
        );
        // Taken: a fast-forward line, exit 0.
        let mut report = pkt("unpack ok\n");
        report.extend(pkt("ok refs/loopx/state\n"));
        report.extend_from_slice(b"0000");
        let mut wire = band(1, &report);
        wire.extend_from_slice(b"0000");
        let out = porcelain("u", &cmds[..1], &read_answer(&mut &wire[..]).unwrap());
        assert!(out.status.success());
        assert!(
            String::from_utf8(out.stdout)
                .unwrap()
                .contains(&format!(" \t{b}:refs/loopx/state\taaaaaaa..bbbbbbb\n"))
        );
        // Malformed or cut short: errors, never an answer.
        let cut = band(1, &pkt("unpack ok\n"));
        let mut no_flush_inside = band(1, &pkt("unpack ok\n"));
        no_flush_inside.extend_from_slice(b"0000");
        let mut fatal = band(3, b"no space left\n");
        fatal.extend_from_slice(b"0000");
        let mut no_band = pkt("unpack ok\n");
        no_band.extend_from_slice(b"0000");
        let mut junk = band(1, &{
            let mut r = pkt("unpack ok\n");
            r.extend(pkt("what refs/loopx/state\n"));
            r.extend_from_slice(b"0000");
            r
        });
        junk.extend_from_slice(b"0000");
        for bad in [
            cut,
            no_flush_inside,
            fatal,
            no_band,
            junk,
            b"00".to_vec(),
            b"0005".to_vec(),
            b"ffff\x01".to_vec(),
        ] {
            assert!(read_answer(&mut &bad[..]).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn push_questions_take_only_well_formed_commands() {
        let (a, b) = ("a".repeat(40), "b".repeat(40));
        let good = format!("{a} {b} refs/loopx/state\n\n");
        assert_eq!(
            commands(&mut good.as_bytes()).unwrap(),
            [(a.clone(), b.clone(), "refs/loopx/state".to_owned())]
        );
        for bad in [
            "\n".to_owned(),
            format!("{a} {b} refs/loopx/state\n"),
            format!("{a} {b} HEAD\n\n"),
            format!("{a} {} refs/x\n\n", "b".repeat(64)),
            format!("{a} {b} refs/x y\n\n"),
            format!("{a} {b}\n\n"),
            format!("{a} zz refs/x\n\n"),
        ] {
            assert!(commands(&mut bad.as_bytes()).is_err(), "{bad:?}");
        }
    }
}
