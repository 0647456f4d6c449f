//! Hardening, round 4 (issue 41, items 5 and 6): each test is the attack
//! that once got through, then the honest work that goes on beside it.

use crate::common::{Output, TestEnv, run};

// Agent text cannot paint the terminal (issue 41 item 5).

/// loopx's own five colour sequences, in a title an agent writes: the
/// failed check looks like a passing (green) diff line.
const PAINTED: &str = "Ship \x1b[32m+ validation passed\x1b[0m\x1b[1m";

/// `loopx ARGS` as `agent-a` with colour forced on (as on a terminal).
fn coloured(env: &TestEnv, args: &[&str]) -> Output {
    let mut c = env.command();
    c.env("LOOPX_AGENT", "agent-a")
        .env_remove("NO_COLOR")
        .env("TERM", "xterm-256color")
        .args(["--color", "always"])
        .args(args);
    run(&mut c).ok()
}

#[test]
fn agent_text_cannot_paint_the_terminal_in_log_diff_or_show() {
    let env = TestEnv::with_board();
    let t = env
        .agent("agent-a", &["todo", "add", PAINTED])
        .ok()
        .stdout
        .trim()
        .to_owned();
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let tick = env.ticks().to_string();
    let before = env.tip();
    for args in [
        vec!["log"],
        vec!["log", "-p"],
        vec!["show", &tick],
        vec!["diff", "3"],
        vec!["diff", "3", "-p"],
        vec!["todo", "show", &t],
        vec!["status"],
    ] {
        let out = coloured(&env, &args);
        let what = args.join(" ");
        // Every escape sequence on stdout is one loopx wrote around a diff
        // line: none sits inside the agent's text.
        assert!(
            !out.stdout.contains("Ship \x1b"),
            "`loopx {what}` let the agent's colour through:\n{:?}",
            out.stdout
        );
        if out.stdout.contains("Ship ") {
            assert!(
                out.stdout
                    .contains("Ship \\e[32m+ validation passed\\e[0m\\e[1m"),
                "`loopx {what}` shows the sequences as escapes:\n{:?}",
                out.stdout
            );
        }
        if what.ends_with("-p") || what.starts_with("show") {
            // loopx's own colours still paint its diffs.
            assert!(
                out.stdout.contains("\x1b[1m--- ") && out.stdout.contains("\x1b[32m+"),
                "`loopx {what}` lost its own colours:\n{:?}",
                out.stdout
            );
        }
    }
    // Nothing moved; JSON keeps the exact text.
    assert_eq!(env.tip(), before);
    let v = env.loopx(&["todo", "show", &t, "--json"]).ok().json();
    assert_eq!(v["title"], PAINTED);
}
