//! Sync across machines over real git remotes: bare hubs in the temp dir,
//! clones made with `git clone`, a `git daemon` on 127.0.0.1, and agents on
//! several machines racing through them.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::common::daemon::{Daemon, free_port};
use crate::common::{Machine, Output, TestEnv, assert_text, isolate, run, run_stdin};

/// A board (goal `main`, agents `agent-a` and `agent-b`) pushed to a fresh
/// hub as remote `origin`.
fn team() -> (TestEnv, String) {
    let env = TestEnv::with_board();
    let hub = env.hub("hub.git");
    env.git(&["remote", "add", "origin", &hub]);
    env.loopx(&["sync"]).ok();
    (env, hub)
}

/// Replaces every `<prefix>-<hex>` id in `text` by `<prefix>-<id>`.
fn mask(text: &str, prefix: &str) -> String {
    let pat = format!("{prefix}-");
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(&pat) {
        out.push_str(&rest[..i + pat.len()]);
        rest = &rest[i + pat.len()..];
        let hex = rest
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(rest.len());
        if hex >= 8 {
            out.push_str("<id>");
            rest = &rest[hex..];
        }
    }
    out.push_str(rest);
    out
}

/// Runs git in `dir` with extra environment; panics on failure.
fn git_env(dir: &Path, root: &Path, args: &[&str], envs: &[(&str, &str)]) -> String {
    let mut c = Command::new("git");
    isolate(&mut c, root);
    c.args(args).current_dir(dir);
    for (k, v) in envs {
        c.env(k, v);
    }
    let out = c.output().expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Commits onto the state ref by hand, as plain git would: writes `path`
/// (or removes it, with None), with `message`. Returns the commit.
fn hand_commit(
    env: &TestEnv,
    m: &Machine,
    path: &str,
    bytes: Option<&[u8]>,
    message: &str,
) -> String {
    let index = env.root().join("hand-index");
    let index = index.to_str().expect("utf-8 path");
    let who = [
        ("GIT_INDEX_FILE", index),
        ("GIT_AUTHOR_NAME", "Hand Editor"),
        ("GIT_AUTHOR_EMAIL", "hand@example.com"),
        ("GIT_COMMITTER_NAME", "Hand Editor"),
        ("GIT_COMMITTER_EMAIL", "hand@example.com"),
    ];
    let g = |args: &[&str]| git_env(&m.repo, env.root(), args, &who);
    g(&["read-tree", "refs/loopx/state"]);
    match bytes {
        Some(b) => {
            let file = env.root().join("hand-blob");
            std::fs::write(&file, b).expect("write blob");
            let blob = g(&["hash-object", "-w", file.to_str().expect("utf-8")]);
            g(&[
                "update-index",
                "--add",
                "--cacheinfo",
                &format!("100644,{blob},{path}"),
            ]);
        }
        None => {
            g(&["update-index", "--force-remove", path]);
        }
    }
    let tree = g(&["write-tree"]);
    let commit = g(&[
        "commit-tree",
        &tree,
        "-p",
        "refs/loopx/state",
        "-m",
        message,
    ]);
    g(&["update-ref", "refs/loopx/state", &commit]);
    let _ = std::fs::remove_file(index);
    commit
}

/// The op id of every tick on `rev`, and the op ids named by its
/// sync-rejected records, newest first.
fn history_ops(m: &Machine, rev: &str) -> (Vec<String>, Vec<String>) {
    let log = m.git(&["log", "--format=%x00%B", rev]);
    let mut ops = Vec::new();
    let mut rejected = Vec::new();
    for msg in log.split('\0').filter(|s| !s.trim().is_empty()) {
        if let Some(id) = msg
            .lines()
            .find_map(|l| l.strip_prefix("id = \"").and_then(|r| r.strip_suffix('"')))
        {
            ops.push(id.to_owned());
        }
        // The op is named in the record's summary (the subject may cut it).
        if msg.contains("kind = \"sync-rejected\"")
            && let Some(summary) = msg.lines().find(|l| l.starts_with("summary = \""))
            && let Some(at) = summary.find("(op o-")
        {
            let id: String = summary[at + 4..]
                .chars()
                .take_while(|c| *c == 'o' || *c == '-' || c.is_ascii_hexdigit())
                .collect();
            rejected.push(id);
        }
    }
    (ops, rejected)
}

/// The op id of the tick at the tip of the state in `repo`.
fn tip_op(repo: &Path, root: &Path) -> String {
    let msg = git_env(
        repo,
        root,
        &["log", "-1", "--format=%B", "refs/loopx/state"],
        &[],
    );
    msg.lines()
        .find_map(|l| l.strip_prefix("id = \"").and_then(|r| r.strip_suffix('"')))
        .expect("the tip is a tick")
        .to_owned()
}

/// `2024-12-02THH:MM:SSZ` plus 45 minutes, the default lease.
fn plus_45m(t: &str) -> String {
    let h: i64 = t[11..13].parse().unwrap();
    let m: i64 = t[14..16].parse().unwrap();
    let total = h * 60 + m + 45;
    format!(
        "{}{:02}:{:02}{}",
        &t[..11],
        total / 60,
        total % 60,
        &t[16..]
    )
}

#[test]
fn a_first_sync_pushes_to_an_empty_hub_and_a_clone_adopts_it() {
    let env = TestEnv::with_board();
    let hub = env.hub("hub.git");
    env.git(&["remote", "add", "origin", &hub]);
    let out = env.loopx(&["sync"]).ok();
    assert_text(&out.stdout, "Pushed 3 ticks (origin, tick 3).\n");
    let a = env.machine();
    let tip = a.tip().unwrap();
    assert_eq!(
        a.rev("refs/loopx/synced/origin").as_deref(),
        Some(tip.as_str())
    );
    assert_eq!(
        a.rev("refs/loopx/remotes/origin/state").as_deref(),
        Some(tip.as_str())
    );

    // A clone has no state: its first sync adopts the hub's.
    let b = env.clone_machine("b", &hub);
    assert_eq!(b.tip(), None);
    let out = b.loopx(&["sync", "--json"]).ok();
    assert_text(
        &env.normalize(&out.stdout),
        "{\"remote\":\"origin\",\"outcome\":\"pulled\",\"pulled\":3,\"pushed\":0,\"replayed\":0,\"rejected\":[],\"tick\":3,\"commit\":\"<commit>\",\"rounds\":1}\n",
    );
    assert_eq!(b.tip(), a.tip());
    let out = b.loopx(&["sync"]).ok();
    assert_text(&out.stdout, "Up to date with origin (tick 3).\n");

    // Ahead: push. Behind: fast-forward.
    b.add("From b");
    b.add("From b again");
    let out = b.loopx(&["sync"]).ok();
    assert_text(&out.stdout, "Pushed 2 ticks (origin, tick 5).\n");
    let out = env.loopx(&["sync"]).ok();
    assert_text(&out.stdout, "Pulled 2 ticks (origin, tick 5).\n");
    assert_eq!(a.tip(), b.tip());
    // loopx touched no branch, no HEAD, no worktree.
    assert_text(&b.git(&["status", "--porcelain"]), "");
    assert_text(
        &b.git(&["for-each-ref", "--format=%(refname)", "refs/heads"]),
        "",
    );
}

/// Machine `b`: a clone of `hub` made after the environment's machine
/// synced, so both hold the same state.
fn second_machine<'e>(env: &'e TestEnv, hub: &str) -> Machine<'e> {
    env.loopx(&["sync"]).ok();
    let b = env.clone_machine("b", hub);
    b.loopx(&["sync"]).ok();
    b
}

