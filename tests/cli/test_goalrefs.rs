//! A ref per goal (issue 28 item 2, format 6): `loopx goal split` moves each
//! goal onto `refs/loopx/goals/<goal>` and keeps the shared parts on
//! `refs/loopx/state`; every goal tick pins the shared tip it was applied
//! against. The race and property tests of test_sync and test_verify, run
//! over goal refs.

use std::process::Output as StdOutput;

use crate::common::*;

const SHARED: &str = "refs/loopx/state";
const MAIN: &str = "refs/loopx/goals/main";
const WEB: &str = "refs/loopx/goals/web";

/// `loopx ARGS` on a machine, on the state ref `state_ref`.
fn on(m: &Machine, state_ref: &str, agent: Option<&str>, args: &[&str]) -> Output {
    let mut c = m.command();
    c.env("LOOPX_REF", state_ref);
    if let Some(a) = agent {
        c.env("LOOPX_AGENT", a);
    }
    run(c.args(args))
}

/// A ref's tree on a machine.
fn tree_of(m: &Machine, name: &str) -> Option<String> {
    m.rev(&format!("{name}^{{tree}}"))
}

/// The file names of a ref's tree.
fn names(m: &Machine, name: &str) -> Vec<String> {
    m.git(&["ls-tree", "-r", "--name-only", name])
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A board with goals `main` and `web`, a todo on each, synced to `hub`
/// (guarded by `loopx hub install`), then split and synced again.
fn split_team() -> (TestEnv, String, String, String) {
    let env = TestEnv::with_board();
    let hub = env.hub("hub.git");
    env.loopx(&["-C", &hub, "hub", "install"]).ok();
    env.git(&["remote", "add", "origin", &hub]);
    env.loopx(&["goal", "add", "web", "--objective", "The site"])
        .ok();
    let api = env.add("Parse the input", &["--goal", "main"]);
    let web = env.add("Draw the page", &["--goal", "web"]);
    env.loopx(&["sync"]).ok();
    env.loopx(&["goal", "split"]).ok();
    let out = env.loopx(&["sync"]).ok();
    assert!(
        out.stdout.contains(MAIN) && out.stdout.contains(WEB),
        "{}",
        out.stdout
    );
    (env, hub, api, web)
}

/// Announces a new signer `name` (a fresh ssh key) on `m`'s shared ref:
/// a shared tick, unpushed.
fn announce(env: &TestEnv, m: &Machine, name: &str) {
    let key = crate::common::keys::keygen(env, name);
    on(
        m,
        SHARED,
        None,
        &["signer", "announce", name, "--key", &key.to_string_lossy()],
    )
    .ok();
}

/// A clone of `hub` whose state ref is `goal_ref`.
fn goal_clone<'e>(env: &'e TestEnv, name: &str, hub: &str, goal_ref: &str) -> Machine<'e> {
    let m = env.clone_machine(name, hub);
    m.git(&["config", "loopx.ref", goal_ref]);
    m.loopx(&["sync"]).ok();
    m
}

