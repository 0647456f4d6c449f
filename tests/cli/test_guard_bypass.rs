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
