//! OpenCode: the hook's answers for the plugin's events, the agent id its
//! session derives, and the plugin itself driven by Node as OpenCode calls
//! it (opt-in: needs `node`; .ci/run has it).

use std::path::Path;
use std::process::Command;

use crate::common::{TestEnv, run, run_stdin};

const SESSION: &str = "ses_4b1d2c3e9f8a7b6c5d4e3f2a1b";

fn hook(env: &TestEnv, event: &str, payload: &str) -> String {
    let payload = payload.replace("$REPO", &env.repo.to_string_lossy());
    run_stdin(
        env.command().args(["hook", "opencode", event]),
        payload.as_bytes(),
    )
    .ok()
    .stdout
}

/// The agent id OpenCode's session derives (the marker the plugin sets).
fn agent(env: &TestEnv) -> String {
    let out = run(env
        .command()
        .env("OPENCODE_SESSION_ID", SESSION)
        .args(["agent", "list", "--json"]))
    .ok();
    let v = out.json();
    v["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap().to_owned())
        .find(|id| id.starts_with("opencode-"))
        .expect("the session start registered it")
}

#[test]
fn the_hook_answers_opencode_in_claude_codes_shape_and_the_session_names_the_agent() {
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &[]);
    let start = hook(
        &env,
        "SessionStart",
        &format!(
            r#"{{"session_id":"{SESSION}","cwd":"$REPO","hook_event_name":"SessionStart","source":"startup"}}"#
        ),
    );
    let v: serde_json::Value = serde_json::from_str(&start).unwrap();
    let id = agent(&env);
    assert!(
        v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .starts_with(&format!("loopx: you are agent {id}.")),
        "{start}"
    );
    // The agent's own shell (OPENCODE_SESSION_ID) acts as the same agent.
    let claimed = run(env
        .command()
        .env("OPENCODE_SESSION_ID", SESSION)
        .args(["todo", "claim", &t, "--json"]))
    .ok()
    .json();
    assert_eq!(claimed["todo"]["owner"], id.as_str());
    let stop = hook(
        &env,
        "Stop",
        &format!(r#"{{"session_id":"{SESSION}","cwd":"$REPO","hook_event_name":"Stop"}}"#),
    );
    assert!(stop.contains(r#""decision":"block""#), "{stop}");
    env.loopx(&[
        "gate",
        "open",
        "--question",
        "Publish?",
        "--kind",
        "publish",
    ])
    .ok();
    let tool = hook(
        &env,
        "PreToolUse",
        &format!(
            r#"{{"session_id":"{SESSION}","cwd":"$REPO","tool_name":"Bash","tool_input":{{"command":"cargo publish"}}}}"#
        ),
    );
    assert!(tool.contains(r#""permissionDecision":"deny""#), "{tool}");
}

#[test]
fn the_plugin_drives_the_turn_as_opencode_calls_it() {
    let node_ok = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !node_ok {
        crate::common::skipped(format_args!(
            "skipped: node is not installed (apt-get install nodejs); .ci/run installs it"
        ));
        return;
    }
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &[]);
    env.loopx(&["hooks", "install", "--runtime", "opencode"])
        .ok();
    let plugin = env.repo.join(".opencode/plugins/loopx.js");
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut c = Command::new("node");
    crate::common::isolate(&mut c, env.root());
    let out = c
        .arg(here.join("tests/opencode/plugin_test.mjs"))
        .arg(&plugin)
        .arg(&env.repo)
        .arg(&t)
        .current_dir(&env.repo)
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
