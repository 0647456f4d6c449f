//! `loopx hook`: recorded stdin payloads of every runtime and event, the
//! exact JSON answered, exit 0 always, nothing on stdout when there is
//! nothing to say, and garbage failing open.

use crate::common::{Output, TestEnv, assert_text, run_stdin};
use std::path::Path;

/// One runtime's recorded payloads, in the order of a session.
struct Recorded {
    runtime: &'static str,
    /// The agent its session id derives to.
    agent: &'static str,
    start: (&'static str, &'static str),
    prompt: (&'static str, &'static str),
    tool: (&'static str, &'static str),
    harmless_tool: &'static str,
    stop: (&'static str, &'static str),
    /// The same Stop with the runtime's loop guard set.
    stop_guarded: &'static str,
    end: (&'static str, &'static str),
}

const CLAUDE: Recorded = Recorded {
    runtime: "claude-code",
    agent: "claude-code-634098a0",
    start: (
        "SessionStart",
        r#"{"session_id":"1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d","transcript_path":"/home/ada/.claude/projects/repo/1a2b3c4d.jsonl","cwd":"$REPO","permission_mode":"default","hook_event_name":"SessionStart","source":"startup","model":"claude-opus-4-5"}"#,
    ),
    prompt: (
        "UserPromptSubmit",
        r#"{"session_id":"1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d","transcript_path":"/home/ada/.claude/projects/repo/1a2b3c4d.jsonl","cwd":"$REPO","permission_mode":"default","hook_event_name":"UserPromptSubmit","prompt":"Carry on with the parser"}"#,
    ),
    tool: (
        "PreToolUse",
        r#"{"session_id":"1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d","transcript_path":"/home/ada/.claude/projects/repo/1a2b3c4d.jsonl","cwd":"$REPO","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"cargo publish --allow-dirty","description":"Publish the crate"},"tool_use_id":"toolu_01ABC"}"#,
    ),
    harmless_tool: r#"{"session_id":"1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d","cwd":"$REPO","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"cargo test --locked"},"tool_use_id":"toolu_01ABD"}"#,
    stop: (
        "Stop",
        r#"{"session_id":"1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d","transcript_path":"/home/ada/.claude/projects/repo/1a2b3c4d.jsonl","cwd":"$REPO","permission_mode":"default","hook_event_name":"Stop","stop_hook_active":false}"#,
    ),
    stop_guarded: r#"{"session_id":"1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d","cwd":"$REPO","hook_event_name":"Stop","stop_hook_active":true}"#,
    end: (
        "SessionEnd",
        r#"{"session_id":"1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d","transcript_path":"/home/ada/.claude/projects/repo/1a2b3c4d.jsonl","cwd":"$REPO","permission_mode":"default","hook_event_name":"SessionEnd","reason":"prompt_input_exit"}"#,
    ),
};

const CODEX: Recorded = Recorded {
    runtime: "codex",
    agent: "codex-9c6e7f77",
    start: (
        "SessionStart",
        r#"{"session_id":"0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b","transcript_path":null,"cwd":"$REPO","hook_event_name":"SessionStart","model":"gpt-5-codex","permission_mode":"default","source":"startup"}"#,
    ),
    prompt: (
        "UserPromptSubmit",
        r#"{"session_id":"0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b","turn_id":"turn-2","transcript_path":null,"cwd":"$REPO","hook_event_name":"UserPromptSubmit","model":"gpt-5-codex","permission_mode":"default","prompt":"Carry on with the parser"}"#,
    ),
    tool: (
        "PreToolUse",
        r#"{"session_id":"0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b","turn_id":"turn-2","transcript_path":null,"cwd":"$REPO","hook_event_name":"PreToolUse","model":"gpt-5-codex","permission_mode":"default","tool_name":"Bash","tool_input":{"command":"cargo publish"},"tool_use_id":"call_7"}"#,
    ),
    harmless_tool: r#"{"session_id":"0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b","turn_id":"turn-2","cwd":"$REPO","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git status"},"tool_use_id":"call_8"}"#,
    stop: (
        "Stop",
        r#"{"session_id":"0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b","turn_id":"turn-2","transcript_path":null,"cwd":"$REPO","hook_event_name":"Stop","model":"gpt-5-codex","permission_mode":"default","stop_hook_active":false,"last_assistant_message":"I wrote half of the parser."}"#,
    ),
    stop_guarded: r#"{"session_id":"0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b","turn_id":"turn-3","cwd":"$REPO","hook_event_name":"Stop","stop_hook_active":true,"last_assistant_message":null}"#,
    end: (
        "SessionEnd",
        r#"{"session_id":"0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b","transcript_path":null,"cwd":"$REPO","hook_event_name":"SessionEnd","reason":"other"}"#,
    ),
};

