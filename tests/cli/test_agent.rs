use crate::common::{TestEnv, assert_text};

#[test]
fn register_list_and_show() {
    let env = TestEnv::new();
    env.loopx(&["init"]).ok();
    let out = env
        .loopx(&[
            "agent",
            "register",
            "agent-a",
            "--runtime",
            "claude-code",
            "--capability",
            "rust",
            "--capability",
            "docs",
        ])
        .ok();
    assert_text(&out.stdout, "Registered agent agent-a (claude-code).\n");
    env.loopx(&["agent", "register", "agent-b"]).ok();
    assert_text(
        &env.loopx(&["agent", "list"]).ok().stdout,
        "agent-a  claude-code  active   0 claims  [docs, rust]\nagent-b  custom       active   0 claims\n",
    );
    assert_text(
        &env.git(&["show", "refs/loopx/state:agents/agent-a.toml"]),
        "id = \"agent-a\"\nruntime = \"claude-code\"\nstatus = \"active\"\ncapabilities = [\"docs\", \"rust\"]\nregistered_at = \"2024-12-02T09:01:00Z\"\nregistered_by = \"human:Ada Lovelace <ada@example.com>\"\n",
    );
    assert_text(
        &env.loopx(&["agent", "show", "agent-a"]).ok().stdout,
        "agent agent-a  (claude-code, active)\nregistered 2024-12-02T09:01:00Z by Ada Lovelace\ncapabilities: docs, rust\n",
    );
    let v = env.loopx(&["agent", "list", "--json"]).ok().json();
    assert_eq!(v["agents"][0]["capabilities"][1], "rust");
    assert_eq!(v["agents"][1]["claims"], 0);
}

#[test]
fn registering_again_the_same_way_writes_no_tick() {
    let env = TestEnv::new();
    env.loopx(&["init"]).ok();
    env.loopx(&["agent", "register", "agent-a"]).ok();
    let ticks = env.ticks();
    let out = env.loopx(&["agent", "register", "agent-a", "--json"]).ok();
    assert_eq!(out.json()["changed"], false);
    assert_eq!(env.ticks(), ticks);
    // A change of runtime is a new tick.
    env.loopx(&["agent", "register", "agent-a", "--runtime", "codex"])
        .ok();
    assert_eq!(env.ticks(), ticks + 1);
}

#[test]
fn an_agent_registers_only_itself() {
    let env = TestEnv::new();
    env.loopx(&["init"]).ok();
    env.agent("agent-a", &["agent", "register", "agent-a"]).ok();
    let out = env
        .agent("agent-a", &["agent", "register", "agent-z"])
        .code(3);
    assert_text(
        &out.stderr,
        "error: agent agent-a may register only itself, not agent-z\nhint: a human registers other agents\n",
    );
}

#[test]
fn bad_agent_ids_are_refused() {
    let env = TestEnv::new();
    env.loopx(&["init"]).ok();
    let before = env.tip();
    for bad in ["", "a/b", "../x", "Agent", &"x".repeat(65)] {
        let out = env.loopx(&["agent", "register", bad]).code(2);
        assert!(
            out.stderr.starts_with("error: the agent id"),
            "{bad:?}: {}",
            out.stderr
        );
    }
    env.loopx(&["agent", "register", "ok", "--runtime", "vim"])
        .code(2);
    let out = env.loopx(&["agent", "show", "ghost"]).code(1);
    assert_text(
        &out.stderr,
        "error: there is no agent ghost\nhint: `loopx agent list` shows the registered agents\n",
    );
    assert_eq!(env.tip(), before);
}
