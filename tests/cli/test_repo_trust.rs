//! The repository loopx opens is the one git would open, read as written:
//! a repository owned by another user is refused as git refuses it (unless
//! `safe.directory` names it), and replacement refs never change the
//! history loopx reads (a self-referencing one used to spin forever).
//! Each test is the attack, then honest work going on.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Output, TestEnv, git_in};

/// Runs a command, killing it (and failing the test) if it has not ended
/// after a generous bound: a regression that spins fails instead of hanging
/// CI. The bound is not a speed check.
fn bounded(c: &mut Command) -> Output {
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("loopx runs");
    let started = Instant::now();
    while child.try_wait().expect("waiting").is_none() {
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{c:?} still ran after 120 s: a walk of history spins");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// git in `dir`, trusting it whoever owns it (the test's own look at the
/// repository, never loopx's).
fn git_trusting(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["-c", "safe.directory=*"];
    all.extend_from_slice(args);
    git_in(dir, &all)
}

fn tip_of(dir: &Path) -> String {
    git_trusting(dir, &["rev-parse", "refs/loopx/state"])
        .trim()
        .to_owned()
}

/// Gives `dir` (recursively) to uid 12345, a user that need not exist.
/// False when this process may not (not root): the caller skips, visibly.
#[allow(clippy::print_stderr)]
fn chown_away(dir: &Path) -> bool {
    let done = Command::new("chown")
        .args(["-R", "12345:12345"])
        .arg(dir)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !done {
        eprintln!("SKIPPED: chown needs root; the ownership check was not exercised");
    }
    done
}

#[test]
fn a_repository_owned_by_another_user_is_refused_like_git_until_safe_directory_names_it() {
    let env = TestEnv::with_board();
    // The other user's repository holds a notify command and a validation
    // that would run as whoever runs loopx there.
    let notified = env.root().join("notified");
    let validated = env.root().join("validated");
    env.git(&[
        "config",
        "loopx.notify",
        &format!("touch '{}'", notified.display()),
    ]);
    let t = env.add(
        "Fix typo",
        &[
            "--",
            "sh",
            "-c",
            &format!("touch '{}'", validated.display()),
        ],
    );
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let before = tip_of(&env.repo);
    if !chown_away(&env.repo) {
        return;
    }
    // git itself refuses.
    let git = Command::new("git")
        .args(["status"])
        .current_dir(&env.repo)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        !git.status.success(),
        "git ran in another user's repository"
    );
    let reads: [&[&str]; 4] = [&["status"], &["todo", "list"], &["verify"], &["log"]];
    for args in reads {
        let mut all = args.to_vec();
        all.extend(["--format", "json"]);
        let out = env.loopx(&all).code(3);
        assert_eq!(out.error_code(), "unsafe-repository", "{args:?}");
        assert!(
            out.json()["error"]["hint"]
                .as_str()
                .unwrap()
                .contains("safe.directory")
        );
    }
    let writes: [&[&str]; 3] = [
        &["todo", "done", &t],
        &[
            "gate",
            "open",
            "--kind",
            "permission",
            "--question",
            "May I push?",
        ],
        &["todo", "add", "Another"],
    ];
    for args in writes {
        let mut all = args.to_vec();
        all.extend(["--format", "json"]);
        let out = env.agent("agent-a", &all).code(3);
        assert_eq!(out.error_code(), "unsafe-repository", "{args:?}");
    }
    assert!(!validated.exists(), "the other user's validation ran");
    assert!(!notified.exists(), "the other user's notify command ran");
    assert_eq!(tip_of(&env.repo), before, "the state moved");

    // safe.directory in the global config, as for git, lets it through
    // again: honest work goes on.
    let global = env.root().join("trusting.gitconfig");
    std::fs::write(
        &global,
        format!("[safe]\n\tdirectory = {}\n", env.repo.display()),
    )
    .unwrap();
    let trusted = |args: &[&str]| {
        crate::common::run(
            env.command()
                .env("GIT_CONFIG_GLOBAL", &global)
                .env("LOOPX_AGENT", "agent-a")
                .args(args),
        )
    };
    trusted(&["todo", "done", &t]).ok();
    assert!(
        validated.exists(),
        "the validation did not run once trusted"
    );
    assert_ne!(tip_of(&env.repo), before);
    // The repository's own config cannot trust itself (git ignores
    // safe.directory there too).
    git_trusting(&env.repo, &["config", "safe.directory", "*"]);
    let out = env.loopx(&["status", "--format", "json"]).code(3);
    assert_eq!(out.error_code(), "unsafe-repository");
}

/// Makes `commit` replaced by a commit with its tree whose parent is
/// `commit` itself: anything that follows replace refs walks in a circle.
fn self_replacement(dir: &Path, commit: &str) -> String {
    let looped = git_in(
        dir,
        &[
            "commit-tree",
            &format!("{commit}^{{tree}}"),
            "-p",
            commit,
            "-m",
            "looped",
        ],
    )
    .trim()
    .to_owned();
    git_in(dir, &["replace", "-f", commit, &looped]);
    looped
}

#[test]
fn a_self_referencing_replacement_never_changes_or_stops_what_loopx_reads() {
    let env = TestEnv::with_board();
    let t = env.add("Parse the header", &[]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let status_before = env.loopx(&["status", "--format", "json"]).ok().stdout;
    let log_before = env.loopx(&["log", "--format", "json"]).ok().stdout;
    let tip = env.tip().unwrap();
    let first = env
        .git(&["rev-list", "--max-parents=0", "refs/loopx/state"])
        .trim()
        .to_owned();
    // Both the tip and a commit deep in the history loop onto themselves.
    self_replacement(&env.repo, &tip);
    self_replacement(&env.repo, &first);
    let loops = env.git(&["replace", "-l"]);
    assert_eq!(loops.lines().count(), 2, "{loops}");

    let status = bounded(env.command().args(["status", "--format", "json"])).ok();
    // The clock moved; compare what the state says, not the time.
    let strip = |s: &str| {
        let mut v: serde_json::Value = serde_json::from_str(s).unwrap();
        v.as_object_mut().unwrap().remove("now");
        v
    };
    assert_eq!(strip(&status.stdout)["tip"], strip(&status_before)["tip"]);
    let log = bounded(env.command().args(["log", "--format", "json"])).ok();
    assert_eq!(
        log.stdout, log_before,
        "the history read through the replacement"
    );
    bounded(env.command().args(["verify"])).ok();
    bounded(env.command().args(["verify", "--from", &first])).ok();

    // Honest work goes on, and git's own walks (packing) do not spin.
    bounded(
        env.command()
            .env("LOOPX_AGENT", "agent-a")
            .args(["todo", "done", &t]),
    )
    .ok();
    bounded(env.command().args(["gc"])).ok();
    bounded(env.command().args(["verify"])).ok();
}

#[test]
fn replacement_refs_never_reach_a_guarded_hub_nor_loop_a_clone_that_fetched_them() {
    let env = TestEnv::with_board();
    let hub = env.hub("hub.git");
    env.git(&["remote", "add", "origin", &hub]);
    env.loopx(&["sync"]).ok();
    env.loopx(&["-C", &hub, "hub", "install"]).ok();
    let tip = env.tip().unwrap();
    self_replacement(&env.repo, &tip);

    // A guarded hub refuses the replacement, whatever else the push holds.
    let hub_dir = Path::new(&hub);
    let hub_tip = tip_of(hub_dir);
    let out = Command::new("git")
        .args(["push", "origin", "refs/replace/*:refs/replace/*"])
        .current_dir(&env.repo)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("takes no replacement refs"), "{said}");
    assert_eq!(
        git_trusting(hub_dir, &["for-each-ref", "refs/replace/"]),
        ""
    );
    assert_eq!(tip_of(hub_dir), hub_tip);

    // An unguarded hub takes it; a clone that fetched it syncs, verifies
    // and works on without walking in a circle, and so does loopx on the
    // hub itself.
    let open_hub = env.hub("open.git");
    env.git(&["remote", "add", "open", &open_hub]);
    env.loopx(&["sync", "open"]).ok();
    env.git(&["push", "open", "refs/replace/*:refs/replace/*"]);
    let b = env.clone_machine("b", &open_hub);
    b.git(&["fetch", "origin", "refs/replace/*:refs/replace/*"]);
    assert_eq!(b.git(&["replace", "-l"]).lines().count(), 1);
    bounded(b.command().args(["sync"])).ok();
    bounded(b.command().args(["verify"])).ok();
    let u = b.add("Write the docs");
    bounded(b.command().args(["sync"])).ok();
    bounded(env.command().args(["sync", "open"])).ok();
    let listed = bounded(env.command().args(["todo", "list", "--format", "json"])).ok();
    assert!(listed.stdout.contains(&u), "{}", listed.stdout);
    bounded(env.command().args(["-C", &open_hub, "verify"])).ok();
    bounded(env.command().args(["-C", &open_hub, "status"])).ok();
    // A mirror clone carries refs/replace/* along with everything else.
    git_in(
        env.root(),
        &["clone", "-q", "--mirror", &open_hub, "mirror.git"],
    );
    let mirror = env.root().join("mirror.git");
    assert_eq!(git_in(&mirror, &["replace", "-l"]).lines().count(), 1);
    bounded(env.command().arg("-C").arg(&mirror).arg("verify")).ok();
}