const CURSOR: Recorded = Recorded {
    runtime: "cursor",
    agent: "cursor-465e33b3",
    start: (
        "sessionStart",
        r#"{"conversation_id":"c0ffee00-1111-2222-3333-444455556666","generation_id":"6a1f","hook_event_name":"sessionStart","workspace_roots":["$REPO"],"model":"auto","cursor_version":"1.7.52","user_email":"ada@example.com"}"#,
    ),
    prompt: (
        "beforeSubmitPrompt",
        r#"{"conversation_id":"c0ffee00-1111-2222-3333-444455556666","generation_id":"6a20","hook_event_name":"beforeSubmitPrompt","workspace_roots":["$REPO"],"prompt":"Carry on with the parser","attachments":[]}"#,
    ),
    tool: (
        "beforeShellExecution",
        r#"{"conversation_id":"c0ffee00-1111-2222-3333-444455556666","generation_id":"6a20","hook_event_name":"beforeShellExecution","workspace_roots":["$REPO"],"command":"npm publish --access public","cwd":"$REPO"}"#,
    ),
    harmless_tool: r#"{"conversation_id":"c0ffee00-1111-2222-3333-444455556666","hook_event_name":"beforeShellExecution","workspace_roots":["$REPO"],"command":"npm test","cwd":"$REPO"}"#,
    stop: (
        "stop",
        r#"{"conversation_id":"c0ffee00-1111-2222-3333-444455556666","generation_id":"6a20","hook_event_name":"stop","workspace_roots":["$REPO"],"status":"completed","loop_count":0}"#,
    ),
    stop_guarded: r#"{"conversation_id":"c0ffee00-1111-2222-3333-444455556666","hook_event_name":"stop","workspace_roots":["$REPO"],"status":"aborted","loop_count":1}"#,
    end: (
        "sessionEnd",
        r#"{"conversation_id":"c0ffee00-1111-2222-3333-444455556666","hook_event_name":"sessionEnd","workspace_roots":["$REPO"]}"#,
    ),
};

const GEMINI: Recorded = Recorded {
    runtime: "gemini",
    agent: "gemini-1ba991ff",
    start: (
        "SessionStart",
        r#"{"session_id":"9f8e7d6c-5b4a-3928-1706-f5e4d3c2b1a0","transcript_path":"/home/ada/.gemini/tmp/chats/session.json","cwd":"$REPO","hook_event_name":"SessionStart","timestamp":"2024-12-02T09:04:00.000Z","source":"startup"}"#,
    ),
    prompt: (
        "BeforeAgent",
        r#"{"session_id":"9f8e7d6c-5b4a-3928-1706-f5e4d3c2b1a0","transcript_path":"/home/ada/.gemini/tmp/chats/session.json","cwd":"$REPO","hook_event_name":"BeforeAgent","timestamp":"2024-12-02T09:05:00.000Z","prompt":"Carry on with the parser"}"#,
    ),
    tool: (
        "BeforeTool",
        r#"{"session_id":"9f8e7d6c-5b4a-3928-1706-f5e4d3c2b1a0","cwd":"$REPO","hook_event_name":"BeforeTool","timestamp":"2024-12-02T09:06:00.000Z","tool_name":"run_shell_command","tool_input":{"command":"gh release create v1.0 --notes ok","description":"Release"}}"#,
    ),
    harmless_tool: r#"{"session_id":"9f8e7d6c-5b4a-3928-1706-f5e4d3c2b1a0","cwd":"$REPO","hook_event_name":"BeforeTool","tool_name":"run_shell_command","tool_input":{"command":"ls -la"}}"#,
    stop: (
        "AfterAgent",
        r#"{"session_id":"9f8e7d6c-5b4a-3928-1706-f5e4d3c2b1a0","cwd":"$REPO","hook_event_name":"AfterAgent","timestamp":"2024-12-02T09:07:00.000Z","prompt":"Carry on with the parser","prompt_response":"Half of it is written.","stop_hook_active":false}"#,
    ),
    stop_guarded: r#"{"session_id":"9f8e7d6c-5b4a-3928-1706-f5e4d3c2b1a0","cwd":"$REPO","hook_event_name":"AfterAgent","prompt":"x","prompt_response":"y","stop_hook_active":true}"#,
    end: (
        "SessionEnd",
        r#"{"session_id":"9f8e7d6c-5b4a-3928-1706-f5e4d3c2b1a0","cwd":"$REPO","hook_event_name":"SessionEnd","timestamp":"2024-12-02T09:09:00.000Z","reason":"exit"}"#,
    ),
};

