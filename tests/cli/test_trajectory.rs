//! `loopx trajectory`: a scripted goal of 200 ticks rendered as a page and
//! JSON; Chromium shows every gate and todo of the goal in the graph, and
//! nothing planted (a secret, a human's name and email, a key fingerprint,
//! a home path, another goal's work) reaches the output.

use crate::common::TestEnv;
use crate::test_browser::{chromium, headless, shots};

const SECRET: &str = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
const NAME: &str = "Grace Hopper";
const EMAIL: &str = "grace@navy.mil";
const FINGERPRINT: &str = "SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s";
const HOME_PATH: &str = "/home/grace/work/parser";
const OTHER: &str = "Budget for the XYZZY launch";

/// A goal with 200 ticks or more: todos in dependency chains, claims and
/// handoffs between two agents, evidence passing and failing, gates asked
/// by agents and answered by a human (whose name and email are planted),
/// work reopened and abandoned, planted secrets in notes; and a second
/// goal whose work must stay out.
fn scripted() -> (TestEnv, Vec<String>) {
    let env = TestEnv::new();
    env.git(&["config", "user.name", NAME]);
    env.git(&["config", "user.email", EMAIL]);
    env.loopx(&["init", "--goal", "parser", "--objective", "Ship the parser"])
        .ok();
    env.loopx(&["goal", "add", "launch", "--objective", "Plan the launch"])
        .ok();
    env.add(OTHER, &["--goal", "launch"]);
    env.loopx(&["agent", "register", "agent-a"]).ok();
    env.loopx(&["agent", "register", "agent-b"]).ok();
    let mut gates = Vec::new();
    let mut prev: Option<String> = None;
    let mut round = 0;
    while env.ticks() < 212 {
        round += 1;
        let mut args = vec!["--goal", "parser"];
        let after;
        if round % 2 == 0
            && let Some(p) = &prev
        {
            after = p.clone();
            args.extend(["--after", after.as_str()]);
        }
        let t = env.add(&format!("Step {round} of the parser"), &args);
        let (a, b) = if round % 2 == 0 {
            ("agent-a", "agent-b")
        } else {
            ("agent-b", "agent-a")
        };
        env.agent(a, &["todo", "claim", &t]).ok();
        let ok = round % 3 != 0;
        env.agent(
            a,
            &[
                "evidence",
                "run",
                "--todo",
                &t,
                "--summary",
                "cargo test",
                "--",
                if ok { "true" } else { "false" },
            ],
        )
        .code(if ok { 0 } else { 3 });
        env.agent(
            a,
            &[
                "todo",
                "update",
                &t,
                "--note",
                &format!(
                    "asked {NAME} <{EMAIL}>, key {FINGERPRINT}, notes in {HOME_PATH}/notes.txt, token {SECRET}"
                ),
            ],
        )
        .ok();
        if round % 4 == 0 {
            let q = format!("May {a} change the grammar in step {round}? {NAME} knows");
            let g = env
                .agent(
                    a,
                    &[
                        "gate",
                        "open",
                        "--goal",
                        "parser",
                        "--kind",
                        "permission",
                        "--blocks",
                        &format!("todo:{t}"),
                        "--question",
                        &q,
                        "--json",
                    ],
                )
                .ok()
                .json()["gate"]["id"]
                .as_str()
                .unwrap()
                .to_owned();
            env.loopx(&[
                "gate",
                "answer",
                &g,
                "--choice",
                "approve",
                "--note",
                &format!("fine, {EMAIL}"),
            ])
            .ok();
            gates.push(g);
        }
        // Later todos wait only for ones that end done.
        let ends_done = !matches!(round % 5, 0 | 2);
        match round % 5 {
            0 => {
                env.agent(a, &["todo", "release", &t]).ok();
            }
            1 => {
                env.agent(
                    a,
                    &["todo", "handoff", &t, "--to", b, "--note", "over to you"],
                )
                .ok();
                env.agent(b, &["todo", "done", &t, "--note", "merged"]).ok();
            }
            2 => {
                env.agent(a, &["todo", "done", &t]).ok();
                env.loopx(&["todo", "reopen", &t]).ok();
            }
            _ => {
                env.agent(a, &["todo", "done", &t]).ok();
            }
        }
        if ends_done {
            prev = Some(t);
        }
    }
    (env, gates)
}

