//! The obvious ways round the tool guard and the caller rules, each tried
//! as the attack: an empty `LOOPX_AGENT`, loopx behind a shell variable,
//! the state ref moved with `git update-ref`, and a `git push` whose
//! destination only git's config names (a plain `git push` on main) under
//! an open production gate. Then honest work goes on.

use std::path::Path;

use crate::common::{Output, TestEnv, git_in, run_stdin};

/// What the guard answers for `command` run by a Codex agent in `cwd`:
/// the denial's reason, or None when the command may run.
fn guard(env: &TestEnv, cwd: &Path, command: &str) -> Option<String> {
    let payload = serde_json::json!({
        "session_id": "0199a1b2-c3d4",
        "cwd": cwd,
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
    });
    let out: Output = run_stdin(
        env.command().args(["hook", "codex", "PreToolUse"]),
        payload.to_string().as_bytes(),
    )
    .ok();
    if out.stdout.trim().is_empty() {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
    Some(
        v["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .to_owned(),
    )
}

#[test]
fn an_empty_loopx_agent_is_refused_never_the_human() {
    let env = TestEnv::with_board();
    let gate = env
        .loopx(&[
            "gate",
            "open",
            "--kind",
            "publish",
            "--question",
            "Ship 1.0?",
        ])
        .ok()
        .stdout
        .trim()
        .to_owned();
    let before = env.tip();
    for blank in ["", "  "] {
        let out = crate::common::run(env.command().env("LOOPX_AGENT", blank).args([
            "gate", "answer", &gate, "--choice", "approve", "--format", "json",
        ]))
        .code(2);
        assert_eq!(out.error_code(), "bad-env");
        assert!(
            out.json()["error"]["message"]
                .as_str()
                .unwrap()
                .contains("empty")
        );
    }
    assert_eq!(env.tip(), before, "the state moved");
    // Honest work goes on: the agent by its id, the human with it unset.
    env.agent("agent-a", &["todo", "add", "Write the notes"])
        .ok();
    env.loopx(&["gate", "answer", &gate, "--choice", "approve"])
        .ok();
}

#[test]
fn loopx_behind_a_variable_and_update_ref_on_the_state_are_denied() {
    let env = TestEnv::with_board();
    let gate = env
        .loopx(&[
            "gate",
            "open",
            "--kind",
            "publish",
            "--question",
            "Ship 1.0?",
        ])
        .ok()
        .stdout
        .trim()
        .to_owned();
    let repo = env.repo.clone();
    for command in [
        format!("L=loopx; $L gate answer {gate} --choice approve"),
        format!("export L=loopx && \"$L\" gate answer {gate} --choice approve"),
        format!("$(command -v loopx) gate answer {gate} --choice approve"),
    ] {
        let why = guard(&env, &repo, &command).unwrap_or_else(|| panic!("{command} allowed"));
        assert!(why.contains("may not answer gate"), "{command}: {why}");
    }
    let tip = env.tip().unwrap();
    for command in [
        format!("git update-ref refs/loopx/state {tip}~1"),
        "git update-ref -d refs/loopx/state".to_owned(),
        format!("git replace {tip} HEAD"),
    ] {
        let why = guard(&env, &repo, &command).unwrap_or_else(|| panic!("{command} allowed"));
        assert!(
            why.contains("may not move loopx's refs"),
            "{command}: {why}"
        );
    }
    assert_eq!(env.tip().unwrap(), tip);
    // Honest commands still run.
    assert_eq!(guard(&env, &repo, "L=loopx; $L status"), None);
    assert_eq!(
        guard(&env, &repo, "git update-ref refs/heads/scratch HEAD"),
        None
    );
}

/// A repository on `main` with an upstream on a bare hub, a commit pushed,
/// and an open production gate.
fn on_main_under_a_production_gate() -> (TestEnv, String) {
    let env = TestEnv::with_board();
    let hub = env.hub("hub.git");
    env.git(&["remote", "add", "origin", &hub]);
    env.commit_file_in_worktree();
    env.git(&["push", "-q", "-u", "origin", "main"]);
    env.loopx(&[
        "gate",
        "open",
        "--kind",
        "production",
        "--question",
        "May I deploy the release?",
    ])
    .ok();
    (env, hub)
}

impl TestEnv {
    fn commit_file_in_worktree(&self) {
        std::fs::write(self.repo.join("README"), "hello\n").unwrap();
        self.git(&["add", "README"]);
        self.git(&["commit", "-q", "-m", "first"]);
    }
}

#[test]
fn a_push_that_lands_on_main_is_denied_however_it_names_it() {
    let (env, _hub) = on_main_under_a_production_gate();
    let repo = env.repo.clone();
    for command in [
        "git push",
        "git push --force",
        "git push -f origin",
        "git push origin HEAD",
        "git push --force-with-lease",
        "git push origin +HEAD",
        "git push origin +main",
        "git push --all",
        "git push --mirror origin",
        "cd . && git push",
    ] {
        let why = guard(&env, &repo, command).unwrap_or_else(|| panic!("`{command}` allowed"));
        assert!(
            why.contains("waits on gate") && why.contains("(production)"),
            "{command}: {why}"
        );
    }
    let why = guard(&env, &repo, "git push -f origin").unwrap();
    assert!(
        why.contains("`git push --force origin (to main, the current branch)`"),
        "{why}"
    );

    // On a feature branch the same plain push goes to the feature branch.
    env.git(&["checkout", "-q", "-b", "feature/parser"]);
    assert_eq!(guard(&env, &repo, "git push -u origin HEAD"), None);
    assert_eq!(guard(&env, &repo, "git push --force"), None);
    assert_eq!(guard(&env, &repo, "git push origin feature/parser"), None);
    // …unless the config sends it to main.
    env.git(&["config", "push.default", "upstream"]);
    env.git(&["config", "branch.feature/parser.remote", "origin"]);
    env.git(&["config", "branch.feature/parser.merge", "refs/heads/main"]);
    let why = guard(&env, &repo, "git push").expect("a push to the upstream main");
    assert!(why.contains("main"), "{why}");
    env.git(&["config", "push.default", "simple"]);
    env.git(&["config", "remote.origin.push", "refs/heads/*:refs/heads/*"]);
    assert!(guard(&env, &repo, "git push").is_some());
    env.git(&["config", "--unset", "remote.origin.push"]);
    env.git(&["config", "push.default", "nothing"]);
    assert_eq!(guard(&env, &repo, "git push"), None);

    // `cd` and `git -C` into another clone on main.
    let other = env.root().join("other");
    git_in(
        env.root(),
        &[
            "clone",
            "-q",
            "-b",
            "main",
            &env.repo.to_string_lossy(),
            "other",
        ],
    );
    assert!(guard(&env, &repo, "cd ../other && git push origin HEAD").is_some());
    assert!(guard(&env, &repo, &format!("git -C {} push", other.display())).is_some());

    // Honest work goes on: the push the guard allowed really runs.
    env.git(&["config", "push.default", "simple"]);
    std::fs::write(env.repo.join("NOTES"), "n\n").unwrap();
    env.git(&["add", "NOTES"]);
    env.git(&["commit", "-q", "-m", "notes"]);
    assert_eq!(guard(&env, &repo, "git push -u origin HEAD"), None);
    env.git(&["push", "-q", "-u", "origin", "HEAD"]);
}

#[test]
fn a_push_is_resolved_only_when_a_gate_could_cover_it() {
    let env = TestEnv::with_board();
    // No gate open: nothing to resolve, nothing denied (even outside a
    // repository git could read).
    assert_eq!(guard(&env, &env.repo.clone(), "git push --force"), None);
    // A publish gate covers tags, not branches.
    env.loopx(&[
        "gate",
        "open",
        "--kind",
        "publish",
        "--question",
        "Ship 1.0?",
    ])
    .ok();
    assert!(guard(&env, &env.repo.clone(), "git push --tags").is_some());
    assert_eq!(guard(&env, &env.repo.clone(), "git push origin main"), None);
}

/// Each runtime's guard event, as `loopx hook` is called for it.
const GUARDS: [(&str, &str); 6] = [
    ("claude-code", "PreToolUse"),
    ("codex", "PreToolUse"),
    ("cursor", "beforeShellExecution"),
    ("gemini", "BeforeTool"),
    ("opencode", "PreToolUse"),
    ("pi", "PreToolUse"),
];

/// What an agent asks its runtime to run.
enum Call<'a> {
    Shell(&'a str),
    /// A file write of this content, through the runtime's editor tool
    /// (Cursor's guard event sees shell commands only: there it is a
    /// `printf` into a file).
    Write(&'a str),
}

/// The guard event's payload for `call`, as `runtime` (or loopx's plugin
/// for it) sends it.
fn payload(runtime: &str, repo: &Path, call: &Call) -> serde_json::Value {
    use serde_json::json;
    let shell = |tool: &str, command: &str| {
        json!({
            "session_id": "0199a1b2-c3d4",
            "cwd": repo,
            "hook_event_name": "PreToolUse",
            "tool_name": tool,
            "tool_input": {"command": command, "description": "Run it"},
        })
    };
    let write = |tool: &str, content: &str| {
        json!({
            "session_id": "0199a1b2-c3d4",
            "cwd": repo,
            "hook_event_name": "PreToolUse",
            "tool_name": tool,
            "tool_input": {"file_path": repo.join("NOTES.md"), "content": content},
        })
    };
    match (runtime, call) {
        ("cursor", Call::Shell(command)) => json!({
            "conversation_id": "c0ffee00-1111",
            "hook_event_name": "beforeShellExecution",
            "workspace_roots": [repo],
            "command": command,
            "cwd": repo,
        }),
        ("cursor", Call::Write(content)) => json!({
            "conversation_id": "c0ffee00-1111",
            "hook_event_name": "beforeShellExecution",
            "workspace_roots": [repo],
            "command": format!("printf '%s' '{content}' > NOTES.md"),
            "cwd": repo,
        }),
        ("gemini", Call::Shell(c)) => shell("run_shell_command", c),
        ("gemini", Call::Write(c)) => write("write_file", c),
        ("pi", Call::Shell(c)) => shell("bash", c),
        ("pi", Call::Write(c)) => write("write", c),
        (_, Call::Shell(c)) => shell("Bash", c),
        (_, Call::Write(c)) => write("Write", c),
    }
}

/// The denial's reason in `runtime`'s answer, or None for an empty answer
/// (the runtime goes on).
fn denial(runtime: &str, stdout: &str) -> Option<String> {
    if stdout.trim().is_empty() {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(stdout).unwrap();
    let (decision, reason) = match runtime {
        "cursor" => (&v["permission"], &v["agent_message"]),
        "gemini" => (&v["decision"], &v["reason"]),
        _ => (
            &v["hookSpecificOutput"]["permissionDecision"],
            &v["hookSpecificOutput"]["permissionDecisionReason"],
        ),
    };
    assert_eq!(decision, "deny", "{runtime}: {v}");
    Some(reason.as_str().unwrap().to_owned())
}

/// Plays the runtime: sends the guard event's payload for `call` and, if
/// the answer does not deny it, runs the shell command as the runtime would
/// (from a file, in the repository, with a `cargo` on PATH that writes its
/// arguments to `cargo.log`). The denial's reason, if any.
fn runtime_runs(env: &TestEnv, runtime: &str, event: &str, call: &Call) -> Option<String> {
    let doc = payload(runtime, &env.repo, call).to_string();
    let out = run_stdin(env.command().args(["hook", runtime, event]), doc.as_bytes()).ok();
    let denied = denial(runtime, &out.stdout);
    if let (None, Call::Shell(command)) = (&denied, call) {
        let bin = env.root().join("stub-bin");
        std::fs::create_dir_all(&bin).unwrap();
        let cargo = bin.join("cargo");
        let log = env.root().join("cargo.log");
        std::fs::write(
            &cargo,
            format!("#!/bin/sh\necho \"$*\" >> '{}'\n", log.display()),
        )
        .unwrap();
        std::fs::set_permissions(&cargo, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let script = env.root().join("tool-call.sh");
        std::fs::write(&script, command).unwrap();
        let status = std::process::Command::new("sh")
            .arg(&script)
            .current_dir(&env.repo)
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .status()
            .unwrap();
        assert!(status.success(), "{runtime}: the allowed command failed");
    }
    denied
}

/// What the stub `cargo` was asked to do.
fn cargo_ran(env: &TestEnv) -> String {
    std::fs::read_to_string(env.root().join("cargo.log")).unwrap_or_default()
}

/// A board with an open publish gate: `cargo publish` is denied.
fn under_a_publish_gate() -> TestEnv {
    let env = TestEnv::with_board();
    env.loopx(&[
        "gate",
        "open",
        "--kind",
        "publish",
        "--question",
        "Ship 1.0?",
    ])
    .ok();
    env
}

/// `cargo publish` padded past the old 1 MiB limit with a shell comment:
/// 1.2 MB of the agent's own text.
fn padded_publish() -> String {
    format!("cargo publish # {}", "x".repeat(1_200_000))
}

#[test]
fn a_cargo_publish_padded_to_1_2_mb_is_denied_by_every_runtimes_guard() {
    let env = under_a_publish_gate();
    let padded = padded_publish();
    let big_file = "x".repeat(1_200_000);
    let before = env.tip();
    for (runtime, event) in GUARDS {
        // The setup denies the small payload…
        let why = runtime_runs(&env, runtime, event, &Call::Shell("cargo publish"))
            .unwrap_or_else(|| panic!("{runtime}: a plain cargo publish was allowed"));
        assert!(
            why.contains("`cargo publish` waits on gate"),
            "{runtime}: {why}"
        );
        // …and the padded one.
        let why = runtime_runs(&env, runtime, event, &Call::Shell(&padded))
            .unwrap_or_else(|| panic!("{runtime}: a padded cargo publish was allowed"));
        assert!(
            why.contains("`cargo publish` waits on gate"),
            "{runtime}: {why}"
        );
        // Honest work goes on: a small command runs, a large file is written.
        assert_eq!(
            runtime_runs(&env, runtime, event, &Call::Shell("cargo build --locked")),
            None,
            "{runtime}"
        );
        assert_eq!(
            runtime_runs(&env, runtime, event, &Call::Write(&big_file)),
            None,
            "{runtime}: a large write was denied"
        );
    }
    assert_eq!(cargo_ran(&env), "build --locked\n".repeat(GUARDS.len()));
    assert_eq!(env.tip(), before, "the guard wrote nothing");
}

#[test]
fn a_guard_payload_still_open_at_the_2_s_read_deadline_is_denied() {
    use std::io::Write;
    use std::process::Stdio;
    let env = under_a_publish_gate();
    let outside = TestEnv::new();
    // Every runtime at once, inside loopx and outside: each process waits
    // out the deadline on a pipe its writer holds open.
    let mut held = Vec::new();
    for (runtime, event) in GUARDS {
        for (inside, e) in [(true, &env), (false, &outside)] {
            let doc = payload(runtime, &e.repo, &Call::Shell("cargo publish")).to_string();
            let started = std::time::Instant::now();
            let mut child = e
                .command()
                .args(["hook", runtime, event])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(&doc.as_bytes()[..doc.len() / 2]).unwrap();
            held.push((runtime, inside, started, child, stdin));
        }
    }
    for (runtime, inside, started, child, stdin) in held {
        let out = child.wait_with_output().unwrap();
        let took = started.elapsed();
        drop(stdin);
        assert_eq!(out.status.code(), Some(0), "{runtime}");
        // The deadline is 2 s, well within the 5 s the runtimes give the
        // guard's hook.
        assert!(
            took >= std::time::Duration::from_secs(2) && took < std::time::Duration::from_secs(5),
            "{runtime}: answered after {took:?}"
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        match inside {
            true => {
                let why = denial(runtime, &stdout).unwrap_or_else(|| panic!("{runtime}: allowed"));
                assert!(why.contains("did not close within 2 s"), "{runtime}: {why}");
            }
            false => assert_eq!(stdout, "", "{runtime}: outside loopx"),
        }
    }
}

#[test]
fn a_guard_payload_loopx_cannot_read_is_denied_but_outside_loopx_says_nothing() {
    let env = under_a_publish_gate();
    let outside = TestEnv::new();
    let before = env.tip();
    let huge = format!("cargo publish # {}", "x".repeat(17 << 20));
    // What the runtime sends for a call in `repo` that loopx cannot read.
    let unreadable = |runtime: &str, repo: &Path| {
        // A shell tool whose command is not a string.
        let mut odd = payload(runtime, repo, &Call::Shell("x"));
        match runtime {
            "cursor" => odd["command"] = serde_json::json!({"argv": ["cargo", "publish"]}),
            _ => odd["tool_input"]["command"] = serde_json::json!(42),
        }
        [
            ("not JSON", b"{\"tool_name\": \"Bash\", ".to_vec()),
            ("not an object", b"[1, 2]".to_vec()),
            (
                "over 16 MiB",
                payload(runtime, repo, &Call::Shell(&huge))
                    .to_string()
                    .into_bytes(),
            ),
            ("a command that is not text", odd.to_string().into_bytes()),
        ]
    };
    for (runtime, event) in GUARDS {
        for (what, bytes) in unreadable(runtime, &env.repo) {
            let out = run_stdin(env.command().args(["hook", runtime, event]), &bytes).ok();
            let why = denial(runtime, &out.stdout)
                .unwrap_or_else(|| panic!("{runtime}: {what} was allowed"));
            assert!(
                why.starts_with("loopx: the tool guard could not check this call"),
                "{runtime} {what}: {why}"
            );
        }
        for (what, bytes) in unreadable(runtime, &outside.repo) {
            let out = run_stdin(outside.command().args(["hook", runtime, event]), &bytes).ok();
            assert_eq!(out.stdout, "", "{runtime} {what}: outside loopx");
        }
    }
    assert_eq!(env.tip(), before, "the guard wrote nothing");
}

#[test]
fn loopx_guard_off_in_the_runtimes_environment_lets_commands_through_and_doctor_says_so() {
    let mut env = under_a_publish_gate();
    env.loopx(&["hooks", "install", "--runtime", "claude-code", "--guard"])
        .ok();
    let doctor = env
        .loopx(&["hooks", "doctor", "--runtime", "claude-code"])
        .ok()
        .stdout;
    assert!(
        doctor.contains("tool guard: on for claude-code; LOOPX_GUARD=off in a runtime's launch environment switches it off"),
        "{doctor}"
    );
    env.set_env("LOOPX_GUARD", "off");
    for (runtime, event) in GUARDS {
        for doc in [
            payload(runtime, &env.repo, &Call::Shell("cargo publish")).to_string(),
            payload(runtime, &env.repo, &Call::Shell(&padded_publish())).to_string(),
            "{\"tool_name\": ".to_owned(),
        ] {
            let out = run_stdin(env.command().args(["hook", runtime, event]), doc.as_bytes()).ok();
            assert_eq!(out.stdout, "", "{runtime}");
            assert_eq!(
                out.stderr,
                "loopx hook: the tool guard is off (LOOPX_GUARD=off); answering nothing.\n",
                "{runtime}"
            );
        }
    }
    let doctor = env
        .loopx(&["hooks", "doctor", "--runtime", "claude-code"])
        .ok()
        .stdout;
    assert!(
        doctor.contains("tool guard: OFF for claude-code (LOOPX_GUARD=off here)"),
        "{doctor}"
    );
}

#[test]
fn a_command_that_keeps_the_guard_busy_past_3_s_is_denied_in_time() {
    let env = under_a_publish_gate();
    // Each bare `git push` is resolved with git (two processes) while a
    // publish gate is open: 50,000 of them keep the guard busy for minutes,
    // past the 5 s after which a runtime gives up on its hook and runs the
    // command. The guard's deadline is 3 s.
    let busy = format!("{}cargo publish", "git push; ".repeat(50_000));
    let calls: Vec<_> = GUARDS
        .iter()
        .map(|&(runtime, event)| {
            let doc = payload(runtime, &env.repo, &Call::Shell(&busy)).to_string();
            let mut command = env.command();
            command.args(["hook", runtime, event]);
            std::thread::spawn(move || {
                let started = std::time::Instant::now();
                let out = run_stdin(&mut command, doc.as_bytes()).ok();
                (runtime, started.elapsed(), out)
            })
        })
        .collect();
    for call in calls {
        let (runtime, took, out) = call.join().unwrap();
        let why = denial(runtime, &out.stdout).unwrap_or_else(|| panic!("{runtime}: allowed"));
        assert!(
            took < std::time::Duration::from_millis(4500),
            "{runtime}: answered after {took:?}"
        );
        assert!(
            why.contains("within 3 s") || why.contains("`cargo publish` waits on gate"),
            "{runtime}: {why}"
        );
    }
    // Honest work goes on: one plain push is resolved and allowed.
    assert_eq!(
        runtime_runs(
            &env,
            "codex",
            "PreToolUse",
            &Call::Shell("git push; cargo build")
        ),
        None
    );
}