/// Runs `loopx hook RUNTIME EVENT` with a recorded payload on stdin.
/// The runtime's PATH holds this loopx, so the brief names it `loopx`
/// (but for Codex, whose login shells reset PATH: there it is `$LOOPX`, its
/// absolute path).
fn hook(env: &TestEnv, runtime: &str, event: &str, payload: &str) -> Output {
    let payload = payload.replace("$REPO", &env.repo.to_string_lossy());
    let bin = Path::new(env!("CARGO_BIN_EXE_loopx")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut out = run_stdin(
        env.command()
            .env("PATH", path)
            .args(["hook", runtime, event]),
        payload.as_bytes(),
    )
    .ok();
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_loopx")).unwrap();
    out.stdout = out.stdout.replace(&exe.display().to_string(), "$LOOPX");
    out
}

/// The answers of one session: start, an unchanged prompt, a gate opened
/// on the agent's claim and the prompt that tells it, the guard (a covered
/// command, a harmless one), Stop while the gate covers the claim, the gate
/// answered and the prompt that tells it, Stop while holding the claim and
/// with the loop guard set, and the session's end.
fn session(rt: &Recorded) -> (TestEnv, Vec<String>) {
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &["--priority", "P1"]);
    let mut out = Vec::new();
    let mut say = |o: Output| out.push(o.stdout);
    say(hook(&env, rt.runtime, rt.start.0, rt.start.1));
    say(hook(&env, rt.runtime, rt.prompt.0, rt.prompt.1));
    env.agent(rt.agent, &["todo", "claim", &t]).ok();
    let gate = env
        .loopx(&[
            "gate",
            "open",
            "--question",
            "May I publish 1.0?",
            "--kind",
            "publish",
            "--blocks",
            &format!("todo:{t}"),
        ])
        .ok()
        .stdout;
    say(hook(&env, rt.runtime, rt.prompt.0, rt.prompt.1));
    say(hook(&env, rt.runtime, rt.tool.0, rt.tool.1));
    say(hook(&env, rt.runtime, rt.tool.0, rt.harmless_tool));
    // While a gate covers its claim, the agent may stop: that work waits.
    say(hook(&env, rt.runtime, rt.stop.0, rt.stop.1));
    env.loopx(&["gate", "answer", gate.trim(), "--choice", "approve"])
        .ok();
    say(hook(&env, rt.runtime, rt.prompt.0, rt.prompt.1));
    // Once it is answered, Stop keeps it going, unless the loop guard is set.
    say(hook(&env, rt.runtime, rt.stop.0, rt.stop.1));
    say(hook(&env, rt.runtime, rt.stop.0, rt.stop_guarded));
    let end = hook(&env, rt.runtime, rt.end.0, rt.end.1);
    out.push(format!("{}{}", end.stdout, end.stderr));
    (env, out)
}

fn assert_session(rt: &Recorded, expected: &[&str]) {
    let (env, got) = session(rt);
    let got: Vec<String> = got.iter().map(|s| env.normalize(s)).collect();
    assert_text(&got.join("---\n"), &expected.join("---\n"));
    // The end of the session is recorded, and nothing was released.
    let subject = env.git(&["log", "-1", "--format=%s", "refs/loopx/state"]);
    assert!(
        subject.starts_with(&format!("refresh {} unchanged: next resume t-", rt.agent)),
        "{subject}"
    );
    let v = env.loopx(&["todo", "list", "--json"]).ok().json();
    assert_eq!(v["todos"][0]["owner"], rt.agent, "{v}");
}

