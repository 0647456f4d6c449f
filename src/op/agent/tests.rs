//! Unit tests of `agent.register` and `agent.retire`.

use crate::op::test_support::*;

#[test]
fn register_a_new_agent() {
    let mut s = board();
    let subject = ok(
        &mut s,
        &op(
            human(),
            "2026-01-01T10:00:00Z",
            register("agent-c", Runtime::Gemini, &[]),
        ),
    );
    assert_eq!(subject, "register agent agent-c (gemini)");
    let a = &s.agents[&aid("agent-c")];
    assert_eq!(a.id, aid("agent-c"));
    assert_eq!(a.runtime, Runtime::Gemini);
    assert_eq!(a.status, AgentStatus::Active);
    assert!(a.capabilities.is_empty());
    assert_eq!(a.registered_at, t("2026-01-01T10:00:00Z"));
    assert_eq!(a.registered_by, human());
}

#[test]
fn an_agent_registers_itself() {
    let mut s = board();
    let subject = ok(
        &mut s,
        &op(
            agent("agent-c"),
            "2026-01-01T10:00:00Z",
            register("agent-c", Runtime::Cursor, &["go"]),
        ),
    );
    assert_eq!(subject, "register agent agent-c (cursor)");
    assert_eq!(s.agents[&aid("agent-c")].registered_by, agent("agent-c"));
}

#[test]
fn an_agent_registers_only_itself() {
    let mut s = board();
    let r = refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T10:00:00Z",
            register("agent-c", Runtime::Codex, &[]),
        ),
        Exit::Refused,
        "register-self-only",
    );
    assert_eq!(
        r.message,
        "agent agent-a may register only itself, not agent-c"
    );
    // Nor re-register another registered agent.
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T10:00:00Z",
            register("agent-b", Runtime::Custom, &[]),
        ),
        Exit::Refused,
        "register-self-only",
    );
}

#[test]
fn an_identical_re_register_changes_nothing() {
    let mut s = board();
    let before = s.clone();
    let subject = ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-02T10:00:00Z",
            register("agent-a", Runtime::ClaudeCode, &["rust"]),
        ),
    );
    assert_eq!(subject, "register agent agent-a (unchanged)");
    assert_eq!(s, before);
    // The same capabilities in another order, duplicated or padded are the
    // same registration.
    let subject = ok(
        &mut s,
        &op(
            human(),
            "2026-01-02T11:00:00Z",
            register("agent-a", Runtime::ClaudeCode, &[" rust", "rust", ""]),
        ),
    );
    assert_eq!(subject, "register agent agent-a (unchanged)");
    assert_eq!(s, before);
}

#[test]
fn changing_the_runtime_re_registers() {
    let mut s = board();
    let subject = ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-02T10:00:00Z",
            register("agent-a", Runtime::Codex, &["rust"]),
        ),
    );
    assert_eq!(subject, "re-register agent agent-a (codex)");
    let a = &s.agents[&aid("agent-a")];
    assert_eq!(a.runtime, Runtime::Codex);
    assert_eq!(a.capabilities, strings(&["rust"]));
    assert_eq!(a.status, AgentStatus::Active);
    // The first registration is kept: its time and who made it.
    assert_eq!(a.registered_at, t("2026-01-01T09:00:00Z"));
    assert_eq!(a.registered_by, human());
}

#[test]
fn changing_capabilities_re_registers() {
    let mut s = board();
    let subject = ok(
        &mut s,
        &op(
            human(),
            "2026-01-02T10:00:00Z",
            register("agent-a", Runtime::ClaudeCode, &["rust", "git"]),
        ),
    );
    assert_eq!(subject, "re-register agent agent-a (claude-code)");
    assert_eq!(
        s.agents[&aid("agent-a")].capabilities,
        strings(&["git", "rust"])
    );
}

#[test]
fn a_retired_agent_is_re_activated() {
    let mut s = board();
    s.agents.get_mut(&aid("agent-a")).unwrap().status = AgentStatus::Retired;
    // Identical runtime and capabilities: still a re-registration.
    let subject = ok(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-02T10:00:00Z",
            register("agent-a", Runtime::ClaudeCode, &["rust"]),
        ),
    );
    assert_eq!(subject, "re-register agent agent-a (claude-code)");
    let a = &s.agents[&aid("agent-a")];
    assert_eq!(a.status, AgentStatus::Active);
    assert_eq!(a.registered_at, t("2026-01-01T09:00:00Z"));
}

#[test]
fn capabilities_are_trimmed_sorted_and_deduped() {
    let mut s = board();
    ok(
        &mut s,
        &op(
            human(),
            "2026-01-02T10:00:00Z",
            register(
                "agent-c",
                Runtime::Custom,
                &["rust", " git ", "", "rust", "docker", "git"],
            ),
        ),
    );
    assert_eq!(
        s.agents[&aid("agent-c")].capabilities,
        strings(&["docker", "git", "rust"])
    );
}
