//! Gates: a question blocks only its scope; human-only kinds refuse agents.

use crate::common::{TestEnv, assert_text, run};

#[test]
fn a_gate_blocks_only_its_scope() {
    let env = TestEnv::with_board();
    let t = env.add("A", &[]);
    let u = env.add("B", &[]);
    // Agent-scoped: stops agent-a, not agent-b.
    let g = env
        .loopx(&[
            "gate",
            "open",
            "--question",
            "Is agent-a's key rotated?",
            "--blocks",
            "agent:agent-a",
        ])
        .ok()
        .stdout
        .trim()
        .to_owned();
    assert!(g.starts_with("g-"), "{g}");
    let out = env.agent("agent-a", &["todo", "claim", &t]).code(3);
    assert_text(
        &out.stderr.replace(&t, "T").replace(&g, "G"),
        "error: T is not ready: gate G is open: \"Is agent-a's key rotated?\"\nhint: wait for the answer (`loopx gate show G`), or pick work outside its scope with `loopx todo list --ready`\n",
    );
    assert_eq!(
        env.agent("agent-a", &["todo", "list", "--ready", "--json"])
            .ok()
            .json()["todos"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    env.agent("agent-b", &["todo", "claim", &t]).ok();
    env.loopx(&["gate", "answer", &g, "--choice", "approve"])
        .ok();
    env.agent("agent-a", &["todo", "claim", &u]).ok();
    env.agent("agent-a", &["todo", "release", &u]).ok();

    // Todo-scoped: blocks that todo for everyone, and nothing else.
    let v = env.add("C", &[]);
    let g2 = env
        .loopx(&[
            "gate",
            "open",
            "--question",
            "Which schema?",
            "--blocks",
            &format!("todo:{}", &v[..6]),
            "--option",
            "v1",
            "--option",
            "v2",
        ])
        .ok()
        .stdout
        .trim()
        .to_owned();
    env.agent("agent-a", &["todo", "claim", &v]).code(3);
    env.agent("agent-b", &["todo", "claim", &v]).code(3);
    env.agent("agent-a", &["todo", "claim", &u]).ok();
    // A decision gate may be answered by an agent; the choice must be an option.
    env.agent("agent-b", &["gate", "answer", &g2, "--choice", "v3"])
        .code(2);
    env.agent(
        "agent-b",
        &[
            "gate",
            "answer",
            &g2,
            "--choice",
            "v2",
            "--note",
            "v1 is frozen",
        ],
    )
    .ok();
    env.agent("agent-b", &["todo", "claim", &v]).ok();

    // Goal-scoped (the default): blocks the whole goal.
    let w = env.add("D", &[]);
    let g3 = env
        .loopx(&["gate", "open", "--question", "Pause for the release?"])
        .ok()
        .stdout
        .trim()
        .to_owned();
    env.agent("agent-a", &["todo", "claim", &w]).code(3);
    env.agent("agent-b", &["todo", "claim", "--next"]).code(3);
    // A withdrawn gate unblocks.
    env.loopx(&["gate", "withdraw", &g3]).ok();
    env.agent("agent-a", &["todo", "claim", &w]).ok();
    env.loopx(&["gate", "withdraw", &g3]).code(3);
}

#[test]
fn human_only_gates_refuse_every_agent_identity() {
    let env = TestEnv::with_board();
    let g = env
        .loopx(&[
            "gate",
            "open",
            "--question",
            "Deploy to production?",
            "--kind",
            "production",
        ])
        .ok()
        .stdout
        .trim()
        .to_owned();
    let before = env.tip();
    // By flag, by environment, and by an agent-runtime marker.
    let out = env
        .loopx(&[
            "--agent", "agent-a", "gate", "answer", &g, "--choice", "approve",
        ])
        .code(3);
    assert_text(
        &out.stderr.replace(&g, "G"),
        "error: G is a production gate: only a human may answer it, and agent-a is an agent\nhint: ask a human to run `loopx gate answer G --choice CHOICE` from their own shell\n",
    );
    env.agent("agent-b", &["gate", "answer", &g, "--choice", "approve"])
        .code(3);
    env.agent("agent-b", &["gate", "withdraw", &g]).code(3);
    let mut c = env.command();
    run(c
        .env("CLAUDECODE", "1")
        .env("CLAUDE_CODE_SESSION_ID", "abcdef1234")
        .args(["gate", "answer", &g, "--choice", "approve"]))
    .code(3);
    let mut c = env.command();
    run(c
        .env("CODEX_THREAD_ID", "0123456789")
        .args(["gate", "answer", &g, "--choice", "approve"]))
    .code(3);
    assert_eq!(env.tip(), before);
    // A human's answer records who, when and the note.
    env.loopx(&[
        "gate",
        "answer",
        &g,
        "--choice",
        "reject",
        "--note",
        "not before Monday",
    ])
    .ok();
    let v = env.loopx(&["gate", "show", &g, "--json"]).ok().json();
    assert_eq!(v["status"], "answered");
    assert_eq!(v["answer"]["choice"], "reject");
    assert_eq!(v["answer"]["by"], "human:Ada Lovelace <ada@example.com>");
    assert_eq!(v["answer"]["note"], "not before Monday");
    assert_eq!(v["human_only"], true);
    assert!(
        v["answer"]["at"]
            .as_str()
            .unwrap()
            .starts_with("2024-12-02T09:")
    );
    env.loopx(&["gate", "answer", &g, "--choice", "approve"])
        .code(3);
}

#[test]
fn status_shows_gates_waiting_on_a_human_first() {
    let env = TestEnv::with_board();
    let d = env
        .loopx(&[
            "gate",
            "open",
            "--question",
            "Which parser?",
            "--option",
            "pest",
            "--option",
            "nom",
        ])
        .ok()
        .stdout
        .trim()
        .to_owned();
    let p = env
        .loopx(&[
            "gate",
            "open",
            "--question",
            "May I spend $20 on CI?",
            "--kind",
            "spend",
            "--blocks",
            "agent:agent-b",
        ])
        .ok()
        .stdout
        .trim()
        .to_owned();
    let out = env.loopx(&["status"]).ok().stdout;
    let head: Vec<&str> = out.lines().take(5).collect();
    assert_text(
        &head.join("\n").replace(&d, "D").replace(&p, "P"),
        "loopx  refs/loopx/state  tick 5\nwaiting on a human:\n  P  spend on agent:agent-b  \"May I spend $20 on CI?\"  (approve | reject)\nopen decisions:\n  D  decision on goal  \"Which parser?\"  (pest | nom)",
    );
    let v = env.loopx(&["status", "--json"]).ok().json();
    assert_eq!(v["gates"][0]["id"], p.as_str());
    assert_eq!(v["gates"][0]["human_only"], true);
    let list = env.loopx(&["gate", "list", "--open"]).ok().stdout;
    assert!(list.starts_with(&p), "{list}");
    assert_text(
        &env.git(&["log", "-1", "--format=%s", "refs/loopx/state"])
            .replace(&p, "P"),
        "gate open P spend on agent:agent-b: \"May I spend $20 on CI?\" — Ada Lovelace\n",
    );
}

#[test]
fn gate_refusals() {
    let env = TestEnv::with_board();
    let before = env.tip();
    env.loopx(&["gate", "open", "--question", "x", "--blocks", "nobody"])
        .code(2);
    env.loopx(&["gate", "open", "--question", "x", "--blocks", "agent:ghost"])
        .code(3);
    env.loopx(&["gate", "open", "--question", "x", "--blocks", "todo:t-0000"])
        .code(1);
    env.loopx(&["gate", "open", "--question", "x", "--kind", "vibes"])
        .code(2);
    env.loopx(&["gate", "open", "--question", "x", "--option", "only"])
        .code(2);
    env.loopx(&["gate", "open", "--question", "  "]).code(2);
    env.loopx(&["gate", "answer", "g-0000", "--choice", "approve"])
        .code(1);
    assert_eq!(env.tip(), before);
}

#[test]
fn the_choice_is_a_positional_argument_or_the_choice_flag() {
    let env = TestEnv::with_board();
    let open = |q: &str| {
        env.loopx(&["gate", "open", "--question", q, "--json"])
            .ok()
            .json()["gate"]["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let g = open("Ship it?");
    let v = env
        .loopx(&["gate", "answer", &g, "approve", "--json"])
        .ok()
        .json();
    assert_eq!(v["gate"]["choice"], "approve", "{v}");
    let g = open("Ship that?");
    let v = env
        .loopx(&["gate", "answer", &g, "--choice", "reject", "--json"])
        .ok()
        .json();
    assert_eq!(v["gate"]["choice"], "reject", "{v}");
    // Neither, or both, is a usage error that changes nothing.
    let g = open("Ship those?");
    let before = env.tip();
    let none = env.loopx(&["gate", "answer", &g]).code(2);
    assert!(none.stderr.contains("<CHOICE>"), "{}", none.stderr);
    env.loopx(&["gate", "answer", &g, "approve", "--choice", "reject"])
        .code(2);
    let bad = env.loopx(&["gate", "answer", &g, "maybe"]).code(2);
    assert!(bad.stderr.contains("maybe"), "{}", bad.stderr);
    assert_eq!(env.tip(), before);
}
