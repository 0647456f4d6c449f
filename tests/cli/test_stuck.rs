//! Sessions that die (issue 48): a claim whose holder is gone is shown
//! stuck, at once on the holder's clone and after the team's
//! `stuck_after` without a tick elsewhere (measured up to that clone's last
//! sync), in `status`, on the page and in the digest, with when its lease
//! frees it and the command that frees it now; a human's forced release
//! frees it for another clone's `claim --next`; the team's lease (the
//! settings op) and a goal's lease are the ones `claim` gives.

use std::process::{Child, Command};

use crate::common::{Machine, TestEnv, rfc3339, run, run_stdin};

/// A runtime's process: a real process the test kills (SIGKILL) mid-turn;
/// killed on drop too, so none outlives the test.
struct Runtime(Child);

impl Runtime {
    fn start() -> Runtime {
        let mut c = Command::new("sleep");
        c.arg("600")
            .env(crate::common::SUITE_MARK.0, crate::common::SUITE_MARK.1);
        Runtime(c.spawn().expect("sleep starts"))
    }

    fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.kill();
    }
}

const SESSION: &str = "0199b2c3-d4e5-7f60-8a7b-2c3d4e5f6a7b";

/// A Codex session's start in `m`'s clone, run by the process `pid` (as a
/// runtime that sends its pid); the agent its brief names.
fn start(m: &Machine, session: &str, pid: u32) -> String {
    let payload = format!(
        r#"{{"session_id":"{session}","cwd":"{}","hook_event_name":"SessionStart","source":"startup","pid":{pid}}}"#,
        m.repo.display()
    );
    let out = run_stdin(
        m.command().args(["hook", "codex", "SessionStart"]),
        payload.as_bytes(),
    )
    .ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("a JSON answer");
    let brief = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("a brief");
    brief
        .strip_prefix("loopx: you are agent ")
        .and_then(|r| r.split('.').next())
        .unwrap_or_else(|| panic!("{brief}"))
        .to_owned()
}

