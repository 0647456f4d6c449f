//! A claim's own linked worktree: made on a branch named after the todo,
//! found again, removed by `done` only once its work is committed (the
//! branch stays), never reset, pruned when deleted by hand, left and listed
//! after a steal; two real processes on one clone never meet.

use std::path::{Path, PathBuf};

use crate::common::{TestEnv, git_in, run};

/// A board whose main checkout has one commit (a worktree branches from
/// HEAD).
fn board() -> TestEnv {
    let env = TestEnv::with_board();
    std::fs::write(env.repo.join("README"), "main\n").expect("write");
    env.git(&["add", "README"]);
    env.git(&["commit", "-q", "-m", "first"]);
    env
}

/// Claims `id` as `agent` with `extra` flags; the worktree's folder and
/// branch from the JSON answer.
fn claim(
    env: &TestEnv,
    agent: &str,
    id: &str,
    extra: &[&str],
) -> (PathBuf, String, serde_json::Value) {
    let mut args = vec!["todo", "claim", id, "--json"];
    args.extend_from_slice(extra);
    let v = env.agent(agent, &args).ok().json();
    let w = &v["worktree"];
    let path = PathBuf::from(w["path"].as_str().expect("a worktree path"));
    let branch = w["branch"].as_str().expect("a branch").to_owned();
    (path, branch, v)
}

fn commit_all(dir: &Path, msg: &str) {
    git_in(dir, &["add", "-A"]);
    git_in(dir, &["commit", "-q", "-m", msg]);
}

fn branch_exists(env: &TestEnv, branch: &str) -> bool {
    std::process::Command::new("git")
        .args([
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ])
        .current_dir(&env.repo)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git")
        .status
        .success()
}

#[test]
fn done_refuses_uncommitted_work_then_removes_the_worktree_and_keeps_the_branch() {
    let env = board();
    let id = env.add("Parse numbers", &[]);
    let head = env.git(&["rev-parse", "HEAD"]);
    let (path, branch, v) = claim(&env, "agent-a", &id, &["--worktree"]);
    assert_eq!(branch, format!("loopx/{id}"));
    assert_eq!(v["worktree"]["created"], true, "{v}");
    assert!(v["worktree"]["made"].is_string(), "{v}");
    assert!(path.join("README").is_file(), "the worktree is checked out");
    assert!(
        path.starts_with(env.root().join("repo.loopx-worktrees")),
        "{}",
        path.display()
    );

    // A second session of the same agent finds it again.
    let (again, same, v) = claim(&env, "agent-a", &id, &[]);
    assert_eq!(v["worktree"]["created"], false, "{v}");
    assert_eq!(
        (again.as_path(), same.as_str()),
        (path.as_path(), branch.as_str())
    );

    std::fs::write(path.join("numbers.rs"), "fn parse() {}\n").expect("write");
    let out = env
        .agent("agent-a", &["todo", "done", &id, "--json"])
        .code(3);
    assert_eq!(out.error_code(), "uncommitted-work");
    assert!(out.stdout.contains("numbers.rs"), "{}", out.stdout);
    assert!(path.join("numbers.rs").is_file(), "nothing was deleted");
    let v = env.loopx(&["todo", "show", &id, "--json"]).ok().json();
    assert_eq!(v["status"], "claimed", "{v}");

    commit_all(&path, "parse numbers");
    let v = env
        .agent("agent-a", &["todo", "done", &id, "--json"])
        .ok()
        .json();
    assert_eq!(v["worktree"]["closed"], "removed", "{v}");
    assert!(!path.exists(), "the clean worktree is removed");
    assert!(branch_exists(&env, &branch), "its branch stays for review");
    let files = env.git(&["ls-tree", "--name-only", &branch]);
    assert!(files.contains("numbers.rs"), "{files}");
    // The main checkout never moved.
    assert_eq!(env.git(&["rev-parse", "HEAD"]), head);
    assert_eq!(env.git(&["status", "--porcelain"]), "");
    assert_eq!(env.git(&["symbolic-ref", "HEAD"]).trim(), "refs/heads/main");
}