#[test]
fn claude_code_answers_each_event() {
    assert_session(
        &CLAUDE,
        &[
            r#"{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"loopx: you are agent claude-code-634098a0.\ngoal main: Ship the parser\nready: t-05b96f2f P1 \"Write the parser\"\nquota: 48 of 48 slots left per 1d\nNext: claim t-05b96f2f \"Write the parser\" with `loopx todo claim t-05b96f2f`.\nTurn token: lxt1:main:claude-code-634098a0:1ebb9f85b614cf73:1733130240. End the turn with `loopx settle --turn lxt1:main:claude-code-634098a0:1ebb9f85b614cf73:1733130240 --todo t-05b96f2f --outcome advanced|blocked|unchanged [--done] [-- CHECK]`."}}
"#,
            r#""#,
            r#"{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"loopx: since your last prompt:\n- gate g-1424fe5a is open: \"May I publish 1.0?\""}}
"#,
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"loopx: `cargo publish` waits on gate g-1424fe5a (publish): \"May I publish 1.0?\". Only a human can answer it; until then do not run this or anything that does the same."}}
"#,
            r#""#,
            r#""#,
            r#"{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"loopx: since your last prompt:\n- gate g-1424fe5a was answered approve by Ada Lovelace: \"May I publish 1.0?\""}}
"#,
            r#"{"decision":"block","reason":"loopx: you still hold t-05b96f2f \"Write the parser\", lease 37m left, and 48 of 48 slots remain: keep working on it. Record each step with `loopx settle --turn lxt1:main:claude-code-634098a0:71dc57607c538611:1733130840 --todo t-05b96f2f --outcome advanced [--done] [-- CHECK]`. To stop instead, say why with `loopx refresh-state --outcome blocked --todo t-05b96f2f --next-action TEXT`, or give it up with `loopx todo update t-05b96f2f --status open`."}
"#,
            r#""#,
            r#"loopx: claude-code-634098a0 keeps t-05b96f2f "Write the parser" until 2024-12-02T09:51:00Z; nothing was released, so it shows stuck until a session continues the agent or the lease runs out (`loopx todo release t-05b96f2f` gives it up).
"#,
        ],
    );
}

#[test]
fn codex_answers_each_event() {
    assert_session(
        &CODEX,
        &[
            r#"{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"loopx: you are agent codex-9c6e7f77.\ngoal main: Ship the parser\nready: t-05b96f2f P1 \"Write the parser\"\nquota: 48 of 48 slots left per 1d\nNext: claim t-05b96f2f \"Write the parser\" with `$LOOPX todo claim t-05b96f2f`.\nTurn token: lxt1:main:codex-9c6e7f77:bcccb65aa2511c79:1733130240. End the turn with `$LOOPX settle --turn lxt1:main:codex-9c6e7f77:bcccb65aa2511c79:1733130240 --todo t-05b96f2f --outcome advanced|blocked|unchanged [--done] [-- CHECK]`."}}
"#,
            r#""#,
            r#"{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"loopx: since your last prompt:\n- gate g-1424fe5a is open: \"May I publish 1.0?\""}}
"#,
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"loopx: `cargo publish` waits on gate g-1424fe5a (publish): \"May I publish 1.0?\". Only a human can answer it; until then do not run this or anything that does the same."}}
"#,
            r#""#,
            r#""#,
            r#"{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"loopx: since your last prompt:\n- gate g-1424fe5a was answered approve by Ada Lovelace: \"May I publish 1.0?\""}}
"#,
            r#"{"decision":"block","reason":"loopx: you still hold t-05b96f2f \"Write the parser\", lease 37m left, and 48 of 48 slots remain: keep working on it. Record each step with `$LOOPX settle --turn lxt1:main:codex-9c6e7f77:118c0a811e957610:1733130840 --todo t-05b96f2f --outcome advanced [--done] [-- CHECK]`. To stop instead, say why with `$LOOPX refresh-state --outcome blocked --todo t-05b96f2f --next-action TEXT`, or give it up with `$LOOPX todo update t-05b96f2f --status open`."}
"#,
            r#""#,
            r#"loopx: codex-9c6e7f77 keeps t-05b96f2f "Write the parser" until 2024-12-02T09:51:00Z; nothing was released, so it shows stuck until a session continues the agent or the lease runs out (`loopx todo release t-05b96f2f` gives it up).
"#,
        ],
    );
}

