//! The team loop without runtimes (issue 24): a bare hub, the human's seed
//! clone and two agent clones, the one onboarding step per clone, and
//! agents on both clones running the brief's commands at the same time as
//! real processes. No operator's sync anywhere after the setup.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::{Machine, Output, TestEnv, run, run_stdin};

/// The seed clone: a goal, a hub with the state (`sync --setup` done), and
/// Ada's signing key set up by the onboarding step. Returns the env, the
/// hub's path and Ada's fingerprint.
fn seeded() -> (TestEnv, String, String) {
    let env = TestEnv::new();
    env.loopx(&["init", "--goal", "main", "--objective", "Finish the steps"])
        .ok();
    let hub = env.hub("hub.git");
    // The hub's reflog counts the pushes it took.
    crate::common::git_in(
        Path::new(&hub),
        &["config", "core.logAllRefUpdates", "always"],
    );
    env.git(&["remote", "add", "origin", &hub]);
    env.loopx(&["sync"]).ok();
    env.loopx(&["sync", "--setup"]).ok();
    let key = env.root().join("keys").join("ada");
    let v = env
        .loopx(&[
            "signer",
            "setup",
            "ada",
            "--create-key",
            key.to_str().unwrap(),
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(v["announced"], true, "{v}");
    let fp = v["fingerprint"].as_str().expect("a fingerprint").to_owned();
    (env, hub, fp)
}

/// A clone of the hub whose human ran the onboarding step (trusting Ada's
/// key by the fingerprint she gave out of band).
fn onboarded<'e>(env: &'e TestEnv, name: &str, hub: &str, fp: &str) -> Machine<'e> {
    let m = env.clone_machine(name, hub);
    m.loopx(&["sync", "--setup"]).ok();
    let v = m
        .loopx(&[
            "signer",
            "setup",
            "--no-key",
            "--trust",
            &format!("ada={fp}"),
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(v["trusted"][0], "ada", "{v}");
    m
}

/// Starts a Claude Code session in `repo` through the SessionStart hook and
/// returns the agent id and the brief it printed.
fn session(m: &Machine, session: &str) -> (String, String) {
    let input = format!(
        r#"{{"session_id":"{session}","cwd":"{}","source":"startup"}}"#,
        m.repo.display()
    );
    let out = run_stdin(
        m.command().args(["hook", "claude-code", "SessionStart"]),
        input.as_bytes(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value =
        serde_json::from_str(out.stdout.trim()).expect("the hook answers JSON");
    let text = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("a brief")
        .to_owned();
    let agent = text
        .strip_prefix("loopx: you are agent ")
        .and_then(|r| r.split('.').next())
        .expect("the brief names the agent")
        .to_owned();
    (agent, text)
}

fn end_session(m: &Machine, session: &str) {
    let input = format!(
        r#"{{"session_id":"{session}","cwd":"{}","reason":"exit"}}"#,
        m.repo.display()
    );
    let out = run_stdin(
        m.command().args(["hook", "claude-code", "SessionEnd"]),
        input.as_bytes(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
}

/// How many times the hub's state ref moved (its reflog).
fn pushes(hub: &str) -> usize {
    crate::common::git_in(
        Path::new(hub),
        &["reflog", "show", "--format=%H", "refs/loopx/state"],
    )
    .lines()
    .count()
}

/// What one agent did: per todo, the exit status of each `settle --done`.
type Log = Vec<(String, i32, String)>;

/// One agent following the instruction block: should-run, claim, do the
/// work (create the file the validation looks for), settle --done. Real
/// processes, at the same time as the other agents.
fn agent_loop(sp: &crate::common::Spawner, repo: &Path, agent: &str) -> Log {
    let loopx =
        |args: &[&str]| -> Output { run(sp.command().env("LOOPX_AGENT", agent).args(args)) };
    let mut log = Vec::new();
    for _ in 0..30 {
        let should = loopx(&["quota", "should-run", "--json"]);
        if should.code == 3 {
            let v = should.json();
            let code = v["reason"]["code"].as_str().unwrap_or_default().to_owned();
            assert!(
                matches!(code.as_str(), "nothing-ready" | "goal-done"),
                "{agent}: {}",
                should.stdout
            );
            break;
        }
        assert_eq!(should.code, 0, "{agent}: {}", should.stderr);
        let v = should.json();
        let id = v["todo"]["id"].as_str().expect("a todo").to_owned();
        let token = v["turn_token"].as_str().expect("a token").to_owned();
        let mut claimed = String::from("own");
        if v["todo"]["own"] != true {
            let claim = loopx(&["todo", "claim", &id]);
            if claim.code != 0 {
                // Lost to another agent (maybe on the other clone), or it
                // was done meanwhile: ask again.
                continue;
            }
            claimed = format!("{}{}", claim.stdout, claim.stderr);
        }
        // The work: the file the validation checks.
        let show = loopx(&["todo", "show", &id, "--json"]).ok().json();
        let file = show["validate"]["argv"]
            .as_array()
            .and_then(|a| a.last())
            .and_then(|f| f.as_str())
            .expect("a validation")
            .to_owned();
        std::fs::write(repo.join(&file), agent).expect("work written");
        let settle = loopx(&[
            "settle",
            "--turn",
            &token,
            "--todo",
            &id,
            "--outcome",
            "advanced",
            "--done",
        ]);
        log.push((id, settle.code, format!("{claimed}\n{}", settle.stderr)));
    }
    log
}

#[test]
fn two_clones_finish_a_humans_validated_goal_with_no_todo_done_twice() {
    let (env, hub, fp) = seeded();
    // The human's validated todos, signed with her key as she adds them.
    let todos: Vec<String> = (0..6)
        .map(|i| {
            let file = format!("step-{i}.done");
            env.add(&format!("step {i}"), &["--", "test", "-f", &file])
        })
        .collect();
    // `todo add` pushed nothing by itself: the human shares it once.
    env.loopx(&["sync"]).ok();
    let clones = [
        onboarded(&env, "alice", &hub, &fp),
        onboarded(&env, "bob", &hub, &fp),
    ];
    // Two sessions per clone; each brief comes from the hub's state and
    // says which commands are safe across machines.
    let mut agents = Vec::new();
    for (i, m) in clones.iter().enumerate() {
        for k in 0..2 {
            let sid = format!("session-{i}-{k}");
            let (agent, brief) = session(m, &sid);
            assert!(brief.contains("shares its state through origin"), "{brief}");
            assert!(!brief.contains("offline:"), "{brief}");
            agents.push((i, sid, agent));
        }
    }
    let pushes_before = pushes(&hub);
    let logs: Vec<Log> = std::thread::scope(|s| {
        let hs: Vec<_> = agents
            .iter()
            .map(|(i, _, agent)| {
                let m = &clones[*i];
                let sp = m.spawner();
                let repo = m.repo.clone();
                s.spawn(move || agent_loop(&sp, &repo, agent))
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("agent thread"))
            .collect()
    });
    for (i, sid, _) in &agents {
        end_session(&clones[*i], sid);
    }
    // About two pushes a turn (the claim's, the settle's); the sessions'
    // registrations ride them, and a lost claim race costs its record.
    let turns = logs.iter().map(Vec::len).sum::<usize>();
    let took = pushes(&hub) - pushes_before;
    assert!(
        took <= 3 * turns + agents.len(),
        "{took} pushes for {turns} turns"
    );
    // Each todo was completed exactly once, and no completed turn was
    // rejected (a lost claim race is fine).
    let mut done: BTreeMap<&str, usize> = BTreeMap::new();
    for (id, code, _) in logs.iter().flatten() {
        assert_eq!(*code, 0, "a settle --done of {id} failed: {logs:?}");
        *done.entry(id.as_str()).or_default() += 1;
    }
    for t in &todos {
        assert_eq!(done.get(t.as_str()), Some(&1), "{t}: {logs:?}");
    }
    // Every clone holds the hub's tip without an operator's sync.
    let hub_tip = crate::common::git_in(Path::new(&hub), &["rev-parse", "refs/loopx/state"])
        .trim()
        .to_owned();
    for m in &clones {
        assert_eq!(
            m.tip().as_deref(),
            Some(hub_tip.as_str()),
            "{}",
            m.repo.display()
        );
        m.loopx(&["verify"]).ok();
        let list = m.loopx(&["todo", "list", "--all", "--json"]).ok().json();
        let statuses: Vec<&str> = list["todos"]
            .as_array()
            .expect("todos")
            .iter()
            .filter_map(|t| t["status"].as_str())
            .collect();
        assert_eq!(statuses, vec!["done"; 6], "{list}");
    }
    // The seed catches up with one sync and verifies too.
    env.loopx(&["sync"]).ok();
    env.loopx(&["verify"]).ok();
}

#[test]
fn a_validation_an_agent_planted_is_held_for_one_signed_human_answer() {
    let (env, hub, fp) = seeded();
    let alice = onboarded(&env, "alice", &hub, &fp);
    let bob = onboarded(&env, "bob", &hub, &fp);
    alice.loopx(&["agent", "register", "agent-a"]).ok();
    bob.loopx(&["agent", "register", "agent-b"]).ok();
    alice.loopx(&["sync"]).ok();
    bob.loopx(&["sync"]).ok();
    // An agent on alice plants a validation; it runs on alice (written
    // there), but not on bob.
    let planted = alice
        .agent(
            "agent-a",
            &["todo", "add", "planted", "--", "touch", "PWNED"],
        )
        .ok()
        .stdout
        .trim()
        .to_owned();
    alice.loopx(&["sync"]).ok();
    bob.agent("agent-b", &["todo", "claim", &planted]).ok();
    let out = bob
        .agent("agent-b", &["todo", "done", &planted, "--json"])
        .code(3);
    assert_eq!(out.error_code(), "untrusted-validation", "{}", out.stderr);
    assert!(!bob.repo.join("PWNED").exists(), "nothing ran");
    assert!(out.stderr.contains("you keep"), "{}", out.stderr);
    // One gate, whose text comes from the todo: the exact argv and who
    // wrote it; its id is derived, so a second try opens no other.
    let gates = bob.loopx(&["gate", "list", "--json"]).ok().json();
    let open: Vec<&serde_json::Value> = gates["gates"]
        .as_array()
        .expect("gates")
        .iter()
        .filter(|g| g["status"] == "open")
        .collect();
    assert_eq!(open.len(), 1, "{gates}");
    let gate = open[0]["id"].as_str().unwrap().to_owned();
    let question = open[0]["question"].as_str().unwrap();
    assert!(question.contains("`touch PWNED`"), "{question}");
    assert!(question.contains("agent-a"), "{question}");
    assert!(question.contains("unsigned"), "{question}");
    bob.agent("agent-b", &["todo", "done", &planted]).code(3);
    let again = bob.loopx(&["gate", "list", "--json"]).ok().json();
    assert_eq!(again["gates"].as_array().unwrap().len(), 1, "{again}");
    // The agent cannot answer it, and a human who cannot sign cannot trust
    // it: both refuse, and nothing says "Trusted".
    bob.agent("agent-b", &["gate", "answer", &gate, "run"])
        .code(3);
    let unsigned = bob.loopx(&["todo", "trust", &planted, "--json"]).code(3);
    assert_eq!(unsigned.error_code(), "unsigned", "{}", unsigned.stderr);
    assert!(!unsigned.stdout.contains("Trusted"), "{}", unsigned.stdout);
    assert!(
        unsigned.stderr.contains("loopx signer setup"),
        "{}",
        unsigned.stderr
    );
    // Ada answers it (a signed act bound to the validation's digest), on
    // her own clone.
    env.loopx(&["sync"]).ok();
    let answered = env.loopx(&["gate", "answer", &gate, "run"]).ok();
    assert!(
        answered.stdout.contains("Trusted the validation"),
        "{}",
        answered.stdout
    );
    // Bob's agent, still holding its claim, finishes: the validation runs.
    let done = bob.agent("agent-b", &["todo", "done", &planted]).ok();
    assert!(bob.repo.join("PWNED").exists(), "{}", done.stderr);
    let hub_tip = crate::common::git_in(Path::new(&hub), &["rev-parse", "refs/loopx/state"])
        .trim()
        .to_owned();
    assert_eq!(bob.tip().as_deref(), Some(hub_tip.as_str()));
    bob.loopx(&["verify"]).ok();
}

#[test]
fn an_unreachable_hub_fails_a_claim_and_the_brief_says_offline() {
    let (env, hub, fp) = seeded();
    let t = env.add("one", &[]);
    env.loopx(&["sync"]).ok();
    let alice = onboarded(&env, "alice", &hub, &fp);
    alice.loopx(&["agent", "register", "agent-a"]).ok();
    alice.loopx(&["sync"]).ok();
    // The hub goes away.
    std::fs::rename(&hub, format!("{hub}.gone")).unwrap();
    let out = alice
        .agent("agent-a", &["todo", "claim", &t, "--json"])
        .code(1);
    assert_eq!(out.error_code(), "remote-unreachable", "{}", out.stderr);
    assert!(out.stderr.contains("nothing was claimed"), "{}", out.stderr);
    assert!(out.stderr.contains("--no-sync"), "{}", out.stderr);
    let show = alice.loopx(&["todo", "show", &t, "--json"]).ok().json();
    assert_eq!(show["status"], "open", "never a silent local claim");
    let (_, brief) = session(&alice, "offline-session");
    assert!(brief.contains("offline:"), "{brief}");
    // --no-sync claims here only.
    alice
        .agent("agent-a", &["todo", "claim", &t, "--no-sync"])
        .ok();
}

#[test]
fn what_a_session_leaves_goes_to_the_hub_when_it_ends() {
    let (env, hub, fp) = seeded();
    let alice = onboarded(&env, "alice", &hub, &fp);
    let hub_tip = || {
        crate::common::git_in(Path::new(&hub), &["rev-parse", "refs/loopx/state"])
            .trim()
            .to_owned()
    };
    // The session's registration is a tick of this clone only…
    let (agent, _) = session(&alice, "leftover");
    assert_ne!(alice.tip().as_deref(), Some(hub_tip().as_str()));
    // …until the session ends: one push, no operator's sync.
    end_session(&alice, "leftover");
    assert_eq!(alice.tip().as_deref(), Some(hub_tip().as_str()));
    // The seed's next session start sees the agent.
    let (_, brief) = session(&env.machine(), "seed-session");
    assert!(!brief.contains("offline:"), "{brief}");
    let agents = env.loopx(&["agent", "list", "--json"]).ok().json();
    assert!(agents.to_string().contains(&agent), "{agents}");
}

#[test]
fn a_hub_that_never_answers_gives_the_offline_brief_without_waiting_for_it() {
    let (env, hub, fp) = seeded();
    env.add("one", &[]);
    env.loopx(&["sync"]).ok();
    let alice = onboarded(&env, "alice", &hub, &fp);
    // Accepts connections (the kernel's backlog) and never says a word;
    // loopx.syncTimeout stays at its default of a minute.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    alice.git(&[
        "remote",
        "set-url",
        "origin",
        &format!("git://127.0.0.1:{port}/hub.git"),
    ]);
    let (_, brief) = session(&alice, "silent-hub");
    assert!(
        brief.contains("offline: the hub did not answer within 3s; state as of "),
        "{brief}"
    );
    assert!(brief.contains("(the last sync)"), "{brief}");
    // The brief still comes from this clone's last synced state.
    assert!(brief.contains("ready: "), "{brief}");
    drop(silent);
}
