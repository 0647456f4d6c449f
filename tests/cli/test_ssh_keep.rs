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
    let trace = m.repo.with_extension(format!(
        "trace-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let out = run(m
        .command()
        .env("PATH", server.path())
        .env("GIT_TRACE", &trace)
        .args(args));
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