#[test]
fn cursor_answers_each_event() {
    assert_session(
        &CURSOR,
        &[
            r#"{"additional_context":"loopx: you are agent cursor-465e33b3.\ngoal main: Ship the parser\nready: t-05b96f2f P1 \"Write the parser\"\nquota: 48 of 48 slots left per 1d\nNext: claim t-05b96f2f \"Write the parser\" with `loopx todo claim t-05b96f2f`.\nTurn token: lxt1:main:cursor-465e33b3:86fe121b948be3b6:1733130240. End the turn with `loopx settle --turn lxt1:main:cursor-465e33b3:86fe121b948be3b6:1733130240 --todo t-05b96f2f --outcome advanced|blocked|unchanged [--done] [-- CHECK]`.","env":{"LOOPX_AGENT":"cursor-465e33b3"}}
"#,
            r#""#,
            // Cursor drops context at beforeSubmitPrompt: loopx answers nothing.
            r#""#,
            r#"{"permission":"deny","user_message":"loopx: `npm publish` waits on gate g-1424fe5a (publish): \"May I publish 1.0?\". Only a human can answer it; until then do not run this or anything that does the same.","agent_message":"loopx: `npm publish` waits on gate g-1424fe5a (publish): \"May I publish 1.0?\". Only a human can answer it; until then do not run this or anything that does the same."}
"#,
            r#""#,
            r#""#,
            // Cursor drops context at beforeSubmitPrompt: loopx answers nothing.
            r#""#,
            r#"{"followup_message":"loopx: you still hold t-05b96f2f \"Write the parser\", lease 37m left, and 48 of 48 slots remain: keep working on it. Record each step with `loopx settle --turn lxt1:main:cursor-465e33b3:bb0126d9375d04c9:1733130840 --todo t-05b96f2f --outcome advanced [--done] [-- CHECK]`. To stop instead, say why with `loopx refresh-state --outcome blocked --todo t-05b96f2f --next-action TEXT`, or give it up with `loopx todo update t-05b96f2f --status open`."}
"#,
            r#""#,
            r#"loopx: cursor-465e33b3 keeps t-05b96f2f "Write the parser" until 2024-12-02T09:51:00Z; nothing was released, so it shows stuck until a session continues the agent or the lease runs out (`loopx todo release t-05b96f2f` gives it up).
"#,
        ],
    );
}

#[test]
fn gemini_answers_each_event() {
    assert_session(
        &GEMINI,
        &[
            r#"{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"loopx: you are agent gemini-1ba991ff.\ngoal main: Ship the parser\nready: t-05b96f2f P1 \"Write the parser\"\nquota: 48 of 48 slots left per 1d\nNext: claim t-05b96f2f \"Write the parser\" with `LOOPX_AGENT=gemini-1ba991ff loopx todo claim t-05b96f2f`.\nTurn token: lxt1:main:gemini-1ba991ff:a002b88dc908d663:1733130240. End the turn with `LOOPX_AGENT=gemini-1ba991ff loopx settle --turn lxt1:main:gemini-1ba991ff:a002b88dc908d663:1733130240 --todo t-05b96f2f --outcome advanced|blocked|unchanged [--done] [-- CHECK]`.\nGemini CLI's shell does not say which session runs it: run loopx as `LOOPX_AGENT=gemini-1ba991ff loopx …`."}}
"#,
            r#""#,
            r#"{"hookSpecificOutput":{"hookEventName":"BeforeAgent","additionalContext":"loopx: since your last prompt:\n- gate g-1424fe5a is open: \"May I publish 1.0?\""}}
"#,
            r#"{"decision":"deny","reason":"loopx: `gh release create` waits on gate g-1424fe5a (publish): \"May I publish 1.0?\". Only a human can answer it; until then do not run this or anything that does the same."}
"#,
            r#""#,
            r#""#,
            r#"{"hookSpecificOutput":{"hookEventName":"BeforeAgent","additionalContext":"loopx: since your last prompt:\n- gate g-1424fe5a was answered approve by Ada Lovelace: \"May I publish 1.0?\""}}
"#,
            r#"{"decision":"deny","reason":"loopx: you still hold t-05b96f2f \"Write the parser\", lease 37m left, and 48 of 48 slots remain: keep working on it. Record each step with `LOOPX_AGENT=gemini-1ba991ff loopx settle --turn lxt1:main:gemini-1ba991ff:af20426454337cf7:1733130840 --todo t-05b96f2f --outcome advanced [--done] [-- CHECK]`. To stop instead, say why with `LOOPX_AGENT=gemini-1ba991ff loopx refresh-state --outcome blocked --todo t-05b96f2f --next-action TEXT`, or give it up with `LOOPX_AGENT=gemini-1ba991ff loopx todo update t-05b96f2f --status open`."}
"#,
            r#""#,
            r#"loopx: gemini-1ba991ff keeps t-05b96f2f "Write the parser" until 2024-12-02T09:51:00Z; nothing was released, so it shows stuck until a session continues the agent or the lease runs out (`loopx todo release t-05b96f2f` gives it up).
"#,
        ],
    );
}

