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

/// Where a subject cuts a title (`op::short`): the 60th character becomes
/// `…`, so a title of more than 60 characters keeps its first 59.
const CUT: usize = 59;

/// What a shared trajectory must not hold: `(what, planted text, pieces of
/// it that must not appear anywhere in the output)`. Pieces are short so a
/// text cut inside the planted one is still caught.
fn plants() -> Vec<(String, String, Vec<String>)> {
    let mut v: Vec<(String, String, Vec<String>)> = [
        (
            "an email",
            "maria.gonzalez@acme-corp.com",
            &["maria.gonzalez", "gonzalez@", "acme-corp.com"][..],
        ),
        (
            "a phone number",
            "+49 151 1234 5678",
            &["151 1234", "1234 5678"][..],
        ),
        (
            "an IBAN",
            "DE89 3704 0044 0532 0130 00",
            &["3704 0044", "0532 0130"][..],
        ),
        (
            "a listed name",
            "Maria Gonzalez",
            &["Maria", "Gonzalez"][..],
        ),
        ("a password", "password hunter2", &["hunter2"][..]),
    ]
    .into_iter()
    .map(|(w, p, pieces)| {
        (
            w.to_owned(),
            p.to_owned(),
            pieces.iter().map(|s| (*s).to_owned()).collect(),
        )
    })
    .collect();
    for (text, secret) in loopx::redact::samples::every_shape() {
        // Multi-line samples (a PEM block) stand in notes, not titles.
        let text = text.replace('\n', " ");
        let head: String = secret.chars().take(8).collect();
        v.push((format!("a secret ({text:.24}…)"), text, vec![head]));
    }
    v
}

/// `planted` placed so that a cut at [`CUT`] characters falls after its
/// `k`-th character: ordinary words before it, more after.
fn around_cut(planted: &str, k: usize) -> String {
    let pad = CUT - k;
    let words = "Review the plan with the team before the release and then ";
    let mut head: String = words.chars().cycle().take(pad.saturating_sub(1)).collect();
    head.push(' ');
    format!("{head}{planted} and carry on")
}

/// Ordinary text that must come through whole: dates, times, ids, commit
/// hashes, dollar amounts, versions, counts and words.
const CONTROL: &str = "Released on 2024-12-09 16:57 after t-3fa9c2d1, commit 526803bf2b7b811fc1a8ed90c67c0eff0789b0e3, $1,234.56 of $12,000.00, v1.18.33, 120 of 5000 steps, ok";

