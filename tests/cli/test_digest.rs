//! `loopx digest`: a scripted day of ticks against golden files, the
//! 40-line cap, and the JSON.

use crate::common::{TestEnv, assert_text, settle};

fn golden(name: &str, text: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/cli/golden")
        .join(name);
    if std::env::var_os("LOOPX_REGEN_GOLDEN").is_some() {
        std::fs::write(&path, text).expect("write the golden file");
    }
    assert_text(
        text,
        &std::fs::read_to_string(&path)
            .unwrap_or_else(|_| panic!("{name}: regenerate with LOOPX_REGEN_GOLDEN=1")),
    );
}

fn token(env: &TestEnv, agent: &str, goal: &str) -> String {
    let v = env
        .agent(agent, &["quota", "should-run", "--goal", goal, "--json"])
        .ok()
        .json();
    v["turn_token"]
        .as_str()
        .unwrap_or_else(|| panic!("a turn token: {v}"))
        .to_owned()
}

/// A day: work done and failed, gates opened and answered, slots spent,
/// and agent-b falling silent in the afternoon.
fn scripted_day() -> TestEnv {
    let env = TestEnv::with_board();
    env.loopx(&["goal", "add", "docs", "--objective", "Write the manual"])
        .ok();
    env.loopx(&["agent", "register", "agent-c"]).ok();
    // Yesterday: not in the digest.
    let old = env.add("Old work", &["--goal", "main"]);
    env.agent("agent-c", &["todo", "claim", &old]).ok();
    env.agent("agent-c", &["todo", "done", &old]).ok();
    env.advance(26 * 3600);
    let lexer = env.add("Write the lexer", &["--goal", "main", "--", "true"]);
    let parser = env.add("Write the parser", &["--goal", "main", "--", "false"]);
    let intro = env.add("Write the introduction", &["--goal", "docs"]);
    env.agent("agent-a", &["todo", "claim", &lexer]).ok();
    let tok = token(&env, "agent-a", "main");
    env.agent("agent-a", &["todo", "done", &lexer]).ok();
    env.agent("agent-a", &["quota", "spend-slot", "--turn", &tok])
        .ok();
    env.agent("agent-b", &["todo", "claim", &parser]).ok();
    env.agent("agent-b", &["todo", "done", &parser]).code(3);
    env.agent(
        "agent-b",
        &[
            "gate",
            "open",
            "--goal",
            "main",
            "--kind",
            "publish",
            "--question",
            "May I publish 0.2 to crates.io?",
        ],
    )
    .ok();
    env.advance(2 * 3600);
    let gate = env.loopx(&["status", "--json"]).ok().json()["gates"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    env.loopx(&[
        "gate", "answer", &gate, "--choice", "approve", "--note", "go",
    ])
    .ok();
    env.agent("agent-c", &["todo", "claim", &intro]).ok();
    let tok = token(&env, "agent-c", "docs");
    env.agent("agent-c", &["todo", "update", &intro, "--note", "drafted"])
        .ok();
    env.agent("agent-c", &["quota", "spend-slot", "--turn", &tok])
        .ok();
    env.advance(3 * 3600);
    env.agent("agent-c", &["todo", "done", &intro]).ok();
    env.agent(
        "agent-a",
        &[
            "gate",
            "open",
            "--goal",
            "docs",
            "--question",
            "Which tone?",
            "--option",
            "formal",
            "--option",
            "casual",
        ],
    )
    .ok();
    // A claim left to run out, and a settled turn whose dollars reach the
    // goal's budget: the tick settle writes opens the spend gate.
    let outline = env.add("Profile the lexer", &["--goal", "main"]);
    env.agent("agent-c", &["todo", "claim", &outline, "--ttl", "2m"])
        .ok();
    env.loopx(&["goal", "set", "main", "--budget-usd", "5"])
        .ok();
    let tune = env.add("Tune the lexer", &["--goal", "main"]);
    env.agent("agent-a", &["todo", "claim", &tune]).ok();
    let tok = token(&env, "agent-a", "main");
    env.agent("agent-a", &settle(&tok, &tune, &["--outcome", "advanced", "--usage", r#"{"input_tokens": 800000, "output_tokens": 40000, "cost_usd": 6.2, "model": "claude-sonnet-4-5", "runtime": "claude-code"}"#]))
    .ok();
    env
}

#[test]
fn a_day_in_a_screen_in_markdown_and_in_json() {
    let env = scripted_day();
    golden(
        "digest.txt",
        &env.loopx(&["digest", "--since", "1d"]).ok().stdout,
    );
    golden(
        "digest.md",
        &env.loopx(&["digest", "--since", "1d", "--markdown"])
            .ok()
            .stdout,
    );
    golden(
        "digest-docs.txt",
        &env.loopx(&["digest", "--since", "1d", "--goal", "docs"])
            .ok()
            .stdout,
    );
    let v = env
        .loopx(&["digest", "--since", "1d", "--json"])
        .ok()
        .json();
    assert_eq!(v["done"].as_array().unwrap().len(), 2);
    assert_eq!(v["failed"].as_array().unwrap().len(), 1);
    // The spend gate settle opened is among the gates opened, and needs
    // a person now; the decision gate does not.
    let opened = v["gates_opened"].as_array().unwrap();
    assert_eq!(opened.len(), 3, "{v}");
    let budget = opened
        .iter()
        .find(|g| g["text"].as_str().unwrap().contains(" spend "))
        .unwrap_or_else(|| panic!("the settle-made gate: {v}"));
    assert_eq!(budget["by"], "agent-a");
    assert!(
        budget["text"]
            .as_str()
            .unwrap()
            .contains("reached its budget"),
        "{budget}"
    );
    let needs = v["needs_you"].as_array().unwrap();
    assert_eq!(needs.len(), 1, "{v}");
    assert_eq!(needs[0]["kind"], "spend");
    assert!(
        needs[0]["answer"][0]
            .as_str()
            .unwrap()
            .starts_with("loopx gate answer g-"),
        "{v}"
    );
    // agent-b's claim of the parser, and agent-c's short one.
    let expired: Vec<&str> = v["expired_leases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["owner"].as_str().unwrap())
        .collect();
    assert_eq!(expired, ["agent-b", "agent-c"], "{v}");
    assert_eq!(v["spent"]["agent-a"]["usd"], 6.2);
    assert_eq!(v["gates_answered"].as_array().unwrap().len(), 1);
    assert_eq!(v["slots"]["agent-a"], 2, "a spend-slot and a settle");
    assert_eq!(v["slots"]["agent-c"], 1);
    let quiet: Vec<&str> = v["quiet"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["agent"].as_str().unwrap())
        .collect();
    assert_eq!(
        quiet,
        ["agent-b"],
        "agent-b went quiet; a and c ticked lately"
    );
    // An absolute --since gives the same window.
    let now = env.now();
    let since = env
        .loopx(&["digest", "--since", "1d", "--json"])
        .ok()
        .json()["since"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(since < now);
}

#[test]
fn a_busy_day_stays_within_forty_lines() {
    let env = TestEnv::with_board();
    for i in 0..45 {
        let t = env.add(&format!("todo {i}"), &[]);
        env.agent("agent-a", &["todo", "claim", &t]).ok();
        env.agent("agent-a", &["todo", "done", &t]).ok();
    }
    for md in [false, true] {
        let mut args = vec!["digest", "--since", "1d"];
        if md {
            args.push("--markdown");
        }
        let out = env.loopx(&args).ok().stdout;
        assert!(out.lines().count() <= 40, "{out}");
        assert!(out.contains("Done (45)"), "{out}");
        assert!(out.contains("… and "), "{out}");
        let shown = out
            .lines()
            .filter(|l| l.contains("  todo ") || l.contains("\"todo "))
            .count();
        let more: usize = out
            .lines()
            .find_map(|l| l.trim_start_matches(['-', ' ']).strip_prefix("… and "))
            .and_then(|r| r.strip_suffix(" more"))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(shown + more, 45, "{out}");
    }
    let v = env
        .loopx(&["digest", "--since", "1d", "--json"])
        .ok()
        .json();
    assert_eq!(v["done"].as_array().unwrap().len(), 45, "JSON is not cut");
}

#[test]
fn bad_since_and_unknown_goal_are_refused() {
    let env = TestEnv::with_board();
    env.loopx(&["digest", "--since", "yesterday"]).code(2);
    env.loopx(&["digest", "--since", "1d", "--goal", "nope"])
        .code(1);
    let out = env
        .loopx(&["digest", "--since", "2024-12-02T00:00:00Z"])
        .ok();
    assert!(
        out.stdout
            .starts_with("loopx digest: 2024-12-02T00:00:00Z to ")
    );
}

#[test]
fn a_lost_claim_shows_as_a_sync_rejection() {
    let env = TestEnv::with_board();
    let hub = env.hub("hub.git");
    env.git(&["remote", "add", "origin", &hub]);
    let t = env.add("Contested", &[]);
    env.loopx(&["sync"]).ok();
    let b = env.clone_machine("b", &hub);
    b.loopx(&["sync"]).ok();
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    env.loopx(&["sync"]).ok();
    b.agent("agent-b", &["todo", "claim", &t]).ok();
    b.agent("agent-b", &["sync"]).code(4);
    let v = b.loopx(&["digest", "--since", "1d", "--json"]).ok().json();
    let rejected = v["sync_rejected"].as_array().unwrap();
    assert_eq!(rejected.len(), 1, "{v}");
    assert!(
        rejected[0]["text"]
            .as_str()
            .unwrap()
            .starts_with(&format!("todo.claim lost: {t} is not ready")),
        "{v}"
    );
    let text = b.loopx(&["digest", "--since", "1d"]).ok().stdout;
    assert!(text.contains("Sync rejections (1)"), "{text}");
}
