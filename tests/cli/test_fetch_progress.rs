//! A first sync shows git's own fetch progress to a person at a terminal,
//! and nothing when its output is piped or JSON.

use std::process::Command;

use crate::common::*;

/// What git's meters print while fetching (`LANG=C` in the harness).
fn has_meters(text: &str) -> bool {
    text.contains("Enumerating objects") || text.contains("Receiving objects")
}

/// `loopx ARGS` in `m`'s repository on a pseudo-terminal (script(1)), with
/// the harness's isolated environment: its exit code and what the terminal
/// showed (stdout and stderr together). None when script(1) cannot run it.
fn on_terminal(m: &Machine<'_>, args: &str) -> Option<(i32, String)> {
    let c = m.command();
    let line = format!("{} {args}", env!("CARGO_BIN_EXE_loopx"));
    let mut script = Command::new("script");
    script.env_clear();
    for (k, v) in c.get_envs() {
        if let Some(v) = v {
            script.env(k, v);
        }
    }
    if let Some(dir) = c.get_current_dir() {
        script.current_dir(dir);
    }
    script.env("TERM", "dumb");
    let out = run(script.args(["-qec", &line, "/dev/null"]));
    // script(1) itself failing (no pseudo-terminals here) prints nothing
    // of loopx's.
    (out.stdout.contains("origin") || out.code == 0).then_some((out.code, out.stdout))
}

#[test]
fn a_first_sync_shows_git_fetch_progress_on_a_terminal_only() {
    let env = TestEnv::with_board();
    let hub = env.hub("hub.git");
    env.git(&["remote", "add", "origin", &hub]);
    for i in 0..5 {
        env.loopx(&["todo", "add", &format!("Todo {i}")]).ok();
    }
    env.loopx(&["sync"]).ok();
    // Clones through git's transport (a local path would hard-link the
    // hub's objects, leaving the fetch nothing to transfer).
    let hub = format!("file://{hub}");

    // Piped (the harness): git's meters never reach stderr, nor stdout.
    let piped = env.clone_machine("piped", &hub);
    let out = piped.loopx(&["sync"]).ok();
    assert_text(&out.stdout, "Pulled 8 ticks (origin, tick 8).\n");
    assert!(
        !has_meters(&out.stderr) && !out.stderr.contains('\r'),
        "piped stderr: {:?}",
        out.stderr
    );
    assert_eq!(piped.tip(), env.machine().tip());

    // On a terminal, the first sync shows them.
    let shown = env.clone_machine("shown", &hub);
    let Some((code, text)) = on_terminal(&shown, "sync") else {
        skipped(format_args!(
            "skipped: script(1) cannot run loopx on a pseudo-terminal here"
        ));
        return;
    };
    assert_eq!(code, 0, "{text}");
    assert!(has_meters(&text), "terminal: {text:?}");
    assert!(
        text.contains("Pulled 8 ticks (origin, tick 8)."),
        "{text:?}"
    );
    assert_eq!(shown.tip(), env.machine().tip());

    // A later sync on a terminal does not (not a first sync) ...
    env.loopx(&["todo", "add", "One more"]).ok();
    env.loopx(&["sync"]).ok();
    let (code, text) = on_terminal(&shown, "sync").expect("ran once");
    assert_eq!(code, 0, "{text}");
    assert!(!has_meters(&text), "a later sync: {text:?}");
    assert!(text.contains("Pulled 1 tick"), "{text:?}");

    // ... nor does a first sync asked for JSON.
    let json = env.clone_machine("json", &hub);
    let (code, text) = on_terminal(&json, "sync --json").expect("ran once");
    assert_eq!(code, 0, "{text}");
    assert!(!has_meters(&text), "--json: {text:?}");
    assert!(text.contains("\"outcome\":\"pulled\""), "{text:?}");

    // A failed first fetch on a terminal still says what failed, in one
    // line, without the meters in it.
    let gone = env.clone_machine("gone", &hub);
    gone.git(&["remote", "set-url", "origin", "/nonexistent/hub.git"]);
    let (code, text) = on_terminal(&gone, "sync").expect("ran once");
    assert_ne!(code, 0, "{text}");
    assert!(
        text.contains("remote-unreachable") || text.contains("cannot fetch"),
        "{text:?}"
    );
}