#[test]
fn nothing_planted_survives_a_cut_and_what_was_removed_is_said() {
    let env = TestEnv::new();
    env.loopx(&[
        "init",
        "--goal",
        "main",
        "--objective",
        "Ship it with Maria Gonzalez (maria.gonzalez@acme-corp.com, +49 151 1234 5678)",
    ])
    .ok();
    env.loopx(&["agent", "register", "agent-a"]).ok();
    env.loopx(&["agent", "register", "agent-b"]).ok();
    let plants = plants();
    // Every plant in a title at three places around the subject's cut
    // (after its first character, in its middle, before its last), and in
    // the todo's note.
    let mut todos = Vec::new();
    for (_, planted, _) in &plants {
        let n = planted.chars().count();
        let mut ks = vec![1, n / 2, n.saturating_sub(1)];
        ks.retain(|k| (1..CUT).contains(k));
        ks.dedup();
        for k in ks {
            let title = around_cut(planted, k);
            todos.push(env.add(&title, &["--note", &title]));
        }
    }
    let control = env.add(CONTROL, &[]);
    // The personal plants in every other free-text field, each cut too.
    let personal: Vec<&(String, String, Vec<String>)> = plants.iter().take(5).collect();
    let validated = env.add("Check the build", &["--", "true"]);
    for (i, (_, planted, _)) in personal.iter().enumerate() {
        let text = around_cut(planted, planted.len() / 2);
        let t = &todos[i];
        env.agent("agent-a", &["todo", "claim", t]).ok();
        env.agent("agent-a", &["todo", "update", t, "--note", &text])
            .ok();
        env.agent(
            "agent-a",
            &[
                "evidence",
                "add",
                "--todo",
                t,
                "--kind",
                "note",
                "--summary",
                &text,
            ],
        )
        .ok();
        env.agent(
            "agent-a",
            &["todo", "handoff", t, "--to", "agent-b", "--note", &text],
        )
        .ok();
        let g = env
            .agent(
                "agent-b",
                &[
                    "gate",
                    "open",
                    "--goal",
                    "main",
                    "--question",
                    &text,
                    "--option",
                    &format!("ask {planted}"),
                    "--option",
                    "skip",
                    "--json",
                ],
            )
            .ok()
            .json()["gate"]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        env.loopx(&["gate", "answer", &g, "--choice", "skip", "--note", &text])
            .ok();
        env.agent("agent-b", &["todo", "done", t, "--note", &text])
            .ok();
        env.agent(
            "agent-b",
            &[
                "refresh-state",
                "--outcome",
                "advanced",
                "--next-action",
                &text,
            ],
        )
        .ok();
        env.loopx(&[
            "quota", "park", "--of", "agent-b", "--until", "1h", "--reason", &text,
        ])
        .ok();
        env.loopx(&["quota", "resume", "agent-b"]).ok();
    }
    // A validation `todo done` ran counts, once.
    env.agent("agent-a", &["todo", "claim", &validated]).ok();
    env.agent("agent-a", &["todo", "done", &validated]).ok();

    let names = env.root().join("names.txt");
    std::fs::write(&names, "# people to keep out\n\nMaria Gonzalez\n").unwrap();
    let out = env.root().join("share");
    env.loopx(&[
        "trajectory",
        "main",
        "--out",
        out.to_str().unwrap(),
        "--redact-names",
        names.to_str().unwrap(),
    ])
    .ok();
    let html = std::fs::read_to_string(out.join("trajectory.html")).unwrap();
    let json = std::fs::read_to_string(out.join("trajectory.json")).unwrap();
    for (what, planted, pieces) in &plants {
        for piece in pieces {
            for (file, text) in [("trajectory.html", &html), ("trajectory.json", &json)] {
                let at = text.to_lowercase().find(&piece.to_lowercase());
                assert!(
                    at.is_none(),
                    "{what}: {piece:?} of {planted:?} is in {file}: {:?}",
                    at.map(|i| text[i.saturating_sub(120)..(i + 60).min(text.len())].to_owned())
                );
            }
        }
    }
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let node = |id: &str| {
        doc["todos"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("{id} in the trajectory"))
    };
    // The control text comes through whole, on the page and in the JSON.
    assert_eq!(node(&control)["title"], CONTROL);
    assert!(html.contains(CONTROL), "the control text is on the page");
    // The validation `todo done` ran counts.
    assert_eq!(
        node(&validated)["evidence_passed"],
        1,
        "{}",
        node(&validated)
    );
    assert_eq!(node(&validated)["evidence_failed"], 0);
    // What was removed is said, kind by kind, with how many places.
    let removed = doc["redaction"]["removed"].as_array().unwrap();
    for mark in ["[email]", "[phone]", "[iban]", "[password]", "[name]"] {
        let r = removed
            .iter()
            .find(|r| r["mark"] == mark)
            .unwrap_or_else(|| panic!("{mark} in {removed:?}"));
        assert!(r["found"].as_u64().unwrap() > 0, "{r}");
        assert!(
            html.contains(&format!("<code>{mark}</code>")),
            "{mark} on the page"
        );
    }
    assert!(!doc["redaction"]["kept"].as_array().unwrap().is_empty());
    assert!(html.contains("Not removed"), "the page says what stays");
    let checklist = html.find("id=\"checklist\"").expect("a checklist");
    assert!(checklist > html.find("<h2>Events").unwrap(), "at the end");

    // A names file that cannot be read is a usage error; nothing written.
    let none = env.root().join("none");
    let e = env
        .loopx(&[
            "trajectory",
            "main",
            "--out",
            none.to_str().unwrap(),
            "--redact-names",
            "/nonexistent/names.txt",
        ])
        .code(2);
    assert!(e.stderr.contains("names to redact"), "{}", e.stderr);
    assert!(!none.exists());
}
