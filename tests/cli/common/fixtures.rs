//! Fixtures several test modules share: a fixed-clock history, and a
//! commit made by hand on the state ref.

use super::{Machine, TestEnv};

/// The todos of [`history`].
pub struct Ids {
    /// "Write the parser", goal main: claimed, noted and done by agent-a.
    pub parser: String,
    /// "Write the manual", goal docs: claimed and released by agent-b, then
    /// claimed and renewed by agent-a.
    pub manual: String,
}

/// A fixed-clock history of 13 ticks, one a minute from 09:00. The seeded
/// ids are t-aa735014 (parser) and t-fd6162d1 (manual).
pub fn history() -> (TestEnv, Ids) {
    let env = TestEnv::with_board();
    env.loopx(&["goal", "add", "docs", "--objective", "Write the manual"])
        .ok();
    let parser = env.add("Write the parser", &["--goal", "main", "--priority", "P1"]);
    let manual = env.add("Write the manual", &["--goal", "docs"]);
    env.agent("agent-a", &["todo", "claim", &parser]).ok();
    env.agent(
        "agent-a",
        &["todo", "update", &parser, "--note", "lexer done"],
    )
    .ok();
    env.agent("agent-b", &["todo", "claim", &manual]).ok();
    env.agent("agent-b", &["todo", "release", &manual]).ok();
    env.agent("agent-a", &["todo", "done", &parser, "--note", "all green"])
        .ok();
    env.agent("agent-a", &["todo", "claim", &manual]).ok();
    env.agent("agent-a", &["todo", "claim", &manual, "--ttl", "2h"])
        .ok();
    assert_eq!(
        (parser.as_str(), manual.as_str()),
        ("t-aa735014", "t-fd6162d1")
    );
    (env, Ids { parser, manual })
}

/// Puts a commit that is not a loopx tick on the state ref, as someone
/// committing by hand would.
pub fn hand_commit(env: &TestEnv) -> String {
    let tree = env.git(&["rev-parse", "refs/loopx/state^{tree}"]);
    let commit = env.git(&[
        "commit-tree",
        tree.trim(),
        "-p",
        "refs/loopx/state",
        "-m",
        "Fix a typo by hand",
    ]);
    env.git(&["update-ref", "refs/loopx/state", commit.trim()]);
    commit.trim().to_owned()
}

/// Opens a publish gate as agent-a and returns its id.
pub fn publish_gate(m: &Machine) -> String {
    m.agent(
        "agent-a",
        &[
            "--json",
            "gate",
            "open",
            "--kind",
            "publish",
            "--question",
            "Publish 1.0?",
        ],
    )
    .ok()
    .json()["gate"]["id"]
        .as_str()
        .expect("a gate id")
        .to_owned()
}
