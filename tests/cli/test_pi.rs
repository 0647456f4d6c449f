//! Pi: `hooks install --runtime pi` places the extension (pointed at this
//! loopx, the guard only with `--guard`), `hooks doctor` checks it,
//! uninstall takes it out; the hook's answers for the extension's events,
//! the agent id Pi's session derives, the usage Pi reports; and the
//! extension itself driven by Node as Pi calls it, its `tool_call` blocking
//! `cargo publish` under an open publish gate (opt-in: needs `node`;
//! .ci/run has it). The real Pi runs in the runtime smoke test
//! (test_runtimes.rs).

use std::path::Path;
use std::process::Command;

use crate::common::{TestEnv, assert_text, run, run_stdin};

const SESSION: &str = "019a3f0e-7c1d-7b2a-9e3f-5a6b7c8d9e0f";

fn exe() -> String {
    std::fs::canonicalize(env!("CARGO_BIN_EXE_loopx"))
        .unwrap()
        .display()
        .to_string()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn hook(env: &TestEnv, event: &str, payload: &str) -> String {
    let payload = payload.replace("$REPO", &env.repo.to_string_lossy());
    run_stdin(
        env.command().args(["hook", "pi", event]),
        payload.as_bytes(),
    )
    .ok()
    .stdout
}

#[test]
fn the_extension_is_placed_pointed_at_this_loopx_checked_and_removed() {
    let env = TestEnv::with_board();
    let out = env.loopx(&["hooks", "install", "--runtime", "pi"]).ok();
    assert_text(
        &out.stdout,
        "pi           .pi/extensions/loopx.ts: created\n",
    );
    let path = env.repo.join(".pi/extensions/loopx.ts");
    let text = read(&path);
    assert!(text.starts_with("// loopx-managed extension"), "{text}");
    assert!(
        text.contains(&format!("const LOOPX = \"{}\";", exe())),
        "{text}"
    );
    assert!(text.contains("const GUARD = false;"), "the guard is opt-in");
    let again = env.loopx(&["hooks", "install", "--runtime", "pi"]).ok();
    assert_text(
        &again.stdout,
        "pi           .pi/extensions/loopx.ts: unchanged\n",
    );
    // --guard turns the bash guard on, in place.
    let guarded = env
        .loopx(&["hooks", "install", "--runtime", "pi", "--guard"])
        .ok();
    // (loopx's own file is not backed up: uninstall removes it.)
    assert_text(
        &guarded.stdout,
        "pi           .pi/extensions/loopx.ts: updated\n",
    );
    assert!(read(&path).contains("const GUARD = true;"));

    let doctor = |env: &TestEnv| {
        run(env.command().env("PATH", "/usr/bin:/bin").args([
            "hooks",
            "doctor",
            "--runtime",
            "pi",
            "--json",
        ]))
    };
    let ok = doctor(&env).ok().json();
    assert_eq!(ok["checks"][0]["status"], "wired", "{ok}");
    assert_eq!(
        ok["checks"][0]["events"],
        serde_json::json!([
            "session_start",
            "before_agent_start",
            "tool_call",
            "agent_end",
            "session_shutdown",
            "session_compact"
        ])
    );
    assert!(
        ok["checks"][0]["trust"]
            .as_str()
            .unwrap()
            .contains("restart it"),
        "{ok}"
    );
    std::fs::write(&path, read(&path).replace(&exe(), "/nowhere/loopx")).unwrap();
    let bad = doctor(&env).code(1).json();
    assert!(
        bad["checks"][0]["problems"][0]
            .as_str()
            .unwrap()
            .contains("runs /nowhere/loopx, which is not there"),
        "{bad}"
    );
    let out = env.loopx(&["hooks", "uninstall", "--runtime", "pi"]).ok();
    assert_text(
        &out.stdout,
        "pi           .pi/extensions/loopx.ts: removed\n",
    );
    assert!(!env.repo.join(".pi").exists());

    // User scope: Pi's agent directory under HOME.
    let out = env
        .loopx(&["hooks", "install", "--runtime", "pi", "--scope", "user"])
        .ok();
    assert_text(
        &out.stdout,
        "pi           .pi/agent/extensions/loopx.ts: created\n",
    );
    let home = env.root().join("home");
    assert!(home.join(".pi/agent/extensions/loopx.ts").exists());
    env.loopx(&["hooks", "uninstall", "--runtime", "pi", "--scope", "user"])
        .ok();
    assert!(!home.join(".pi").exists());

    // An extension of the user's at that path is left alone by uninstall,
    // and one that install replaced comes back byte for byte.
    let mine = "export default function (pi) {}\n";
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, mine).unwrap();
    let out = env.loopx(&["hooks", "uninstall", "--runtime", "pi"]).ok();
    assert_eq!(out.stdout, "");
    assert_eq!(read(&path), mine);
    let out = env.loopx(&["hooks", "install", "--runtime", "pi"]).ok();
    assert_text(
        &out.stdout,
        "pi           .pi/extensions/loopx.ts: updated (backup .pi/extensions/loopx.ts.loopx-backup)\n",
    );
    let out = env.loopx(&["hooks", "uninstall", "--runtime", "pi"]).ok();
    assert_text(
        &out.stdout,
        "pi           .pi/extensions/loopx.ts: restored\n",
    );
    assert_eq!(read(&path), mine);
    assert!(
        !env.repo
            .join(".pi/extensions/loopx.ts.loopx-backup")
            .exists()
    );
}

