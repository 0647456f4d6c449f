//! Hardening, round 3 (issue 27): each test is the attack that once got
//! through. Nothing here asserts how fast anything was: a stall is shown
//! structurally (a process still running when another has finished, a
//! counter of writers that went on without the queue), memory through the
//! process's own accounting.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{Output, TestEnv};
use crate::test_harden::guarded;

// Escapes from a timeout (issue 27 item 6).

#[test]
fn a_setsid_grandchild_does_not_outlive_a_timeout() {
    let env = TestEnv::with_board();
    // The grandchild leaves the command's session and group, then forks a
    // child of its own; the command itself hangs until the deadline.
    let g = guarded(
        &env,
        &[
            "evidence",
            "run",
            "--timeout",
            "2s",
            "--json",
            "--",
            "sh",
            "-c",
            "setsid sh -c 'sleep 100000 & sleep 100000' & echo started; sleep 100000",
        ],
        Duration::from_secs(60),
    );
    let v = g.out.clone().code(3).json();
    assert_eq!(v["evidence"]["run"]["timed_out"], true, "{v}");
    assert_eq!(v["evidence"]["run"]["output_tail"], "started");
    assert!(g.left.is_empty(), "left running: {:?}", g.left);
}

#[test]
fn a_setsid_daemon_left_by_a_finished_command_is_ended() {
    let env = TestEnv::with_board();
    // The command exits at once; what it left in another session holds the
    // output pipe open.
    let g = guarded(
        &env,
        &[
            "evidence",
            "run",
            "--json",
            "--",
            "sh",
            "-c",
            "setsid sleep 100000 & echo done",
        ],
        Duration::from_secs(60),
    );
    let v = g.out.clone().ok().json();
    assert_eq!(v["evidence"]["run"]["exit"], 0, "{v}");
    assert!(g.left.is_empty(), "left running: {:?}", g.left);
}

// Smaller (issue 27 item 9).

/// Runs `loopx ARGS` with a stdout whose reader is gone.
fn into_closed_pipe(env: &TestEnv, args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let out = env
        .command()
        .args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("loopx runs");
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::new(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn a_closed_pipe_is_a_quiet_exit_for_every_command() {
    let env = TestEnv::with_board();
    for i in 0..5 {
        env.add(&format!("Work item {i}"), &[]);
    }
    let commands: &[&[&str]] = &[
        &["log"],
        &["--json", "log"],
        &["status"],
        &["--json", "status"],
        &["todo", "list"],
        &["--json", "todo", "list"],
        &["show", "2"],
        &["--json", "show", "2"],
        &["diff", "1", "3"],
        &["--json", "agent", "list"],
        &["goal", "list"],
        &["--json", "verify"],
        &["digest", "--since", "1d"],
        &["--json", "todo", "add", "Written, then printed to nobody"],
    ];
    for args in commands {
        let out = into_closed_pipe(&env, args);
        assert_eq!(out.code, 0, "loopx {args:?}: {}", out.stderr);
        assert!(
            !out.stderr.contains("error"),
            "loopx {args:?} said: {}",
            out.stderr
        );
    }
    // The tick of the last one landed: the output is what was lost.
    let list = env.loopx(&["todo", "list"]).ok().stdout;
    assert!(list.contains("Written, then printed to nobody"), "{list}");
}

/// Whether this machine lets an unprivileged process mount a tmpfs in a
/// user namespace of its own (`unshare -rm`).
fn can_mount_tmpfs() -> bool {
    Command::new("unshare")
        .args([
            "-rm",
            "sh",
            "-c",
            "d=$(mktemp -d) && mount -t tmpfs -o size=1m tmpfs \"$d\"",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn a_full_disk_says_what_is_full_and_that_nothing_was_written() {
    if !can_mount_tmpfs() {
        eprintln!("SKIPPED: this machine cannot mount a tmpfs in a user namespace (unshare -rm)");
        return;
    }
    let env = TestEnv::with_board();
    let mnt = env.root().join("full");
    std::fs::create_dir_all(&mnt).unwrap();
    // A copy of the repository on a small tmpfs, which is then filled; the
    // tick is tried there, and the ref read before and after it.
    let script = r#"
        set -e
        mount -t tmpfs -o size=4m tmpfs "$1"
        cp -a "$2" "$1/r"
        cd "$1/r"
        before=$(git rev-parse refs/loopx/state)
        dd if=/dev/zero of="$1/fill" bs=4k 2>/dev/null || true
        set +e
        "$3" --json todo add "On a full disk"
        echo "exit $?" >&2
        after=$(git rev-parse refs/loopx/state)
        [ "$before" = "$after" ] && echo "ref unchanged" >&2
        true
    "#;
    // loopx's own isolated environment, for the whole script.
    let loopx = env.command();
    let mut unshare = Command::new("unshare");
    unshare.env_clear();
    for (k, v) in loopx.get_envs() {
        if let Some(v) = v {
            unshare.env(k, v);
        }
    }
    let out = crate::common::run(
        unshare
            .args(["-rm", "sh", "-c", script, "sh"])
            .arg(&mnt)
            .arg(&env.repo)
            .arg(loopx.get_program()),
    );
    assert!(out.stderr.contains("exit 1"), "{}", out.stderr);
    assert!(out.stderr.contains("ref unchanged"), "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "one JSON error document ({e}):\n{}\n{}",
            out.stdout, out.stderr
        )
    });
    assert_eq!(doc["error"]["code"], "disk-full", "{doc}");
    let message = doc["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(
            "is full (no space left on device): nothing was written (refs/loopx/state did not move)"
        ),
        "{message}"
    );
    assert!(!message.contains("Message {"), "no debug dump: {message}");
    assert!(
        doc["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("free some space"),
        "{doc}"
    );
}
