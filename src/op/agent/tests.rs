//! Unit tests of `agent.register` and `agent.retire`.

use crate::op::AgentRetire;
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

fn retire(id: &str) -> Change {
    Change::AgentRetire(AgentRetire { agent: aid(id) })
}

#[test]
fn retire_releases_the_agents_claims_with_a_note() {
    let mut s = claimed_board();
    let at = "2026-01-01T09:15:00Z";
    let effect = ok_effect(&mut s, &op(human(), at, retire("agent-a")));
    assert_eq!(
        effect.what,
        Happened::Retired {
            agent: aid("agent-a"),
            released: vec![tid(T1)],
        }
    );
    assert_eq!(s.agents[&aid("agent-a")].status, AgentStatus::Retired);
    let todo = todo1(&s);
    assert_eq!(todo.status, TodoStatus::Open);
    assert_eq!(todo.claim, None);
    assert_eq!(todo.updated_at, t(at));
    assert_eq!(
        todo.notes.last(),
        Some(&Note {
            at: t(at),
            by: human(),
            text: "released because agent-a retired".to_owned(),
        })
    );
    // Its claim is free for others; the retired agent can no longer act.
    ok(
        &mut s,
        &op(
            agent("agent-b"),
            "2026-01-01T09:16:00Z",
            claim(T1, 1, LEASE),
        ),
    );
    refuse(
        &mut s,
        &op(
            agent("agent-a"),
            "2026-01-01T09:17:00Z",
            update(T1, 2, None, Some("late")),
        ),
        Exit::Refused,
        "agent-retired",
    );
}

#[test]
fn an_agent_retires_itself_only() {
    let mut s = board();
    let at = "2026-01-01T09:15:00Z";
    let r = refuse(
        &mut s,
        &op(agent("agent-a"), at, retire("agent-b")),
        Exit::Refused,
        "retire-self-only",
    );
    assert_eq!(
        r.message,
        "agent agent-a may retire only itself, not agent-b"
    );
    ok(&mut s, &op(agent("agent-a"), at, retire("agent-a")));
    assert_eq!(s.agents[&aid("agent-a")].status, AgentStatus::Retired);
    // Others are untouched.
    assert_eq!(s.agents[&aid("agent-b")].status, AgentStatus::Active);
}

#[test]
fn retire_refuses_an_unknown_or_retired_agent() {
    let mut s = board();
    let at = "2026-01-01T09:15:00Z";
    refuse(
        &mut s,
        &op(human(), at, retire("agent-z")),
        Exit::Refused,
        "not-registered",
    );
    ok(&mut s, &op(human(), at, retire("agent-b")));
    refuse(
        &mut s,
        &op(human(), at, retire("agent-b")),
        Exit::Refused,
        "agent-retired",
    );
}
