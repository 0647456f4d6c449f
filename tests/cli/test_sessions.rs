//! Agents do not pile up: a new session of a runtime in the same clone
//! continues the agent of an earlier one only when loopx can tell that
//! session is gone (its end was seen, or its process no longer exists);
//! sessions that run at the same time stay distinct agents, and the agent's
//! own shell (the runtime's session id in its environment) acts as the
//! session's agent.

use crate::common::{TestEnv, run, run_stdin};

fn start(env: &TestEnv, session: &str, pid: Option<u32>) -> String {
    let pid = pid.map(|p| format!(r#","pid":{p}"#)).unwrap_or_default();
    let payload = format!(
        r#"{{"session_id":"{session}","cwd":"{}","hook_event_name":"SessionStart","source":"startup"{pid}}}"#,
        env.repo.display()
    );
    let out = run_stdin(
        env.command().args(["hook", "codex", "SessionStart"]),
        payload.as_bytes(),
    )
    .ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("a JSON answer");
    v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn end(env: &TestEnv, session: &str) {
    let payload = format!(
        r#"{{"session_id":"{session}","cwd":"{}","hook_event_name":"SessionEnd","reason":"exit"}}"#,
        env.repo.display()
    );
    run_stdin(
        env.command().args(["hook", "codex", "SessionEnd"]),
        payload.as_bytes(),
    )
    .ok();
}

fn agent_in(brief: &str) -> String {
    brief
        .strip_prefix("loopx: you are agent ")
        .and_then(|r| r.split('.').next())
        .unwrap_or_else(|| panic!("{brief}"))
        .to_owned()
}

/// Claims `todo` from the agent's own shell in `session`; the owner.
fn claim_in(env: &TestEnv, session: &str, todo: &str) -> String {
    let v = run(env
        .command()
        .env("CODEX_THREAD_ID", session)
        .args(["todo", "claim", todo, "--json"]))
    .ok()
    .json();
    v["todo"]["owner"].as_str().unwrap().to_owned()
}

const A: &str = "0199a1b2-c3d4-7e5f-8a6b-1c2d3e4f5a6b";
const B: &str = "0199a1b2-c3d4-7f00-9b1c-2d3e4f5a6b7c";
const C: &str = "0199a1b2-c3d4-7f01-9b1c-2d3e4f5a6b7d";
const D: &str = "0199a1b2-c3d4-7f02-9b1c-2d3e4f5a6b7e";

#[test]
fn a_session_after_an_ended_one_continues_its_agent_and_finds_its_claims() {
    let env = TestEnv::with_board();
    let t1 = env.add("Write the parser", &[]);
    let t2 = env.add("Write the lexer", &[]);
    let first = agent_in(&start(&env, A, None));
    assert_eq!(claim_in(&env, A, &t1), first);
    end(&env, A);
    let brief = start(&env, B, None);
    assert_eq!(agent_in(&brief), first, "{brief}");
    assert!(
        brief.contains("continues") && brief.contains(&format!("go on with your claim {t1}")),
        "{brief}"
    );
    // The new session's own shell acts as that agent too.
    assert_eq!(claim_in(&env, B, &t2), first);
    let agents = env.loopx(&["agent", "list", "--json"]).ok().json();
    let codex: Vec<_> = agents["agents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["id"].as_str().unwrap().starts_with("codex-"))
        .collect();
    assert_eq!(codex.len(), 1, "{agents}");
}

#[test]
fn a_live_session_is_never_continued_and_a_crashed_one_is() {
    let env = TestEnv::with_board();
    // A's runtime is this test's process tree (the hook's parent): alive.
    let a = agent_in(&start(&env, A, None));
    let b = agent_in(&start(&env, B, None));
    assert_ne!(a, b, "two live sessions became one agent");
    // C's runtime is a process that then dies without a SessionEnd.
    let mut child = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let c = agent_in(&start(&env, C, Some(child.id())));
    assert!(c != a && c != b);
    child.kill().unwrap();
    child.wait().unwrap();
    let d = agent_in(&start(&env, D, None));
    assert_eq!(d, c, "the crashed session's agent is continued");
}

#[test]
fn of_two_sessions_starting_at_once_only_one_continues_an_ended_agent() {
    let env = TestEnv::with_board();
    let a = agent_in(&start(&env, A, None));
    end(&env, A);
    let (b, c) = std::thread::scope(|s| {
        let b = s.spawn(|| agent_in(&start(&env, B, None)));
        let c = s.spawn(|| agent_in(&start(&env, C, None)));
        (b.join().unwrap(), c.join().unwrap())
    });
    assert_ne!(b, c);
    assert!(b == a || c == a, "{a} {b} {c}");
}

#[test]
fn status_lists_idle_session_agents_apart() {
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &[]);
    let idle = agent_in(&start(&env, A, None));
    let busy = agent_in(&start(&env, B, None));
    assert_eq!(claim_in(&env, B, &t), busy);
    let listed = |env: &TestEnv| {
        let v = env.loopx(&["status", "--json"]).ok().json();
        v["idle_session_agents"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|x| x.as_str().unwrap().to_owned())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    // Just registered: not idle yet.
    assert!(listed(&env).is_empty());
    env.advance(2 * 3600);
    // The one holding a claim matters; the other is listed apart, and
    // agent-a and agent-b (not session agents) never are.
    assert_eq!(listed(&env), vec![idle.clone()]);
    let text = env.loopx(&["status"]).ok().stdout;
    assert!(
        text.contains(&format!(
            "idle session agents (no claim, nothing for an hour): {idle}\n"
        )),
        "{text}"
    );
    // The page lists it apart too, and not among the stuck.
    let page = env.repo.join("status.html");
    env.loopx(&["status", "--html", page.to_str().unwrap()])
        .ok();
    let html = std::fs::read_to_string(&page).unwrap();
    let apart = html
        .split("id=\"idle-session-agents\"")
        .nth(1)
        .unwrap_or_else(|| panic!("no idle session agents on the page"));
    assert!(apart.contains(&idle), "{html}");
    assert!(
        !html.contains(&format!("<tr id=\"agent-{idle}\"")),
        "{html}"
    );
    assert!(html.contains(&format!("<tr id=\"agent-{busy}\"")), "{html}");
}

#[test]
fn a_retired_agent_is_not_continued_and_its_session_file_goes() {
    let env = TestEnv::with_board();
    let a = agent_in(&start(&env, A, None));
    end(&env, A);
    env.loopx(&["agent", "retire", &a]).ok();
    let b = agent_in(&start(&env, B, None));
    assert_ne!(a, b);
    let hooks = env.repo.join(".git/loopx/hooks");
    let files: Vec<String> = std::fs::read_dir(&hooks)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(files, vec![format!("codex-{B}.json")], "{files:?}");
}
