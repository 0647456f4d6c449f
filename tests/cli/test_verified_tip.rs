//! Only verified state decides (issue 44, item 1): sync's marks are refs a
//! plain fetch can move, so the last verified tip of the state ref lives in
//! a file outside `refs/`. A tip moved outside loopx (`git update-ref`, a
//! plain `git fetch` onto `refs/loopx/*`, a restored backup) runs no
//! validation until it verifies (`unverified-tip`), and the tool guard
//! judges every human-only gate open meanwhile; put back, or verified, the
//! honest validation runs again.

use std::path::Path;

use crate::common::forge;
use crate::common::{Machine, TestEnv, git_in, run_stdin};

/// Claude Code's hook `event` in `m`, with `fields` added to its payload.
fn hook(m: &Machine, event: &str, fields: &str) -> String {
    let payload = format!(
        r#"{{"session_id":"1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d","cwd":"{}","hook_event_name":"{event}",{fields}}}"#,
        m.repo.display()
    );
    run_stdin(
        m.command().args(["hook", "claude-code", event]),
        payload.as_bytes(),
    )
    .ok()
    .stdout
}

/// The guard's answer to a Claude Code `Bash` call of `command` in `m`.
fn guard(m: &Machine, command: &str) -> String {
    hook(
        m,
        "PreToolUse",
        &format!(
            r#""tool_name":"Bash","tool_input":{{"command":"{command}"}},"tool_use_id":"toolu_01""#
        ),
    )
}

fn mark(m: &Machine) -> Option<String> {
    std::fs::read_to_string(Path::new(&m.repo).join(".git/loopx/verified-tips/loopx%state"))
        .ok()
        .map(|s| s.trim().to_owned())
}

#[test]
fn a_tip_moved_outside_loopx_runs_nothing_until_it_verifies() {
    let env = TestEnv::with_board();
    let m = env.machine();
    // Every tick loopx wrote here moved the mark along.
    assert_eq!(mark(&m), m.tip(), "init and every tick mark the tip");
    let t = env.add("Check", &["--", "touch", "RAN"]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let honest = m.tip().unwrap();
    assert_eq!(mark(&m).as_deref(), Some(honest.as_str()));
    // Nothing is open, so the guard lets a publish through.
    assert!(
        !guard(&m, "cargo publish").contains("deny"),
        "no gate covers it yet"
    );

    // The tip replaced by a hand-made commit (`git update-ref`).
    forge::amend_tip(&m, |_, p| {
        p.message = p.message.replacen("todo.claim", "todo.claim ", 1);
    });
    assert_ne!(m.tip().unwrap(), honest);
    let out = env.agent("agent-a", &["--json", "todo", "done", &t]);
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(
        out.stdout.contains("\"unverified-tip\"") || out.stderr.contains("unverified-tip"),
        "{out:?}"
    );
    assert!(
        out.stderr.contains("loopx verify") || out.stdout.contains("loopx verify"),
        "{out:?}"
    );
    assert!(!m.repo.join("RAN").exists(), "nothing ran");
    // The guard judges every human-only gate open: a publish and an
    // agent's gate answer are denied, a harmless command passes.
    let publish = guard(&m, "cargo publish");
    assert!(
        publish.contains("deny") && publish.contains("loopx verify"),
        "{publish}"
    );
    assert!(guard(&m, "loopx gate answer g-12345678 --choice approve").contains("deny"));
    assert!(!guard(&m, "cargo test").contains("deny"));
    // The session's brief says so (the hook never verifies inline).
    let start = hook(&m, "SessionStart", r#""source":"startup""#);
    assert!(start.contains("moved outside loopx"), "{start}");
    // `loopx verify` refuses it and leaves the mark where it was.
    assert_eq!(env.loopx(&["verify"]).code, 3);
    assert_eq!(mark(&m).as_deref(), Some(honest.as_str()));

    // Put back on the verified tip, the honest validation runs.
    m.git(&["update-ref", "refs/loopx/state", &honest]);
    let start = hook(&m, "SessionStart", r#""source":"startup""#);
    assert!(!start.contains("moved outside loopx"), "{start}");
    env.agent("agent-a", &["todo", "done", &t]).ok();
    assert!(m.repo.join("RAN").exists(), "the honest validation ran");
    assert_eq!(mark(&m), m.tip());
}

#[test]
fn an_honest_tip_that_arrived_outside_loopx_is_verified_before_it_runs() {
    // A second clone takes the hub's state by a plain `git fetch` onto
    // refs/loopx/state: no mark there, so the first validation verifies the
    // whole chain, marks it, and runs.
    let env = TestEnv::with_board();
    let hub = env.hub("hub");
    let a = env.machine();
    a.git(&["remote", "add", "origin", &hub]);
    let t = env.add("Check", &["--", "touch", "RAN"]);
    a.loopx(&["sync"]).ok();
    let b = env.clone_machine("b", &hub);
    b.git(&[
        "fetch",
        "-q",
        "origin",
        "+refs/loopx/state:refs/loopx/state",
    ]);
    assert_eq!(mark(&b), None);
    b.git(&["config", "loopx.runValidations", "all"]);
    b.agent("agent-a", &["todo", "claim", &t]).ok();
    b.agent("agent-a", &["todo", "done", &t]).ok();
    assert!(
        b.repo.join("RAN").exists(),
        "the validation ran once verified"
    );
    assert_eq!(mark(&b), b.tip());
}

#[test]
fn a_goal_clone_pins_only_a_shared_tip_it_verified() {
    // A split state on a plain (unguarded) hub, and a clone of goal main.
    let env = TestEnv::with_board();
    let hub = env.hub("hub.git");
    env.git(&["remote", "add", "origin", &hub]);
    env.loopx(&["goal", "add", "web", "--objective", "The site"])
        .ok();
    let api = env.add("Parse the input", &["--goal", "main"]);
    env.loopx(&["sync"]).ok();
    env.loopx(&["goal", "split"]).ok();
    env.loopx(&["sync"]).ok();
    let g = env.clone_machine("g", &hub);
    g.git(&["config", "loopx.ref", "refs/loopx/goals/main"]);
    g.loopx(&["sync"]).ok();
    let shared = g.rev("refs/loopx/state").unwrap();
    let goal = g.rev("refs/loopx/goals/main").unwrap();
    let before = git_in(Path::new(&hub), &["rev-parse", "refs/loopx/goals/main"]);

    // Its shared ref moved around loopx. A claim without a hub round pins
    // it locally, but nothing on this clone takes that pin: `verify`
    // refuses the shared tip the goal tick is judged against, and sync
    // pushes nothing.
    forge::amend_tip(&g, |_, p| {
        p.message.insert(0, ' ');
    });
    g.agent("agent-a", &["todo", "claim", &api, "--no-sync"])
        .ok();
    let out = g.loopx(&["--json", "verify"]).code(3);
    assert_eq!(out.error_code(), "unverified-tip", "{}", out.stderr);
    assert_ne!(g.loopx(&["sync"]).code, 0);
    let hub_goal = || git_in(Path::new(&hub), &["rev-parse", "refs/loopx/goals/main"]);
    assert_eq!(hub_goal(), before, "the hub took nothing");

    // Put back, the claim lands and everything verifies.
    g.git(&["update-ref", "refs/loopx/state", &shared]);
    g.git(&["update-ref", "refs/loopx/goals/main", &goal]);
    g.agent("agent-a", &["todo", "claim", &api]).ok();
    g.loopx(&["verify"]).ok();
    g.loopx(&["sync"]).ok();
}