#[test]
fn one_command_splits_the_state_and_every_ref_verifies() {
    let env = TestEnv::with_board();
    env.loopx(&["goal", "add", "web", "--objective", "The site"])
        .ok();
    let api = env.add("Parse the input", &["--goal", "main"]);
    let web = env.add("Draw the page", &["--goal", "web"]);
    let m = env.machine();
    // A state that never splits is written as before: format 5.
    let meta = String::from_utf8(crate::common::forge::file(&m, SHARED, "loopx.toml")).unwrap();
    assert!(meta.starts_with("format = 7\n"), "{meta}");
    assert!(!meta.contains("goal_refs"), "{meta}");
    let before = env.tip().unwrap();
    let out = env.loopx(&["--json", "goal", "split"]).ok().json();
    assert_eq!(out["split"], true);
    let refs: Vec<&str> = out["refs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["ref"].as_str().unwrap())
        .collect();
    assert_eq!(refs, [SHARED, MAIN, WEB]);
    for r in [SHARED, MAIN, WEB] {
        // Every ref keeps the history before the split.
        assert_eq!(
            m.rev(&format!("{r}^")).as_deref(),
            Some(before.as_str()),
            "{r}"
        );
        let v = on(&m, r, None, &["--json", "verify"]).ok().json();
        assert_eq!(v["ok"], true, "{r}: {v}");
        let meta = String::from_utf8(crate::common::forge::file(&m, r, "loopx.toml")).unwrap();
        assert!(
            meta.starts_with("format = 7\ngoal_refs = true\n"),
            "{r}: {meta}"
        );
    }
    // The shared ref holds the shared parts only; each goal ref its goal.
    assert!(
        names(&m, SHARED)
            .iter()
            .all(|n| n == "loopx.toml" || n.starts_with("signers/") || n.starts_with("machines/")),
        "{:?}",
        names(&m, SHARED)
    );
    let main_files = names(&m, MAIN);
    assert!(main_files.contains(&"goals/main.toml".to_owned()));
    assert!(!main_files.contains(&"goals/web.toml".to_owned()));
    assert!(
        main_files
            .iter()
            .any(|n| n.ends_with(&format!("{api}.toml")))
    );
    assert!(
        !main_files
            .iter()
            .any(|n| n.ends_with(&format!("{web}.toml")))
    );
    assert!(main_files.contains(&"agents/agent-a.toml".to_owned()));
    // Each goal tick names the shared tip it pins.
    let shared = m.rev(SHARED).unwrap();
    for r in [MAIN, WEB] {
        let msg = m.git(&["log", "-1", "--format=%B", r]);
        assert!(msg.contains(&format!("Loopx-Shared: {shared}")), "{msg}");
    }
    // Splitting again changes nothing.
    let again = env.loopx(&["--json", "goal", "split"]).code(3);
    assert_eq!(again.error_code(), "already-split", "{}", again.stdout);
    // Goal parts are refused on the shared ref, and shared parts on a goal ref.
    let out = env
        .loopx(&["--json", "goal", "add", "docs", "--objective", "Docs"])
        .code(3);
    assert_eq!(out.error_code(), "wrong-ref", "{}", out.stdout);
    assert!(
        out.stdout.contains("git config loopx.ref"),
        "{}",
        out.stdout
    );
    assert_eq!(m.rev(SHARED).as_deref(), Some(shared.as_str()));
    // A goal ref works as a whole state: claims, dones, status.
    on(&m, MAIN, Some("agent-a"), &["todo", "claim", &api]).ok();
    on(&m, MAIN, Some("agent-a"), &["todo", "done", &api]).ok();
    let listed = on(&m, WEB, None, &["todo", "list"]).ok().stdout;
    assert!(listed.contains(&web) && !listed.contains(&api), "{listed}");
    let v = on(&m, MAIN, None, &["--json", "verify"]).ok().json();
    assert_eq!(v["ok"], true, "{v}");
    // Readers of the shared ref read across refs: status, log, verify, digest.
    let status = env.loopx(&["status"]).ok().stdout;
    assert!(
        status.contains("goal main") && status.contains("goal web"),
        "{status}"
    );
    let log = env.loopx(&["log"]).ok().stdout;
    assert!(log.contains(&format!("done {api}")), "{log}");
    assert!(log.contains("split goal web onto its own ref"), "{log}");
    // Its filters name goals and agents that live on the goal refs.
    let f = env.loopx(&["log", "--goal", "web"]).ok().stdout;
    assert!(f.contains("Draw the page"), "{f}");
    assert!(!f.contains(&format!("done {api}")), "{f}");
    let f = env.loopx(&["log", "--goal", "main"]).ok().stdout;
    assert!(f.contains(&format!("done {api}")), "{f}");
    assert!(!f.contains("Draw the page"), "{f}");
    let f = env.loopx(&["--agent", "agent-a", "log"]).ok().stdout;
    assert!(f.contains(&format!("claim {api}")), "{f}");
    assert!(f.lines().all(|l| l.contains("agent-a")), "{f}");
    let out = env.loopx(&["--json", "log", "--goal", "nope"]).code(1);
    assert_eq!(out.error_code(), "unknown-goal", "{}", out.stdout);
    assert_eq!(
        log.matches("todo.add").count(),
        2,
        "the ticks before the split once: {log}"
    );
    let v = env.loopx(&["--json", "verify"]).ok().json();
    let checked: Vec<&str> = v["refs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["ref"].as_str().unwrap())
        .collect();
    assert_eq!(checked, [MAIN, WEB], "{v}");
    let digest = env
        .loopx(&["--json", "digest", "--since", "1d"])
        .ok()
        .json();
    assert!(digest.to_string().contains(&api), "{digest}");
    // `--list` names the goal refs.
    let v = env
        .loopx(&["--json", "goal", "split", "--list"])
        .ok()
        .json();
    assert_eq!(v["refs"].as_array().unwrap().len(), 2, "{v}");
}

#[test]
fn a_moved_shared_tip_is_pinned_by_the_next_goal_tick_and_verifies() {
    if !crate::common::keys::have_openssh() {
        return;
    }
    let env = TestEnv::with_board();
    let t = env.add("Parse the input", &[]);
    env.loopx(&["goal", "split"]).ok();
    let m = env.machine();
    let old = m.rev(SHARED).unwrap();
    let key = crate::common::keys::keygen(&env, "ada");
    // A shared act on a goal ref is refused, and lands on the shared ref.
    let out = on(
        &m,
        MAIN,
        None,
        &[
            "--json",
            "signer",
            "announce",
            "ada",
            "--key",
            &key.to_string_lossy(),
        ],
    )
    .code(3);
    assert_eq!(out.error_code(), "wrong-ref", "{}", out.stdout);
    assert!(
        out.stdout.contains("LOOPX_REF=refs/loopx/state"),
        "{}",
        out.stdout
    );
    crate::common::keys::announce(&m, "ada", &key);
    let new = m.rev(SHARED).unwrap();
    assert_ne!(old, new);
    on(&m, MAIN, Some("agent-a"), &["todo", "claim", &t]).ok();
    let msg = m.git(&["log", "-1", "--format=%B", MAIN]);
    assert!(msg.contains(&format!("Loopx-Shared: {new}")), "{msg}");
    assert!(names(&m, MAIN).contains(&"signers/ada.toml".to_owned()));
    let v = on(&m, MAIN, None, &["--json", "verify"]).ok().json();
    assert_eq!(v["ok"], true, "{v}");
}

/// Forged goal ticks: without a pin, pinning a commit that is not the
/// shared ref's, and pinning a shared tip older than the parent's. The
/// guarded hub and `verify` refuse each with the rule `pin`.
#[test]
fn the_hub_and_verify_refuse_goal_ticks_with_a_missing_or_forged_pin() {
    let (env, hub, api, _) = split_team();
    let a = goal_clone(&env, "a", &hub, MAIN);
    a.agent("agent-a", &["todo", "claim", &api]).ok();
    let honest = a.rev(MAIN).unwrap();
    let goal_parent = a.rev(&format!("{MAIN}^")).unwrap();
    let shared = a.rev(SHARED).unwrap();
    let forgeries = [
        ("no pin", format!("Loopx-Shared: {shared}\n"), String::new()),
        (
            "a goal commit as the pin",
            format!("Loopx-Shared: {shared}"),
            format!("Loopx-Shared: {goal_parent}"),
        ),
    ];
    for (what, from, to) in forgeries {
        let mut p = crate::common::forge::read(&a, MAIN);
        assert!(p.message.contains(&from), "{what}: {}", p.message);
        p.message = p.message.replace(&from, &to);
        let forged = crate::common::forge::write(&a, &p);
        a.git(&["update-ref", MAIN, &forged]);
        let (ok, err) = crate::common::forge::push(&a, "origin", &format!("{MAIN}:{MAIN}"));
        assert!(!ok && err.contains("[pin]"), "{what}: {err}");
        let out = a.loopx(&["verify"]).code(3);
        assert!(
            out.stderr.contains("[pin]") || out.stdout.contains("pin"),
            "{what}: {}{}",
            out.stdout,
            out.stderr
        );
        a.git(&["update-ref", MAIN, &honest]);
    }
    // A shared commit that only a fetch brought (the remote-tracking copy,
    // moved before anything is verified) is no pin: here a commit of the
    // shared tree that is no tick, put where a hostile hub's fetch puts it.
    let tree = a.rev(&format!("{SHARED}^{{tree}}")).unwrap();
    let planted = a.git(&["commit-tree", &tree, "-p", &shared, "-m", "not a tick"]);
    let planted = planted.trim();
    a.git(&["update-ref", "refs/loopx/remotes/origin/state", planted]);
    let mut p = crate::common::forge::read(&a, MAIN);
    p.message = p.message.replace(
        &format!("Loopx-Shared: {shared}"),
        &format!("Loopx-Shared: {planted}"),
    );
    let forged = crate::common::forge::write(&a, &p);
    a.git(&["update-ref", MAIN, &forged]);
    let out = a.loopx(&["verify"]).code(3);
    assert!(
        out.stderr.contains("not on the shared ref")
            || out.stdout.contains("not on the shared ref"),
        "a pin on an unverified fetched copy: {}{}",
        out.stdout,
        out.stderr
    );
    a.git(&["update-ref", MAIN, &honest]);
    a.git(&["update-ref", "-d", "refs/loopx/remotes/origin/state"]);
    let (ok, err) = crate::common::forge::push(&a, "origin", &format!("{MAIN}:{MAIN}"));
    assert!(ok, "{err}");
}

/// Claims on two goal refs at once, two clones on each: one winner per
/// goal, the loser told who won, every clone converges, and `verify`
/// passes on every ref, here and on the guarded hub.
#[test]
fn claim_races_on_goal_refs_have_one_winner_each_and_everything_verifies() {
    let (env, hub, _, _) = split_team();
    let clones = [
        (goal_clone(&env, "a1", &hub, MAIN), MAIN, "agent-a"),
        (goal_clone(&env, "a2", &hub, MAIN), MAIN, "agent-b"),
        (goal_clone(&env, "w1", &hub, WEB), WEB, "agent-a"),
        (goal_clone(&env, "w2", &hub, WEB), WEB, "agent-b"),
    ];
    for round in 0..3 {
        let tm = clones[0].0.add(&format!("contested main {round}"));
        let tw = clones[2].0.add(&format!("contested web {round}"));
        for (m, _, _) in &clones {
            m.loopx(&["sync"]).ok();
        }
        let outs: Vec<(&str, &str, StdOutput)> = std::thread::scope(|s| {
            let hs: Vec<_> = clones
                .iter()
                .map(|(m, r, agent)| {
                    let t = if *r == MAIN { tm.clone() } else { tw.clone() };
                    let sp = m.spawner();
                    let now = m.now();
                    s.spawn(move || {
                        let out = sp
                            .command()
                            .env("LOOPX_NOW", now)
                            .env("LOOPX_AGENT", agent)
                            .args(["todo", "claim", &t, "--sync"])
                            .output()
                            .expect("loopx runs");
                        (*r, *agent, out)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().expect("thread")).collect()
        });
        for r in [MAIN, WEB] {
            let mine: Vec<_> = outs.iter().filter(|(x, _, _)| *x == r).collect();
            let winners: Vec<&str> = mine
                .iter()
                .filter(|(_, _, o)| o.status.success())
                .map(|(_, a, _)| *a)
                .collect();
            assert_eq!(winners.len(), 1, "round {round}, {r}: {mine:#?}");
            for (_, agent, o) in &mine {
                if *agent != winners[0] {
                    assert_eq!(
                        o.status.code(),
                        Some(4),
                        "round {round}, {r}, {agent}: {o:#?}"
                    );
                    let err = String::from_utf8_lossy(&o.stderr);
                    assert!(err.contains(&format!("{} holds it", winners[0])), "{err}");
                }
            }
        }
        for (m, _, _) in &clones {
            m.loopx(&["sync"]).ok();
        }
        for (m, _, _) in &clones {
            m.loopx(&["sync"]).ok();
        }
        assert_eq!(
            tree_of(&clones[0].0, MAIN),
            tree_of(&clones[1].0, MAIN),
            "round {round}"
        );
        assert_eq!(
            tree_of(&clones[2].0, WEB),
            tree_of(&clones[3].0, WEB),
            "round {round}"
        );
        for (t, m) in [(&tm, &clones[0].0), (&tw, &clones[2].0)] {
            let v = m.loopx(&["todo", "show", t, "--json"]).ok().json();
            assert_eq!(v["epoch"], 1, "round {round}: one claim counted");
        }
    }
    for (m, _, _) in &clones {
        let v = m.loopx(&["--json", "verify"]).ok().json();
        assert_eq!(v["ok"], true, "{v}");
    }
    let hub_m = env.machine_in(std::path::PathBuf::from(&hub));
    for r in [SHARED, MAIN, WEB] {
        let v = on(&hub_m, r, None, &["--json", "verify"]).ok().json();
        assert_eq!(v["ok"], true, "hub {r}: {v}");
    }
}

/// A tiny xorshift generator: the test's choices, repeatable by seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// test_verify's three-clone property test over goal refs: random honest
/// ops from clones on two goal refs (and, with OpenSSH, shared acts that
/// move every goal's pin), with forged pins injected: each forgery is
/// refused by the guarded hub and the forger's own sync, and every honest
/// tick lands; at the end every clone of a goal holds the same tree and
/// `verify` passes on every ref, on every clone and on the hub.
#[test]
fn random_honest_ops_over_goal_refs_all_verify_everywhere() {
    let (env, hub, _, _) = split_team();
    let lead = env.machine();
    let machines = [
        (goal_clone(&env, "b", &hub, MAIN), MAIN),
        (goal_clone(&env, "c", &hub, MAIN), MAIN),
        (goal_clone(&env, "d", &hub, WEB), WEB),
    ];
    let ssh = crate::common::keys::have_openssh();
    let mut rng = Rng(0x0ae1_5eed_2828);
    let mut todos: Vec<(String, &str)> = Vec::new();
    let mut forgeries = 0;
    let mut shared_acts = 0;
    for step in 0..40 {
        let (m, r) = &machines[rng.below(machines.len())];
        let agent = ["agent-a", "agent-b"][rng.below(2)];
        let mine: Vec<String> = todos
            .iter()
            .filter(|(_, g)| g == r)
            .map(|(t, _)| t.clone())
            .collect();
        let pick = |rng: &mut Rng| mine.get(rng.below(mine.len().max(1))).cloned();
        match rng.below(11) {
            0 | 1 => {
                let out = m.loopx(&["todo", "add", &format!("Task {step}")]);
                if out.code == 0 {
                    todos.push((out.stdout.trim().to_owned(), r));
                }
            }
            2 | 3 => {
                if let Some(t) = pick(&mut rng) {
                    let _ = m.agent(agent, &["todo", "claim", &t, "--sync"]);
                }
            }
            4 => {
                if let Some(t) = pick(&mut rng) {
                    let _ = m.agent(agent, &["todo", "update", &t, "--note", "progress"]);
                }
            }
            5 => {
                if let Some(t) = pick(&mut rng) {
                    let _ = m.agent(agent, &["todo", "done", &t]);
                }
            }
            6 => {
                let _ = m.agent(agent, &["evidence", "add", "--summary", "checked"]);
            }
            7 if ssh => {
                // A shared act: every goal's next tick pins it.
                let name = format!("s{step}");
                let key = crate::common::keys::keygen(&env, &name);
                lead.loopx(&["sync"]).ok();
                lead.loopx(&["signer", "announce", &name, "--key", &key.to_string_lossy()])
                    .ok();
                lead.loopx(&["sync"]).ok();
                shared_acts += 1;
            }
            8 => {
                // A forged pin on an honest tick of this clone.
                m.loopx(&["sync"]).ok();
                let before = m.rev(r).unwrap();
                m.agent(agent, &["evidence", "add", "--summary", "checked"])
                    .ok();
                let mut p = crate::common::forge::read(m, r);
                let line = p
                    .message
                    .lines()
                    .find(|l| l.starts_with("Loopx-Shared: "))
                    .expect("a goal tick pins")
                    .to_owned();
                p.message = if rng.below(2) == 0 {
                    p.message.replace(&format!("{line}\n"), "")
                } else {
                    p.message.replace(&line, &format!("Loopx-Shared: {before}"))
                };
                let forged = crate::common::forge::write(m, &p);
                m.git(&["update-ref", r, &forged]);
                forgeries += 1;
                let (ok, err) = crate::common::forge::push(m, "origin", &format!("{r}:{r}"));
                assert!(!ok && err.contains("[pin]"), "step {step}: {err}");
                let out = m.loopx(&["sync"]);
                assert_eq!(
                    out.code, 3,
                    "step {step}: sync pushed a forgery: {}",
                    out.stderr
                );
                m.git(&["update-ref", r, &before]);
            }
            _ => {
                let _ = m.agent(agent, &["sync"]);
            }
        }
    }
    assert!(forgeries > 0, "the seed injects forgeries");
    assert!(!ssh || shared_acts > 0, "the seed moves the shared tip");
    for _ in 0..2 {
        lead.loopx(&["sync"]).ok();
        for (m, _) in &machines {
            m.loopx(&["sync"]).ok();
        }
    }
    assert_eq!(tree_of(&machines[0].0, MAIN), tree_of(&machines[1].0, MAIN));
    assert_eq!(tree_of(&lead, MAIN), tree_of(&machines[0].0, MAIN));
    assert_eq!(tree_of(&lead, WEB), tree_of(&machines[2].0, WEB));
    for (m, r) in &machines {
        for x in [SHARED, *r] {
            let v = on(m, x, None, &["--json", "verify"]).ok().json();
            assert_eq!(v["ok"], true, "{x}: {v}");
        }
    }
    let hub_m = env.machine_in(std::path::PathBuf::from(&hub));
    for r in [SHARED, MAIN, WEB] {
        let v = on(&hub_m, r, None, &["--json", "verify"]).ok().json();
        assert_eq!(v["ok"], true, "hub {r}: {v}");
        assert_eq!(
            hub_m.rev(r),
            lead.rev(r),
            "the hub holds every honest tick of {r}"
        );
    }
}

/// A `git` first on PATH that appends the name of each network command it
/// runs (`fetch`, `push`, `ls-remote` but for `--get-url`, which asks
/// nobody) to `<root>/<dir>.log`, then runs
/// the real git. Returns the PATH and the log.
fn counting_git(env: &TestEnv, dir: &str) -> (String, std::path::PathBuf) {
    let real = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|p| p.join("git"))
        .find(|p| p.is_file())
        .expect("git on PATH");
    let bin = env.root().join(dir);
    std::fs::create_dir_all(&bin).expect("mkdir");
    let log = env.root().join(format!("{dir}.log"));
    std::fs::write(
        bin.join("git"),
        format!(
            "#!/bin/sh\ncase \" $* \" in *\" --get-url \"*) ;; *)\nfor a in \"$@\"; do case \"$a\" in fetch|push|ls-remote) echo \"$a\" >> '{}'; break;; esac; done;;\nesac\nexec '{}' \"$@\"\n",
            log.display(),
            real.display()
        ),
    )
    .expect("write wrapper");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(bin.join("git"), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (path, log)
}

/// The network commands logged since the last call, sorted (a fetch may
/// run while a push does), emptying the log.
fn calls(log: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let _ = std::fs::remove_file(log);
    let mut calls: Vec<String> = text.lines().map(str::to_owned).collect();
    calls.sort();
    calls
}

/// `loopx ARGS` on `m` with the counting git first on PATH.
fn counted(m: &Machine, path: &str, args: &[&str]) -> Output {
    run(m.command().env("PATH", path).args(args))
}

/// A split state's refs sync in one fetch and one push: a fresh goal
/// clone's first sync brings the shared ref and its goal ref in one fetch;
/// a shared tick and a goal tick pinning it leave in one (atomic) push,
/// which the guarded hub takes although its shared ref is not at the pin
/// yet; behind on both refs, one fetch brings both; and a clone on the
/// shared ref syncs every goal ref in one fetch.
#[test]
fn a_split_state_syncs_all_its_refs_in_one_fetch_and_one_push() {
    if !crate::common::keys::have_openssh() {
        return;
    }
    let (env, hub, api, web) = split_team();
    let (path, log) = counting_git(&env, "counting");
    // A fresh clone of a goal ref: one fetch for both refs.
    let a = env.clone_machine("a", &hub);
    a.git(&["config", "loopx.ref", MAIN]);
    let _ = calls(&log);
    let out = counted(&a, &path, &["--json", "sync"]).ok().json();
    assert_eq!(calls(&log), ["fetch"], "{out}");
    assert_eq!(out["outcome"], "pulled", "{out}");
    assert_eq!(out["refs"][0]["ref"], SHARED, "{out}");
    assert_eq!(a.rev(SHARED), env.machine().rev(SHARED));
    // A shared tick and a goal tick that pins it: the shared ref alone
    // first, then the goal ref (a guard takes a pin only on its own shared
    // ref).
    announce(&env, &a, "ada");
    a.agent("agent-a", &["todo", "claim", &api, "--no-sync"])
        .ok();
    let pinned = a.rev(SHARED).unwrap();
    let msg = a.git(&["log", "-1", "--format=%B", MAIN]);
    assert!(msg.contains(&format!("Loopx-Shared: {pinned}")), "{msg}");
    let out = counted(&a, &path, &["--json", "sync"]).ok().json();
    assert_eq!(calls(&log), ["push", "push"], "{out}");
    assert_eq!(out["outcome"], "pushed", "{out}");
    assert_eq!(out["refs"][0]["outcome"], "pushed", "{out}");
    let hub_m = env.machine_in(std::path::PathBuf::from(&hub));
    assert_eq!(hub_m.rev(SHARED).as_deref(), Some(pinned.as_str()));
    assert_eq!(hub_m.rev(MAIN), a.rev(MAIN));
    // Another clone moves both refs; `a`, with a tick of its own, pushes
    // first (refused), then fetches both refs once, replays, pushes once.
    let b = goal_clone(&env, "b", &hub, MAIN);
    announce(&env, &b, "bob");
    b.add("Another");
    b.loopx(&["sync"]).ok();
    a.agent("agent-a", &["todo", "done", &api, "--no-sync"])
        .ok();
    let out = counted(&a, &path, &["--json", "sync"]).ok().json();
    // The push of MAIN (refused) and the fetch of the shared ref at once,
    // then MAIN's fetch and the replay's push.
    assert_eq!(calls(&log), ["fetch", "fetch", "push", "push"], "{out}");
    assert_eq!(out["outcome"], "replayed", "{out}");
    assert_eq!(out["refs"][0]["outcome"], "pulled", "{out}");
    assert_eq!(a.rev(SHARED), hub_m.rev(SHARED));
    assert_eq!(a.rev(MAIN), hub_m.rev(MAIN));
    // The clone on the shared ref: every goal ref in one fetch.
    let w = env.clone_machine("w", &hub);
    w.loopx(&["sync"]).ok();
    w.git(&[
        "fetch",
        "origin",
        &format!("{MAIN}:{MAIN}"),
        &format!("{WEB}:{WEB}"),
    ]);
    let _ = calls(&log);
    counted(&w, &path, &["sync"]).ok();
    assert_eq!(calls(&log), ["fetch"]);
    on(
        &w,
        WEB,
        Some("agent-b"),
        &["todo", "claim", &web, "--no-sync"],
    )
    .ok();
    let out = counted(&w, &path, &["--json", "sync"]).ok().json();
    // WEB's push, and the fetch of the other two refs at once.
    assert_eq!(calls(&log), ["fetch", "push"], "{out}");
    let refs: Vec<&str> = out["refs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["ref"].as_str().unwrap())
        .collect();
    assert_eq!(refs, [MAIN, WEB], "{out}");
    let out = counted(&w, &path, &["--json", "sync"]).ok().json();
    assert_eq!(calls(&log), ["fetch"], "{out}");
    assert_eq!(w.rev(MAIN), hub_m.rev(MAIN));
    assert_eq!(w.rev(WEB), hub_m.rev(WEB));
    all_verify(
        &env,
        &hub,
        &[(&a, &[SHARED, MAIN][..]), (&w, &[SHARED, MAIN, WEB][..])],
    );
}

/// A guarded hub takes a goal tick's pin only on its own shared ref: not
/// on a shared tip the same push brings (git may take the goal ref of a
/// plain push and refuse its shared ref, which lost a race after the guard
/// said yes), not on a commit smuggled in under a branch, not on a
/// `refs/loopx/verified/*` ref a pusher wrote. Pushed in order, shared ref
/// first, both are taken.
#[test]
fn the_hub_takes_a_goal_pin_only_on_its_own_shared_ref() {
    if !crate::common::keys::have_openssh() {
        return;
    }
    let (env, hub, api, _) = split_team();
    let a = goal_clone(&env, "a", &hub, MAIN);
    let hub_m = env.machine_in(std::path::PathBuf::from(&hub));
    let before = (hub_m.rev(SHARED), hub_m.rev(MAIN));
    let announce = |name: &str| announce(&env, &a, name);
    // A shared tick, and a goal tick pinning it; then the shared ref put
    // back and moved elsewhere: the goal tick's pin is on no chain the
    // push brings.
    announce("ada");
    let pinned = a.rev(SHARED).unwrap();
    a.agent("agent-a", &["todo", "claim", &api, "--no-sync"])
        .ok();
    let goal_tip = a.rev(MAIN).unwrap();
    let msg = a.git(&["log", "-1", "--format=%B", MAIN]);
    assert!(msg.contains(&format!("Loopx-Shared: {pinned}")), "{msg}");
    a.git(&["update-ref", SHARED, &format!("{pinned}^")]);
    announce("bob");
    let elsewhere = a.rev(SHARED).unwrap();
    // The pinned commit travels too, under a branch the guard lets
    // through: on the hub, but on no shared chain.
    let (ok, err) = crate::common::forge::push_all(
        &a,
        "origin",
        &[
            &format!("{SHARED}:{SHARED}"),
            &format!("{MAIN}:{MAIN}"),
            &format!("{pinned}:refs/heads/smuggled"),
        ],
    );
    assert!(!ok && err.contains("[pin]"), "{err}");
    assert!(err.contains("is not on the shared ref"), "{err}");
    assert_eq!((hub_m.rev(SHARED), hub_m.rev(MAIN)), before);
    // The goal ref alone is refused too: the hub has no such shared tip.
    let (ok, err) = crate::common::forge::push(&a, "origin", &format!("{MAIN}:{MAIN}"));
    assert!(!ok && err.contains("[pin]"), "{err}");
    // A fork of the shared chain pushed as a `verified` ref (a valid chain,
    // so the guard lets the ref through) anchors no pin on the hub.
    let (ok, err) =
        crate::common::forge::push(&a, "origin", &format!("{pinned}:refs/loopx/verified/x"));
    assert!(ok, "{err}");
    let (ok, err) = crate::common::forge::push(&a, "origin", &format!("{MAIN}:{MAIN}"));
    assert!(!ok && err.contains("[pin]"), "{err}");
    assert_eq!((hub_m.rev(SHARED), hub_m.rev(MAIN)), before);
    // With the shared chain that holds the pin, even in one push: refused,
    // the pin is not on the hub's shared ref yet.
    a.git(&["update-ref", SHARED, &pinned]);
    let (ok, err) = crate::common::forge::push_all(
        &a,
        "origin",
        &[&format!("{MAIN}:{MAIN}"), &format!("{SHARED}:{SHARED}")],
    );
    assert!(!ok && err.contains("[pin]"), "{err}");
    assert_eq!((hub_m.rev(SHARED), hub_m.rev(MAIN)), before);
    // The shared ref first, then the goal ref: both taken.
    let (ok, err) = crate::common::forge::push(&a, "origin", &format!("{SHARED}:{SHARED}"));
    assert!(ok, "{err}");
    let (ok, err) = crate::common::forge::push(&a, "origin", &format!("{MAIN}:{MAIN}"));
    assert!(ok, "{err}");
    assert_eq!(hub_m.rev(SHARED).as_deref(), Some(pinned.as_str()));
    assert_eq!(hub_m.rev(MAIN).as_deref(), Some(goal_tip.as_str()));
    assert_ne!(elsewhere, pinned);
    for r in [SHARED, MAIN] {
        let v = on(&hub_m, r, None, &["--json", "verify"]).ok().json();
        assert_eq!(v["ok"], true, "hub {r}: {v}");
    }
    // `loopx sync` on the clone agrees with the hub.
    a.loopx(&["sync"]).ok();
    let v = a.loopx(&["--json", "verify"]).ok().json();
    assert_eq!(v["ok"], true, "{v}");
}

/// A goal added after the split lands on an existing goal ref; `goal split
/// GOAL` moves it, with its todos, onto a ref of its own: the ref it
/// leaves drops it, every ref verifies here and on the guarded hub after a
/// sync, and a goal alone on its ref is not moved again.
#[test]
fn a_goal_added_after_the_split_moves_onto_its_own_ref() {
    let (env, hub, api, _) = split_team();
    let m = env.machine();
    let doc = add_docs_on_main(&env);
    let parent = m.rev(MAIN).unwrap();
    let out = env.loopx(&["--json", "goal", "split", "docs"]).ok().json();
    let refs: Vec<&str> = out["refs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["ref"].as_str().unwrap())
        .collect();
    assert_eq!(refs, [MAIN, DOCS], "{out}");
    // Both new ticks sit on the ref's tip before the move.
    assert_eq!(m.rev(&format!("{DOCS}^")).as_deref(), Some(parent.as_str()));
    assert_eq!(m.rev(&format!("{MAIN}^")).as_deref(), Some(parent.as_str()));
    let docs_files = names(&m, DOCS);
    assert!(docs_files.contains(&"goals/docs.toml".to_owned()));
    assert!(!docs_files.contains(&"goals/main.toml".to_owned()));
    assert!(
        docs_files
            .iter()
            .any(|n| n.ends_with(&format!("{doc}.toml")))
    );
    assert!(
        !docs_files
            .iter()
            .any(|n| n.ends_with(&format!("{api}.toml")))
    );
    let main_files = names(&m, MAIN);
    assert!(!main_files.contains(&"goals/docs.toml".to_owned()));
    assert!(
        !main_files
            .iter()
            .any(|n| n.ends_with(&format!("{doc}.toml")))
    );
    assert!(
        main_files
            .iter()
            .any(|n| n.ends_with(&format!("{api}.toml")))
    );
    let shared = m.rev(SHARED).unwrap();
    for r in [MAIN, DOCS] {
        let msg = m.git(&["log", "-1", "--format=%B", r]);
        assert!(
            msg.contains(&format!("Loopx-Shared: {shared}")),
            "{r}: {msg}"
        );
    }
    // The goal works on its own ref.
    on(&m, DOCS, Some("agent-a"), &["todo", "claim", &doc]).ok();
    let out = on(
        &m,
        MAIN,
        Some("agent-a"),
        &["--json", "todo", "claim", &doc],
    )
    .code(1);
    assert_eq!(out.error_code(), "unknown-id", "{}", out.stdout);
    for r in [SHARED, MAIN, DOCS, WEB] {
        let v = on(&m, r, None, &["--json", "verify"]).ok().json();
        assert_eq!(v["ok"], true, "{r}: {v}");
    }
    // Not twice, and not a goal alone on its ref.
    let again = env.loopx(&["--json", "goal", "split", "docs"]).code(3);
    assert_eq!(again.error_code(), "already-split", "{}", again.stdout);
    let alone = env.loopx(&["--json", "goal", "split", "main"]).code(3);
    assert_eq!(alone.error_code(), "already-split", "{}", alone.stdout);
    let none = env.loopx(&["--json", "goal", "split", "nope"]).code(3);
    assert_eq!(none.error_code(), "unknown-goal", "{}", none.stdout);
    // The shared clone's sync takes the new ref to the guarded hub.
    let out = env.loopx(&["--json", "sync"]).ok().json();
    assert!(out.to_string().contains(DOCS), "{out}");
    let hub_m = env.machine_in(std::path::PathBuf::from(&hub));
    for r in [SHARED, MAIN, DOCS, WEB] {
        assert_eq!(hub_m.rev(r), m.rev(r), "{r}");
        let v = on(&hub_m, r, None, &["--json", "verify"]).ok().json();
        assert_eq!(v["ok"], true, "hub {r}: {v}");
    }
    // A fresh clone of the new ref works from the hub.
    let d = goal_clone(&env, "d", &hub, DOCS);
    let listed = d.loopx(&["todo", "list"]).ok().stdout;
    assert!(listed.contains(&doc), "{listed}");
}

/// On a state that is not split, a goal has no ref to leave.
#[test]
fn moving_a_goal_needs_a_split_state() {
    let env = TestEnv::with_board();
    let out = env.loopx(&["--json", "goal", "split", "main"]).code(3);
    assert_eq!(out.error_code(), "not-split", "{}", out.stdout);
}

/// A hub that offers no atomic push (`receive.advertiseAtomic false`)
/// syncs the same way: the shared ref alone first, then the goal ref whose
/// tick pins it (sync never asks for an atomic push).
#[test]
fn without_atomic_pushes_the_shared_ref_goes_first() {
    if !crate::common::keys::have_openssh() {
        return;
    }
    let (env, hub, api, _) = split_team();
    crate::common::git_in(
        std::path::Path::new(&hub),
        &["config", "receive.advertiseAtomic", "false"],
    );
    let (path, log) = counting_git(&env, "counting");
    let a = goal_clone(&env, "a", &hub, MAIN);
    announce(&env, &a, "ada");
    a.agent("agent-a", &["todo", "claim", &api, "--no-sync"])
        .ok();
    let _ = calls(&log);
    let out = counted(&a, &path, &["--json", "sync"]).ok().json();
    // One push per ref.
    assert_eq!(calls(&log), ["push", "push"], "{out}");
    assert_eq!(out["outcome"], "pushed", "{out}");
    assert_eq!(out["refs"][0]["outcome"], "pushed", "{out}");
    let hub_m = env.machine_in(std::path::PathBuf::from(&hub));
    assert_eq!(hub_m.rev(SHARED), a.rev(SHARED));
    assert_eq!(hub_m.rev(MAIN), a.rev(MAIN));
}

/// A clone with a shared tick and a goal tick pinning it, both unpushed,
/// while another clone pushed a shared tick first: the sync replays the
/// shared tick onto the hub's, so the goal tick's pin is no longer on the
/// shared chain; the goal tick is replayed too (pinning the new shared
/// tip), the guarded hub takes both, nothing is lost and every ref
/// verifies everywhere.
#[test]
fn a_goal_tick_pinning_a_replayed_shared_tick_is_replayed_onto_the_new_shared_tip() {
    if !crate::common::keys::have_openssh() {
        return;
    }
    let (env, hub, api, _) = split_team();
    let a = goal_clone(&env, "a", &hub, MAIN);
    let b = goal_clone(&env, "b", &hub, MAIN);
    announce(&env, &a, "ada");
    a.agent("agent-a", &["todo", "claim", &api, "--no-sync"])
        .ok();
    let old_pin = a.rev(SHARED).unwrap();
    let claim = a.rev(MAIN).unwrap();
    let msg = a.git(&["log", "-1", "--format=%B", MAIN]);
    assert!(msg.contains(&format!("Loopx-Shared: {old_pin}")), "{msg}");
    // Another clone's shared tick reaches the hub first.
    announce(&env, &b, "bob");
    b.loopx(&["sync"]).ok();
    let hub_m = env.machine_in(std::path::PathBuf::from(&hub));
    let theirs = hub_m.rev(SHARED).unwrap();
    let out = a.loopx(&["--json", "sync"]).ok().json();
    assert_eq!(out["outcome"], "replayed", "{out}");
    assert_eq!(out["refs"][0]["ref"], SHARED, "{out}");
    assert_eq!(out["refs"][0]["outcome"], "replayed", "{out}");
    // Both refs on the hub, the shared tick on top of the other clone's,
    // the goal tick written again, pinning the new shared tip.
    let shared = hub_m.rev(SHARED).unwrap();
    assert_eq!(a.rev(SHARED).as_deref(), Some(shared.as_str()));
    assert_eq!(
        hub_m.rev(&format!("{SHARED}^")).as_deref(),
        Some(theirs.as_str())
    );
    assert_eq!(a.rev(MAIN), hub_m.rev(MAIN));
    assert_ne!(hub_m.rev(MAIN).as_deref(), Some(claim.as_str()));
    let msg = hub_m.git(&["log", "-1", "--format=%B", MAIN]);
    assert!(msg.contains(&format!("Loopx-Shared: {shared}")), "{msg}");
    assert!(!msg.contains(&old_pin), "{msg}");
    // No op lost: both signers, and the claim.
    let shared_files = names(&hub_m, SHARED);
    for s in ["signers/ada.toml", "signers/bob.toml"] {
        assert!(shared_files.contains(&s.to_owned()), "{shared_files:?}");
    }
    agent_a_claim_reaches_b(&env, &hub, &a, &b, &api);
}

/// The same, with the sync cut off between the two refs: the shared tick
/// was replayed by a sync that did not take the goal ref along; the next
/// sync of the goal ref, finding its tick's pin replaced, replays it onto
/// the new shared tip instead of pushing it (no round state needed).
#[test]
fn a_goal_tick_pinning_a_shared_tick_replayed_by_an_earlier_sync_is_replayed() {
    if !crate::common::keys::have_openssh() {
        return;
    }
    let (env, hub, api, _) = split_team();
    let a = goal_clone(&env, "a", &hub, MAIN);
    let b = goal_clone(&env, "b", &hub, MAIN);
    announce(&env, &a, "ada");
    a.agent("agent-a", &["todo", "claim", &api, "--no-sync"])
        .ok();
    let old_pin = a.rev(SHARED).unwrap();
    announce(&env, &b, "bob");
    b.loopx(&["sync"]).ok();
    // A sync of the shared ref alone (the goal ref put aside meanwhile).
    let claim = a.rev(MAIN).unwrap();
    a.git(&["update-ref", "refs/keep/main", &claim]);
    a.git(&["update-ref", "-d", MAIN]);
    a.git(&["config", "loopx.ref", SHARED]);
    let out = a.loopx(&["--json", "sync"]).ok().json();
    assert_eq!(out["outcome"], "replayed", "{out}");
    a.git(&["update-ref", MAIN, &claim]);
    a.git(&["update-ref", "-d", "refs/keep/main"]);
    a.git(&["config", "loopx.ref", MAIN]);
    let hub_m = env.machine_in(std::path::PathBuf::from(&hub));
    let shared = hub_m.rev(SHARED).unwrap();
    assert_ne!(shared, old_pin);
    assert_eq!(a.rev(SHARED).as_deref(), Some(shared.as_str()));
    // The goal ref's sync replays the claim onto the new shared tip.
    let out = a.loopx(&["--json", "sync"]).ok().json();
    assert_eq!(out["outcome"], "replayed", "{out}");
    assert_eq!(a.rev(MAIN), hub_m.rev(MAIN));
    let msg = hub_m.git(&["log", "-1", "--format=%B", MAIN]);
    assert!(msg.contains(&format!("Loopx-Shared: {shared}")), "{msg}");
    agent_a_claim_reaches_b(&env, &hub, &a, &b, &api);
}

/// A hub `update` hook (it runs per ref, after the guard) that refuses
/// the refs listed in the hub's file `refuse`, one a line: a push cut off
/// between two refs, on a real hub.
fn refuse_on(hub: &str, refs: &[&str]) {
    let hooks = std::path::Path::new(hub).join("hooks");
    let hook = hooks.join("update");
    if !hook.exists() {
        std::fs::write(
            &hook,
            "#!/bin/sh\nif [ -f refuse ] && grep -qx \"$1\" refuse; then\n  echo \"refusing $1 (test)\" >&2\n  exit 1\nfi\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let list: String = refs.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(std::path::Path::new(hub).join("refuse"), list).unwrap();
}

/// After `b` syncs, it sees agent-a's claim of `todo` (made on `a`), and
/// both clones' shared and main refs verify, as every ref on the hub.
fn agent_a_claim_reaches_b(env: &TestEnv, hub: &str, a: &Machine, b: &Machine, todo: &str) {
    b.loopx(&["sync"]).ok();
    let shown = b.loopx(&["--json", "todo", "show", todo]).ok().json();
    assert_eq!(shown["claim"]["owner"], "agent-a", "{shown}");
    all_verify(
        env,
        hub,
        &[(a, &[SHARED, MAIN][..]), (b, &[SHARED, MAIN][..])],
    );
}

/// Every ref given verifies on its machine, and every state ref on the hub.
fn all_verify(env: &TestEnv, hub: &str, machines: &[(&Machine, &[&str])]) {
    for (m, refs) in machines {
        for r in *refs {
            let v = on(m, r, None, &["--json", "verify"]).ok().json();
            assert_eq!(v["ok"], true, "{r}: {v}");
        }
    }
    // Every state ref on the hub: the shared ref and each goal ref.
    let env_hub = env.machine_in(std::path::PathBuf::from(hub));
    let listed = env_hub.git(&[
        "for-each-ref",
        "--format=%(refname)",
        SHARED,
        "refs/loopx/goals/",
    ]);
    for r in listed.lines() {
        let v = on(&env_hub, r, None, &["--json", "verify"]).ok().json();
        assert_eq!(v["ok"], true, "hub {r}: {v}");
    }
}

const DOCS: &str = "refs/loopx/goals/docs";

/// A goal `docs` added on MAIN with one todo, synced to the hub.
fn docs_on_main(env: &TestEnv) -> String {
    let doc = add_docs_on_main(env);
    env.loopx(&["sync"]).ok();
    doc
}

/// A goal `docs` added on MAIN with one todo (its id), not synced.
fn add_docs_on_main(env: &TestEnv) -> String {
    let m = env.machine();
    on(
        &m,
        MAIN,
        None,
        &["goal", "add", "docs", "--objective", "The manual"],
    )
    .ok();
    on(
        &m,
        MAIN,
        None,
        &["todo", "add", "Write the manual", "--goal", "docs"],
    )
    .ok()
    .stdout
    .trim()
    .to_owned()
}

/// A goal moved onto a ref of its own on a clone with an unpushed shared
/// tick, while another clone pushed a shared tick first: the new ref was
/// never pushed, and its first tick pins the shared tick the sync replays.
/// The sync writes the new ref's ticks again on the new shared tip (it
/// stopped with `invalid-tick` [pin] before), the guarded hub takes every
/// ref, and each verifies everywhere.
#[test]
fn a_never_pushed_goal_ref_pinning_a_replayed_shared_tick_is_written_again() {
    if !crate::common::keys::have_openssh() {
        return;
    }
    let (env, hub, _, _) = split_team();
    let doc = docs_on_main(&env);
    let m = env.machine();
    announce(&env, &m, "ada");
    let old_pin = m.rev(SHARED).unwrap();
    env.loopx(&["goal", "split", "docs"]).ok();
    let msg = m.git(&["log", "-1", "--format=%B", DOCS]);
    assert!(msg.contains(&format!("Loopx-Shared: {old_pin}")), "{msg}");
    let b = goal_clone(&env, "b", &hub, MAIN);
    announce(&env, &b, "bob");
    b.loopx(&["sync"]).ok();
    let out = env.loopx(&["--json", "sync"]).ok().json();
    assert_eq!(out["outcome"], "replayed", "{out}");
    let hub_m = env.machine_in(std::path::PathBuf::from(&hub));
    let shared = hub_m.rev(SHARED).unwrap();
    assert_eq!(m.rev(SHARED).as_deref(), Some(shared.as_str()));
    for r in [MAIN, DOCS] {
        assert_eq!(hub_m.rev(r), m.rev(r), "{r}");
        let msg = hub_m.git(&["log", "-1", "--format=%B", r]);
        assert!(
            msg.contains(&format!("Loopx-Shared: {shared}")),
            "{r}: {msg}"
        );
    }
    // The goal and its todo live on the new ref only.
    let d = goal_clone(&env, "d", &hub, DOCS);
    let listed = d.loopx(&["todo", "list"]).ok().stdout;
    assert!(listed.contains(&doc), "{listed}");
    b.loopx(&["sync"]).ok();
    let out = b.loopx(&["--json", "todo", "show", &doc]).code(1);
    assert_eq!(out.error_code(), "unknown-id", "{}", out.stdout);
    all_verify(
        &env,
        &hub,
        &[(&m, &[SHARED, MAIN, DOCS][..]), (&b, &[SHARED, MAIN][..])],
    );
}

/// A goal tick pinning a shared tick whose op the replay refused (another
/// clone announced the same signer name first, with another key): the
/// goal tick is applied and checked again on the shared parts the hub
/// holds, and pins them; no ref pins a commit the hub lacks.
#[test]
fn a_goal_tick_pinning_a_refused_shared_op_is_replayed_onto_the_hub_shared_tip() {
    if !crate::common::keys::have_openssh() {
        return;
    }
    let (env, hub, api, _) = split_team();
    let a = goal_clone(&env, "a", &hub, MAIN);
    let b = goal_clone(&env, "b", &hub, MAIN);
    announce(&env, &a, "ada");
    a.agent("agent-a", &["todo", "claim", &api, "--no-sync"])
        .ok();
    let old_pin = a.rev(SHARED).unwrap();
    // The same signer name with another key reaches the hub first: a's
    // announcement no longer applies there.
    let other = crate::common::keys::keygen(&env, "ada-elsewhere");
    on(
        &b,
        SHARED,
        None,
        &[
            "signer",
            "announce",
            "ada",
            "--key",
            &other.to_string_lossy(),
        ],
    )
    .ok();
    b.loopx(&["sync"]).ok();
    let hub_m = env.machine_in(std::path::PathBuf::from(&hub));
    let theirs = hub_m.rev(SHARED).unwrap();
    let out = a.loopx(&["--json", "sync"]);
    let hub_shared = hub_m.rev(SHARED).unwrap();
    assert_eq!(
        hub_shared, theirs,
        "a's refused announcement is not on the hub"
    );
    assert_eq!(
        a.rev(SHARED).as_deref(),
        Some(theirs.as_str()),
        "{}",
        out.stdout
    );
    assert_eq!(a.rev(MAIN), hub_m.rev(MAIN), "{}{}", out.stdout, out.stderr);
    let msg = hub_m.git(&["log", "-1", "--format=%B", MAIN]);
    assert!(msg.contains(&format!("Loopx-Shared: {theirs}")), "{msg}");
    assert!(!msg.contains(&old_pin), "{msg}");
    agent_a_claim_reaches_b(&env, &hub, &a, &b, &api);
}

/// `goal split GOAL`'s two refs reach the hub in order, the ref it leaves
/// first: cut off between them (the hub refuses one), the goal is on one
/// ref of the hub or the other's old place, never on two; the next sync
/// heals it. And when another clone wrote to the goal on the ref it
/// leaves meanwhile, the new ref is written again on top of that, so
/// nothing written there is lost.
#[test]
fn a_goal_split_cut_off_between_its_two_refs_heals_on_the_next_sync() {
    let (env, hub, _, _) = split_team();
    let doc = docs_on_main(&env);
    let m = env.machine();
    let hub_m = env.machine_in(std::path::PathBuf::from(&hub));
    // The hub refuses the ref the goal leaves: the new ref stays here.
    env.loopx(&["goal", "split", "docs"]).ok();
    refuse_on(&hub, &[MAIN]);
    let out = env.loopx(&["--json", "sync"]);
    assert_ne!(out.code, 0, "{}", out.stdout);
    assert!(hub_m.rev(DOCS).is_none(), "the new ref waits for the move");
    assert!(on_hub(&hub_m, MAIN, &doc));
    // The hub refuses the new ref: the move lands, the goal is on neither
    // ref of the hub, and nothing is lost here.
    refuse_on(&hub, &[DOCS]);
    let out = env.loopx(&["--json", "sync"]);
    assert_ne!(out.code, 0, "{}", out.stdout);
    assert_eq!(hub_m.rev(MAIN), m.rev(MAIN));
    assert!(!on_hub(&hub_m, MAIN, &doc));
    assert!(hub_m.rev(DOCS).is_none());
    // Healed by the next sync.
    refuse_on(&hub, &[]);
    env.loopx(&["sync"]).ok();
    assert_eq!(hub_m.rev(DOCS), m.rev(DOCS));
    assert!(on_hub(&hub_m, DOCS, &doc));
    all_verify(&env, &hub, &[(&m, &[SHARED, MAIN, DOCS, WEB][..])]);

    // A second move, while another clone adds a todo to the goal on the
    // ref it leaves and pushes first: the move is replayed onto that, and
    // the new ref is written again on top of it, with the todo.
    let (b, _) = guide_moved(&env, &m, &hub);
    let late = b
        .loopx(&["todo", "add", "Index the guide", "--goal", "guide"])
        .ok()
        .stdout
        .trim()
        .to_owned();
    b.loopx(&["sync"]).ok();
    env.loopx(&["sync"]).ok();
    assert_eq!(hub_m.rev(GUIDE), m.rev(GUIDE));
    assert!(
        on_hub(&hub_m, GUIDE, &late),
        "the todo added meanwhile moved too"
    );
    assert!(!on_hub(&hub_m, MAIN, &late));
    all_verify(&env, &hub, &[]);
}

/// A clone working on one goal ref that moves a goal off it pushes the
/// new ref with its own (a goal clone's sync takes every goal ref it
/// wrote and has not synced).
#[test]
fn a_goal_clone_that_moves_a_goal_pushes_the_new_ref_too() {
    let (env, hub, _, _) = split_team();
    let doc = docs_on_main(&env);
    let a = goal_clone(&env, "a", &hub, MAIN);
    a.loopx(&["goal", "split", "docs"]).ok();
    a.loopx(&["sync"]).ok();
    let hub_m = env.machine_in(std::path::PathBuf::from(&hub));
    assert_eq!(hub_m.rev(MAIN), a.rev(MAIN));
    assert_eq!(hub_m.rev(DOCS), a.rev(DOCS));
    let d = goal_clone(&env, "d", &hub, DOCS);
    let listed = d.loopx(&["todo", "list"]).ok().stdout;
    assert!(listed.contains(&doc), "{listed}");
}

/// A goal clone's sync takes the other goal refs it wrote as optional:
/// the hub refusing one of them does not fail this goal's sync, and the
/// user is told which ref was left and why.
#[test]
fn a_goal_clone_sync_says_which_other_goal_ref_it_left_and_why() {
    let (env, hub, _, _) = split_team();
    docs_on_main(&env);
    let a = goal_clone(&env, "a", &hub, MAIN);
    a.loopx(&["goal", "split", "docs"]).ok();
    refuse_on(&hub, &[DOCS]);
    let out = a.loopx(&["sync"]).ok();
    let hub_m = env.machine_in(std::path::PathBuf::from(&hub));
    assert_eq!(hub_m.rev(MAIN), a.rev(MAIN), "this goal's ref synced");
    assert!(hub_m.rev(DOCS).is_none());
    assert!(
        out.stderr
            .contains(&format!("warning: {DOCS} was not synced:"))
            && out.stderr.contains("refusing"),
        "{}",
        out.stderr
    );
    refuse_on(&hub, &[]);
    let out = a.loopx(&["sync"]).ok();
    assert!(!out.stderr.contains("was not synced"), "{}", out.stderr);
    assert_eq!(hub_m.rev(DOCS), a.rev(DOCS));
}

/// The first split, while another clone pushed a tick to the single ref
/// first: the shared ref's split is replayed onto that tick, and every new
/// goal ref is written again on top of it too (its first tick pinning the
/// replayed split), so the other clone's todo lands on its goal's ref.
#[test]
fn a_first_split_that_lost_its_race_writes_its_goal_refs_again() {
    let env = TestEnv::with_board();
    let hub = env.hub("hub.git");
    env.loopx(&["-C", &hub, "hub", "install"]).ok();
    env.git(&["remote", "add", "origin", &hub]);
    env.loopx(&["goal", "add", "web", "--objective", "The site"])
        .ok();
    env.loopx(&["sync"]).ok();
    let c = env.clone_machine("c", &hub);
    c.loopx(&["sync"]).ok();
    env.loopx(&["goal", "split"]).ok();
    let late = c
        .loopx(&["todo", "add", "Draw the logo", "--goal", "web"])
        .ok()
        .stdout
        .trim()
        .to_owned();
    c.loopx(&["sync"]).ok();
    let out = env.loopx(&["--json", "sync"]).ok().json();
    assert!(out.to_string().contains(WEB), "{out}");
    let hub_m = env.machine_in(std::path::PathBuf::from(&hub));
    let m = env.machine();
    for r in [SHARED, MAIN, WEB] {
        assert_eq!(hub_m.rev(r), m.rev(r), "{r}");
    }
    assert!(
        names(&hub_m, WEB)
            .iter()
            .any(|n| n.ends_with(&format!("{late}.toml"))),
        "the todo pushed before the split is on its goal's ref"
    );
    all_verify(&env, &hub, &[(&m, &[SHARED, MAIN, WEB][..])]);
}

/// A goal split, then 260 ticks on the ref it left before the first sync
/// (more than any fixed look-back): the split's other half is still found,
/// so a todo another clone added to the goal meanwhile moves with it to
/// the new ref, not lost on neither ref of the hub.
#[test]
fn a_goal_split_260_ticks_before_its_first_sync_still_carries_a_todo_added_meanwhile() {
    let (env, hub, _, _) = split_team();
    let m = env.machine();
    let hub_m = env.machine_in(std::path::PathBuf::from(&hub));
    let (b, _) = guide_moved(&env, &m, &hub);
    fill_main(&m, 260);
    let late = b
        .loopx(&["todo", "add", "Index the guide", "--goal", "guide"])
        .ok()
        .stdout
        .trim()
        .to_owned();
    b.loopx(&["sync"]).ok();
    let _ = env.loopx(&["sync"]);
    let _ = env.loopx(&["sync"]);
    assert!(
        on_hub(&hub_m, MAIN, &late) || on_hub(&hub_m, GUIDE, &late),
        "the todo added meanwhile is on neither ref of the hub"
    );
}

/// A goal split, then 260 ticks on the ref it left, and the hub refusing
/// that ref at the first sync: the new ref waits for the other half, so
/// the hub never holds the goal on two refs.
#[test]
fn a_goal_split_260_ticks_before_its_first_sync_never_lands_its_goal_on_two_refs() {
    let (env, hub, _, _) = split_team();
    let m = env.machine();
    let hub_m = env.machine_in(std::path::PathBuf::from(&hub));
    let (b, first) = guide_moved(&env, &m, &hub);
    fill_main(&m, 260);
    b.loopx(&["todo", "add", "Something on main", "--goal", "main"])
        .ok();
    b.loopx(&["sync"]).ok();
    refuse_on(&hub, &[MAIN]);
    let _ = env.loopx(&["sync"]);
    assert!(
        !(on_hub(&hub_m, MAIN, &first) && on_hub(&hub_m, GUIDE, &first)),
        "goal guide on two refs of the hub"
    );
}

/// Goal `guide`, with one todo, added on `main` by `m` and synced to the
/// hub and to a second goal clone `b` of `main`; then `m` moves it onto a
/// ref of its own (not synced yet). Returns `b` and the todo's id.
fn guide_moved<'e>(env: &'e TestEnv, m: &Machine, hub: &str) -> (Machine<'e>, String) {
    let b = goal_clone(env, "b", hub, MAIN);
    on(
        m,
        MAIN,
        None,
        &["goal", "add", "guide", "--objective", "The guide"],
    )
    .ok();
    let first = on(
        m,
        MAIN,
        None,
        &["todo", "add", "Outline the guide", "--goal", "guide"],
    )
    .ok()
    .stdout
    .trim()
    .to_owned();
    env.loopx(&["sync"]).ok();
    b.loopx(&["sync"]).ok();
    env.loopx(&["goal", "split", "guide"]).ok();
    (b, first)
}

/// `n` todos added to goal `main` on its ref by `m`, one tick each.
fn fill_main(m: &Machine, n: usize) {
    for i in 0..n {
        on(
            m,
            MAIN,
            None,
            &["todo", "add", &format!("Filler {i}"), "--goal", "main"],
        )
        .ok();
    }
}

/// Where goal `guide` lives once moved off `main`.
const GUIDE: &str = "refs/loopx/goals/guide";

/// Whether the hub's `r` holds the todo `todo`.
fn on_hub(hub_m: &Machine, r: &str, todo: &str) -> bool {
    hub_m.rev(r).is_some()
        && names(hub_m, r)
            .iter()
            .any(|n| n.ends_with(&format!("{todo}.toml")))
}

/// A guarded hub takes a new goal ref only as the goal-ref half of a split
/// whose other half it holds (issue 41 item 6e). Pushed with plain git
/// over `file://`, each a chain of valid ticks: a copy of a goal's ref
/// under another name, a copy of the shared ref's chain, the single-ref
/// state from before the split, a state with its own root, and a goal
/// moved onto its own ref before the tick dropping it from its old ref.
/// Each is refused (`hub-goal-ref`, exit 3) and nothing moves; then
/// `loopx sync` pushes the move in order and the hub takes it.
#[test]
fn the_hub_takes_a_new_goal_ref_only_as_the_half_of_a_split() {
    let (env, hub, _, _) = split_team();
    let m = env.machine();
    let hub_m = env.machine_in(std::path::PathBuf::from(&hub));
    m.git(&["remote", "add", "forge", &format!("file://{hub}")]);
    let hub_refs = || hub_m.git(&["for-each-ref", "refs/loopx/"]);
    let before = hub_refs();
    // A state with its own root, fetched here under a branch.
    let other = TestEnv::with_board();
    other.add("Another project", &[]);
    m.git(&[
        "fetch",
        "-q",
        &other.repo.to_string_lossy(),
        "refs/loopx/state:refs/heads/other",
    ]);
    // A goal moved onto its own ref, here only: both halves written.
    add_docs_on_main(&env);
    env.loopx(&["goal", "split", "docs"]).ok();
    let forged = [
        (
            format!("{MAIN}:refs/loopx/goals/copy"),
            "keeps goal main, not copy",
        ),
        (
            format!("{WEB}:refs/loopx/goals/main2"),
            "keeps goal web, not main2",
        ),
        (
            format!("{SHARED}:refs/loopx/goals/shared"),
            "no tick of its history splits a goal off",
        ),
        (
            format!("{SHARED}^:refs/loopx/goals/before"),
            "no tick of its history splits a goal off",
        ),
        (
            "refs/heads/other:refs/loopx/goals/other".to_owned(),
            "no tick of its history splits a goal off",
        ),
        (
            format!("{DOCS}:{DOCS}"),
            "the other half of that split (the tick dropping the goal there) is not on this hub",
        ),
    ];
    for (refspec, why) in &forged {
        let (ok, err) = crate::common::forge::push(&m, "forge", refspec);
        assert!(!ok, "{refspec} was taken: {err}");
        assert!(
            err.contains("is not the goal-ref half of a split") && err.contains(why),
            "{refspec}: {err}"
        );
        assert_eq!(hub_refs(), before, "{refspec} moved a hub ref");
    }
    // The guard's own verdict: exit 3, `hub-goal-ref`.
    let main_tip = hub_m.rev(MAIN).unwrap();
    let mut c = env.command();
    c.args(["-C", &hub, "--json", "hub", "pre-receive"]);
    let line = format!("{} {main_tip} refs/loopx/goals/copy\n", "0".repeat(40));
    let out = run_stdin(&mut c, line.as_bytes()).code(3);
    assert_eq!(out.error_code(), "hub-goal-ref", "{}", out.stdout);
    // Honest work goes on: `loopx sync` pushes the ref the goal leaves
    // first, then its new ref, and the hub takes both.
    env.loopx(&["sync"]).ok();
    for r in [SHARED, MAIN, WEB, DOCS] {
        assert_eq!(hub_m.rev(r), m.rev(r), "{r}");
        let v = on(&hub_m, r, None, &["--json", "verify"]).ok().json();
        assert_eq!(v["ok"], true, "hub {r}: {v}");
    }
}
