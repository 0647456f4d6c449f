//! Round 4's trust rules, each written as the attack (issue 41): authority
//! from the op table and every human tick signed under the policy, the
//! machine's clock (LOOPX_NOW never ahead of it; verify, sync and the hub
//! judge by the system clock), and the team's settings as one signed act.

use crate::common::forge;
use crate::common::hubs::{clone, hubs, push_guarded, refused_everywhere};
use crate::common::keys::{have_openssh, signer};
use crate::common::{TestEnv, rfc3339, run, system_now};

/// Under `signer require`, a clone with no signing key whose git identity
/// says "Ada Lovelace" wrote unsigned `quota park --of agent-a`, `gate open
/// --kind publish`, `todo reopen`, `agent register`, `todo add`, `goal
/// split` and `settings set`: kinds that were no human act before format 7
/// (or, for `goal split`, a human act no guard checked the signature of). Its own
/// loopx refuses each, saying how to set up a key; written with loopx before
/// the policy and moved after it with plumbing, each is refused by the
/// guarded hub, by Ada's sync and by her verify. Honest work goes on.
#[test]
fn every_human_tick_is_signed_once_the_state_requires_it() {
    if !have_openssh() {
        return;
    }
    let env = TestEnv::with_board();
    let done = env.add("Ship the lexer", &[]);
    env.agent("agent-a", &["todo", "claim", &done]).ok();
    env.agent("agent-a", &["todo", "done", &done]).ok();
    let h = hubs(&env);
    let a = env.machine();
    let ada = signer(&env, &a, "ada");
    a.loopx(&["sync"]).ok();
    push_guarded(&a);
    // The guarded hub trusts Ada.
    let file = env.root().join("hub_allowed_signers");
    std::fs::write(
        &file,
        format!("ada {}", std::fs::read_to_string(&ada).unwrap()),
    )
    .unwrap();
    crate::common::git_in(
        &h.guarded,
        &["config", "loopx.allowedSignersFile", file.to_str().unwrap()],
    );
    // The rogue clone: Ada's name, Ada's email, no key; it trusts Ada's
    // key (so its refusals name the missing signature, not a trust root).
    let b = clone(&env, &h, "rogue");
    b.git(&["config", "user.name", "Ada Lovelace"]);
    b.git(&["config", "user.email", "ada@example.com"]);
    crate::common::keys::trust(&b, "ada", &ada);
    let start = b.tip().unwrap();
    let attacks: [&[&str]; 7] = [
        &["quota", "park", "--of", "agent-a", "--until", "31d"],
        &[
            "gate",
            "open",
            "--kind",
            "publish",
            "--question",
            "Publish?",
        ],
        &["todo", "reopen", &done],
        &["agent", "register", "agent-z"],
        &["todo", "add", "Rogue work"],
        &["settings", "set", "--lease", "1m"],
        &["goal", "split"],
    ];
    // Before the policy each is an ordinary act: written with loopx, kept
    // as a template, then undone.
    let mut templates = Vec::new();
    for args in attacks {
        b.git(&["update-ref", "refs/loopx/state", &start]);
        if args[0] == "settings" || args[0] == "goal" {
            // A human act by the table: refused unsigned where this
            // machine trusts signers, policy or not.
            let out = b.loopx(&[&["--json"], args].concat()).code(3);
            assert_eq!(out.error_code(), "unsigned", "{}", out.stderr);
            continue;
        }
        b.loopx(args).ok();
        templates.push((args, b.tip().unwrap()));
    }
    b.git(&["update-ref", "refs/loopx/state", &start]);
    // A `goal split` template comes from a clone that trusts no signer
    // (the split's own goal ref is not pushed: the forgery is the shared
    // ref's tick).
    let plain = clone(&env, &h, "plain");
    plain.git(&["config", "user.name", "Ada Lovelace"]);
    plain.git(&["config", "user.email", "ada@example.com"]);
    plain.loopx(&["goal", "split"]).ok();
    let split = plain.tip().unwrap();
    b.git(&[
        "fetch",
        "-q",
        plain.repo.to_str().unwrap(),
        "refs/loopx/state:refs/forge/split",
    ]);
    templates.push((&["goal", "split"], split));
    let goal_refs = |m: &crate::common::Machine| {
        m.git(&["for-each-ref", "--format=%(refname)", "refs/loopx/goals/"])
    };
    assert_eq!(goal_refs(&b), "", "the split's goal ref is gone");
    // Ada requires signatures, signed.
    a.loopx(&["signer", "require"]).ok();
    a.loopx(&["sync"]).ok();
    push_guarded(&a);
    b.loopx(&["sync"]).ok();
    let policy = b.tip().unwrap();
    // Live, the rogue's own loopx refuses each and says how to sign.
    for args in attacks {
        let out = b.loopx(&[&["--json"], args].concat());
        assert_eq!(out.code, 3, "{args:?}: {}", out.stderr);
        assert_eq!(out.error_code(), "unsigned", "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains("user.signingKey"),
            "{args:?}: {}",
            out.stderr
        );
        assert_eq!(b.tip().as_deref(), Some(policy.as_str()), "{args:?}");
        assert_eq!(goal_refs(&b), "", "{args:?} wrote no goal ref");
    }
    // Moved after the policy with plumbing: refused everywhere.
    for (_, template) in &templates {
        let forged = forge::replant(&b, template, &policy);
        b.git(&["update-ref", "refs/loopx/state", &forged]);
        refused_everywhere(&h, &b, &a, &policy, "signature", Some("unsigned"));
    }
    // Honest work goes on: Ada's signed act, an agent's tick on the rogue
    // clone, both synced and verified everywhere.
    a.loopx(&["todo", "add", "Signed work"]).ok();
    a.loopx(&["sync"]).ok();
    push_guarded(&a);
    b.loopx(&["sync"]).ok();
    b.agent("agent-b", &["todo", "add", "Agent work"]).ok();
    b.loopx(&["sync"]).ok();
    a.loopx(&["sync"]).ok();
    push_guarded(&a);
    a.loopx(&["verify"]).ok();
}