#[test]
fn a_200_tick_goal_is_a_redacted_graph_with_every_gate_and_todo() {
    let (env, gates) = scripted();
    let out = env.root().join("share");
    let made = env
        .loopx(&[
            "trajectory",
            "parser",
            "--out",
            out.to_str().unwrap(),
            "--json",
        ])
        .ok()
        .json();
    assert!(made["ticks"].as_u64().unwrap() >= 200, "{made}");
    let html = std::fs::read_to_string(out.join("trajectory.html")).unwrap();
    let json = std::fs::read_to_string(out.join("trajectory.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let todos: Vec<String> = env
        .loopx(&["todo", "list", "--goal", "parser", "--all", "--json"])
        .ok()
        .json()["todos"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| t["id"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(todos.len() > 20, "{todos:?}");
    assert_eq!(doc["todos"].as_array().unwrap().len(), todos.len());
    assert_eq!(doc["gates"].as_array().unwrap().len(), gates.len());
    assert!(gates.len() >= 5, "{gates:?}");
    // Roles, handoffs, reopened and abandoned work, failing evidence, spend.
    let nodes = doc["todos"].as_array().unwrap();
    assert!(
        nodes
            .iter()
            .any(|n| n["holders"].as_array().unwrap().len() >= 2)
    );
    assert!(nodes.iter().any(|n| n["reopened"].as_u64().unwrap() > 0));
    assert!(nodes.iter().any(|n| n["abandoned"] == true));
    assert!(
        nodes
            .iter()
            .any(|n| n["evidence_failed"].as_u64().unwrap() > 0)
    );
    assert!(json.contains("\"agent-1\"") && json.contains("\"human-1\""));
    for (what, planted) in [
        ("a secret", SECRET),
        ("a human's name", NAME),
        ("an email", EMAIL),
        ("a key fingerprint", FINGERPRINT),
        ("a home path", HOME_PATH),
        ("another goal's todo", OTHER),
        ("an agent's name", "agent-b"),
    ] {
        assert!(!html.contains(planted), "{what} in the page");
        assert!(!json.contains(planted), "{what} in the JSON");
    }
    // --keep-names keeps them, for an internal report.
    let kept = env.root().join("internal");
    env.loopx(&[
        "trajectory",
        "parser",
        "--keep-names",
        "--out",
        kept.to_str().unwrap(),
    ])
    .ok();
    let internal = std::fs::read_to_string(kept.join("trajectory.json")).unwrap();
    assert!(internal.contains(NAME) && internal.contains("agent-b"));
    assert!(!internal.contains(SECRET), "secrets never");

    // In the browser: every todo and gate is a node of the graph.
    let Some(bin) = chromium() else { return };
    let home = env.root().join("home");
    let url = format!("file://{}", out.join("trajectory.html").display());
    let dom = String::from_utf8(headless(&bin, &home, &["--dump-dom", &url]).stdout).unwrap();
    let graph = &dom[dom.find("<svg id=\"graph\"").expect("the graph")..];
    let graph = &graph[..graph.find("</svg>").unwrap()];
    for id in todos.iter().chain(&gates) {
        assert!(
            graph.contains(&format!("data-node=\"{id}\"")),
            "{id} is not in the graph"
        );
    }
    for planted in [SECRET, NAME, EMAIL, FINGERPRINT, HOME_PATH, OTHER] {
        assert!(!dom.contains(planted), "{planted} in the DOM");
    }
    let shot = shots().join("trajectory.png");
    headless(
        &bin,
        &home,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1280,1400",
            &url,
        ],
    );
    assert!(std::fs::read(&shot).unwrap().starts_with(b"\x89PNG"));
}