#[test]
fn a_taken_branch_gets_a_suffix_and_a_worktree_deleted_by_hand_is_pruned() {
    let env = board();
    let id = env.add("Parse strings", &[]);
    env.git(&["branch", &format!("loopx/{id}")]);
    let before = env.git(&["rev-parse", &format!("loopx/{id}")]);
    let (path, branch, _) = claim(&env, "agent-a", &id, &["--worktree"]);
    assert_eq!(
        branch,
        format!("loopx/{id}-2"),
        "an existing branch is never reset"
    );
    assert_eq!(env.git(&["rev-parse", &format!("loopx/{id}")]), before);

    std::fs::remove_dir_all(&path).expect("rm");
    let out = env.agent("agent-a", &["todo", "claim", &id]).ok();
    assert!(
        out.stderr.contains("deleted by hand: pruned"),
        "{}",
        out.stderr
    );
    let v = env.loopx(&["status", "--json"]).ok().json();
    assert!(v.get("left_worktrees").is_none(), "{v}");
    let listed = env.git(&["worktree", "list", "--porcelain"]);
    assert!(
        !listed.contains(&path.display().to_string()),
        "pruned: {listed}"
    );
    let (path3, branch3, _) = claim(&env, "agent-a", &id, &[]);
    assert_eq!(branch3, format!("loopx/{id}-3"));
    assert!(path3.is_dir());
    assert!(
        branch_exists(&env, &branch),
        "the pruned worktree's branch stays"
    );
}

#[test]
fn after_a_steal_the_new_owner_gets_a_new_worktree_and_the_old_is_left_and_listed() {
    let env = board();
    let id = env.add("Parse lists", &[]);
    let (old, _, _) = claim(&env, "agent-a", &id, &["--worktree", "--ttl", "1m"]);
    std::fs::write(old.join("half.rs"), "// half done\n").expect("write");
    env.advance(600);
    let (new, branch, v) = claim(&env, "agent-b", &id, &["--worktree"]);
    assert_eq!(v["todo"]["owner"], "agent-b", "{v}");
    assert_ne!(new, old);
    assert_eq!(branch, format!("loopx/{id}-2"));
    assert!(
        old.join("half.rs").is_file(),
        "the old owner's work survives the steal"
    );
    let v = env.loopx(&["status", "--json"]).ok().json();
    let left = v["left_worktrees"].as_array().expect("listed");
    assert_eq!(left.len(), 1, "{v}");
    assert_eq!(left[0]["agent"], "agent-a");
    assert_eq!(left[0]["path"], old.display().to_string());
    let human = env.loopx(&["status"]).ok().stdout;
    assert!(human.contains("worktree left:"), "{human}");

    // The new owner's done removes its own worktree only.
    let v = env
        .agent("agent-b", &["todo", "done", &id, "--json"])
        .ok()
        .json();
    assert_eq!(v["worktree"]["closed"], "removed", "{v}");
    assert!(!new.exists());
    assert!(
        old.join("half.rs").is_file(),
        "and leaves the old one alone"
    );
}

#[test]
fn git_config_decides_without_the_flag() {
    let env = board();
    let a = env.add("One", &[]);
    let b = env.add("Two", &[]);
    let v = env
        .agent("agent-a", &["todo", "claim", &a, "--json"])
        .ok()
        .json();
    assert!(
        v.get("worktree").is_none(),
        "auto, alone: the checkout is used: {v}"
    );
    env.git(&["config", "loopx.worktree", "always"]);
    env.git(&["config", "loopx.worktrees", "../trees"]);
    let (path, _, _) = claim(&env, "agent-b", &b, &[]);
    assert!(
        path.starts_with(env.root().join("repo/../trees"))
            || path.starts_with(env.root().join("trees")),
        "{}",
        path.display()
    );
    let v = env
        .agent("agent-b", &["todo", "claim", &b, "--no-worktree", "--json"])
        .ok()
        .json();
    assert!(
        v["worktree"].is_object(),
        "a claim that has one finds it again: {v}"
    );
}

