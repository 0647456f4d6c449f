use crate::common::{TestEnv, assert_text};

#[test]
fn status_fits_one_screen() {
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &["--priority", "P1"]);
    let u = env.add("Test the parser", &["--after", &t]);
    env.add("Write docs", &[]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let out = env.loopx(&["status"]).ok();
    assert_text(
        &out.stdout.replace(&t, "T").replace(&u, "U"),
        r#"loopx  refs/loopx/state  tick 7
goal main (active): Ship the parser
todos: 1 ready, 0 held back, 1 waiting, 1 claimed, 0 blocked, 0 deferred, 0 done; 2 agents
claims:
  agent-a  T  Write the parser  (44m left)
quota main per 1d: agent-a 0/48, agent-b 0/48
recent:
     7  2024-12-02T09:06:00Z  claim T "Write the parser" — agent-a
     6  2024-12-02T09:05:00Z  add t-8ed964ef "Write docs" — Ada Lovelace
     5  2024-12-02T09:04:00Z  add U "Test the parser" — Ada Lovelace
     4  2024-12-02T09:03:00Z  add T "Write the parser" — Ada Lovelace
     3  2024-12-02T09:02:00Z  register agent agent-b (custom) — Ada Lovelace
"#,
    );
}

#[test]
fn status_json_is_a_bounded_summary() {
    let env = TestEnv::with_board();
    for i in 0..30 {
        let t = env.add(&format!("todo {i}"), &[]);
        if i < 15 {
            env.agent(
                if i % 2 == 0 { "agent-a" } else { "agent-b" },
                &["todo", "claim", &t],
            )
            .ok();
        }
    }
    let out = env.loopx(&["status", "--json"]).ok();
    let v = out.json();
    assert_eq!(v["counts"]["claimed"], 15);
    assert_eq!(v["counts"]["open"], 15);
    assert_eq!(v["claims_total"], 15);
    assert_eq!(v["claims"].as_array().unwrap().len(), 10);
    assert_eq!(v["recent"].as_array().unwrap().len(), 5);
    assert!(out.stdout.len() < 4096, "{} bytes", out.stdout.len());
}

#[test]
fn reads_write_nothing() {
    let env = TestEnv::with_board();
    let t = env.add("A", &[]);
    let before = env.tip();
    for args in [
        vec!["status"],
        vec!["todo", "list", "--all"],
        vec!["todo", "show", &t],
        vec!["goal", "list"],
        vec!["goal", "show", "main"],
        vec!["agent", "list"],
        vec!["agent", "show", "agent-a"],
    ] {
        env.loopx(&args).ok();
        env.agent("agent-a", &args).ok();
    }
    assert_eq!(env.tip(), before);
}

#[test]
fn status_at_shows_the_state_as_it_was() {
    let (env, _) = crate::common::fixtures::history();
    let out = env.loopx(&["status", "--at", "9"]).ok();
    assert_text(
        &out.stdout,
        r#"loopx  refs/loopx/state  tick 9, as of 2024-12-02T09:08:00Z (the tip is tick 13)
goal docs (active): Write the manual
goal main (active): Ship the parser
todos: 0 ready, 0 held back, 0 waiting, 2 claimed, 0 blocked, 0 deferred, 0 done; 2 agents
claims:
  agent-a  t-aa735014  Write the parser  (43m left)
  agent-b  t-fd6162d1  Write the manual  (45m left)
quota docs per 1d: agent-a 0/48, agent-b 0/48
quota main per 1d: agent-a 0/48, agent-b 0/48
recent:
     9  2024-12-02T09:08:00Z  claim t-fd6162d1 "Write the manual" — agent-b
     8  2024-12-02T09:07:00Z  update t-aa735014 "Write the parser" note — agent-a
     7  2024-12-02T09:06:00Z  claim t-aa735014 "Write the parser" — agent-a
     6  2024-12-02T09:05:00Z  add t-fd6162d1 "Write the manual" — Ada Lovelace
     5  2024-12-02T09:04:00Z  add t-aa735014 "Write the parser" — Ada Lovelace
"#,
    );
    // At a time: the newest tick at or before it, with leases judged then.
    let out = env.loopx(&["status", "--at", "2024-12-02T09:10:30Z"]).ok();
    assert_text(
        &out.stdout,
        r#"loopx  refs/loopx/state  tick 11, as of 2024-12-02T09:10:30Z (the tip is tick 13)
goal docs (active): Write the manual
goal main (active): Ship the parser
todos: 1 ready, 0 held back, 0 waiting, 0 claimed, 0 blocked, 0 deferred, 1 done; 2 agents
quota docs per 1d: agent-a 0/48, agent-b 0/48
quota main per 1d: agent-a 0/48, agent-b 0/48
recent:
    11  2024-12-02T09:10:00Z  done t-aa735014 "Write the parser" — agent-a
    10  2024-12-02T09:09:00Z  release t-fd6162d1 "Write the manual" — agent-b
     9  2024-12-02T09:08:00Z  claim t-fd6162d1 "Write the manual" — agent-b
     8  2024-12-02T09:07:00Z  update t-aa735014 "Write the parser" note — agent-a
     7  2024-12-02T09:06:00Z  claim t-aa735014 "Write the parser" — agent-a
"#,
    );
    let v = env.loopx(&["status", "--at", "9", "--json"]).ok().json();
    assert_eq!(v["tick"], 9);
    assert_eq!(v["as_of"], "2024-12-02T09:08:00Z");
    assert_eq!(v["tip_tick"], 13);
    let v = env.loopx(&["status", "--json"]).ok().json();
    assert!(v.get("as_of").is_none() && v.get("tip_tick").is_none());
}

#[test]
fn status_at_refuses_what_is_not_there() {
    let (env, _) = crate::common::fixtures::history();
    let out = env.loopx(&["status", "--at", "14"]).code(1);
    assert_text(
        &out.stderr,
        "error: there is no tick 14; the newest is 13\nhint: `loopx log` lists the ticks\n",
    );
    env.loopx(&["status", "--at", "2024-12-02T08:59:59Z"])
        .code(1);
    let out = env.loopx(&["status", "--at", "yesterday"]).code(2);
    assert!(out.stderr.contains("names no tick"), "{}", out.stderr);
}
