//! Hardening, round 4 (issue 41, items 5 and 6): each test is the attack
//! that once got through, then the honest work that goes on beside it.

use crate::common::{Output, TestEnv, run};

// Agent text cannot paint the terminal (issue 41 item 5).

/// loopx's own five colour sequences, in a title an agent writes: the
/// failed check looks like a passing (green) diff line.
const PAINTED: &str = "Ship \x1b[32m+ validation passed\x1b[0m\x1b[1m";

/// `loopx ARGS` as `agent-a` with colour forced on (as on a terminal).
fn coloured(env: &TestEnv, args: &[&str]) -> Output {
    let mut c = env.command();
    c.env("LOOPX_AGENT", "agent-a")
        .env_remove("NO_COLOR")
        .env("TERM", "xterm-256color")
        .args(["--color", "always"])
        .args(args);
    run(&mut c).ok()
}

#[test]
fn agent_text_cannot_paint_the_terminal_in_log_diff_or_show() {
    let env = TestEnv::with_board();
    let t = env
        .agent("agent-a", &["todo", "add", PAINTED])
        .ok()
        .stdout
        .trim()
        .to_owned();
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let tick = env.ticks().to_string();
    let before = env.tip();
    for args in [
        vec!["log"],
        vec!["log", "-p"],
        vec!["show", &tick],
        vec!["diff", "3"],
        vec!["diff", "3", "-p"],
        vec!["todo", "show", &t],
        vec!["status"],
    ] {
        let out = coloured(&env, &args);
        let what = args.join(" ");
        // Every escape sequence on stdout is one loopx wrote around a diff
        // line: none sits inside the agent's text.
        assert!(
            !out.stdout.contains("Ship \x1b"),
            "`loopx {what}` let the agent's colour through:\n{:?}",
            out.stdout
        );
        if out.stdout.contains("Ship ") {
            assert!(
                out.stdout
                    .contains("Ship \\e[32m+ validation passed\\e[0m\\e[1m"),
                "`loopx {what}` shows the sequences as escapes:\n{:?}",
                out.stdout
            );
        }
        if what.ends_with("-p") || what.starts_with("show") {
            // loopx's own colours still paint its diffs.
            assert!(
                out.stdout.contains("\x1b[1m--- ") && out.stdout.contains("\x1b[32m+"),
                "`loopx {what}` lost its own colours:\n{:?}",
                out.stdout
            );
        }
    }
    // Nothing moved; JSON keeps the exact text.
    assert_eq!(env.tip(), before);
    let v = env.loopx(&["todo", "show", &t, "--json"]).ok().json();
    assert_eq!(v["title"], PAINTED);
}

// Agent and goal ids with a token's shape (issue 41 item 6a).

/// Ids that pass the slug rule and are API tokens by their shape.
fn token_ids() -> [String; 4] {
    let hex = "0123456789abcdef0123456789abcdef";
    [
        "xoxb-1234567890-abcdefghij".to_owned(),
        format!("npm_{hex}abcd"),
        format!("shpat_{hex}"),
        format!("dapi{hex}"),
    ]
}

/// Fails with `code` (JSON) and exit 2, saying why.
#[track_caller]
fn refused_bad_id(out: Output, id: &str) {
    let out = out.code(2);
    assert_eq!(out.error_code(), "bad-id", "{}", out.stdout);
    assert!(out.stderr.contains("looks like a secret"), "{}", out.stderr);
    assert!(
        !out.stderr.contains(id),
        "the token is echoed: {}",
        out.stderr
    );
}

#[test]
fn token_shaped_agent_and_goal_ids_are_refused() {
    let env = TestEnv::with_board();
    let before = env.tip();
    for id in token_ids() {
        refused_bad_id(env.loopx(&["--json", "agent", "register", &id]), &id);
        refused_bad_id(env.agent(&id, &["--json", "agent", "register", &id]), &id);
        refused_bad_id(
            env.loopx(&["--json", "goal", "add", &id, "--objective", "Ship"]),
            &id,
        );
    }
    // A session whose LOOPX_AGENT is a token registers nothing (a hook
    // always exits 0).
    let payload = format!(
        r#"{{"session_id":"1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d","cwd":"{}","hook_event_name":"SessionStart","source":"startup"}}"#,
        env.repo.display()
    );
    let mut c = env.command();
    c.env("LOOPX_AGENT", &token_ids()[2])
        .args(["hook", "claude-code", "SessionStart"]);
    let out = crate::common::run_stdin(&mut c, payload.as_bytes()).ok();
    assert!(out.stderr.contains("looks like a secret"), "{}", out.stderr);
    assert_eq!(env.tip(), before, "nothing was written");
    // init's goal too: no state is made.
    let fresh = TestEnv::new();
    refused_bad_id(
        fresh.loopx(&[
            "--json",
            "init",
            "--goal",
            &token_ids()[3],
            "--objective",
            "Ship",
        ]),
        &token_ids()[3],
    );
    assert_eq!(fresh.tip(), None);
    // Honest ids go on, the token's prefix alone included.
    env.loopx(&["agent", "register", "npm_builder"]).ok();
    env.loopx(&["goal", "add", "dapi-docs", "--objective", "Docs"])
        .ok();
    fresh
        .loopx(&["init", "--goal", "main", "--objective", "Ship"])
        .ok();
}