const EVENTS: &[(&str, &[&str])] = &[
    (
        "claude-code",
        &[
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "Stop",
            "SessionEnd",
            "PreCompact",
        ],
    ),
    (
        "codex",
        &[
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "Stop",
            "SessionEnd",
            "PreCompact",
        ],
    ),
    (
        "cursor",
        &[
            "sessionStart",
            "beforeSubmitPrompt",
            "beforeShellExecution",
            "stop",
            "sessionEnd",
        ],
    ),
    (
        "gemini",
        &[
            "SessionStart",
            "BeforeAgent",
            "BeforeTool",
            "AfterAgent",
            "SessionEnd",
        ],
    ),
];

/// Garbage on stdin: one line on stderr, and nothing on stdout but for the
/// tool guard's event, which fails closed (denies).
#[test]
fn garbage_on_stdin_fails_open_for_every_event_but_the_guards() {
    let env = TestEnv::with_board();
    let ticks = env.ticks();
    for (runtime, events) in EVENTS {
        for event in *events {
            for garbage in ["{\"session_id\": ", "[1, 2]", "\u{0}\u{1}binary", "null"] {
                let out = run_stdin(
                    env.command().args(["hook", runtime, event]),
                    garbage.as_bytes(),
                )
                .ok();
                let guard = matches!(*event, "PreToolUse" | "beforeShellExecution" | "BeforeTool");
                match guard {
                    true => assert!(
                        out.stdout
                            .contains("loopx: the tool guard could not check this call")
                            && out.stdout.contains("deny"),
                        "{runtime} {event} {garbage:?}: {}",
                        out.stdout
                    ),
                    false => assert_eq!(out.stdout, "", "{runtime} {event} {garbage:?}"),
                }
                assert_eq!(
                    out.stderr.lines().count(),
                    1,
                    "{runtime} {event}: {}",
                    out.stderr
                );
                assert!(
                    out.stderr.starts_with("loopx hook: stdin is not"),
                    "{}",
                    out.stderr
                );
            }
        }
    }
    assert_eq!(env.ticks(), ticks, "garbage writes nothing");
}

#[test]
fn bad_arguments_exit_zero_with_one_line() {
    let env = TestEnv::with_board();
    for args in [
        &["hook"][..],
        &["hook", "claude"],
        &["hook", "claude", "Nope"],
        &["hook", "vim", "SessionStart"],
        &["hook", "--bogus"],
        &["--format", "xml", "hook", "claude", "Stop"],
        &["-C", "/nonexistent", "hook", "cursor", "stop"],
    ] {
        let out = run_stdin(env.command().args(args), b"{}").ok();
        assert_eq!(out.stdout, "", "{args:?}");
        assert!(out.stderr.lines().count() <= 1, "{args:?}: {}", out.stderr);
    }
    let out = run_stdin(env.command().args(["hook", "claude", "Nope"]), b"{}").ok();
    assert_text(
        &out.stderr,
        "loopx hook: \"Nope\" is not a claude-code event loopx answers (SessionStart, UserPromptSubmit, PreToolUse, Stop, SessionEnd, PreCompact, StopFailure); answering nothing.\n",
    );
}

#[test]
fn outside_loopx_a_hook_says_nothing_at_all() {
    let env = TestEnv::new();
    let out = hook(&env, "claude", CLAUDE.start.0, CLAUDE.start.1);
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("", ""));
    let out = hook(&env, "gemini", GEMINI.tool.0, GEMINI.tool.1);
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("", ""));
    let bare = TestEnv::empty();
    let out = hook(&bare, "cursor", CURSOR.start.0, CURSOR.start.1);
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("", ""));
}

#[test]
fn pre_compact_answers_nothing_and_start_after_compaction_primes_again() {
    let env = TestEnv::with_board();
    env.add("Write the parser", &[]);
    hook(&env, "claude", CLAUDE.start.0, CLAUDE.start.1);
    let payload = r#"{"session_id":"1a2b3c4d-5e6f","cwd":"$REPO","hook_event_name":"PreCompact","trigger":"auto","custom_instructions":""}"#;
    for runtime in ["claude", "codex"] {
        let out = hook(&env, runtime, "PreCompact", payload);
        assert_eq!(out.stdout, "");
    }
    let compact = CLAUDE.start.1.replace("\"startup\"", "\"compact\"");
    let v = hook(&env, "claude", "SessionStart", &compact);
    assert!(
        v.stdout
            .contains("loopx: you are agent claude-code-634098a0."),
        "{}",
        v.stdout
    );
}