#[test]
fn two_processes_claiming_on_one_clone_never_meet() {
    let env = board();
    env.git(&["config", "loopx.worktree", "always"]);
    let ids = [env.add("Left half", &[]), env.add("Right half", &[])];
    let spawner = env.spawner();
    let agents = ["agent-a", "agent-b"];
    let paths: Vec<PathBuf> = std::thread::scope(|s| {
        let handles: Vec<_> = agents
            .iter()
            .zip(&ids)
            .map(|(agent, id)| {
                let sp = spawner.clone();
                s.spawn(move || {
                    let out = run(sp
                        .command()
                        .env("LOOPX_AGENT", agent)
                        .args(["todo", "claim", id, "--json"]))
                    .ok();
                    let v = out.json();
                    let path = PathBuf::from(v["worktree"]["path"].as_str().expect("path"));
                    std::fs::write(path.join(format!("{agent}.txt")), *agent).expect("write");
                    std::fs::write(path.join("README"), format!("{agent} was here\n"))
                        .expect("write");
                    commit_all(&path, agent);
                    let out = run(sp
                        .command()
                        .env("LOOPX_AGENT", agent)
                        .args(["todo", "done", id, "--json"]))
                    .ok();
                    assert_eq!(out.json()["worktree"]["closed"], "removed");
                    path
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    assert_ne!(paths[0], paths[1]);
    assert_eq!(
        env.git(&["status", "--porcelain"]),
        "",
        "the main checkout is untouched"
    );
    assert_eq!(
        std::fs::read_to_string(env.repo.join("README")).expect("read"),
        "main\n"
    );
    for ((agent, id), other) in agents.iter().zip(&ids).zip(agents.iter().rev()) {
        let branch = format!("loopx/{id}");
        let files = env.git(&["ls-tree", "--name-only", &branch]);
        assert!(files.contains(&format!("{agent}.txt")), "{files}");
        assert!(!files.contains(&format!("{other}.txt")), "{files}");
        let readme = env.git(&["show", &format!("{branch}:README")]);
        assert_eq!(readme, format!("{agent} was here\n"));
    }
}

/// The start time `/proc` gives process `pid` (field 22 of its stat).
fn start_ticks(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[test]
fn a_claim_takes_a_worktree_by_itself_while_another_agents_session_is_live() {
    let env = board();
    /// The other session's process, ended however the test ends.
    struct Session(std::process::Child);
    impl Drop for Session {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let other = Session(
        std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .expect("sleep runs"),
    );
    let Some(start) = start_ticks(other.0.id()) else {
        crate::common::skipped(format_args!("no /proc here: the auto mode needs it"));
        return;
    };
    // agent-b's session, as its SessionStart hook records it.
    let hooks = env.repo.join(".git/loopx/hooks");
    std::fs::create_dir_all(&hooks).expect("mkdir");
    let session = format!(
        r#"{{"agent":"agent-b","pid":{},"pid_start":{start}}}"#,
        other.0.id()
    );
    std::fs::write(hooks.join("claude-code-other.json"), session).expect("write");
    let doctor = env.loopx(&["hooks", "doctor", "--json"]).json();
    assert_eq!(doctor["worktree"]["mode"], "auto", "{doctor}");
    assert_eq!(doctor["worktree"]["sees_processes"], true, "{doctor}");

    let a = env.add("One", &[]);
    let (path, _, _) = claim(&env, "agent-a", &a, &[]);
    assert!(path.is_dir());
    drop(other);
    let b = env.add("Two", &[]);
    let v = env
        .agent("agent-a", &["todo", "claim", &b, "--json"])
        .ok()
        .json();
    assert!(
        v.get("worktree").is_none(),
        "the other session is gone: {v}"
    );
}

#[test]
fn the_brief_at_a_session_start_names_the_claims_worktree() {
    let env = board();
    let id = env.add("Write the parser", &[]);
    let (path, branch, _) = claim(&env, "agent-a", &id, &["--worktree"]);
    let payload = format!(
        r#"{{"session_id":"s-1","cwd":"{}","hook_event_name":"SessionStart","source":"startup"}}"#,
        env.repo.display()
    );
    let out = crate::common::run_stdin(
        env.command()
            .env("LOOPX_AGENT", "agent-a")
            .args(["hook", "gemini", "SessionStart"]),
        payload.as_bytes(),
    )
    .ok();
    let want = format!("Work in its worktree {} (branch {branch})", path.display());
    assert!(out.stdout.contains(&want), "{}", out.stdout);
    assert!(
        out.stdout.contains(&format!("`cd {}`", path.display())),
        "{}",
        out.stdout
    );
}

#[test]
fn an_edit_tool_may_not_write_the_main_checkout_by_absolute_path() {
    let env = board();
    let id = env.add("Write the parser", &[]);
    let (path, _, _) = claim(&env, "agent-a", &id, &["--worktree"]);
    let call = |file: &Path| {
        let payload = serde_json::json!({
            "session_id": "s-1",
            "cwd": env.repo.display().to_string(),
            "hook_event_name": "PreToolUse",
            "tool_name": "Write",
            "tool_input": {"file_path": file.display().to_string(), "content": "x"},
        })
        .to_string();
        crate::common::run_stdin(
            env.command()
                .env("LOOPX_AGENT", "agent-a")
                .args(["hook", "claude", "PreToolUse"]),
            payload.as_bytes(),
        )
        .ok()
        .stdout
    };
    let denied = call(&env.repo.join("src/parser.rs"));
    assert!(denied.contains("deny"), "{denied}");
    assert!(
        denied.contains(&path.join("src/parser.rs").display().to_string()),
        "{denied}"
    );
    assert_eq!(call(&path.join("src/parser.rs")), "", "its own worktree");
    // Another agent, with no worktree of its own, is not held to one.
    let payload = serde_json::json!({
        "session_id": "s-2", "cwd": env.repo.display().to_string(),
        "hook_event_name": "PreToolUse", "tool_name": "Write",
        "tool_input": {"file_path": env.repo.join("x").display().to_string()},
    })
    .to_string();
    let out = crate::common::run_stdin(
        env.command()
            .env("LOOPX_AGENT", "agent-b")
            .args(["hook", "claude", "PreToolUse"]),
        payload.as_bytes(),
    )
    .ok();
    assert_eq!(out.stdout, "");
}

#[test]
fn settle_done_validates_in_the_worktree_and_refuses_until_its_work_is_committed() {
    let env = board();
    let id = env.add("Write the parser", &["--", "test", "-f", "parser.rs"]);
    let tok = env
        .agent("agent-a", &["quota", "should-run", "--json"])
        .ok()
        .json()["turn_token"]
        .as_str()
        .expect("a token")
        .to_owned();
    let (path, branch, _) = claim(&env, "agent-a", &id, &["--worktree"]);
    std::fs::write(path.join("parser.rs"), "fn parse() {}\n").expect("write");
    let settle = |env: &TestEnv| {
        env.agent(
            "agent-a",
            &crate::common::settle(&tok, &id, &["--outcome", "advanced", "--done", "--json"]),
        )
    };
    let out = settle(&env).code(3);
    assert_eq!(out.error_code(), "uncommitted-work", "{}", out.stdout);
    assert!(path.join("parser.rs").is_file());
    commit_all(&path, "parser");
    let v = settle(&env).ok().json();
    assert_eq!(
        v["settled"], true,
        "the validation found the file in the worktree: {v}"
    );
    assert!(!path.exists(), "removed once done");
    assert!(branch_exists(&env, &branch));
    assert!(
        !env.repo.join("parser.rs").exists(),
        "the main checkout never saw it"
    );
}

#[test]
fn hooks_not_committed_are_installed_in_a_new_worktree_and_taken_out_with_it() {
    let env = board();
    env.loopx(&["hooks", "install", "--runtime", "claude-code", "--guard"])
        .ok();
    env.loopx(&["hooks", "install", "--runtime", "codex"]).ok();
    let id = env.add("Write the parser", &[]);
    let (path, _, v) = claim(&env, "agent-a", &id, &["--worktree"]);
    for rel in [".claude/settings.json", ".codex/hooks.json"] {
        assert_eq!(
            std::fs::read(path.join(rel)).expect("copied"),
            std::fs::read(env.repo.join(rel)).expect("installed"),
            "{rel}"
        );
    }
    assert_eq!(
        v["worktree"]["installed"].as_array().map(Vec::len),
        Some(2),
        "{v}"
    );
    let doctor = crate::common::run(env.command().current_dir(&path).args([
        "hooks",
        "doctor",
        "--runtime",
        "claude-code",
        "--json",
    ]));
    let doctor = doctor.json();
    assert_eq!(doctor["checks"][0]["status"], "wired", "{doctor}");
    // Only real work counts as not committed; done takes the copies out.
    std::fs::write(path.join("parser.rs"), "fn parse() {}\n").expect("write");
    let out = env
        .agent("agent-a", &["todo", "done", &id, "--json"])
        .code(3);
    assert!(out.stdout.contains("parser.rs"), "{}", out.stdout);
    assert!(!out.stdout.contains("settings.json"), "{}", out.stdout);
    git_in(&path, &["add", "parser.rs"]);
    git_in(&path, &["commit", "-q", "-m", "parser"]);
    env.agent("agent-a", &["todo", "done", &id]).ok();
    assert!(!path.exists(), "the copies, never committed, went with it");
    assert!(
        env.repo.join(".claude/settings.json").is_file(),
        "the main checkout's stay"
    );
}