/// agent-a claims `t` and syncs; agent-b, on `b`, which has not synced
/// since, claims it too: b holds a claim the hub will refuse.
fn claims_crossed(env: &TestEnv, b: &Machine, t: &str) {
    env.agent("agent-a", &["todo", "claim", t]).ok();
    env.loopx(&["sync"]).ok();
    b.agent("agent-b", &["todo", "claim", t]).ok();
}

#[test]
fn diverged_ticks_replay_on_the_remote_tip_and_a_lost_claim_is_recorded() {
    let (env, hub) = team();
    let a = env.machine();
    let t = env.add("Contested", &[]);
    let b = second_machine(&env, &hub);

    env.agent("agent-a", &["todo", "claim", &t]).ok();
    env.loopx(&["sync"]).ok();
    // b has not seen agent-a's claim: its own claim lands locally.
    b.agent("agent-b", &["todo", "claim", &t]).ok();
    let u = b.add("Other");
    let before = b.tip().unwrap();
    let out = b.agent("agent-b", &["sync"]).code(4);
    assert_text(
        &mask(&out.stdout.replace(&t, "T"), "e"),
        "Pulled 1 tick, pushed 2, replayed 1, rejected 1 (origin, tick 7).\n\
         Rejected todo.claim T by agent-b: T is not ready: agent-a holds it until 2024-12-02T09:52:00Z (recorded as e-<id>)\n",
    );
    // One linear chain: the remote's tick, then the record of the lost
    // claim, then the replayed add, each numbered on.
    let log = b.git(&[
        "log",
        "--format=%s|%(trailers:key=Loopx-Tick,valueonly,separator=)|%(trailers:key=Loopx-Replayed-From,valueonly,separator=)|%(trailers:key=Loopx-Rejected-From,valueonly,separator=)",
        "-4",
        "refs/loopx/state",
    ]);
    let before_claim = b.rev(&format!("{before}~1")).unwrap();
    // The trailers name the ops, which every clone has (not b's commits).
    let op_of = |rev: &str| {
        b.git(&["log", "-1", "--format=%b", rev])
            .lines()
            .find_map(|l| {
                l.strip_prefix("id = \"")
                    .map(|v| v.trim_end_matches('"').to_owned())
            })
            .unwrap()
    };
    let (before, before_claim) = (op_of(&before), op_of(&before_claim));
    assert_text(
        &mask(
            &log.replace(&t, "T")
                .replace(&u, "U")
                .replace(&before, "<b-add>")
                .replace(&before_claim, "<b-claim>"),
            "e",
        ),
        "add U \"Other\" — b|7|<b-add>|\n\
         evidence e-<id> sync-rejected on T: \"todo.claim lost: T is not ready: agent-a holds it …\" — agent-b|6||<b-claim>\n\
         claim T \"Contested\" — agent-a|5||\n\
         add T \"Contested\" — Ada Lovelace|4||\n",
    );
    assert_text(&b.git(&["rev-list", "--merges", "refs/loopx/state"]), "");
    // The replayed tick keeps the op's own time and actor.
    assert_text(
        &b.git(&[
            "log",
            "-1",
            "--format=%an %ad",
            "--date=iso-strict",
            "refs/loopx/state",
        ]),
        "b 2024-12-02T09:10:00Z\n",
    );
    let v = b.loopx(&["todo", "show", &t, "--json"]).ok().json();
    assert_eq!(v["claim"]["owner"], "agent-a");
    let out = b.loopx(&["evidence", "list", "--todo", &t, "--json"]).ok();
    let records = out.json();
    let rec = &records["evidence"][0];
    assert_eq!(rec["kind"], "sync-rejected", "{}", out.stdout);
    assert_eq!(rec["by"], "agent:agent-b");
    assert_eq!(rec["at"], "2024-12-02T09:09:00Z");
    assert_eq!(rec["passed"], false);

    // The other machine pulls both; the trees agree.
    let out = env.loopx(&["sync"]).ok();
    assert_text(&out.stdout, "Pulled 2 ticks (origin, tick 7).\n");
    assert_eq!(a.tree(), b.tree());
}

#[test]
fn sync_json_lists_each_rejected_op() {
    let (env, hub) = team();
    let t = env.add("Contested", &[]);
    let b = second_machine(&env, &hub);
    claims_crossed(&env, &b, &t);
    // A human's sync reports agent-b's loss but exits 0: it was not theirs.
    let out = b.loopx(&["sync", "--json"]).ok();
    let v = out.json();
    assert_eq!(v["outcome"], "replayed");
    assert_eq!(v["pulled"], 1);
    assert_eq!(v["pushed"], 1, "the record of the loss");
    assert_eq!(v["replayed"], 0);
    let r = &v["rejected"][0];
    assert_eq!(r["kind"], "todo.claim");
    assert_eq!(r["actor"], "agent:agent-b");
    assert_eq!(r["todo"], t.as_str());
    assert_eq!(r["code"], "claimed");
    assert_eq!(r["winner"], "agent-a");
    assert!(
        r["evidence"].as_str().unwrap().starts_with("e-"),
        "{}",
        out.stdout
    );
    assert!(
        r["op"].as_str().unwrap().starts_with("o-"),
        "{}",
        out.stdout
    );
    assert_eq!(r["commit"].as_str().unwrap().len(), 40);
}

#[test]
fn a_sync_that_stopped_after_its_push_is_finished_without_duplicates() {
    let (env, hub) = team();
    let t = env.add("Contested", &[]);
    let b = second_machine(&env, &hub);
    claims_crossed(&env, &b, &t);
    b.add("Kept");
    // b as it was before its sync: as if that sync had pushed, then died
    // before it moved b's own ref.
    let copy = env.root().join("b-copy");
    let status = Command::new("cp")
        .args(["-r", b.repo.to_str().unwrap(), copy.to_str().unwrap()])
        .status()
        .expect("cp runs");
    assert!(status.success());
    b.agent("agent-b", &["sync"]).code(4);
    let c = env.machine_in(copy);
    let out = c.agent("agent-b", &["sync", "--json"]).ok();
    let v = out.json();
    assert_eq!(v["outcome"], "pulled", "{}", out.stdout);
    assert_eq!(
        v["pulled"], 1,
        "agent-a's claim; the other two ticks are its own"
    );
    assert_eq!(v["rejected"], serde_json::json!([]));
    assert_eq!(c.tip(), b.tip());
    let (ops, rejected) = history_ops(&c, "refs/loopx/state");
    assert_eq!(rejected.len(), 1, "the loss is recorded once");
    let mut unique = ops.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ops.len(), "no op applied twice");
}