#[test]
fn the_guard_denies_answering_a_human_only_gate_but_not_a_decision() {
    let env = TestEnv::with_board();
    let publish = env
        .loopx(&[
            "gate",
            "open",
            "--question",
            "Ship it?",
            "--kind",
            "publish",
        ])
        .ok()
        .stdout;
    let decision = env
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
        .stdout;
    let ask = |command: &str| {
        let payload = format!(
            r#"{{"session_id":"0199a1b2-c3d4","cwd":"$REPO","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{{"command":{}}}}}"#,
            serde_json::Value::from(command)
        );
        hook(&env, "codex", "PreToolUse", &payload).stdout
    };
    let denied = ask(&format!(
        "cd /repo && loopx gate answer {} --choice approve",
        &publish.trim()[..6]
    ));
    let v: serde_json::Value = serde_json::from_str(&denied).unwrap();
    assert_eq!(
        v["hookSpecificOutput"]["permissionDecisionReason"],
        format!(
            "loopx: an agent may not answer gate {0} (publish): only a human may. Ask the user to run `loopx gate answer {0} --choice CHOICE` themselves.",
            publish.trim()
        )
    );
    assert_ne!(ask(&format!("loopx gate withdraw {}", publish.trim())), "");
    assert_eq!(
        ask(&format!(
            "loopx gate answer {} --choice nom",
            decision.trim()
        )),
        ""
    );
    assert_eq!(ask("loopx gate list --open"), "");
}

#[test]
fn stop_continues_a_bounded_number_of_times_and_a_prompt_resets_the_count() {
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &[]);
    hook(&env, "cursor", CURSOR.start.0, CURSOR.start.1);
    env.agent(CURSOR.agent, &["todo", "claim", &t]).ok();
    let stops = |n: usize| -> Vec<bool> {
        (0..n)
            .map(|_| {
                hook(&env, "cursor", CURSOR.stop.0, CURSOR.stop.1)
                    .stdout
                    .contains("followup_message")
            })
            .collect()
    };
    assert_eq!(stops(4), [true, true, true, false]);
    hook(&env, "cursor", CURSOR.prompt.0, CURSOR.prompt.1);
    assert_eq!(stops(1), [true]);
    // Saying why it stops ends the continuations.
    env.agent(
        CURSOR.agent,
        &["refresh-state", "--outcome", "blocked", "--todo", &t],
    )
    .ok();
    assert_eq!(stops(1), [false]);
    env.git(&["config", "loopx.stopContinuations", "0"]);
    hook(&env, "cursor", CURSOR.prompt.0, CURSOR.prompt.1);
    assert_eq!(stops(1), [false]);
}

/// Timestamps have whole seconds: a session that continues an earlier
/// one's agent in the second that session ended still sees the earlier
/// end's record as old, so it is kept going on the claim, and its own end
/// is recorded (the runtime smoke test's Pi failed here about half the
/// time).
#[test]
fn a_session_continued_in_the_second_the_last_one_ended_is_kept_going() {
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &[]);
    let now = env.now();
    let at = |event: &str, payload: &str| {
        let payload = payload.replace("$REPO", &env.repo.to_string_lossy());
        run_stdin(
            env.command()
                .env("LOOPX_NOW", &now)
                .args(["hook", "cursor", event]),
            payload.as_bytes(),
        )
        .ok()
        .stdout
    };
    at(CURSOR.start.0, CURSOR.start.1);
    run_stdin(
        env.command()
            .env("LOOPX_NOW", &now)
            .env("LOOPX_AGENT", CURSOR.agent)
            .args(["todo", "claim", &t]),
        b"",
    )
    .ok();
    at(CURSOR.end.0, CURSOR.end.1);
    let ends = || {
        env.loopx(&["log", "--json"])
            .ok()
            .stdout
            .matches("turn.refresh")
            .count()
    };
    assert_eq!(ends(), 1, "the first session's end is recorded");
    // Something changed since that end (else the agent has nothing new to
    // act on, and is let stop).
    run_stdin(
        env.command()
            .env("LOOPX_NOW", &now)
            .args(["todo", "add", "Write the tests"]),
        b"",
    )
    .ok();
    let second = |p: &str| p.replace("c0ffee00-1111", "c0ffee00-9999");
    let brief = at(CURSOR.start.0, &second(CURSOR.start.1));
    assert!(
        brief.contains(&format!("continues {}", CURSOR.agent)),
        "{brief}"
    );
    let stop = at(CURSOR.stop.0, &second(CURSOR.stop.1));
    assert!(
        stop.contains("followup_message") && stop.contains("you still hold"),
        "{stop}"
    );
    at(CURSOR.end.0, &second(CURSOR.end.1));
    assert_eq!(ends(), 2, "the second session's end is recorded too");
}

