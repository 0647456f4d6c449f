//! `loopx demo` runs in the suite: its whole output against a golden file
//! (fixed clock and seed), and the history its workspace holds.

use crate::common::{TestEnv, assert_text, git_in, run};

#[test]
fn the_demo_tells_the_whole_story_reproducibly() {
    let env = TestEnv::empty();
    let dir = env.root().join("workspace");
    let dir_s = dir.to_string_lossy().into_owned();
    let out = run(env.command().args(["demo", "--dir", &dir_s])).ok();
    // With LOOPX_NOW fixed, durations are recorded as 0 ms and every id,
    // commit and turn token repeats: the output is byte-for-byte stable.
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_loopx")).expect("the binary");
    let text = out
        .stdout
        .replace(&dir_s, "$WORKSPACE")
        .replace(exe.to_str().expect("a UTF-8 path"), "$LOOPX");
    let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/golden/demo.txt");
    if std::env::var_os("LOOPX_BLESS").is_some() {
        std::fs::write(&golden, &text).expect("write the golden file");
    }
    assert_text(
        &text,
        &std::fs::read_to_string(&golden).expect("tests/cli/golden/demo.txt"),
    );
    assert_eq!(out.stderr, "", "narration goes to stdout");

    // The commands the demo ends with work as printed: the binary by its
    // path (after `cargo run` it is not on PATH), in machine A.
    let tail: Vec<&str> = out.stdout.lines().rev().take(3).collect();
    for line in tail.iter().rev() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let mut c = std::process::Command::new(words[0]);
        crate::common::isolate(&mut c, env.root());
        let done = c
            .args(&words[1..])
            .current_dir(dir.join("machine-a"))
            .output()
            .expect("runs");
        assert!(
            done.status.success() && !done.stdout.is_empty(),
            "{line}: {}",
            String::from_utf8_lossy(&done.stderr)
        );
    }

    // The workspace holds the history: both machines and the hub agree.
    let a = dir.join("machine-a");
    let b = dir.join("machine-b");
    let tree = |d: &std::path::Path| git_in(d, &["rev-parse", "refs/loopx/state^{tree}"]);
    git_in(
        &b,
        &[
            "fetch",
            "-q",
            "origin",
            "+refs/loopx/state:refs/remotes/origin/loopx/state",
        ],
    );
    assert_eq!(
        tree(&a),
        git_in(
            &dir.join("hub.git"),
            &["rev-parse", "refs/loopx/state^{tree}"]
        )
    );
    assert_eq!(
        git_in(&a, &["rev-list", "--count", "refs/loopx/state"]).trim(),
        // 20, and the gate machine B's held validation opened.
        "21"
    );
    let ops = git_in(
        &a,
        &[
            "log",
            "--format=%(trailers:key=Loopx-Op,valueonly)",
            "refs/loopx/state",
        ],
    );
    for op in [
        "turn.settle",
        "gate.answer",
        "signer.announce",
        "evidence.add",
        "todo.claim",
        "agent.register",
        "init",
    ] {
        assert!(ops.contains(op), "{op} in {ops}");
    }
    // The loser of the race is recorded, naming the winner.
    let rejected = git_in(
        &a,
        &[
            "log",
            "-1",
            "--format=%s",
            "--grep=sync-rejected",
            "refs/loopx/state",
        ],
    );
    assert!(
        rejected.contains("sync-rejected") && rejected.contains("builder holds it"),
        "{rejected}"
    );
    // The agent that made no progress was stopped at its third turn: three
    // settles on the benchmark, the last one opening the stall gate.
    let settles = git_in(
        &a,
        &[
            "log",
            "--format=%s",
            "--grep=Benchmark the parser\": evidence passed, advanced",
            "refs/loopx/state",
        ],
    );
    assert_eq!(settles.lines().count(), 3, "{settles}");
    assert!(
        settles
            .lines()
            .next()
            .unwrap_or_default()
            .contains("stalled: gate g-"),
        "{settles}"
    );
    // Ada's answer carries her signature, in the op and in the gate file;
    // the key was made in the workspace and is trusted only there.
    let answer = git_in(
        &a,
        &[
            "log",
            "-1",
            "--format=%B",
            "--grep=gate answer",
            "refs/loopx/state",
        ],
    );
    assert!(answer.contains("\nsignature = \""), "{answer}");
    assert!(dir.join("allowed_signers").exists());
    // Every tick of the demo's history verifies, on a machine and the hub.
    env.advance(86_400);
    env.loopx(&["-C", a.to_str().unwrap(), "verify"]).ok();
    env.loopx(&["-C", dir.join("hub.git").to_str().unwrap(), "verify"])
        .ok();
    // No branch, index or worktree was touched by loopx on machine A.
    assert_text(&git_in(&a, &["status", "--porcelain"]), "");
}

#[test]
fn the_demo_refuses_a_folder_that_is_not_empty() {
    let env = TestEnv::new();
    std::fs::write(env.repo.join("x"), "x").unwrap();
    let repo = env.repo.to_string_lossy().into_owned();
    let out = run(env.command().args(["demo", "--dir", &repo])).code(2);
    assert!(
        out.stderr.contains("exists and is not empty"),
        "{}",
        out.stderr
    );
    let out = run(env.command().args(["demo", "--dir", &repo, "--json"])).code(2);
    assert_eq!(out.json()["error"]["code"], "dir-not-empty");
}
