//! `loopx doctor` on healthy, corrupt and locked states.

use std::time::{Duration, SystemTime};

use crate::common::{TestEnv, assert_text};

#[test]
fn a_healthy_state() {
    let env = TestEnv::with_board();
    env.add("A", &[]);
    assert_text(
        &env.loopx(&["doctor"]).ok().stdout,
        "Healthy: 5 files at tick 4.\n",
    );
    let v = env.loopx(&["doctor", "--json"]).ok().json();
    assert_eq!(v["healthy"], true);
    assert_eq!(v["problems"].as_array().unwrap().len(), 0);
}

#[test]
fn a_corrupt_file_is_named_with_its_line_and_nothing_is_lost() {
    let env = TestEnv::with_board();
    let t = env.add("A", &[]);
    let path = format!("todos/{}/{t}.toml", &t[2..4]);
    let bad = format!("id = \"{t}\"\ngoal = \"main\"\ntitle = \"A\"\npriority = \"P9\"\n");
    let commit = env.commit_file(&path, bad.as_bytes());
    let out = env.loopx(&["doctor"]).code(1);
    assert_text(
        &out.stdout.replace(&path, "PATH"),
        "warning: the tip 3f8bd1e0b9c1 is not a loopx tick: the message has no body\n  fix: someone committed onto the ref by hand; `git log refs/loopx/state` shows who\nerror: PATH: TOML parse error at line 4, column 12: \"P9\" is not a priority: use P0 (most urgent) to P4\n  fix: restore it from the previous tick: `git show refs/loopx/state~1:PATH`, then commit the fix with loopx or plain git\n"
            .replace("3f8bd1e0b9c1", &commit[..12])
            .as_str(),
    );
    // Reads and writes name the file; the ref does not move.
    let out = env.agent("agent-a", &["todo", "claim", &t]).code(1);
    assert!(
        out.stderr
            .contains(&format!("the state file {path} is corrupt")),
        "{}",
        out.stderr
    );
    assert_eq!(env.tip().as_deref(), Some(commit.as_str()));
    // The bytes are still there for whoever repairs it.
    assert_eq!(env.git(&["show", &format!("refs/loopx/state:{path}")]), bad);
}

#[test]
fn a_newer_format_says_upgrade() {
    let env = TestEnv::with_board();
    env.commit_file("loopx.toml", b"format = 8\n");
    let out = env.loopx(&["status"]).code(1);
    assert_text(
        &out.stderr,
        "error: the state has format 8 but this loopx understands format 7 at most\nhint: upgrade loopx\n",
    );
    let out = env.loopx(&["doctor"]).code(1);
    assert!(out.stdout.contains("error: loopx.toml: the state has format 8 but this loopx understands format 7 at most\n  fix: upgrade loopx\n"), "{}", out.stdout);
    env.loopx(&["todo", "add", "x"]).code(1);
}

#[test]
fn dangling_references_are_reported() {
    let env = TestEnv::with_board();
    let t = env.add("A", &[]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let path = format!("todos/{}/{t}.toml", &t[2..4]);
    let mut file = env.git(&["show", &format!("refs/loopx/state:{path}")]);
    file = file.replace("owner = \"agent-a\"", "owner = \"ghost\"");
    file = file.replace(
        "status = \"claimed\"",
        "status = \"claimed\"\nafter = [\"t-00000000\"]",
    );
    env.commit_file(&path, file.as_bytes());
    let out = env.loopx(&["doctor"]).code(1);
    let body = out.stdout.replace(&path, "PATH").replace(&t, "T");
    assert!(body.contains("error: PATH: after names t-00000000, which does not exist\n  fix: drop it with `loopx todo edit T --after …` or --no-after\n"), "{body}");
    assert!(body.contains("error: PATH: it is claimed by ghost, which is not a registered agent\n  fix: free it with `loopx todo release T --force`\n"), "{body}");
}

#[test]
fn a_stale_lock_is_recovered_by_the_next_writer_and_fix_removes_only_it() {
    let env = TestEnv::with_board();
    let lock = env.repo.join(".git/refs/loopx/state.lock");
    std::fs::write(&lock, "").unwrap();
    // A fresh lock is a writer at work: a warning, not an error.
    let out = env.loopx(&["doctor"]).ok();
    assert!(out.stdout.starts_with("warning: "), "{}", out.stdout);
    assert!(
        out.stdout.contains("is held (0s old): a writer is at work"),
        "{}",
        out.stdout
    );
    // An old one whose writer is gone (no loopx writer here is moving a
    // ref): the next writer takes it back and goes on.
    let age = |lock: &std::path::Path| {
        let f = std::fs::File::options().write(true).open(lock).unwrap();
        f.set_modified(SystemTime::now() - Duration::from_secs(120))
            .unwrap();
    };
    age(&lock);
    let before = env.tip();
    env.loopx(&["todo", "add", "x"]).ok();
    assert!(!lock.exists(), "the abandoned lock was recovered");
    assert_ne!(env.tip(), before);
    // doctor still reports one and removes only it.
    std::fs::write(&lock, "").unwrap();
    age(&lock);
    let before = env.tip();
    let out = env.loopx(&["doctor"]).code(1);
    assert!(out.stdout.contains("stale lock"), "{}", out.stdout);
    let out = env.loopx(&["doctor", "--fix"]).ok();
    assert!(out.stdout.starts_with("fixed: removed "), "{}", out.stdout);
    assert!(!lock.exists());
    assert_eq!(env.tip(), before);
    env.loopx(&["todo", "add", "x"]).ok();
}