// A FIFO as --usage-file (issue 41 item 6b).

#[test]
fn a_fifo_as_usage_file_is_refused_without_blocking_and_nothing_runs() {
    use std::time::Duration;
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &[]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let turn = env
        .agent("agent-a", &["quota", "should-run", "--json"])
        .ok()
        .json()["turn_token"]
        .as_str()
        .expect("a turn token")
        .to_owned();
    let fifo = env.root().join("usage.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let ran = env.root().join("check-ran");
    let before = env.tip();
    for path in [fifo.as_path(), env.root()] {
        let path = path.to_str().unwrap();
        let touch = format!("touch {}", ran.display());
        let mut args = vec!["--json", "--agent", "agent-a"];
        args.extend(crate::common::settle(
            &turn,
            &t,
            &["--outcome", "advanced", "--usage-file", path],
        ));
        args.extend(["--", "sh", "-c", &touch]);
        // Blocked on the FIFO, loopx would still be running at the guard.
        let g = crate::test_harden::guarded(&env, &args, Duration::from_secs(20));
        let out = g.out.clone().code(2);
        assert_eq!(out.error_code(), "bad-usage", "{}", out.stdout);
        assert!(
            out.stderr
                .contains(&format!("the usage file {path} is not a regular file")),
            "{}",
            out.stderr
        );
        assert_eq!(env.tip(), before, "nothing was written");
        assert!(!ran.exists(), "the check ran");
    }
    // A regular file is read as before.
    let file = env.root().join("usage.json");
    std::fs::write(
        &file,
        r#"{"input_tokens": 1000, "output_tokens": 100, "model": "gpt-5"}"#,
    )
    .unwrap();
    env.agent(
        "agent-a",
        &crate::common::settle(
            &turn,
            &t,
            &[
                "--outcome",
                "advanced",
                "--usage-file",
                file.to_str().unwrap(),
            ],
        ),
    )
    .ok();
    assert_ne!(env.tip(), before);
}

// A symlinked .git/loopx (issue 41 item 6c).

#[test]
fn a_symlinked_git_loopx_never_holds_or_gives_the_machine_key() {
    let env = TestEnv::with_board();
    let own = env.repo.join(".git/loopx");
    let elsewhere = env.root().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::remove_dir_all(&own).ok();
    std::os::unix::fs::symlink(&elsewhere, &own).unwrap();
    let before = env.tip();
    // Setting up writes no key through the link.
    let out = env.loopx(&["--json", "machine", "setup", "--name", "laptop"]);
    let out = out.code(1);
    assert_eq!(out.error_code(), "no-machine-key", "{}", out.stdout);
    assert!(
        out.stderr
            .contains(&format!("{} is a symbolic link", own.display()))
            && out.stderr.contains("mkdir"),
        "{}",
        out.stderr
    );
    assert!(
        !elsewhere.join("machine_ed25519").exists(),
        "a key was written"
    );
    assert_eq!(env.tip(), before, "nothing was proposed");
    // A key planted where the link points signs nothing.
    let other = TestEnv::with_board();
    other.loopx(&["machine", "setup", "--name", "planted"]).ok();
    std::fs::copy(
        other.repo.join(".git/loopx/machine_ed25519"),
        elsewhere.join("machine_ed25519"),
    )
    .unwrap();
    let out = env.agent("agent-a", &["--json", "todo", "add", "Signed by whom?"]);
    let out = out.code(1);
    assert_eq!(out.error_code(), "no-machine-key", "{}", out.stdout);
    assert_eq!(env.tip(), before, "nothing was signed with the planted key");
    // A folder of its own: the key is made there, and honest work goes on.
    std::fs::remove_file(&own).unwrap();
    std::fs::create_dir(&own).unwrap();
    env.loopx(&["machine", "setup", "--name", "laptop"]).ok();
    assert!(own.join("machine_ed25519").is_file());
    env.agent("agent-a", &["todo", "add", "Signed here"]).ok();
}

// The allowed-signers fail-closed mark (issue 41 item 6d).

#[test]
fn a_fail_closed_mark_that_cannot_be_written_fails_loudly() {
    use crate::common::keys::{announce, have_openssh, keygen, sign_with, trust};
    if !have_openssh() {
        return;
    }
    let env = TestEnv::with_board();
    let a = env.machine();
    let mark = a.repo.join(".git/loopx/signatures-enforced");
    std::fs::create_dir_all(mark.parent().unwrap()).unwrap();
    // A link to nowhere: the mark cannot be written (a full disk, a
    // read-only git dir, an agent that planted it do the same).
    std::os::unix::fs::symlink(env.root().join("gone/mark"), &mark).unwrap();
    let ada = keygen(&env, "ada");
    trust(&a, "ada", &ada);
    sign_with(&a, &ada);
    let before = a.tip();
    let out = a
        .loopx(&[
            "--json",
            "signer",
            "announce",
            "ada",
            "--key",
            ada.to_str().unwrap(),
        ])
        .code(1);
    assert_eq!(out.error_code(), "no-trust-root", "{}", out.stdout);
    assert!(
        out.stderr.contains(&format!(
            "cannot keep the mark {} that this clone enforces signatures",
            mark.display()
        )),
        "{}",
        out.stderr
    );
    assert_eq!(a.tip(), before, "nothing moved");
    // The mark in place: honest work goes on, and the file fails closed.
    std::fs::remove_file(&mark).unwrap();
    announce(&a, "ada", &ada);
    assert!(mark.is_file());
    let file = a.repo.with_extension("allowed_signers");
    std::fs::remove_file(&file).unwrap();
    let out = a
        .loopx(&["--json", "goal", "set", "main", "--status", "paused"])
        .code(3);
    assert_eq!(out.error_code(), "no-trust-root", "{}", out.stderr);
}

// A relative remote URL under `loopx -C DIR` (issue 41 item 6f).

#[test]
fn sync_with_dash_c_resolves_a_relative_remote_url_against_the_repository() {
    let env = TestEnv::with_board();
    let hub = std::path::PathBuf::from(env.hub("hub.git"));
    env.git(&["remote", "add", "origin", "../hub.git"]);
    // `git -C DIR fetch` takes it from DIR's repository: so does loopx,
    // started anywhere, `-C` naming the repository or a folder inside it.
    let away = env.root().join("away/deeper");
    std::fs::create_dir_all(&away).unwrap();
    std::fs::create_dir_all(env.repo.join("sub")).unwrap();
    let sync = |dir: &std::path::Path| {
        let mut c = env.command();
        c.current_dir(&away)
            .arg("-C")
            .arg(dir)
            .args(["--json", "sync", "origin"]);
        run(&mut c)
    };
    env.add("Pushed from afar", &[]);
    sync(&env.repo).ok();
    let hub_tip = || {
        crate::common::git_in(&hub, &["rev-parse", "refs/loopx/state"])
            .trim()
            .to_owned()
    };
    assert_eq!(Some(hub_tip()), env.tip());
    env.add("Pushed from a subfolder", &[]);
    sync(&env.repo.join("sub")).ok();
    assert_eq!(Some(hub_tip()), env.tip());
    // A second clone, its remote relative too, fetches the same way.
    let b = env.clone_machine("second", &hub.to_string_lossy());
    b.git(&["remote", "set-url", "origin", "../hub.git"]);
    let mut c = b.command();
    c.current_dir(&away)
        .arg("-C")
        .arg(&b.repo)
        .args(["sync", "origin"]);
    run(&mut c).ok();
    assert_eq!(b.tip(), env.tip());
    // The git dir of a bare repository is where git resolves it from.
    let bare = env.root().join("bare.git");
    crate::common::git_in(
        env.root(),
        &["clone", "-q", "--bare", "hub.git", "bare.git"],
    );
    crate::common::git_in(&bare, &["remote", "add", "up", "../hub.git"]);
    let mut c = env.command();
    c.current_dir(&away)
        .arg("-C")
        .arg(&bare)
        .args(["sync", "up"]);
    run(&mut c).ok();
}