#[test]
fn the_hook_answers_pi_in_claude_codes_shape_and_records_the_usage_pi_reports() {
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &[]);
    let start = hook(
        &env,
        "SessionStart",
        &format!(r#"{{"session_id":"{SESSION}","cwd":"$REPO","source":"startup"}}"#),
    );
    let v: serde_json::Value = serde_json::from_str(&start).unwrap();
    let brief = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    let agent = brief
        .strip_prefix("loopx: you are agent ")
        .and_then(|r| r.split('.').next())
        .unwrap()
        .to_owned();
    assert!(agent.starts_with("pi-") && agent.len() == 11, "{brief}");
    // The agent's bash (PI_SESSION_ID, set by the extension) is that agent.
    let claimed = run(env
        .command()
        .env("PI_SESSION_ID", SESSION)
        .args(["todo", "claim", &t, "--json"]))
    .ok()
    .json();
    assert_eq!(claimed["todo"]["owner"], agent.as_str());
    let listed = env.loopx(&["agent", "list", "--json"]).ok().json();
    let runtime = listed["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == agent.as_str())
        .map(|a| a["runtime"].clone());
    assert_eq!(runtime, Some(serde_json::json!("pi")));

    // Stop with the claim held: keep going; the usage is recorded.
    let stop = hook(
        &env,
        "Stop",
        &format!(
            r#"{{"session_id":"{SESSION}","cwd":"$REPO","usage":[
                {{"model":"claude-sonnet-4-5","provider":"anthropic","input":100,"output":20,"cacheRead":1000,"cacheWrite":0,"cost":0.0125}}]}}"#
        ),
    );
    assert!(stop.contains(r#""decision":"block""#), "{stop}");
    let log = env.loopx(&["log"]).ok().stdout;
    assert!(
        log.contains(&format!("usage {agent} turn")) && log.contains("+1100 in, +20 out"),
        "{log}"
    );

    // The guard reads Pi's `bash`, not Claude's `Bash`.
    env.loopx(&[
        "gate",
        "open",
        "--question",
        "Publish?",
        "--kind",
        "publish",
    ])
    .ok();
    let tool = |name: &str| {
        hook(
            &env,
            "PreToolUse",
            &format!(
                r#"{{"session_id":"{SESSION}","cwd":"$REPO","tool_name":"{name}","tool_input":{{"command":"cargo publish"}}}}"#
            ),
        )
    };
    let denied = tool("bash");
    assert!(
        denied.contains(r#""permissionDecision":"deny""#),
        "{denied}"
    );
    assert!(
        denied.contains("Only a human can answer it"),
        "the denial says who can answer: {denied}"
    );
    assert_eq!(tool("read"), "");

    // The session ends: the turn the agent left open is recorded, and
    // usage sent with it counts too.
    let end = hook(
        &env,
        "SessionEnd",
        &format!(
            r#"{{"session_id":"{SESSION}","cwd":"$REPO","reason":"quit","usage":[{{"model":"claude-sonnet-4-5","input":1,"output":1}}]}}"#
        ),
    );
    assert_eq!(end, "");
    let log = env.loopx(&["log"]).ok().stdout;
    assert!(
        log.contains(&format!("refresh {agent} unchanged: next resume {t}")),
        "{log}"
    );
    assert!(log.contains("+1 in, +1 out"), "{log}");
}

#[test]
#[allow(clippy::print_stderr)]
fn the_extension_drives_the_turn_as_pi_calls_it_and_its_tool_call_blocks_a_gated_publish() {
    let node_ok = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !node_ok {
        eprintln!("skipped: node is not installed (apt-get install nodejs); .ci/run installs it");
        return;
    }
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &[]);
    let extension = env.repo.join(".pi/extensions/loopx.ts");
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let node = |mode: &[&str]| {
        let mut c = Command::new("node");
        crate::common::isolate(&mut c, env.root());
        let out = c
            .arg(here.join("tests/pi/extension_test.mjs"))
            .arg(&extension)
            .arg(&env.repo)
            .arg(&t)
            .args(mode)
            .current_dir(&env.repo)
            .output()
            .expect("node runs");
        assert!(
            out.status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    env.loopx(&["hooks", "install", "--runtime", "pi"]).ok();
    node(&["unguarded"]);
    env.loopx(&["hooks", "install", "--runtime", "pi", "--guard"])
        .ok();
    node(&[]);
}