#[test]
fn claim_sync_counts_only_once_pushed_and_the_loser_is_told_who_won() {
    let (env, hub) = team();
    let t = env.add("Contested", &[]);
    let b = second_machine(&env, &hub);

    let out = env.agent("agent-a", &["todo", "claim", &t, "--sync"]).ok();
    assert_text(
        &out.stdout.replace(&t, "T"),
        "Claimed T \"Contested\" until 2024-12-02T09:52:00Z (epoch 1).\n",
    );
    assert_text(&out.stderr, "Pushed 1 tick (origin, tick 5).\n");
    // b syncs before claiming: it sees agent-a's claim and loses at once.
    let out = b.agent("agent-b", &["todo", "claim", &t, "--sync"]).code(4);
    assert!(out.stderr.contains("agent-a holds it"), "{}", out.stderr);
    assert!(
        out.stderr.contains("hint: agent-a won it"),
        "{}",
        out.stderr
    );

    // git config loopx.claimSync=true makes --sync the default, and the
    // JSON output carries the sync.
    let u = env.add("Second", &[]);
    env.loopx(&["sync"]).ok();
    b.git(&["config", "loopx.claimSync", "true"]);
    let out = b.agent("agent-b", &["todo", "claim", &u, "--json"]).ok();
    let v = out.json();
    assert_eq!(v["todo"]["owner"], "agent-b");
    assert_eq!(v["sync"]["outcome"], "pushed");
    assert_eq!(v["sync"]["pushed"], 1);
    assert_eq!(v["commit"].as_str(), b.tip().as_deref());
    assert_eq!(b.rev("refs/loopx/remotes/origin/state"), b.tip());
    // --no-sync overrides it.
    let w = b.add("Third");
    b.agent("agent-b", &["todo", "claim", &w, "--no-sync"]).ok();
    assert_ne!(b.rev("refs/loopx/remotes/origin/state"), b.tip());
}

/// Writes a `git` wrapper into `<tmp>/<dir>/git` that runs `hook` (a shell
/// snippet) before some network commands, then the real git. Returns the
/// PATH to use.
fn git_wrapper(env: &TestEnv, dir: &str, script: &str) -> String {
    let real = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|p| p.join("git"))
        .find(|p| p.is_file())
        .expect("git on PATH");
    let bin = env.root().join(dir);
    std::fs::create_dir_all(&bin).expect("mkdir");
    let path = bin.join("git");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nREAL_GIT='{}'\n{script}\nexec \"$REAL_GIT\" \"$@\"\n",
            real.display()
        ),
    )
    .expect("write wrapper");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// `todo claim --next --sync` as agent-b on `b`, whose first push first
/// lets agent-a claim `t` (with `--sync`, dated 30 s earlier) from the
/// environment's machine. Returns the file counting b's pushes, agent-a's
/// time, and b's claim.
fn claim_next_losing_the_race(
    env: &TestEnv,
    b: &Machine,
    t: &str,
) -> (std::path::PathBuf, String, Output) {
    let count = env.root().join("pushes");
    let path = git_wrapper(
        env,
        "bin-b",
        &format!(
            "case \" $* \" in *\" push \"*)\n  n=$(cat '{count}' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '{count}'\n  if [ $n -eq 1 ]; then (cd '{a}' && PATH=\"$REAL_PATH\" LOOPX_AGENT=agent-a LOOPX_NOW=\"$A_NOW\" '{loopx}' todo claim --sync '{t}' >/dev/null 2>&1); fi;;\nesac",
            count = count.display(),
            a = env.repo.display(),
            loopx = env!("CARGO_BIN_EXE_loopx"),
        ),
    );
    let a_now = env.now();
    env.advance(30);
    let out = run(b
        .command()
        .env("PATH", &path)
        .env("REAL_PATH", std::env::var("PATH").unwrap_or_default())
        .env("A_NOW", &a_now)
        .env("LOOPX_AGENT", "agent-b")
        .args(["todo", "claim", "--next", "--sync"]));
    (count, a_now, out)
}

#[test]
fn a_claim_that_loses_after_the_push_race_exits_4_naming_the_winner() {
    let (env, hub) = team();
    let t = env.add("Contested", &[]);
    let b = second_machine(&env, &hub);
    // b's push of its claim (expecting the hub where b's sync left it)
    // first lets agent-a claim and push from the other machine: the race,
    // made certain. b's push is refused; only then does b fetch again.
    let (count, a_now, out) = claim_next_losing_the_race(&env, &b, &t);
    let out = out.code(4);
    assert_text(
        &mask(&out.stderr.replace(&t, "T"), "e"),
        &format!(
            "error: the claim of T lost on origin: T is not ready: agent-a holds it until {}\n\
             hint: agent-a won it; your claim is recorded as e-<id>; pick another with `loopx todo list --ready`\n",
            plus_45m(&a_now)
        ),
    );
    assert_eq!(std::fs::read_to_string(&count).unwrap().trim(), "2");
    let v = b.loopx(&["todo", "show", &t, "--json"]).ok().json();
    assert_eq!(v["claim"]["owner"], "agent-a");
    // The hub holds the loss too.
    assert_eq!(b.rev("refs/loopx/remotes/origin/state"), b.tip());
}

#[test]
fn a_next_claim_that_loses_the_push_race_picks_again_from_the_hubs_state() {
    let (env, hub) = team();
    let t = env.add("Contested", &["--priority", "P0"]);
    let u = env.add("Still free", &["--priority", "P1"]);
    let b = second_machine(&env, &hub);
    // As above: agent-a claims T from the other machine just before b's
    // first push, so b's pick (T, the most urgent) loses on the hub.
    let (count, _, out) = claim_next_losing_the_race(&env, &b, &t);
    let out = out.ok();
    assert_eq!(out.stdout.trim(), u, "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "(the claim of {t} lost on origin: {t} is not ready: agent-a holds it"
        )) && out.stderr.contains("picked again)"),
        "{}",
        out.stderr
    );
    // The lost claim's push, then the new claim's: no fetch before either
    // unless refused.
    assert_eq!(std::fs::read_to_string(&count).unwrap().trim(), "3");
    let v = b.loopx(&["todo", "show", &u, "--json"]).ok().json();
    assert_eq!(v["claim"]["owner"], "agent-b");
    let v = b.loopx(&["todo", "show", &t, "--json"]).ok().json();
    assert_eq!(v["claim"]["owner"], "agent-a");
    assert_eq!(b.rev("refs/loopx/remotes/origin/state"), b.tip());
}

#[test]
fn a_claim_decided_on_a_stale_state_fetches_once_when_refused_here() {
    // A todo added on the hub after this clone's last sync: the claim by
    // its id is refused on the local state, which then takes the hub's and
    // decides again.
    let (env, hub) = team();
    let b = second_machine(&env, &hub);
    let t = env.add("Added later", &[]);
    env.loopx(&["sync"]).ok();
    let out = b.agent("agent-b", &["todo", "claim", &t, "--sync"]).ok();
    assert!(
        out.stdout.starts_with(&format!("Claimed {t}")),
        "{}",
        out.stdout
    );
    // An id that exists nowhere is still refused, after that one fetch.
    let out = b
        .agent("agent-b", &["todo", "claim", "t-00000000", "--sync"])
        .code(1);
    assert!(out.stderr.contains("t-00000000"), "{}", out.stderr);
}