/// `status --json`'s stuck claims: (todo, why).
fn stuck(m: &Machine) -> Vec<(String, String)> {
    let v = m.loopx(&["status", "--json"]).ok().json();
    v["stuck"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| {
                    (
                        s["todo"].as_str().unwrap().to_owned(),
                        s["why"].as_str().unwrap().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_killed_session_is_stuck_at_once_here_later_elsewhere_and_a_human_frees_it() {
    let env = TestEnv::new();
    let a = env.machine();
    a.loopx(&["init", "--goal", "main", "--objective", "Ship the parser"])
        .ok();
    // The team's lease and stuck time, one human act.
    let set = a
        .loopx(&[
            "settings",
            "set",
            "--lease",
            "30m",
            "--stuck-after",
            "10m",
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(
        set["changed"],
        serde_json::json!(["lease=30m", "stuck_after=10m"])
    );
    let hub = env.hub("hub.git");
    a.git(&["remote", "add", "origin", &hub]);
    a.loopx(&["sync", "--setup"]).ok();
    let t = a.add("Write the parser");
    a.loopx(&["sync"]).ok();
    let b = env.clone_machine("b", &hub);
    b.loopx(&["sync", "--setup"]).ok();

    // A session on clone A claims the todo from its own shell (pushed to
    // the hub), with the team's lease.
    let mut runtime = Runtime::start();
    let agent = start(&a, SESSION, runtime.0.id());
    let at = env.now_secs();
    let claimed = run(a
        .command()
        .env("CODEX_THREAD_ID", SESSION)
        .args(["todo", "claim", &t, "--json"]))
    .ok()
    .json();
    assert_eq!(claimed["todo"]["owner"], agent.as_str());
    assert_eq!(claimed["todo"]["lease_until"], rfc3339(at + 30 * 60));
    run(a.command().env("CODEX_THREAD_ID", SESSION).args([
        "todo",
        "update",
        &t,
        "--note",
        "lexer half done",
    ]))
    .ok();
    assert!(stuck(&a).is_empty(), "a live session's claim is not stuck");

    // Killed mid-turn: stuck on its clone at once.
    runtime.kill();
    assert_eq!(stuck(&a), vec![(t.clone(), "session-died".to_owned())]);
    let text = a.loopx(&["status"]).ok().stdout;
    assert!(text.contains("left, stuck)"), "{text}");
    assert!(
        text.contains(&format!(
            "stuck:\n  {t}  {agent}  Write the parser: the process of {agent}'s session on this clone is gone; its lease frees it at {}, or a human frees it now: `loopx todo release {t} --force`\n",
            rfc3339(at + 30 * 60 + 30)
        )),
        "{text}"
    );

    // Clone B knows only the ticks: not stuck until it has seen ten
    // minutes of silence, measured up to its last sync, not up to now.
    b.loopx(&["sync"]).ok();
    assert!(stuck(&b).is_empty());
    env.advance(11 * 60);
    assert!(stuck(&b).is_empty(), "judged past B's last sync");
    b.loopx(&["sync"]).ok();
    assert_eq!(stuck(&b), vec![(t.clone(), "silent".to_owned())]);

    // The page says so, never "Nothing is stuck".
    let page = b.repo.join("status.html");
    b.loopx(&["status", "--html", page.to_str().unwrap()]).ok();
    let html = std::fs::read_to_string(&page).unwrap();
    let section = html
        .split("<section id=\"stuck\">")
        .nth(1)
        .and_then(|s| s.split("</section>").next())
        .expect("a stuck section");
    assert!(!section.contains("Nothing is stuck"), "{section}");
    assert!(
        section.contains("data-stuck=\"claim\" data-why=\"silent\"")
            && section.contains(&format!("<code>loopx todo release {t} --force</code>"))
            && section.contains(&rfc3339(at + 30 * 60 + 30)),
        "{section}"
    );
    if let Some(bin) = crate::test_browser::chromium() {
        let home = env.root().join("home");
        let url = format!("file://{}", page.display());
        let dom = String::from_utf8(
            crate::test_browser::headless(&bin, &home, &["--dump-dom", &url]).stdout,
        )
        .unwrap();
        let shown = dom
            .split("id=\"stuck\"")
            .nth(1)
            .and_then(|s| s.split("</section>").next())
            .expect("the browser shows the stuck section");
        assert!(!shown.contains("Nothing is stuck"), "{shown}");
        assert!(
            shown.contains("data-stuck=\"claim\"") && shown.contains(&t),
            "{shown}"
        );
        assert!(
            dom.contains(&format!("id=\"{t}\"")),
            "the card is on the board"
        );
    }

    // The digest too.
    let digest = b.loopx(&["digest", "--since", "1h", "--json"]).ok().json();
    assert_eq!(digest["stuck"][0]["todo"], t.as_str());
    assert_eq!(digest["stuck"][0]["why"], "silent");
    assert_eq!(
        digest["stuck"][0]["free_now"],
        format!("loopx todo release {t} --force")
    );
    let text = b.loopx(&["digest", "--since", "1h"]).ok().stdout;
    assert!(text.contains("Stuck claims (1)\n"), "{text}");

    // A human on A frees it now; an agent on B takes it with `--next`, with
    // the team's lease.
    a.loopx(&["todo", "release", &t, "--force"]).ok();
    a.loopx(&["sync"]).ok();
    b.loopx(&["agent", "register", "agent-b"]).ok();
    let at = env.now_secs();
    let next = b
        .agent("agent-b", &["todo", "claim", "--next", "--json"])
        .ok()
        .json();
    assert_eq!(next["todo"]["id"], t.as_str());
    assert_eq!(next["todo"]["owner"], "agent-b");
    assert_eq!(next["todo"]["lease_until"], rfc3339(at + 30 * 60));
    assert!(stuck(&b).is_empty());
    let digest = b.loopx(&["digest", "--since", "1h", "--json"]).ok().json();
    let freed: Vec<&str> = digest["freed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        freed,
        vec![format!(
            "{t} \"Write the parser\" released from {agent} by force"
        )]
    );
}

#[test]
fn a_session_that_ends_holding_a_claim_is_stuck_and_a_steal_is_in_the_digest() {
    let env = TestEnv::with_board();
    let m = env.machine();
    // A goal's lease comes before the team's; --ttl before both.
    env.loopx(&["goal", "set", "main", "--lease", "5m"]).ok();
    env.loopx(&["settings", "set", "--lease", "20m"]).ok();
    let shown = env.loopx(&["goal", "show", "main"]).ok().stdout;
    assert!(shown.contains("\nlease: 5m (the goal's own)"), "{shown}");
    let t = env.add("Write the parser", &[]);
    let u = env.add("Write the lexer", &[]);
    let at = env.now_secs();
    let v = env
        .agent("agent-a", &["todo", "claim", &t, "--json"])
        .ok()
        .json();
    assert_eq!(v["todo"]["lease_until"], rfc3339(at + 5 * 60));
    let at = env.now_secs();
    let v = env
        .agent("agent-b", &["todo", "claim", &u, "--ttl", "1h", "--json"])
        .ok()
        .json();
    assert_eq!(v["todo"]["lease_until"], rfc3339(at + 3600));

    // A Codex session that ends (SessionEnd) holding a claim, on this
    // clone with no hub: stuck at once.
    let runtime = Runtime::start();
    let agent = start(&m, SESSION, runtime.0.id());
    env.loopx(&["goal", "set", "main", "--lease", "0s"]).ok();
    let w = env.add("Write the docs", &[]);
    run(m
        .command()
        .env("CODEX_THREAD_ID", SESSION)
        .args(["todo", "claim", &w]))
    .ok();
    assert!(!stuck(&m).iter().any(|(x, _)| *x == w));
    let payload = format!(
        r#"{{"session_id":"{SESSION}","cwd":"{}","hook_event_name":"SessionEnd","reason":"exit"}}"#,
        m.repo.display()
    );
    run_stdin(
        env.command().args(["hook", "codex", "SessionEnd"]),
        payload.as_bytes(),
    )
    .ok();
    assert!(
        stuck(&m).contains(&(w.clone(), "session-ended".to_owned())),
        "{agent}"
    );

    // agent-a's lease ran out: agent-b takes it over, and the digest says
    // so.
    env.advance(10 * 60);
    env.agent("agent-b", &["todo", "claim", &t]).ok();
    let digest = env
        .loopx(&["digest", "--since", "1h", "--json"])
        .ok()
        .json();
    assert_eq!(
        digest["freed"][0]["text"],
        format!("{t} \"Write the parser\" taken over from agent-a")
    );
    let text = env.loopx(&["digest", "--since", "1h"]).ok().stdout;
    assert!(
        text.contains("Claims freed (1)\n") && text.contains("taken over from agent-a"),
        "{text}"
    );
}