#[test]
fn loopx_agent_names_the_agent_and_claude_sessions_export_it() {
    let env = TestEnv::with_board();
    env.add("Write the parser", &[]);
    let out = run_stdin(
        env.command()
            .env("LOOPX_AGENT", "agent-a")
            .args(["hook", "gemini", "SessionStart"]),
        GEMINI.start.1.as_bytes(),
    )
    .ok();
    assert!(
        out.stdout.contains("you are agent agent-a."),
        "{}",
        out.stdout
    );
    let env_file = env.root().join("claude-env");
    let payload = CLAUDE.start.1.replace("$REPO", &env.repo.to_string_lossy());
    for _ in 0..2 {
        run_stdin(
            env.command().env("CLAUDE_ENV_FILE", &env_file).args([
                "hook",
                "claude",
                "SessionStart",
            ]),
            payload.as_bytes(),
        )
        .ok();
    }
    assert_text(
        &std::fs::read_to_string(&env_file).unwrap(),
        "export LOOPX_AGENT=claude-code-634098a0\n",
    );
    // The CLI derives the same agent from the runtime's own variables.
    let v = env
        .command()
        .env("CLAUDECODE", "1")
        .env(
            "CLAUDE_CODE_SESSION_ID",
            "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
        )
        .args(["quota", "should-run", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&v.stdout).unwrap();
    assert!(
        v["turn_token"]
            .as_str()
            .unwrap()
            .contains(":claude-code-634098a0:"),
        "{v}"
    );
}

#[test]
fn git_hooks_note_a_state_that_differs_from_the_remote_copy() {
    let env = TestEnv::with_board();
    let tip = env.tip().unwrap();
    env.loopx(&["todo", "add", "More"]).ok();
    env.git(&["update-ref", "refs/loopx/remotes/origin/state", &tip]);
    let out = run_stdin(
        env.command()
            .args(["hook", "git", "pre-push", "origin", "git@example.com:r.git"]),
        b"",
    )
    .ok();
    assert_eq!(out.stdout, "");
    assert_text(
        &out.stderr,
        "loopx: the loopx state differs from origin's last fetched copy; `loopx sync origin` reconciles them (a plain git push does not carry it).\n",
    );
    let quiet = run_stdin(
        env.command()
            .env("LOOPX_IN_SYNC", "1")
            .args(["hook", "git", "post-merge", "0"]),
        b"",
    )
    .ok();
    assert_eq!((quiet.stdout.as_str(), quiet.stderr.as_str()), ("", ""));
    let other = run_stdin(
        env.command()
            .args(["hook", "git", "pre-push", "upstream", "x"]),
        b"",
    )
    .ok();
    assert_eq!(other.stderr, "");
}

/// Gemini CLI does not wait for its SessionEnd hook: the end of the turn is
/// recorded when the agent stops (AfterAgent), with no SessionEnd at all;
/// Claude Code's stop records nothing (its SessionEnd is awaited).
#[test]
fn gemini_records_the_end_of_the_turn_when_the_agent_stops() {
    for (rt, recorded) in [(&GEMINI, true), (&CLAUDE, false)] {
        let env = TestEnv::with_board();
        let t = env.add("Write the parser", &[]);
        hook(&env, rt.runtime, rt.start.0, rt.start.1);
        hook(&env, rt.runtime, rt.prompt.0, rt.prompt.1);
        env.agent(rt.agent, &["todo", "claim", &t]).ok();
        let before = env.ticks();
        let out = hook(&env, rt.runtime, rt.stop.0, rt.stop_guarded);
        assert_eq!(out.stdout, "", "{}", rt.runtime);
        let subject = env.git(&["log", "-1", "--format=%s", "refs/loopx/state"]);
        if recorded {
            assert_eq!(env.ticks(), before + 1);
            assert!(
                subject.starts_with(&format!("refresh {} unchanged: next resume {t}", rt.agent)),
                "{subject}"
            );
            // A second stop with nothing new since records nothing more.
            hook(&env, rt.runtime, rt.stop.0, rt.stop_guarded);
            assert_eq!(env.ticks(), before + 1);
        } else {
            assert_eq!(env.ticks(), before, "{}: {subject}", rt.runtime);
        }
    }
}
