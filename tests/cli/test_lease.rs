//! Leases, fencing and picking work: the clock is moved with LOOPX_NOW.

use crate::common::{TestEnv, assert_text};

#[test]
fn an_expired_lease_is_taken_over_and_the_old_holder_is_fenced_off() {
    let env = TestEnv::with_board();
    let t = env.add("A", &[]);
    env.agent("agent-a", &["todo", "claim", &t, "--ttl", "10m"])
        .ok();
    // Still live (lease plus the 30 s skew margin): agent-b loses.
    env.advance(9 * 60);
    env.agent("agent-b", &["todo", "claim", &t]).code(4);
    // Past the lease and the margin: agent-b takes it over.
    env.advance(2 * 60);
    let out = env.agent("agent-b", &["todo", "claim", &t]).ok();
    assert!(
        out.stdout.starts_with(&format!("Took over {t} \"A\"")),
        "{}",
        out.stdout
    );
    let v = env.loopx(&["todo", "show", &t, "--json"]).ok().json();
    assert_eq!(v["epoch"], 2);
    assert_eq!(v["claim"]["owner"], "agent-b");
    assert_eq!(v["notes"][0]["text"], "stole the expired lease of agent-a");
    assert_text(
        &env.git(&["log", "-1", "--format=%s", "refs/loopx/state"])
            .replace(&t, "T"),
        "steal T \"A\" from agent-a — agent-b\n",
    );
    // agent-a's late writes are refused.
    let out = env.agent("agent-a", &["todo", "done", &t]).code(4);
    assert!(
        out.stderr.contains("is claimed by agent-b"),
        "{}",
        out.stderr
    );
    let out = env.agent("agent-a", &["todo", "renew", &t]).code(4);
    assert!(
        out.stderr.contains("your lease was taken over"),
        "{}",
        out.stderr
    );
}

#[test]
fn renew_keeps_the_epoch_and_extends_the_lease() {
    let env = TestEnv::with_board();
    let t = env.add("A", &[]);
    env.agent("agent-a", &["todo", "claim", &t, "--ttl", "10m"])
        .ok();
    let out = env
        .agent("agent-a", &["todo", "renew", &t, "--ttl", "1h"])
        .ok();
    assert_text(
        &out.stdout.replace(&t, "T"),
        "Renewed T \"A\" until 2024-12-02T10:05:00Z (epoch 1).\n",
    );
    env.advance(30 * 60);
    env.agent("agent-b", &["todo", "claim", &t]).code(4);
    let out = env.agent("agent-b", &["todo", "renew", &t]).code(4);
    assert!(
        out.stderr.contains("is claimed by agent-a, not by agent-b"),
        "{}",
        out.stderr
    );
    let u = env.add("B", &[]);
    let out = env.agent("agent-a", &["todo", "renew", &u]).code(3);
    assert!(
        out.stderr.contains("is not claimed by agent-a"),
        "{}",
        out.stderr
    );
}