/// An agent that sets LOOPX_NOW ahead of the clock, to steal a live claim
/// dated tomorrow or to push a tick dated 2099, is refused by every command
/// (exit 2), reads included; a LOOPX_NOW in the past still works.
#[test]
fn loopx_now_ahead_of_the_clock_is_refused_by_every_command() {
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &[]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    let tip = env.tip();
    let tomorrow = rfc3339(system_now() + 86_400);
    for args in [
        &["todo", "claim", &t][..],
        &["quota", "should-run"],
        &["status"],
        &["sync"],
        &["verify"],
    ] {
        let out = run(env
            .command()
            .env("LOOPX_NOW", &tomorrow)
            .env("LOOPX_AGENT", "agent-b")
            .args(args));
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr
                .contains("it may fix the clock in the past, never in the future"),
            "{args:?}: {}",
            out.stderr
        );
    }
    assert_eq!(env.tip(), tip, "nothing moved");
    // Within the margin, and in the past, it is a fixed clock as before.
    let soon = rfc3339(system_now() + 5);
    run(env.command().env("LOOPX_NOW", &soon).args(["status"])).ok();
    env.loopx(&["status"]).ok();
}

/// A file-path hub's guard runs in the pusher's environment: a pusher with
/// LOOPX_NOW=2099 pushing a tick dated 2099 (forged with plumbing) is
/// refused all the same, since the hook drops the pusher's LOOPX_* and
/// GIT_CONFIG* variables and the guard judges by the system clock.
#[test]
fn a_guard_ignores_the_pushers_clock_and_config() {
    let env = TestEnv::with_board();
    let h = hubs(&env);
    let a = env.machine();
    let start = a.tip().unwrap();
    a.agent("agent-a", &["todo", "add", "From the future"]).ok();
    // 2099-01-01T00:00:00Z
    forge::redate_tip(&a, 4_070_908_800);
    let out = std::process::Command::new("git")
        .current_dir(&a.repo)
        .env("LOOPX_NOW", "2099-01-01T00:00:00Z")
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "loopx.ref")
        .env("GIT_CONFIG_VALUE_0", "refs/loopx/elsewhere")
        .env("HOME", env.root().join("home"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args(["push", "guarded", "refs/loopx/state:refs/loopx/state"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the guarded hub took it: {err}");
    assert!(err.contains("[future]"), "{err}");
    assert_eq!(crate::common::hubs::hub_tip(&h.guarded), start);
    a.git(&["update-ref", "refs/loopx/state", &start]);
    a.agent("agent-a", &["todo", "add", "Now"]).ok();
    push_guarded(&a);
}

/// The live writer refuses an op dated before the tick it goes on by more
/// than the skew (`clock-behind`, naming both times); a later one is fine.
#[test]
fn a_writer_refuses_a_clock_behind_the_history() {
    let env = TestEnv::with_board();
    let tip = env.tip();
    let behind = rfc3339(crate::common::START - 3600);
    let out = run(env
        .command()
        .env("LOOPX_NOW", &behind)
        .args(["--json", "todo", "add", "Late"]));
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert_eq!(out.error_code(), "clock-behind", "{}", out.stderr);
    assert!(out.stderr.contains(&behind), "{}", out.stderr);
    assert_eq!(env.tip(), tip);
    env.add("On time", &[]);
}

/// The team's lease, skew and prices are one human act in the state:
/// `todo claim` gives the team's lease, a usage with tokens and no dollars
/// is priced at the team's price on every clone, an agent cannot set them.
#[test]
fn the_team_sets_its_lease_and_prices() {
    let env = TestEnv::with_board();
    let out = env
        .agent("agent-a", &["--json", "settings", "set", "--lease", "1m"])
        .code(3);
    assert_eq!(out.error_code(), "humans-only", "{}", out.stderr);
    let out = env
        .loopx(&["--json", "settings", "set", "--price", "x=1"])
        .code(2);
    assert_eq!(out.error_code(), "bad-price", "{}", out.stderr);
    env.loopx(&["--json", "settings", "set"]).code(2);
    env.loopx(&[
        "settings",
        "set",
        "--lease",
        "20m",
        "--clock-skew",
        "1m",
        "--price",
        "team-model-1=10/20",
    ])
    .ok();
    let v = env.loopx(&["--json", "settings", "show"]).ok().json();
    assert_eq!(v["lease"], "20m", "{v}");
    assert_eq!(v["clock_skew"], "1m", "{v}");
    assert_eq!(v["prices"]["team-model-1"]["input"], 10.0, "{v}");
    let t = env.add("Write the parser", &[]);
    let at = env.now_secs();
    let claim = env
        .agent("agent-a", &["--json", "todo", "claim", &t])
        .ok()
        .json();
    assert_eq!(
        claim["todo"]["lease_until"],
        rfc3339(at + 20 * 60),
        "the team's lease: {claim}"
    );
    // A million input and a million output tokens at $10/$20: $30.
    let token = env
        .agent("agent-a", &["--json", "quota", "should-run"])
        .ok()
        .json()["turn_token"]
        .as_str()
        .unwrap()
        .to_owned();
    env.agent(
        "agent-a",
        &[
            "settle",
            "--turn",
            &token,
            "--todo",
            &t,
            "--outcome",
            "advanced",
            "--usage",
            r#"{"input_tokens":1000000,"output_tokens":1000000,"model":"team-model-1"}"#,
        ],
    )
    .ok();
    let log = env.loopx(&["log", "--json", "-n", "1"]).ok().stdout;
    let tick: serde_json::Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    let shown = env
        .loopx(&["--json", "show", &tick["tick"].to_string()])
        .ok()
        .json();
    let usage = shown["change"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["op"] == "usage.record")
        .unwrap_or_else(|| panic!("a usage record in {shown}"))
        .clone();
    assert_eq!(usage["usage"]["cost_usd"], 30.0, "{usage}");
    assert_eq!(usage["usage"]["estimated"], true, "{usage}");
}

/// Hooks keep exiting 0 under a LOOPX_NOW ahead of the clock: the tool
/// guard's event denies every call, saying why; other events answer
/// nothing and say why on stderr.
#[test]
fn hooks_under_a_clock_ahead_deny_tools_and_answer_nothing_else() {
    let env = TestEnv::with_board();
    let tomorrow = rfc3339(system_now() + 86_400);
    let dir = env.repo.to_str().unwrap().to_owned();
    let tool = format!(
        r#"{{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{{"command":"ls"}},"cwd":"{dir}"}}"#
    );
    let out = crate::common::run_stdin(
        env.command()
            .env("LOOPX_NOW", &tomorrow)
            .args(["hook", "claude-code", "PreToolUse"]),
        tool.as_bytes(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
    assert!(
        v.to_string().contains("never in the future"),
        "the reason: {v}"
    );
    let start = format!(r#"{{"session_id":"s1","hook_event_name":"SessionStart","cwd":"{dir}"}}"#);
    let out = crate::common::run_stdin(
        env.command()
            .env("LOOPX_NOW", &tomorrow)
            .args(["hook", "claude-code", "SessionStart"]),
        start.as_bytes(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "", "nothing answered");
    assert!(out.stderr.contains("never in the future"), "{}", out.stderr);
    // With the clock right, the same call passes.
    let out = crate::common::run_stdin(
        env.command().args(["hook", "claude-code", "PreToolUse"]),
        tool.as_bytes(),
    );
    assert_eq!((out.code, out.stdout.as_str()), (0, ""), "{}", out.stderr);
}
