//! The hub on a real git server (issue 28): Debian's nginx with fcgiwrap
//! and `git http-backend`, on 127.0.0.1, the guard installed with `loopx
//! hub install` and running as the web server's user. Real clones race
//! claims through it, and every forgery of tests/cli/test_verify.rs is
//! pushed at it. Opt-in for plain `cargo test` (it needs the `nginx` and
//! `fcgiwrap` packages); `.ci/run` installs them and runs it:
//!
//!     LOOPX_SERVER_TESTS=1 cargo test --test cli test_server::

use std::path::PathBuf;

use crate::common::nginx::{self, Nginx};
use crate::common::{Machine, Output, TestEnv, run};
use crate::test_verify;

/// A board (goal `main`, agents `agent-a`, `agent-b`, `agent-c`) pushed
/// through nginx to a guarded hub, and two more clones of it.
fn served_team(env: &TestEnv) -> (Nginx, String) {
    let server = Nginx::start(env, &[]);
    let hub = PathBuf::from(env.hub("hub.git"));
    env.loopx(&["-C", hub.to_str().unwrap(), "hub", "install"])
        .ok();
    server.serve(&hub);
    let url = server.url("hub.git");
    env.loopx(&["agent", "register", "agent-c"]).ok();
    env.git(&["remote", "add", "origin", &url]);
    env.loopx(&["sync", "--setup"]).ok();
    let out = env.loopx(&["sync"]);
    assert_eq!(out.code, 0, "{out:#?}\n{}", server.log());
    (server, url)
}

fn winners<'a>(outs: &'a [(&'a str, Output)]) -> Vec<&'a str> {
    outs.iter()
        .filter(|(_, o)| o.code == 0)
        .map(|(a, _)| *a)
        .collect()
}

/// Each agent on its own machine runs `args` at once.
fn race<'a>(machines: &[(&'a str, &Machine)], args: &[&str]) -> Vec<(&'a str, Output)> {
    std::thread::scope(|s| {
        let hs: Vec<_> = machines
            .iter()
            .map(|(agent, m)| {
                let sp = m.spawner();
                let agent = *agent;
                s.spawn(move || {
                    let out = run(sp.command().env("LOOPX_AGENT", agent).args(args));
                    (agent, out)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("thread")).collect()
    })
}

#[test]
fn through_nginx_and_git_http_backend_a_claim_race_has_one_winner() {
    if !nginx::enabled("the nginx claim race") {
        return;
    }
    let env = TestEnv::with_board();
    let (server, url) = served_team(&env);
    let a = env.machine();
    let b = env.clone_machine("b", &url);
    let c = env.clone_machine("c", &url);
    for m in [&b, &c] {
        m.loopx(&["sync", "--setup"]).ok();
        m.loopx(&["sync"]).ok();
    }
    let machines = [("agent-a", &a), ("agent-b", &b), ("agent-c", &c)];
    for round in 0..2 {
        let t = a.add(&format!("contested {round}"));
        for (_, m) in &machines {
            m.loopx(&["sync"]).ok();
        }
        // With a hub set up, a claim syncs by default.
        let outs = race(&machines, &["todo", "claim", &t]);
        let won = winners(&outs);
        assert_eq!(won.len(), 1, "round {round}: {outs:#?}\n{}", server.log());
        for (agent, o) in &outs {
            if *agent != won[0] {
                assert_eq!(o.code, 4, "round {round}, {agent}: {o:#?}");
                assert!(
                    o.stderr.contains(&format!("{} holds it", won[0])),
                    "round {round}, {agent} is told who won: {}",
                    o.stderr
                );
            }
        }
        for (_, m) in &machines {
            m.loopx(&["sync"]).ok();
        }
        assert_eq!(a.tree(), b.tree(), "round {round}");
        assert_eq!(a.tree(), c.tree(), "round {round}");
        let v = c.loopx(&["todo", "show", &t, "--json"]).ok().json();
        assert_eq!(v["claim"]["owner"], won[0], "round {round}");
        assert_eq!(v["epoch"], 1, "round {round}: one claim counted");
    }
    // Three ready todos, three agents picking at once: never one todo held
    // twice, and each claim that counted is its agent's on the hub.
    let ids: Vec<String> = (0..3).map(|i| a.add(&format!("free {i}"))).collect();
    for (_, m) in &machines {
        m.loopx(&["sync"]).ok();
    }
    let outs = race(&machines, &["todo", "claim", "--next"]);
    for (_, m) in &machines {
        m.loopx(&["sync"]).ok();
    }
    let mut held = Vec::new();
    for (agent, o) in &outs {
        assert!(o.code == 0 || o.code == 4, "{agent}: {o:#?}");
        if o.code == 0 {
            let id = o.stdout.trim().to_owned();
            assert!(ids.contains(&id), "{agent} claimed {id}");
            let v = a.loopx(&["todo", "show", &id, "--json"]).ok().json();
            assert_eq!(v["claim"]["owner"], *agent, "{id}: {outs:#?}");
            held.push(id);
        }
    }
    let n = held.len();
    held.sort();
    held.dedup();
    assert_eq!(held.len(), n, "no todo held twice: {outs:#?}");
    assert!(n >= 1, "{outs:#?}");
    // Every clone and the hub's guard agree the history is valid.
    for (_, m) in &machines {
        m.loopx(&["verify"]).ok();
    }
    assert_eq!(a.tree(), b.tree());
    assert_eq!(a.tree(), c.tree());
}

#[test]
fn through_nginx_the_guard_refuses_every_forgery() {
    if !nginx::enabled("the nginx forgery set") {
        return;
    }
    let env = TestEnv::with_board();
    let server = Nginx::start(&env, &[]);
    let t = test_verify::team_with(&env, |guarded| {
        server.serve(guarded);
        server.url("guarded.git")
    });
    test_verify::forged_files(&t);
    test_verify::forged_ops(&t);
    // The refusals came from the hook, run by the server.
    assert!(!server.log().contains("[crit]"), "{}", server.log());
}