#[test]
fn handoff_moves_the_claim_with_a_note() {
    let env = TestEnv::with_board();
    let t = env.add("A", &[]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let out = env
        .agent(
            "agent-a",
            &[
                "todo",
                "handoff",
                &t,
                "--to",
                "agent-b",
                "--note",
                "lexer done, parser next",
            ],
        )
        .ok();
    assert_text(
        &out.stdout.replace(&t, "T"),
        "Handed T \"A\" to agent-b (epoch 2).\n",
    );
    let v = env
        .agent("agent-b", &["todo", "show", &t, "--json"])
        .ok()
        .json();
    assert_eq!(v["claim"]["owner"], "agent-b");
    assert_eq!(
        v["notes"][0]["text"],
        "handoff from agent-a to agent-b: lexer done, parser next"
    );
    // The old owner is fenced off; the new owner works.
    env.agent("agent-a", &["todo", "update", &t, "--note", "late"])
        .code(4);
    env.agent("agent-b", &["todo", "done", &t]).ok();
    // Handoff needs a claim, a registered target, and is the owner's to make.
    let u = env.add("B", &[]);
    env.agent(
        "agent-a",
        &["todo", "handoff", &u, "--to", "agent-b", "--note", "x"],
    )
    .code(3);
    env.agent("agent-a", &["todo", "claim", &u]).ok();
    env.agent(
        "agent-b",
        &["todo", "handoff", &u, "--to", "agent-b", "--note", "mine"],
    )
    .code(4);
    let out = env
        .agent(
            "agent-a",
            &["todo", "handoff", &u, "--to", "ghost", "--note", "x"],
        )
        .code(3);
    assert!(
        out.stderr.contains("agent ghost is not registered"),
        "{}",
        out.stderr
    );
    // Handoff is an agent's act (DESIGN §4): a human frees a claim with
    // release --force instead.
    env.loopx(&[
        "todo",
        "handoff",
        &u,
        "--to",
        "agent-b",
        "--note",
        "reassigned",
    ])
    .code(3);
}

#[test]
fn a_human_forces_a_claim_free_and_it_is_recorded() {
    let env = TestEnv::with_board();
    let t = env.add("A", &[]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let out = env.loopx(&["todo", "release", &t]).code(4);
    assert!(
        out.stderr
            .contains("a human can free it with `loopx todo release"),
        "{}",
        out.stderr
    );
    env.agent("agent-b", &["todo", "release", &t, "--force"])
        .code(3);
    env.loopx(&["todo", "release", &t, "--force"]).ok();
    let v = env.loopx(&["todo", "show", &t, "--json"]).ok().json();
    assert_eq!(v["status"], "open");
    assert_eq!(
        v["notes"][0]["text"],
        "released the claim of agent-a by force"
    );
    assert_text(
        &env.git(&["log", "-1", "--format=%s", "refs/loopx/state"])
            .replace(&t, "T"),
        "release T \"A\" from agent-a by force — Ada Lovelace\n",
    );
}

#[test]
fn claim_next_picks_by_priority_then_spreads_and_respects_dependencies_and_capabilities() {
    let env = TestEnv::with_board();
    env.loopx(&["agent", "register", "rusty", "--capability", "rust"])
        .ok();
    let old_p2 = env.add("old P2", &[]);
    let new_p1 = env.add("new P1", &["--priority", "P1"]);
    let waits = env.add("P0 waiting", &["--priority", "P0", "--after", &old_p2]);
    let needs = env.add(
        "P0 needs rust",
        &["--priority", "P0", "--capability", "rust"],
    );
    let newer_p2 = env.add("newer P2", &[]);
    let out = env.agent("agent-a", &["todo", "claim", "--next"]).ok();
    assert_eq!(
        out.stdout.trim(),
        new_p1,
        "P1 beats P2; P0s are not ready for agent-a"
    );
    // Within the P2 tier, the agent's own ranking picks (never the P0s it
    // cannot take, never below P2).
    let second = env
        .agent("agent-a", &["todo", "claim", "--next"])
        .ok()
        .stdout
        .trim()
        .to_owned();
    assert!(
        second == old_p2 || second == newer_p2,
        "then a P2: {second}"
    );
    let other = if second == old_p2 { &newer_p2 } else { &old_p2 };
    assert_eq!(
        env.agent("rusty", &["todo", "claim", "--next"])
            .ok()
            .stdout
            .trim(),
        needs
    );
    assert_eq!(
        env.agent("agent-b", &["todo", "claim", "--next"])
            .ok()
            .stdout
            .trim(),
        other.as_str()
    );
    let holder = if second == old_p2 {
        "agent-a"
    } else {
        "agent-b"
    };
    env.agent(holder, &["todo", "done", &old_p2]).ok();
    assert_eq!(
        env.agent("agent-b", &["todo", "claim", "--next"])
            .ok()
            .stdout
            .trim(),
        waits
    );
    let out = env.agent("agent-b", &["todo", "claim", "--next"]).code(3);
    assert_text(
        &out.stderr,
        "error: no todo is ready for agent-b: 4 claimed\nhint: add work with `loopx todo add`, or look with `loopx todo list`\n",
    );
    let v = env
        .agent("agent-b", &["todo", "claim", "--next", "--json"])
        .code(3)
        .json();
    assert_eq!(v["error"]["code"], "nothing-ready");
    env.loopx(&["todo", "claim", "--next"]).code(3);
}

#[test]
fn claim_next_spreads_agents_over_the_top_tier_and_the_brief_names_the_pick() {
    let env = TestEnv::with_board();
    let agents: Vec<String> = (0..8).map(|i| format!("spread-{i}")).collect();
    for a in &agents {
        env.loopx(&["agent", "register", a]).ok();
    }
    let top: Vec<String> = (0..4)
        .map(|i| env.add(&format!("P1 number {i}"), &["--priority", "P1"]))
        .collect();
    let low = env.add("a P2", &[]);
    // On the same state, each agent's pick is its own: should-run names it,
    // and it is what `claim --next` would take.
    let mut picks = std::collections::BTreeSet::new();
    for a in &agents {
        let v = env.agent(a, &["quota", "should-run", "--json"]).ok().json();
        let id = v["todo"]["id"].as_str().expect("a todo").to_owned();
        assert!(top.contains(&id), "{a} picked {id}, below the top tier");
        assert_ne!(id, low);
        // The same agent asks again: the same pick (stable).
        let again = env.agent(a, &["quota", "should-run", "--json"]).ok().json();
        assert_eq!(again["todo"]["id"], id.as_str());
        picks.insert(id);
    }
    assert!(
        picks.len() >= 2,
        "eight agents all wanted the same todo: {picks:?}"
    );
    // The pick is what claim --next takes.
    let v = env
        .agent(&agents[0], &["quota", "should-run", "--json"])
        .ok()
        .json();
    let out = env.agent(&agents[0], &["todo", "claim", "--next"]).ok();
    assert_eq!(out.stdout.trim(), v["todo"]["id"].as_str().unwrap());
}

#[test]
fn overlapping_write_scopes_cannot_be_claimed_by_two_agents() {
    let env = TestEnv::with_board();
    let parser = env.add("parser", &["--scope", "src/parser/**"]);
    let lexer = env.add("lexer", &["--scope", "src/parser/lexer.rs"]);
    let docs = env.add("docs", &["--scope", "docs/**"]);
    env.agent("agent-a", &["todo", "claim", &parser]).ok();
    let before = env.tip();
    let out = env.agent("agent-b", &["todo", "claim", &lexer]).code(4);
    assert_text(
        &out.stderr.replace(&lexer, "L").replace(&parser, "P"),
        "error: L is not ready: agent-a holds P, which writes src/parser/**, overlapping src/parser/lexer.rs\nhint: wait for agent-a to finish, or pick other work with `loopx todo list --ready`\n",
    );
    assert_eq!(env.tip(), before);
    // The same agent may hold both; a disjoint scope is free for others.
    env.agent("agent-b", &["todo", "claim", &docs]).ok();
    env.agent("agent-a", &["todo", "claim", &lexer]).ok();
    // --next skips what overlaps.
    let also = env.add("also parser", &["--scope", "src/parser/ast.rs"]);
    let free = env.add("free", &["--priority", "P3"]);
    assert_eq!(
        env.agent("agent-b", &["todo", "claim", "--next"])
            .ok()
            .stdout
            .trim(),
        free
    );
    env.agent("agent-a", &["todo", "done", &parser]).ok();
    env.agent("agent-a", &["todo", "done", &lexer]).ok();
    env.agent("agent-b", &["todo", "claim", &also]).ok();
}

#[test]
fn a_stale_epoch_is_refused() {
    // Fencing through the CLI: the epoch an agent read is checked when it
    // writes; here the todo changes hands twice between read and write by
    // going through a release and a claim by another agent.
    let env = TestEnv::with_board();
    let t = env.add("A", &[]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    env.agent("agent-a", &["todo", "release", &t]).ok();
    env.agent("agent-b", &["todo", "claim", &t]).ok();
    let out = env.agent("agent-a", &["todo", "done", &t]).code(4);
    assert!(out.stderr.contains("claimed by agent-b"), "{}", out.stderr);
}

#[test]
fn the_epoch_an_agent_holds_fences_its_late_writes() {
    let env = TestEnv::with_board();
    let t = env.add("A", &[]);
    let v = env
        .agent("agent-a", &["todo", "claim", &t, "--ttl", "10m", "--json"])
        .ok()
        .json();
    let held = v["todo"]["epoch"].as_u64().unwrap().to_string();
    assert_eq!(held, "1");
    // agent-a stalls; its lease runs out; agent-b takes over and lets go.
    env.advance(30 * 60);
    env.agent("agent-b", &["todo", "claim", &t]).ok();
    env.agent("agent-b", &["todo", "release", &t]).ok();
    // The todo is unclaimed, but agent-a's write from epoch 1 is refused.
    let before = env.tip();
    let out = env
        .agent("agent-a", &["todo", "done", &t, "--epoch", &held])
        .code(4);
    assert!(
        out.stderr.contains("changed hands since epoch 1 was read"),
        "{}",
        out.stderr
    );
    env.agent(
        "agent-a",
        &["todo", "update", &t, "--note", "late", "--epoch", &held],
    )
    .code(4);
    assert_eq!(env.tip(), before);
}
