//! The kept ssh session (issue 28, `git::keep`): over OpenSSH's sshd on
//! 127.0.0.1, a sync that finds the hub where it left it asks the keeper
//! one `ls-refs` and runs no `git fetch`; a hub that moved is fetched as
//! before; a dead, hung or refused keeper and `loopx.sshKeep false` fall
//! back to git's own processes with the same answers. git's own trace
//! (`GIT_TRACE`) tells which git processes a sync ran. Opt-in for plain
//! `cargo test` (it needs the `openssh-server` package); `.ci/run`
//! installs it and runs it:
//!
//!     LOOPX_SERVER_TESTS=1 cargo test --test cli test_ssh_keep::

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::sshd::{self, Sshd};
use crate::common::{Machine, Output, TestEnv, git_in, run};

/// `loopx ARGS` on `m` through the ssh wrapper, with git's trace in a
/// file: the output and the git commands it ran.
fn traced(m: &Machine, server: &Sshd, args: &[&str]) -> (Output, Vec<String>) {
    traced_with(m, server, None, args)
}

/// [`traced`], as `agent` when one is given.
fn traced_with(
    m: &Machine,
    server: &Sshd,
    agent: Option<&str>,
    args: &[&str],
) -> (Output, Vec<String>) {
    let trace = m.repo.with_extension(format!(
        "trace-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let mut c = m.command();
    c.env("PATH", server.path()).env("GIT_TRACE", &trace);
    if let Some(a) = agent {
        c.env("LOOPX_AGENT", a);
    }
    let out = run(c.args(args));
    let text = std::fs::read_to_string(&trace).unwrap_or_default();
    let _ = std::fs::remove_file(&trace);
    let gits = text
        .lines()
        .filter_map(|l| {
            l.split_once("trace: built-in: git ")
                .map(|(_, c)| c.to_owned())
        })
        .collect();
    (out, gits)
}

fn fetches(gits: &[String]) -> usize {
    gits.iter().filter(|g| g.starts_with("fetch ")).count()
}

/// The sync's outcome in its JSON report.
fn outcome(out: &Output) -> String {
    assert_eq!(out.code, 0, "{out:#?}");
    out.json()["outcome"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The pid of the keeper that listens in `repo`'s socket directory.
fn keeper_pid(repo: &Path) -> Option<u32> {
    let dir = repo.join(".git/loopx-ssh");
    let dir = dir.to_string_lossy().into_owned();
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
        let words: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        (words.get(1) == Some(&&b"ssh-keep"[..])
            && words.get(2).is_some_and(|s| s.starts_with(dir.as_bytes())))
        .then_some(pid)
    })
}

/// Waits (a bound, not a measurement) for `repo`'s keeper to listen.
fn keeper_listening(repo: &Path) -> u32 {
    let started = Instant::now();
    loop {
        let socket = keeper_socket(repo);
        if let (Some(pid), Some(s)) = (keeper_pid(repo), socket)
            && std::os::unix::net::UnixStream::connect(s).is_ok()
        {
            return pid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no keeper listens for {}: {:?}",
            repo.display(),
            std::fs::read_dir(repo.join(".git/loopx-ssh"))
                .map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>())
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn keeper_socket(repo: &Path) -> Option<PathBuf> {
    std::fs::read_dir(repo.join(".git/loopx-ssh"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with('k') && !n.contains('.'))
        })
}

fn signal(pid: u32, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill {sig} {pid}");
}

/// A board pushed over ssh from the environment's repository (`a`), and a
/// second machine (`c`) on the hub's path that moves it.
fn team<'e>(env: &'e TestEnv, server: &Sshd) -> (Machine<'e>, Machine<'e>, String) {
    let hub = PathBuf::from(env.hub("hub.git"));
    let url = server.url(&hub);
    let a = env.machine();
    a.git(&["remote", "add", "origin", &url]);
    for args in [&["sync", "--setup"][..], &["sync"]] {
        let (out, _) = traced(&a, server, args);
        assert_eq!(out.code, 0, "{out:#?}\n{}", server.log());
    }
    let c_dir = env.root().join("c");
    std::fs::create_dir_all(&c_dir).unwrap();
    git_in(&c_dir, &["init", "-q", "."]);
    let c = env.machine_in(c_dir);
    c.git(&["config", "user.name", "c"]);
    c.git(&["config", "user.email", "c@example.com"]);
    c.git(&["remote", "add", "origin", hub.to_str().unwrap()]);
    c.loopx(&["sync", "--setup"]).ok();
    c.loopx(&["sync"]).ok();
    (a, c, url)
}

#[test]
fn a_no_op_sync_asks_the_kept_session_and_runs_no_fetch_and_a_moved_hub_is_fetched() {
    if !sshd::enabled("the kept ssh session") {
        return;
    }
    let env = TestEnv::with_board();
    let server = Sshd::start(&env, true);
    let (a, c, _) = team(&env, &server);
    // The second sync fetched (the hub had the state): a keeper started.
    let pid = keeper_listening(&a.repo);

    let (out, gits) = traced(&a, &server, &["sync", "--json"]);
    assert_eq!(outcome(&out), "up-to-date");
    assert_eq!(fetches(&gits), 0, "{gits:#?}");
    assert!(
        !gits.iter().any(|g| g.starts_with("ls-remote origin")),
        "{gits:#?}"
    );

    // Another machine moves the hub: the next sync sees it and fetches.
    c.add("moved on the hub");
    c.loopx(&["sync"]).ok();
    let (out, gits) = traced(&a, &server, &["sync", "--json"]);
    assert_eq!(outcome(&out), "pulled");
    assert_eq!(fetches(&gits), 1, "{gits:#?}");
    assert_eq!(a.tip(), c.tip());

    // And the one after asks a fresh session: nothing moved, no fetch.
    let (out, gits) = traced(&a, &server, &["sync", "--json"]);
    assert_eq!(outcome(&out), "up-to-date");
    assert_eq!(fetches(&gits), 0, "{gits:#?}");
    assert_eq!(keeper_pid(&a.repo), Some(pid));

    // Local ticks: pushed as ever (the keeper only answers "anything to
    // fetch?").
    a.add("from a");
    let (out, _) = traced(&a, &server, &["sync", "--json"]);
    assert_eq!(outcome(&out), "pushed");
    c.loopx(&["sync"]).ok();
    assert_eq!(a.tip(), c.tip());
}

#[test]
fn a_dead_or_hung_keeper_falls_back_to_git_and_the_sync_is_right() {
    if !sshd::enabled("the kept ssh session") {
        return;
    }
    let env = TestEnv::with_board();
    let server = Sshd::start(&env, true);
    let (a, c, _) = team(&env, &server);

    // Killed: its socket stays, nobody answers on it.
    let pid = keeper_listening(&a.repo);
    signal(pid, "-KILL");
    c.add("moved while the keeper was dead");
    c.loopx(&["sync"]).ok();
    let (out, gits) = traced(&a, &server, &["sync", "--json"]);
    assert_eq!(outcome(&out), "pulled");
    assert_eq!(fetches(&gits), 1, "{gits:#?}");
    assert_eq!(a.tip(), c.tip());

    // That fetch started a new keeper, which answers.
    let pid = keeper_listening(&a.repo);
    let (out, gits) = traced(&a, &server, &["sync", "--json"]);
    assert_eq!(outcome(&out), "up-to-date");
    assert_eq!(fetches(&gits), 0, "{gits:#?}");

    // Hung, then killed while a sync waits on it: the sync fetches.
    c.add("moved while the keeper hung");
    c.loopx(&["sync"]).ok();
    signal(pid, "-STOP");
    let (out, gits) = std::thread::scope(|s| {
        let sync = s.spawn(|| traced(&a, &server, &["sync", "--json"]));
        std::thread::sleep(Duration::from_millis(500));
        signal(pid, "-KILL");
        sync.join().unwrap()
    });
    assert_eq!(outcome(&out), "pulled");
    assert_eq!(fetches(&gits), 1, "{gits:#?}");
    assert_eq!(a.tip(), c.tip());
}

#[test]
fn no_keeper_when_turned_off_or_when_the_hub_speaks_only_v0_over_ssh() {
    if !sshd::enabled("the kept ssh session") {
        return;
    }
    // `loopx.sshKeep false`.
    let env = TestEnv::with_board();
    let server = Sshd::start(&env, true);
    env.git(&["config", "loopx.sshKeep", "false"]);
    let (a, _c, _) = team(&env, &server);
    let (out, gits) = traced(&a, &server, &["sync", "--json"]);
    assert_eq!(outcome(&out), "up-to-date");
    assert_eq!(fetches(&gits), 1, "{gits:#?}");
    assert_eq!(keeper_pid(&a.repo), None);
    assert_eq!(keeper_socket(&a.repo), None);
    drop(server);

    // An sshd that does not accept GIT_PROTOCOL answers v0: the keeper
    // leaves a note and exits, and syncs fetch with git as before.
    let env = TestEnv::with_board();
    let server = Sshd::start(&env, false);
    let (a, c, _) = team(&env, &server);
    let dir = a.repo.join(".git/loopx-ssh");
    let started = Instant::now();
    let note = loop {
        let note = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().ends_with(".no-v2"));
        if let Some(n) = note {
            break n.path();
        }
        assert!(started.elapsed() < Duration::from_secs(30), "no note");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        std::fs::read_to_string(&note).unwrap().contains("v2"),
        "{note:?}"
    );
    c.add("moved");
    c.loopx(&["sync"]).ok();
    for want in ["pulled", "up-to-date"] {
        let (out, gits) = traced(&a, &server, &["sync", "--json"]);
        assert_eq!(outcome(&out), want);
        assert_eq!(fetches(&gits), 1, "{gits:#?}");
    }
    assert_eq!(a.tip(), c.tip());
    assert_eq!(keeper_pid(&a.repo), None);
}

/// The keeper's own account (`status URL` on its socket): how many
/// `ls-refs` questions it took, how many pushes it sent to the hub,
/// whether a receive-pack session is ready.
fn keeper_status(repo: &Path, url: &str) -> (u64, u64, bool) {
    use std::io::{Read, Write};
    let mut s = std::os::unix::net::UnixStream::connect(keeper_socket(repo).expect("a keeper"))
        .expect("the keeper answers");
    s.write_all(format!("status {url}\n").as_bytes()).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let field = |k: &str| -> u64 {
        answer
            .split_whitespace()
            .find_map(|w| w.strip_prefix(k))
            .unwrap_or_else(|| panic!("{k} in {answer:?}"))
            .parse()
            .unwrap()
    };
    (
        field("ls-refs="),
        field("pushes="),
        field("push-ready=") == 1,
    )
}

/// Waits (a bound, not a measurement) for `repo`'s keeper to hold a
/// receive-pack session, its advertisement read.
fn push_ready(repo: &Path, url: &str) {
    keeper_listening(repo);
    let started = Instant::now();
    while !keeper_status(repo, url).2 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no receive-pack session ready"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn pushes(gits: &[String]) -> usize {
    gits.iter().filter(|g| g.starts_with("push ")).count()
}

fn hub_tip(hub: &Path) -> String {
    git_in(hub, &["rev-parse", "refs/loopx/state"])
        .trim()
        .to_owned()
}

/// `loopx ARGS` as `agent` on `m`, traced.
fn traced_agent(m: &Machine, server: &Sshd, agent: &str, args: &[&str]) -> (Output, Vec<String>) {
    traced_with(m, server, Some(agent), args)
}

#[test]
fn a_claim_pushes_through_the_kept_session_with_no_git_push_and_a_lost_race_retries() {
    if !sshd::enabled("the kept ssh session") {
        return;
    }
    let env = TestEnv::with_board();
    let server = Sshd::start(&env, true);
    let (a, c, url) = team(&env, &server);
    let hub = PathBuf::from(env.hub("hub.git"));
    let pid = keeper_listening(&a.repo);
    // The keeper's argv names its socket only: the hub's URL came on its
    // stdin (argv is anyone's to read in `ps`).
    let argv = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    let argv = String::from_utf8_lossy(&argv);
    assert!(!argv.contains(hub.to_str().unwrap()), "{argv}");
    assert!(!argv.contains("ssh://"), "{argv}");

    // A lone claim, decided on the last synced state: one push through the
    // kept receive-pack session, no `git push`, no question first.
    c.add("claim me");
    c.loopx(&["sync"]).ok();
    let (out, _) = traced(&a, &server, &["sync", "--json"]);
    assert_eq!(outcome(&out), "pulled");
    push_ready(&a.repo, &url);
    let (asked, pushed, _) = keeper_status(&a.repo, &url);
    let (out, gits) = traced_agent(
        &a,
        &server,
        "agent-a",
        &["todo", "claim", "--next", "--sync"],
    );
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(pushes(&gits), 0, "{gits:#?}");
    assert_eq!(fetches(&gits), 0, "{gits:#?}");
    assert!(
        gits.iter().any(|g| g.starts_with("pack-objects ")),
        "{gits:#?}"
    );
    assert_eq!(
        keeper_status(&a.repo, &url).0,
        asked,
        "no ls-refs before the push"
    );
    assert_eq!(keeper_status(&a.repo, &url).1, pushed + 1);
    assert_eq!(hub_tip(&hub), a.tip().unwrap());
    c.loopx(&["sync"]).ok();
    assert_eq!(c.tip(), a.tip());

    // A lost race: another machine moved the hub since a's last sync. The
    // push through the keeper is refused by the hub's compare-and-swap (the
    // keeper's older advertisement is never the expected tip), the sync
    // fetches without asking the keeper first, replays, pushes again.
    let t = c.add("the next one");
    c.loopx(&["sync"]).ok();
    c.agent("agent-b", &["todo", "claim", &t]).ok();
    c.loopx(&["sync"]).ok();
    let moved = hub_tip(&hub);
    a.add("from a, not yet synced");
    push_ready(&a.repo, &url);
    let (asked, pushed, _) = keeper_status(&a.repo, &url);
    let (out, gits) = traced(&a, &server, &["sync", "--json"]);
    assert_eq!(outcome(&out), "replayed", "{out:#?}");
    assert_eq!(fetches(&gits), 1, "{gits:#?}");
    let (asked_after, pushed_after, _) = keeper_status(&a.repo, &url);
    assert_eq!(asked_after, asked, "no ls-refs after the refused push");
    // The refused push went through the keeper; the second one through it
    // or git, whichever was ready.
    assert_eq!(pushed_after + pushes(&gits) as u64, pushed + 2, "{gits:#?}");
    assert_ne!(hub_tip(&hub), moved);
    assert_eq!(hub_tip(&hub), a.tip().unwrap());
    c.loopx(&["sync"]).ok();
    assert_eq!(c.tip(), a.tip());

    // A claim that loses its race: a's pick was taken on the hub meanwhile;
    // the push through the keeper is refused, the claim is replayed and
    // lost, and `--next` picks again.
    let first = c
        .loopx(&["todo", "add", "first", "--priority", "P0"])
        .ok()
        .stdout
        .trim()
        .to_owned();
    let second = c
        .loopx(&["todo", "add", "second", "--priority", "P0"])
        .ok()
        .stdout
        .trim()
        .to_owned();
    c.loopx(&["sync"]).ok();
    a.loopx(&["sync"]).ok();
    c.agent("agent-b", &["todo", "claim", &first]).ok();
    c.agent("agent-b", &["todo", "claim", &second]).ok();
    let third = c
        .loopx(&["todo", "add", "third", "--priority", "P0"])
        .ok()
        .stdout
        .trim()
        .to_owned();
    c.loopx(&["sync"]).ok();
    push_ready(&a.repo, &url);
    let (_, pushed, _) = keeper_status(&a.repo, &url);
    let (out, gits) = traced_agent(
        &a,
        &server,
        "agent-a",
        &["--json", "todo", "claim", "--next", "--sync"],
    );
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(out.json()["todo"]["id"], third.as_str(), "{out:#?}");
    assert!(keeper_status(&a.repo, &url).1 > pushed, "{gits:#?}");
    assert_eq!(hub_tip(&hub), a.tip().unwrap());
    let out = a.loopx(&["verify", "--json"]).ok().json();
    assert_eq!(out["ok"], true, "{out}");
}

#[test]
fn a_dead_or_hung_keeper_before_the_push_falls_back_to_git_push() {
    if !sshd::enabled("the kept ssh session") {
        return;
    }
    let env = TestEnv::with_board();
    let server = Sshd::start(&env, true);
    let (a, _c, url) = team(&env, &server);
    let hub = PathBuf::from(env.hub("hub.git"));

    // Hung (stopped) with its receive-pack session's advertisement read:
    // no answer in time, nothing sent, `git push` does it.
    push_ready(&a.repo, &url);
    let pid = keeper_listening(&a.repo);
    signal(pid, "-STOP");
    a.add("while the keeper hung");
    let (out, gits) = traced(&a, &server, &["sync", "--json"]);
    signal(pid, "-CONT");
    assert_eq!(outcome(&out), "pushed");
    assert_eq!(pushes(&gits), 1, "{gits:#?}");
    assert_eq!(hub_tip(&hub), a.tip().unwrap());

    // Killed between its advertisement and the push: a stale socket.
    push_ready(&a.repo, &url);
    let pid = keeper_listening(&a.repo);
    signal(pid, "-KILL");
    a.add("after the keeper died");
    let (out, gits) = traced(&a, &server, &["sync", "--json"]);
    assert_eq!(outcome(&out), "pushed");
    assert_eq!(pushes(&gits), 1, "{gits:#?}");
    assert_eq!(hub_tip(&hub), a.tip().unwrap());
}

#[test]
fn the_hub_guard_refuses_through_the_kept_session_in_git_pushs_words() {
    if !sshd::enabled("the kept ssh session") {
        return;
    }
    let env = TestEnv::with_board();
    let server = Sshd::start_with(&env, true, &[]);
    let (a, _c, url) = team(&env, &server);
    let hub = PathBuf::from(env.hub("hub.git"));
    env.loopx(&["-C", hub.to_str().unwrap(), "hub", "install"])
        .ok();
    let before = hub_tip(&hub);
    // The hub trusts a signer and the clone does not: the clone writes an
    // unsigned human act the hub refuses (a hub clock set back no longer
    // does it: the guard judges "future" by the system clock).
    let key = crate::common::keys::keygen(&env, "hub-signer");
    let signers = env.root().join("hub_allowed_signers");
    std::fs::write(
        &signers,
        format!("ada {}", std::fs::read_to_string(&key).unwrap()),
    )
    .unwrap();
    git_in(
        &hub,
        &[
            "config",
            "loopx.allowedSignersFile",
            signers.to_str().unwrap(),
        ],
    );
    a.loopx(&["goal", "add", "docs", "--objective", "Refused by the guard"])
        .ok();
    push_ready(&a.repo, &url);
    let (_, pushed, _) = keeper_status(&a.repo, &url);
    let (kept, gits) = traced(&a, &server, &["sync"]);
    assert_eq!(pushes(&gits), 0, "{gits:#?}");
    assert_eq!(keeper_status(&a.repo, &url).1, pushed + 1);
    assert_ne!(kept.code, 0, "{kept:#?}");
    assert!(
        kept.stderr.contains("loopx hub: refusing refs/loopx/state")
            && kept.stderr.contains("[signature]"),
        "{}",
        kept.stderr
    );
    assert_eq!(hub_tip(&hub), before);
    // The same tick pushed by `git push`: the same words.
    a.git(&["config", "loopx.sshKeep", "false"]);
    let (git, gits) = traced(&a, &server, &["sync"]);
    assert_eq!(pushes(&gits), 1, "{gits:#?}");
    assert_eq!(git.code, kept.code);
    assert_eq!(git.stderr, kept.stderr);
    assert_eq!(hub_tip(&hub), before);
}