/// Runs one cross-machine claim race per round over `url`: agent-a on one
/// machine and agent-b on another claim the same todo with --sync at once.
fn claim_race(env: &TestEnv, a: &Machine, b: &Machine, rounds: usize) {
    for round in 0..rounds {
        let t = a.add(&format!("contested {round}"));
        a.loopx(&["sync"]).ok();
        b.loopx(&["sync"]).ok();
        let outs: Vec<(&str, Output)> = std::thread::scope(|s| {
            let hs: Vec<_> = [("agent-a", a.spawner()), ("agent-b", b.spawner())]
                .into_iter()
                .map(|(agent, sp)| {
                    let t = t.clone();
                    s.spawn(move || {
                        let out = run(sp
                            .command()
                            .env("LOOPX_AGENT", agent)
                            .args(["todo", "claim", &t, "--sync"]));
                        (agent, out)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().expect("thread")).collect()
        });
        let winners: Vec<&str> = outs
            .iter()
            .filter(|(_, o)| o.code == 0)
            .map(|(a, _)| *a)
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: {outs:#?}");
        let winner = winners[0];
        for (agent, o) in &outs {
            if *agent != winner {
                assert_eq!(o.code, 4, "round {round}, {agent}: {o:#?}");
                assert!(
                    o.stderr.contains(&format!("{winner} holds it")),
                    "round {round}, {agent} is told who won: {}",
                    o.stderr
                );
            }
        }
        a.loopx(&["sync"]).ok();
        b.loopx(&["sync"]).ok();
        assert_eq!(a.tree(), b.tree(), "round {round}");
        let v = a.loopx(&["todo", "show", &t, "--json"]).ok().json();
        assert_eq!(v["claim"]["owner"], winner, "round {round}");
        assert_eq!(v["epoch"], 1, "round {round}: one claim counted");
    }
    let _ = env;
}

#[test]
fn a_cross_machine_claim_race_has_exactly_one_winner() {
    let (env, hub) = team();
    let b = env.clone_machine("b", &hub);
    b.loopx(&["sync"]).ok();
    claim_race(&env, &env.machine(), &b, 3);
}

#[test]
fn over_the_git_protocol_a_claim_race_has_one_winner_too() {
    let env = TestEnv::with_board();
    env.hub("hub.git");
    let daemon = Daemon::start(&env);
    let url = daemon.url("hub.git");
    env.git(&["remote", "add", "origin", &url]);
    let out = env.loopx(&["sync"]).ok();
    assert_text(&out.stdout, "Pushed 3 ticks (origin, tick 3).\n");
    let b = env.clone_machine("b", &url);
    let out = b.loopx(&["sync"]).ok();
    assert_text(&out.stdout, "Pulled 3 ticks (origin, tick 3).\n");
    claim_race(&env, &env.machine(), &b, 2);
    // Ending the daemon ends its `git-daemon` child too.
    let base = format!("--base-path={}", env.root().display());
    drop(daemon);
    let left: Vec<String> = std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&base))
        .collect();
    assert!(left.is_empty(), "still serving: {left:?}");
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

#[test]
fn three_clones_tick_concurrently_sync_in_random_order_and_lose_nothing() {
    const ROUNDS: usize = 8;
    let (env, hub) = team();
    env.loopx(&["agent", "register", "agent-c"]).ok();
    let todos: Vec<String> = (0..4)
        .map(|i| env.add(&format!("shared {i}"), &[]))
        .collect();
    env.loopx(&["sync"]).ok();
    let machines = [
        env.machine(),
        env.clone_machine("m1", &hub),
        env.clone_machine("m2", &hub),
    ];
    for m in &machines[1..] {
        m.loopx(&["sync"]).ok();
    }
    let agents = ["agent-a", "agent-b", "agent-c"];
    // From the clock, or LOOPX_TEST_SEED to repeat a failing run's plan
    // (the threads' timing still varies).
    let seed = std::env::var("LOOPX_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        })
        | 1;
    let mut rng = Rng(seed);
    // Per machine: the op ids of its ticks, and the rejections its syncs
    // reported.
    let mut local_ops: Vec<Vec<String>> = vec![Vec::new(); 3];
    let mut reported_rejections = 0usize;
    for round in 0..ROUNDS {
        // The plan, drawn here so the seed repeats it: per machine a delay
        // and a few actions.
        let plans: Vec<(u64, Vec<(usize, usize)>)> = (0..3)
            .map(|_| {
                let delay = rng.below(40) as u64;
                let n = 1 + rng.below(3);
                (
                    delay,
                    (0..n)
                        .map(|_| (rng.below(5), rng.below(todos.len())))
                        .collect(),
                )
            })
            .collect();
        let results: Vec<(Vec<String>, Output)> = std::thread::scope(|s| {
            let hs: Vec<_> = machines
                .iter()
                .zip(plans)
                .enumerate()
                .map(|(i, (m, (delay, actions)))| {
                    let sp = m.spawner();
                    let (repo, root) = (m.repo.clone(), env.root().to_path_buf());
                    let agent = agents[i];
                    let todos = &todos;
                    s.spawn(move || {
                        let mut ops = Vec::new();
                        for (k, (what, which)) in actions.into_iter().enumerate() {
                            let t = todos[which].as_str();
                            let title = format!("m{i} r{round} #{k}");
                            let args: Vec<&str> = match what {
                                0 => vec!["todo", "add", &title],
                                1 | 2 => vec!["todo", "claim", t],
                                3 => vec!["todo", "update", t, "--note", &title],
                                _ => vec!["todo", "release", t],
                            };
                            let out = run(sp.command().env("LOOPX_AGENT", agent).args(&args));
                            if out.code == 0 {
                                ops.push(tip_op(&repo, &root));
                            } else {
                                assert!(
                                    matches!(out.code, 3 | 4),
                                    "seed {seed}, m{i} {args:?}: {out:#?}"
                                );
                            }
                        }
                        std::thread::sleep(Duration::from_millis(delay));
                        let out = run(sp
                            .command()
                            .env("LOOPX_AGENT", agent)
                            .args(["sync", "--json"]));
                        (ops, out)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().expect("thread")).collect()
        });
        for (i, (ops, out)) in results.into_iter().enumerate() {
            local_ops[i].extend(ops);
            // 4: one of the agent's own ops lost; the report is still
            // printed.
            assert!(
                matches!(out.code, 0 | 4),
                "seed {seed}, m{i} sync: {out:#?}"
            );
            let v = out.json();
            assert!(v.get("error").is_none(), "seed {seed}, m{i} sync: {out:#?}");
            reported_rejections += v["rejected"].as_array().map_or(0, Vec::len);
        }
    }
    // Quiet now: two passes bring every machine to the same tip.
    for _ in 0..2 {
        for m in &machines {
            let out = m.loopx(&["sync", "--json"]);
            assert!(matches!(out.code, 0 | 4), "seed {seed}: {out:#?}");
            reported_rejections += out.json()["rejected"].as_array().map_or(0, Vec::len);
        }
    }
    let tree = machines[0].tree();
    for (i, m) in machines.iter().enumerate() {
        assert_eq!(m.tree(), tree, "seed {seed}: m{i} converged");
        assert_eq!(
            m.tip(),
            machines[0].tip(),
            "seed {seed}: m{i} on the same tip"
        );
    }
    // Count: every local op is in the history exactly once, either applied
    // or named by a sync-rejected record; nothing is applied twice.
    let (applied, rejected) = history_ops(&machines[0], "refs/loopx/state");
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for id in &applied {
        *seen.entry(id.as_str()).or_default() += 1;
    }
    assert!(
        seen.values().all(|n| *n == 1),
        "seed {seed}: an op was applied twice"
    );
    let mut lost = Vec::new();
    let mut total = 0;
    for (i, ops) in local_ops.iter().enumerate() {
        for op in ops {
            total += 1;
            let a = applied.iter().filter(|x| *x == op).count();
            let r = rejected.iter().filter(|x| *x == op).count();
            if a + r != 1 {
                lost.push(format!("m{i} {op}: applied {a}, rejected {r}"));
            }
        }
    }
    assert!(lost.is_empty(), "seed {seed}: {lost:#?}");
    assert_eq!(
        rejected.len(),
        reported_rejections,
        "seed {seed}: every rejection recorded was reported, and only those"
    );
    assert!(total > 0, "seed {seed}");
    // The hub holds that same state.
    assert_eq!(
        machines[0].rev("refs/loopx/remotes/origin/state"),
        machines[0].tip()
    );
    let _ = hub;
}

#[test]
fn the_same_divergence_replays_to_the_same_tree_on_two_machines() {
    let (env, hub) = team();
    let t1 = env.add("First", &[]);
    let t2 = env.add("Second", &[]);
    env.loopx(&["sync"]).ok();
    let a = env.clone_machine("a", &hub);
    let b = env.clone_machine("b", &hub);
    // Same human, different committer: commit ids differ, trees must not.
    b.git(&["config", "user.name", "a"]);
    b.git(&["config", "user.email", "a@example.com"]);
    b.git(&["config", "committer.name", "Someone Else"]);
    a.loopx(&["sync"]).ok();
    b.loopx(&["sync"]).ok();
    // The hub moves on: agent-a claims the first todo.
    env.agent("agent-a", &["todo", "claim", &t1]).ok();
    env.loopx(&["sync"]).ok();
    // The same local ops on both machines, at the same instants, same seed.
    for m in [&a, &b] {
        let at = |s: &str| format!("2024-12-02T10:{s}Z");
        let step = |now: &str, agent: Option<&str>, args: &[&str]| {
            let mut c = m.command();
            c.env("LOOPX_NOW", at(now));
            if let Some(ag) = agent {
                c.env("LOOPX_AGENT", ag);
            }
            run(c.args(args)).ok();
        };
        step("00:00", Some("agent-b"), &["todo", "claim", &t1]);
        step("01:00", Some("agent-b"), &["todo", "claim", &t2]);
        step("02:00", None, &["todo", "add", "Third"]);
        step(
            "03:00",
            Some("agent-b"),
            &["evidence", "add", "--todo", &t2, "--summary", "looked"],
        );
        step(
            "04:00",
            Some("agent-b"),
            &["todo", "update", &t1, "--note", "too late"],
        );
    }
    // Both replay onto the same remote tip: b against a copy of the hub.
    let copy = env.root().join("hub-copy.git");
    let status = Command::new("cp")
        .args(["-r", &hub, copy.to_str().unwrap()])
        .status()
        .expect("cp runs");
    assert!(status.success());
    b.git(&["remote", "set-url", "origin", copy.to_str().unwrap()]);
    // Sync after those instants (a tick dated in a machine's future is
    // refused there).
    env.advance(3600);
    let out_a = a.loopx(&["sync", "--json"]).ok().json();
    let out_b = b.loopx(&["sync", "--json"]).ok().json();
    assert_eq!(out_a["outcome"], "replayed");
    // The same ops lost for the same reasons (each machine names its own
    // commit).
    let without_commits = |v: &serde_json::Value| {
        let mut v = v["rejected"].clone();
        for r in v.as_array_mut().unwrap() {
            r.as_object_mut().unwrap().remove("commit");
        }
        v
    };
    assert_eq!(without_commits(&out_a), without_commits(&out_b));
    assert_eq!(out_a["rejected"].as_array().unwrap().len(), 2, "{out_a}");
    assert_eq!(out_a["replayed"], 3);
    assert_eq!(a.tree(), b.tree());
    assert_ne!(a.tip(), b.tip(), "the committers differ");
}

#[test]
fn corrupt_state_on_the_remote_is_refused_and_nothing_changes_here() {
    let (env, hub) = team();
    let a = env.machine();
    let b = env.clone_machine("b", &hub);
    b.loopx(&["sync"]).ok();
    let mine = b.add("Mine");
    let b_tip = b.tip();
    let b_synced = b.rev("refs/loopx/synced/origin");
    // Someone pushes a broken file with plain git.
    hand_commit(
        &env,
        &a,
        "todos/ab/t-abababab.toml",
        Some(b"this is not toml\n"),
        "oops",
    );
    a.git(&["push", "-q", "origin", "refs/loopx/state:refs/loopx/state"]);
    let out = b.loopx(&["sync"]).code(3);
    let bad = a.tip().unwrap();
    assert_text(
        &out.stderr.replace(&bad[..8], "<bad>"),
        "error: origin holds an invalid tick: commit <bad> (tick 4, by Hand Editor <hand@example.com>) is not a valid loopx tick [not-a-tick]: the message has no body\n\
         hint: nothing was changed here and no local tick is lost. origin holds a commit that loopx did not write (or a rule it breaks), pushed as Hand Editor <hand@example.com>: ask them what happened. A human can put origin back at this clone's last verified tick with `loopx sync origin --repair-remote`; `loopx hub install` makes a hub you run refuse such pushes\n",
    );
    assert_eq!(b.tip(), b_tip);
    assert_eq!(b.rev("refs/loopx/synced/origin"), b_synced);
    // A "fix" on top by hand is no tick either: still refused.
    hand_commit(&env, &a, "todos/ab/t-abababab.toml", None, "fix");
    a.git(&["push", "-q", "origin", "refs/loopx/state:refs/loopx/state"]);
    b.loopx(&["sync"]).code(3);
    assert_eq!(b.tip(), b_tip);
    // The hub is put back at its last valid tick; the next sync completes
    // and keeps b's tick.
    let good = a.rev(&format!("{bad}~1")).unwrap();
    a.git(&["update-ref", "refs/loopx/state", &good]);
    a.git(&[
        "push",
        "-q",
        "-f",
        "origin",
        "refs/loopx/state:refs/loopx/state",
    ]);
    let out = b.loopx(&["sync"]).ok();
    assert_text(&out.stdout, "Pushed 1 tick (origin, tick 4).\n");
    b.loopx(&["todo", "show", &mine]).ok();
    env.loopx(&["sync"]).ok();
    assert_eq!(a.tree(), b.tree());
}

#[test]
fn a_rewritten_remote_is_reported_not_followed_until_adopted() {
    let (env, hub) = team();
    let a = env.machine();
    let b = env.clone_machine("b", &hub);
    b.git(&[
        "config",
        "--add",
        "remote.origin.fetch",
        "+refs/loopx/*:refs/loopx/remotes/origin/*",
    ]);
    b.loopx(&["sync"]).ok();
    let old = a.tip().unwrap();
    env.add("One", &[]);
    env.add("Two", &[]);
    env.loopx(&["sync"]).ok();
    b.loopx(&["sync"]).ok();
    let synced = b.tip().unwrap();
    // Someone force-pushes the hub back, dropping two ticks b had synced,
    // and ticks on from there.
    a.git(&["update-ref", "refs/loopx/state", &old]);
    env.add("Elsewhere", &[]);
    a.git(&[
        "push",
        "-q",
        "--force",
        "origin",
        "refs/loopx/state:refs/loopx/state",
    ]);
    let rewritten = a.tip().unwrap();
    b.add("Local work");
    let b_tip = b.tip();
    let expected = |s: &str| {
        s.replace(&rewritten, "<new-full>")
            .replace(&rewritten[..8], "<new>")
            .replace(&synced[..8], "<synced>")
    };
    let out = b.loopx(&["sync"]).code(1);
    let want = "error: origin's history was rewritten: its state (tick 4, <new>) no longer contains tick 5 (<synced>), which this machine synced with it\n\
                hint: nothing was changed here. If the rewrite was meant, `loopx sync origin --adopt-remote` follows it and keeps this state under refs/loopx/backup/origin/…; if not, a human should find out who rewrote origin's refs/loopx/state (its reflog, or `git log refs/loopx/remotes/origin/state`) and have them put the lost ticks back on top of what origin holds now (this clone still has every tick up to <synced>); never push over origin's ticks, which other machines wrote\n";
    assert_text(&expected(&out.stderr), want);
    assert_eq!(b.tip(), b_tip);
    // Also after a plain `git fetch` moved the tracking ref.
    b.git(&["fetch", "-q", "origin"]);
    assert_eq!(
        b.rev("refs/loopx/remotes/origin/state").as_deref(),
        Some(rewritten.as_str())
    );
    let out = b.loopx(&["sync"]).code(1);
    assert_text(&expected(&out.stderr), want);
    assert_eq!(b.tip(), b_tip);
    // Adopting it keeps the local state under a backup ref.
    let out = b.loopx(&["sync", "--adopt-remote", "--json"]).ok();
    let v = out.json();
    assert_eq!(v["outcome"], "adopted");
    let backup = v["backup"].as_str().unwrap();
    assert_eq!(b.rev(backup), b_tip);
    assert!(
        backup.starts_with("refs/loopx/backup/origin/6-"),
        "{backup}"
    );
    assert_eq!(b.tip().as_deref(), Some(rewritten.as_str()));
    // From there, syncing is ordinary again.
    b.add("After");
    let out = b.loopx(&["sync"]).ok();
    assert_text(&out.stdout, "Pushed 1 tick (origin, tick 5).\n");
}

#[test]
fn an_unreachable_remote_is_a_clear_error_and_a_later_sync_completes() {
    let (env, hub) = team();
    let b = env.clone_machine("b", &hub);
    b.loopx(&["sync"]).ok();
    b.add("Waiting to go");
    let tip = b.tip();
    let nowhere = env.root().join("nowhere.git");
    b.git(&["remote", "set-url", "origin", nowhere.to_str().unwrap()]);
    let out = b.loopx(&["sync"]).code(1);
    assert_text(
        &env.normalize(&out.stderr),
        "error: cannot push the loopx state to origin: '$TMP/nowhere.git' does not appear to be a git repository; Could not read from remote repository\n\
         hint: nothing was changed here and no tick is lost; check the remote's URL (`git remote get-url origin`), the network and your credentials, then run `loopx sync` again\n",
    );
    // Nothing listens on this port.
    let url = format!("git://127.0.0.1:{}/hub.git", free_port());
    b.git(&["remote", "set-url", "origin", &url]);
    let out = b.loopx(&["sync", "--json"]).code(1);
    let v = out.json();
    assert_eq!(v["error"]["code"], "remote-unreachable");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unable to connect to 127.0.0.1"),
        "{}",
        out.stdout
    );
    assert_eq!(b.tip(), tip);
    // A claim that must be safe across machines does not count: it is
    // decided here and pushed (the sync's one network call), and when the
    // push cannot reach the hub it is released again.
    let t = b.add("Claim me");
    let out = b.agent("agent-b", &["todo", "claim", &t, "--sync"]).code(1);
    assert!(
        out.stderr.starts_with(&format!(
            "error: the claim of {t} did not reach the remote, so it was released here: nothing was claimed: cannot push the loopx state to origin"
        )),
        "{}",
        out.stderr
    );
    let v = b.loopx(&["todo", "show", &t, "--json"]).ok().json();
    assert_eq!(v["status"], "open", "{v}");
    b.git(&["remote", "set-url", "origin", &hub]);
    let out = b.loopx(&["sync"]).ok();
    assert_text(&out.stdout, "Pushed 4 ticks (origin, tick 7).\n");
    // A remote that does not exist at all.
    let out = b.loopx(&["sync", "upstream"]).code(1);
    assert_text(
        &out.stderr,
        "error: there is no git remote named upstream\nhint: add it with `git remote add upstream URL`; `git remote -v` lists the remotes\n",
    );
}

#[test]
fn setup_adds_one_glob_fetch_refspec_and_no_push_refspec() {
    let env = TestEnv::with_board();
    let hub = env.hub("hub.git");
    env.git(&["remote", "add", "origin", &hub]);
    let out = env.loopx(&["sync", "--setup"]).ok();
    assert_text(
        &out.stdout,
        "Added the fetch refspec +refs/loopx/*:refs/loopx/remotes/origin/* to remote origin.\n\
         A plain `git fetch origin` now brings the loopx state too (into refs/loopx/remotes/origin/state).\n\
         No push refspec was added, so `git push` still pushes only what it did; `loopx sync origin` pushes the state.\n",
    );
    let out = env.loopx(&["sync", "--setup", "--json"]).ok();
    assert_text(
        &out.stdout,
        "{\"remote\":\"origin\",\"refspec\":\"+refs/loopx/*:refs/loopx/remotes/origin/*\",\"added\":false}\n",
    );
    assert_text(
        &env.git(&["config", "--get-all", "remote.origin.fetch"]),
        "+refs/heads/*:refs/remotes/origin/*\n+refs/loopx/*:refs/loopx/remotes/origin/*\n",
    );
    let m = env.machine();
    assert_eq!(m.rev("HEAD"), None);
    assert!(
        env.git(&["config", "--get-regexp", "^remote\\.origin\\."])
            .lines()
            .all(|l| !l.starts_with("remote.origin.push"))
    );
    // The glob keeps a plain fetch working while the hub has no state.
    env.git(&["fetch", "-q", "origin"]);
    env.loopx(&["sync"]).ok();
    let b = env.clone_machine("b", &hub);
    b.loopx(&["sync", "--setup"]).ok();
    env.add("New", &[]);
    env.loopx(&["sync"]).ok();
    b.git(&["fetch", "-q", "origin"]);
    assert_eq!(b.rev("refs/loopx/remotes/origin/state"), m.tip());
    // And sync takes it from there.
    let out = b.loopx(&["sync"]).ok();
    assert_text(&out.stdout, "Pulled 4 ticks (origin, tick 4).\n");
}

/// Commits a tick of an op this loopx does not know onto a machine's state.
fn future_tick(m: &Machine) -> String {
    let msg = "travel in time — agent-a\n\nid = \"o-00000000000000ff\"\nat = \"2024-12-02T09:30:00Z\"\nactor = \"agent:agent-a\"\n\n[change]\nop = \"from.the.future\"\n\nLoopx-Op: from.the.future\nLoopx-Agent: agent-a\nLoopx-Tick: 99\nLoopx-Format: 1";
    let tip = m.tip().unwrap();
    let commit = m
        .git(&[
            "commit-tree",
            &format!("{tip}^{{tree}}"),
            "-p",
            &tip,
            "-m",
            msg,
        ])
        .trim()
        .to_owned();
    m.git(&["update-ref", "refs/loopx/state", &commit]);
    commit
}

#[test]
fn an_op_this_loopx_does_not_know_stops_the_sync() {
    let (env, hub) = team();
    let a = env.machine();
    let b = env.clone_machine("b", &hub);
    b.loopx(&["sync"]).ok();
    // A local tick that would have to be replayed.
    let mine = future_tick(&b);
    env.add("Moves the hub", &[]);
    env.loopx(&["sync"]).ok();
    let out = b.loopx(&["sync"]).code(3);
    assert_text(
        out.stderr
            .replace(&mine[..8], "<c>")
            .lines()
            .next()
            .unwrap(),
        "error: commit <c> (tick 4, by b <b@example.com>) is not a valid loopx tick [unknown-op]: its op \"from.the.future\" is unknown to this loopx",
    );
    assert!(
        out.stderr
            .contains("\nhint: upgrade loopx, then try again.")
    );
    assert_eq!(b.tip().as_deref(), Some(mine.as_str()));
    // A remote tick that would be pulled.
    let theirs = future_tick(&a);
    a.git(&["push", "-q", "origin", "refs/loopx/state:refs/loopx/state"]);
    let c = env.clone_machine("c", &hub);
    let out = c.loopx(&["sync"]).code(3);
    assert_text(
        out.stderr
            .replace(&theirs[..8], "<c>")
            .lines()
            .next()
            .unwrap(),
        "error: origin holds an invalid tick: commit <c> (tick 5, by Ada Lovelace <ada@example.com>) is not a valid loopx tick [unknown-op]: its op \"from.the.future\" is unknown to this loopx",
    );
    assert!(
        out.stderr
            .contains("\nhint: upgrade loopx, then try again.")
    );
    assert_eq!(c.tip(), None);
}

#[test]
fn a_hand_commit_among_local_ticks_is_not_replayed() {
    let (env, hub) = team();
    let a = env.machine();
    let b = env.clone_machine("b", &hub);
    b.loopx(&["sync"]).ok();
    b.add("Remote side");
    b.loopx(&["sync"]).ok();
    let hand = hand_commit(&env, &a, "notes.txt", Some(b"hello\n"), "hand edit");
    let out = a.loopx(&["sync"]).code(3);
    assert_text(
        &out.stderr
            .replace(&hand[..12], "<hand>")
            .replace(&hand[..8], "<hand>"),
        "error: commit <hand> (tick 4, by Hand Editor <hand@example.com>) is not a valid loopx tick [not-a-tick]: the message has no body\n\
         hint: nothing was pushed to origin and nothing was changed. `loopx verify` names every commit of refs/loopx/state it refuses and why; keep the ticks after it: they can be redone with loopx commands once it is out of the way\n",
    );
    assert_eq!(a.tip().as_deref(), Some(hand.as_str()));
}

#[test]
fn unrelated_states_are_refused_until_one_is_adopted() {
    let (env, hub) = team();
    let b = env.clone_machine("b", &hub);
    b.loopx(&["init", "--goal", "other", "--objective", "Mine"])
        .ok();
    let mine = b.tip();
    let out = b.loopx(&["sync"]).code(1);
    assert_text(
        &out.stderr,
        "error: the local state and origin's share no history: each was made by its own `loopx init`\n\
         hint: nothing was changed; keep one: `loopx sync origin --adopt-remote` takes origin's state and keeps this one under refs/loopx/backup/origin/…\n",
    );
    assert_eq!(b.tip(), mine);
    let out = b.loopx(&["sync", "--adopt-remote"]).ok();
    assert!(out.stdout.starts_with("Adopted origin's state: pulled 3 ticks, now at tick 3; the local state before it is kept at refs/loopx/backup/origin/1-"), "{}", out.stdout);
    assert_eq!(b.tip(), env.machine().tip());
}

#[test]
fn sync_with_no_remote_says_how_to_add_one() {
    let env = TestEnv::with_board();
    let out = env.loopx(&["sync"]).code(1);
    assert_text(
        &out.stderr,
        "error: there is no git remote named origin\nhint: add the team's remote with `git remote add origin URL`, or name another: `loopx sync REMOTE` (git config loopx.remote sets the default)\n",
    );
    // git config loopx.remote names the default.
    let hub = env.hub("team.git");
    env.git(&["remote", "add", "team", &hub]);
    env.git(&["config", "loopx.remote", "team"]);
    let out = env.loopx(&["sync"]).ok();
    assert_text(&out.stdout, "Pushed 3 ticks (team, tick 3).\n");
}

#[test]
fn two_state_refs_sync_through_one_hub_independently() {
    let (env, hub) = team();
    let a = env.machine();
    // A second state on a ref of its own (git config loopx.ref), e.g. one
    // ref per goal, through the same remote.
    let b = env.clone_machine("b", &hub);
    b.git(&["config", "loopx.ref", "refs/loopx/goals/api"]);
    b.loopx(&["init", "--goal", "api", "--objective", "The API"])
        .ok();
    let out = b.loopx(&["sync"]).ok();
    assert_text(&out.stdout, "Pushed 1 tick (origin, tick 1).\n");
    assert_eq!(
        b.rev("refs/loopx/synced/origin@loopx-goals-api"),
        b.rev("refs/loopx/goals/api")
    );
    assert_eq!(
        b.rev("refs/loopx/remotes/origin/goals/api"),
        b.rev("refs/loopx/goals/api")
    );
    // The default state moves on meanwhile; neither disturbs the other.
    env.add("Elsewhere", &[]);
    let out = env.loopx(&["sync"]).ok();
    assert_text(&out.stdout, "Pushed 1 tick (origin, tick 4).\n");
    a.git(&["config", "loopx.ref", "refs/loopx/goals/api"]);
    let out = env.loopx(&["sync"]).ok();
    assert_text(&out.stdout, "Pulled 1 tick (origin, tick 1).\n");
    assert_eq!(a.rev("refs/loopx/goals/api"), b.rev("refs/loopx/goals/api"));
    assert_eq!(a.rev("refs/loopx/synced/origin"), a.tip());
}

#[test]
fn concurrent_syncs_on_one_machine_all_complete() {
    let (env, hub) = team();
    for a in ["agent-c", "agent-d"] {
        env.loopx(&["agent", "register", a]).ok();
    }
    let b = second_machine(&env, &hub);
    let agents = ["agent-a", "agent-b", "agent-c", "agent-d"];
    let mut added = Vec::new();
    for round in 0..3 {
        // The hub moves, so every sync below has to fetch and replay.
        added.push(env.add(&format!("hub {round}"), &[]));
        env.loopx(&["sync"]).ok();
        let outs: Vec<(String, Output)> = std::thread::scope(|s| {
            let hs: Vec<_> = agents
                .iter()
                .map(|agent| {
                    let sp = b.spawner();
                    s.spawn(move || {
                        let title = format!("{agent} {round}");
                        let out = run(sp
                            .command()
                            .env("LOOPX_AGENT", agent)
                            .args(["todo", "add", &title]))
                        .ok();
                        let id = out.stdout.trim().to_owned();
                        let out = run(sp.command().env("LOOPX_AGENT", agent).args(["sync"]));
                        (id, out)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().expect("thread")).collect()
        });
        for (id, out) in outs {
            assert_eq!(out.code, 0, "round {round}: {out:#?}");
            added.push(id);
        }
    }
    b.loopx(&["sync"]).ok();
    env.loopx(&["sync"]).ok();
    assert_eq!(env.machine().tree(), b.tree());
    let list = b.loopx(&["todo", "list", "--json"]).ok().json();
    let ids: Vec<&str> = list["todos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    for id in &added {
        assert!(ids.contains(&id.as_str()), "{id} is in the state");
    }
    assert_eq!(ids.len(), added.len());
}

#[test]
fn should_run_and_settle_sync_around_the_turn() {
    let (env, hub) = team();
    let b = env.clone_machine("machine-b", &hub);
    b.loopx(&["sync"]).ok();
    // A todo added on machine A reaches machine B's should-run only with --sync.
    let t = env.add("Only on A so far", &[]);
    env.loopx(&["sync"]).ok();
    b.agent("agent-b", &["quota", "should-run"]).code(3);
    let v = b
        .agent("agent-b", &["quota", "should-run", "--sync", "--json"])
        .ok()
        .json();
    assert_eq!(v["todo"]["id"], t.as_str());
    let tok = v["turn_token"].as_str().unwrap().to_owned();
    b.agent("agent-b", &["todo", "claim", &t]).ok();
    b.agent(
        "agent-b",
        &[
            "settle",
            "--sync",
            "--turn",
            &tok,
            "--todo",
            &t,
            "--outcome",
            "advanced",
            "--done",
        ],
    )
    .ok();
    // settle --sync pushed the turn: machine A sees the todo done.
    env.loopx(&["sync"]).ok();
    let v = env.loopx(&["todo", "show", &t, "--json"]).ok().json();
    assert_eq!(v["status"], "done");
}

/// Issue 27 item 8: a branch named `loopx/state` on the hub collided with
/// round 1's tracking namespace. A clone set up then is migrated by its
/// next sync (the old refspec replaced, the old tracking ref moved), and a
/// plain `git fetch` works with such a branch on the hub.
#[test]
fn a_branch_named_loopx_state_never_breaks_a_plain_fetch() {
    let (env, hub) = team();
    let b = env.clone_machine("b", &hub);
    // b as round 1 set it up.
    b.git(&[
        "config",
        "--add",
        "remote.origin.fetch",
        "+refs/loopx/*:refs/remotes/origin/loopx/*",
    ]);
    b.git(&["fetch", "-q", "origin"]);
    let old = b.rev("refs/remotes/origin/loopx/state");
    assert!(old.is_some(), "round 1 tracked the state there");
    // Someone pushes a branch named loopx/state to the hub.
    env.git(&["commit", "-q", "--allow-empty", "-m", "Work"]);
    env.git(&["push", "-q", "origin", "HEAD:refs/heads/loopx/state"]);
    b.loopx(&["sync"]).ok();
    assert_text(
        &b.git(&["config", "--get-all", "remote.origin.fetch"]),
        "+refs/heads/*:refs/remotes/origin/*\n+refs/loopx/*:refs/loopx/remotes/origin/*\n",
    );
    assert_eq!(b.rev("refs/loopx/remotes/origin/state"), b.tip());
    // A plain fetch works, and brings both: the branch where branches go,
    // the state where loopx keeps it.
    b.git(&["fetch", "-q", "origin"]);
    assert_eq!(
        b.rev("refs/remotes/origin/loopx/state"),
        env.machine().rev("HEAD"),
        "the branch's tracking ref"
    );
    env.add("New", &[]);
    env.loopx(&["sync"]).ok();
    b.git(&["fetch", "-q", "origin"]);
    assert_eq!(
        b.rev("refs/loopx/remotes/origin/state"),
        env.machine().tip()
    );
    // A clone set up today gets the new refspec at once.
    let c = env.clone_machine("c", &hub);
    c.loopx(&["sync", "--setup"]).ok();
    c.git(&["fetch", "-q", "origin"]);
    assert_eq!(
        c.rev("refs/loopx/remotes/origin/state"),
        env.machine().tip()
    );
}

/// The wire protocol loopx's fetches speak (issue 28), read from git's own
/// packet trace of one `loopx sync` over `git daemon`: v0 by default (the
/// server lists its refs right after the request, no `ls-refs` round
/// trip), v2 with `loopx.protocol=2`, and v2 in auto once the clone knows
/// more branches and tags than a v0 listing should carry.
#[test]
fn sync_speaks_v0_to_a_small_hub_and_v2_when_asked_or_the_hub_is_big() {
    let env = TestEnv::with_board();
    env.hub("hub.git");
    let daemon = Daemon::start(&env);
    let url = daemon.url("hub.git");
    env.git(&["remote", "add", "origin", &url]);
    env.loopx(&["sync"]).ok();
    let trace = env.root().join("packets.trace");
    // Which protocol one sync that fetches (the hub moved) used.
    let sync_speaks = || -> &'static str {
        // Another tick pushed straight to the hub: this clone's sync must
        // fetch it.
        env.add("moved", &[]);
        let tip = env.tip().expect("a tip");
        env.git(&["push", "-q", &url, "refs/loopx/state:refs/loopx/state"]);
        env.git(&["update-ref", "refs/loopx/state", &format!("{tip}~1")]);
        let _ = std::fs::remove_file(&trace);
        run(env.command().env("GIT_TRACE_PACKET", &trace).args(["sync"])).ok();
        assert_eq!(env.tip().as_deref(), Some(tip.as_str()), "the sync fetched");
        let text = std::fs::read_to_string(&trace).expect("git wrote its packet trace");
        let v2 = text.contains("fetch< version 2") && text.contains("fetch> command=ls-refs");
        // v0: the refs come in the first answer, with its capabilities.
        let v0 = !text.contains("version 2") && text.contains("refs/loopx/state\\0");
        match (v0, v2) {
            (true, false) => "v0",
            (false, true) => "v2",
            _ => panic!("neither protocol recognised in:\n{text}"),
        }
    };
    assert_eq!(sync_speaks(), "v0", "auto, a hub of loopx refs only");
    env.git(&["config", "loopx.protocol", "2"]);
    assert_eq!(sync_speaks(), "v2", "loopx.protocol=2");
    env.git(&["config", "loopx.protocol", "0"]);
    assert_eq!(sync_speaks(), "v0", "loopx.protocol=0");
    // Auto again, with more tags than FEW_REFS (200) in this clone.
    env.git(&["config", "--unset", "loopx.protocol"]);
    let tip = env.tip().expect("a tip");
    let tags: String = (0..201)
        .map(|i| format!("create refs/tags/t{i} {tip}\n"))
        .collect();
    let mut c = Command::new("git");
    isolate(&mut c, env.root());
    run_stdin(
        c.current_dir(&env.repo).args(["update-ref", "--stdin"]),
        tags.as_bytes(),
    )
    .ok();
    assert_eq!(sync_speaks(), "v2", "auto, a clone that knows 201 tags");
}
