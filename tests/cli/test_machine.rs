//! Authenticated agents (issue 31): every agent tick signed by the machine
//! (clone) that wrote it. Each test is the attack: a second clone writes
//! ticks in agent-a's name with loopx itself (so every byte is what loopx
//! writes, signed by its own machine key, or unsigned), moved onto the
//! team's state with git plumbing, and pushed to a guarded hub and a plain
//! one; then refused by the guarded hub, by Ada's sync and by her verify
//! once the state requires machine signatures, and accepted with a warning
//! before.

use crate::common::forge;
use crate::common::hubs::{Hubs, clone, hubs, push_guarded, refused_everywhere};
use crate::common::keys::{announce, have_openssh, keygen, sign_with, signer, trust};
use crate::common::{Machine, TestEnv};

/// Runs `loopx machine setup --name NAME` and returns the key's fingerprint.
fn setup_machine(m: &Machine, name: &str) -> String {
    let v = m
        .loopx(&["--json", "machine", "setup", "--name", name])
        .ok()
        .json();
    assert_eq!(v["status"], "proposed", "{v}");
    v["fingerprint"].as_str().expect("a fingerprint").to_owned()
}

/// Ada's clone `a` (she signs her acts; machine `ma` admitted for agent-a)
/// and Bob's clone `b` (machine `mb`, admitted for agent-b only), both
/// trusting Ada, the guarded hub up to date.
fn team(env: &TestEnv) -> (Hubs, Machine<'_>, Machine<'_>) {
    let h = hubs(env);
    let a = env.machine();
    let ada = keygen(env, "ada");
    trust(&a, "ada", &ada);
    // The guarded hub trusts Ada too: once the state requires signatures
    // it refuses every human act without a trust root.
    let file = env.root().join("hub_allowed_signers");
    let key = std::fs::read_to_string(&ada).unwrap();
    std::fs::write(&file, format!("ada {key}")).unwrap();
    crate::common::git_in(
        &h.guarded,
        &["config", "loopx.allowedSignersFile", file.to_str().unwrap()],
    );
    sign_with(&a, &ada);
    announce(&a, "ada", &ada);
    let fa = setup_machine(&a, "ma");
    a.loopx(&[
        "machine",
        "admit",
        "ma",
        "--fingerprint",
        &fa,
        "--for",
        "agent-a",
    ])
    .ok();
    a.loopx(&["sync"]).ok();
    let b = clone(env, &h, "bob");
    trust(&b, "ada", &ada);
    // Bob signs his own acts too: once the state requires signatures
    // (format 7) every tick a human writes is signed, `machine setup`
    // included.
    let bob = keygen(env, "bob");
    trust(&b, "bob", &bob);
    trust(&a, "bob", &bob);
    std::fs::write(
        &file,
        format!("ada {key}bob {}", std::fs::read_to_string(&bob).unwrap()),
    )
    .unwrap();
    sign_with(&b, &bob);
    announce(&b, "bob", &bob);
    let fb = setup_machine(&b, "mb");
    b.loopx(&["sync"]).ok();
    a.loopx(&["sync"]).ok();
    // The fingerprint Ada admits is the one Bob's machine printed.
    let out = a.loopx(&[
        "--json",
        "machine",
        "admit",
        "mb",
        "--fingerprint",
        &fa,
        "--for",
        "agent-b",
    ]);
    assert_eq!(out.error_code(), "fingerprint-mismatch", "{}", out.stderr);
    a.loopx(&[
        "machine",
        "admit",
        "mb",
        "--fingerprint",
        &fb,
        "--for",
        "agent-b",
    ])
    .ok();
    a.loopx(&["sync"]).ok();
    push_guarded(&a);
    b.loopx(&["sync"]).ok();
    (h, a, b)
}

/// The turn token `quota should-run` gives `agent`.
fn token(m: &Machine, agent: &str) -> String {
    let v = m
        .agent(agent, &["quota", "should-run", "--json"])
        .ok()
        .json();
    v["turn_token"].as_str().expect("a turn token").to_owned()
}

/// Bob's clone, put back at `base`, writes `args` as agent-a with loopx
/// itself (signed with its own machine key when it has one): the forged
/// tick, on top of `base`.
fn as_agent_a(b: &Machine, base: &str, args: &[&str]) -> String {
    b.git(&["update-ref", "refs/loopx/state", base]);
    b.agent("agent-a", args).ok();
    let forged = b.tip().unwrap();
    assert_ne!(forged, base);
    forged
}

#[test]
fn a_second_clone_acting_as_agent_a_is_refused_once_machines_are_required() {
    if !have_openssh() {
        return;
    }
    let env = TestEnv::with_board();
    let (h, a, b) = team(&env);
    // agent-a, on Ada's machine, holds a claim and has a turn with a
    // writeback in it: what a rogue clone would release and spend.
    let t = a.add("Write the parser");
    a.agent("agent-a", &["todo", "claim", &t]).ok();
    let tok = token(&a, "agent-a");
    let w = a.add("Warm up");
    a.agent("agent-a", &["todo", "claim", &w]).ok();
    a.agent("agent-a", &["todo", "done", &w]).ok();
    a.loopx(&["sync"]).ok();
    push_guarded(&a);
    b.loopx(&["sync"]).ok();
    let p = b.tip().unwrap();
    let attacks: [&[&str]; 3] = [
        &["todo", "release", &t],
        &["quota", "spend-slot", "--turn", &tok],
        &[
            "gate",
            "open",
            "--question",
            "Ship it?",
            "--kind",
            "decision",
        ],
    ];

    // Before the policy: accepted everywhere, and Ada's verify warns.
    b.git(&["update-ref", "refs/loopx/state", &p]);
    for args in attacks {
        b.agent("agent-a", args).ok();
    }
    let (ok, err) = forge::push(&b, "guarded", "refs/loopx/state:refs/loopx/state");
    assert!(ok, "before the policy the guarded hub takes them: {err}");
    b.loopx(&["sync"]).ok();
    a.loopx(&["sync"]).ok();
    let v = a.loopx(&["verify", "--json"]).ok().json();
    let ticks: u64 = a
        .git(&["rev-list", "--count", "refs/loopx/state"])
        .trim()
        .parse()
        .unwrap();
    assert_eq!(
        v["unsigned_agent_ticks"],
        serde_json::json!([ticks - 2, ticks - 1, ticks]),
        "{v}"
    );
    let out = a.loopx(&["verify"]).ok();
    assert!(
        out.stderr.contains("3 agent ticks (tick ")
            && out.stderr.contains("signer require --machines"),
        "{}",
        out.stderr
    );
    // Everyone back to P.
    for m in [&a, &b] {
        m.git(&["update-ref", "refs/loopx/state", &p]);
        m.git(&["update-ref", "refs/loopx/remotes/origin/state", &p]);
        m.git(&["update-ref", "refs/loopx/synced/origin", &p]);
    }
    forge::set_hub_ref(&h.origin, "refs/loopx/state", &p);
    forge::set_hub_ref(&h.guarded, "refs/loopx/state", &p);

    // Ada requires machine signatures (a signed act); a clone without the
    // human's key cannot.
    let key = b.git(&["config", "user.signingKey"]);
    b.git(&["config", "--unset", "user.signingKey"]);
    let out = b.loopx(&["--json", "signer", "require", "--machines"]);
    assert_eq!(out.code, 3, "{}", out.stderr);
    b.git(&["config", "user.signingKey", key.trim()]);
    b.git(&["update-ref", "refs/loopx/state", &p]);
    a.loopx(&["signer", "require", "--machines"]).ok();
    let toml = String::from_utf8(forge::file(&a, "refs/loopx/state", "loopx.toml")).unwrap();
    assert!(toml.contains("signatures = \"all\""), "{toml}");
    a.loopx(&["sync"]).ok();
    push_guarded(&a);
    b.loopx(&["sync"]).ok();
    let s = b.tip().unwrap();

    // Bob's loopx refuses to act as agent-a itself, and moves nothing.
    let out = b.agent("agent-a", &["--json", "todo", "release", &t]);
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert_eq!(out.error_code(), "machine-not-allowed", "{}", out.stderr);
    assert_eq!(b.tip().as_deref(), Some(s.as_str()));

    // Each forgery, signed by Bob's machine, moved onto the policy.
    for args in attacks {
        let forged = as_agent_a(&b, &p, args);
        let replanted = forge::replant(&b, &forged, &s);
        b.git(&["update-ref", "refs/loopx/state", &replanted]);
        refused_everywhere(&h, &b, &a, &s, "signature", Some("machine-not-allowed"));
    }
    // The same, unsigned: Bob's machine key moved away.
    let key = b.repo.join(".git/loopx/machine_ed25519");
    let away = b.repo.join("machine_ed25519.away");
    std::fs::rename(&key, &away).unwrap();
    for args in attacks {
        let forged = as_agent_a(&b, &p, args);
        assert!(
            !forge::read(&b, &forged).message.contains("signature = "),
            "unsigned"
        );
        let replanted = forge::replant(&b, &forged, &s);
        b.git(&["update-ref", "refs/loopx/state", &replanted]);
        refused_everywhere(&h, &b, &a, &s, "signature", Some("unsigned"));
    }
    std::fs::rename(&away, &key).unwrap();
    // Honest work goes on, on both machines, and verifies everywhere.
    b.git(&["update-ref", "refs/loopx/state", &s]);
    b.agent("agent-b", &["todo", "add", "Bob's agent's work"])
        .ok();
    b.loopx(&["sync"]).ok();
    a.agent("agent-a", &["todo", "release", &t]).ok();
    a.loopx(&["sync"]).ok();
    push_guarded(&a);
    b.loopx(&["sync"]).ok();
    a.loopx(&["verify"]).ok();
    b.loopx(&["verify"]).ok();
}

#[test]
fn a_revoked_machines_later_ticks_are_refused_and_its_earlier_ones_verify() {
    if !have_openssh() {
        return;
    }
    let env = TestEnv::with_board();
    let (h, a, b) = team(&env);
    a.loopx(&["signer", "require", "--machines"]).ok();
    a.loopx(&["sync"]).ok();
    push_guarded(&a);
    b.loopx(&["sync"]).ok();
    // Before the revocation: agent-b's ticks from mb are valid.
    b.agent("agent-b", &["todo", "add", "Early work"]).ok();
    b.loopx(&["sync"]).ok();
    let q = b.tip().unwrap();
    a.loopx(&["sync"]).ok();
    a.loopx(&["machine", "revoke", "mb"]).ok();
    a.loopx(&["sync"]).ok();
    push_guarded(&a);
    b.loopx(&["sync"]).ok();
    let r = b.tip().unwrap();
    // After it: refused by Bob's own loopx ...
    let out = b.agent("agent-b", &["--json", "todo", "add", "Late work"]);
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert_eq!(out.error_code(), "machine-unadmitted", "{}", out.stderr);
    assert_eq!(b.tip().as_deref(), Some(r.as_str()));
    // ... and, written before and moved after it, by everyone else.
    b.git(&["update-ref", "refs/loopx/state", &q]);
    b.agent("agent-b", &["todo", "add", "Late work"]).ok();
    let forged = b.tip().unwrap();
    let replanted = forge::replant(&b, &forged, &r);
    b.git(&["update-ref", "refs/loopx/state", &replanted]);
    refused_everywhere(&h, &b, &a, &r, "signature", Some("machine-unadmitted"));
    // The ticks mb signed before its revocation still verify, everywhere.
    a.loopx(&["verify"]).ok();
    env.loopx(&["-C", h.guarded.to_str().unwrap(), "verify"])
        .ok();
    // Rotation: a new key under a new name, admitted, and the agent goes on.
    b.git(&["update-ref", "refs/loopx/state", &r]);
    std::fs::remove_file(b.repo.join(".git/loopx/machine_ed25519")).unwrap();
    let fb2 = setup_machine(&b, "mb2");
    b.loopx(&["sync"]).ok();
    a.loopx(&["sync"]).ok();
    a.loopx(&[
        "machine",
        "admit",
        "mb2",
        "--fingerprint",
        &fb2,
        "--for",
        "agent-b",
    ])
    .ok();
    a.loopx(&["sync"]).ok();
    b.loopx(&["sync"]).ok();
    b.agent("agent-b", &["todo", "add", "Work after rotation"])
        .ok();
    b.loopx(&["sync"]).ok();
    a.loopx(&["sync"]).ok();
    push_guarded(&a);
    a.loopx(&["verify"]).ok();
    let v = a.loopx(&["--json", "machine", "list"]).ok().json();
    let status: Vec<(String, String)> = v["machines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap().to_owned(),
                m["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        status,
        [
            ("ma".to_owned(), "admitted".to_owned()),
            ("mb".to_owned(), "revoked".to_owned()),
            ("mb2".to_owned(), "admitted".to_owned()),
        ]
    );
}

/// The policy is refused while an active agent has no machine: it would
/// lock that agent out everywhere. A proposal alone admits nothing.
#[test]
fn machines_cannot_be_required_while_an_agent_has_none() {
    if !have_openssh() {
        return;
    }
    let env = TestEnv::with_board();
    let a = env.machine();
    signer(&env, &a, "ada");
    let out = a.loopx(&["--json", "signer", "require", "--machines"]);
    assert_eq!(out.error_code(), "machines-missing", "{}", out.stderr);
    let fa = setup_machine(&a, "ma");
    let out = a.loopx(&["--json", "signer", "require", "--machines"]);
    assert_eq!(out.error_code(), "machines-missing", "{}", out.stderr);
    a.loopx(&[
        "machine",
        "admit",
        "ma",
        "--fingerprint",
        &fa,
        "--for",
        "agent-a",
    ])
    .ok();
    let out = a.loopx(&["--json", "signer", "require", "--machines"]);
    assert_eq!(out.error_code(), "machines-missing", "{}", out.stderr);
    assert!(out.stderr.contains("agent-b"), "{}", out.stderr);
    // An agent may not admit a machine, not even its own.
    let out = a.agent(
        "agent-b",
        &[
            "--json",
            "machine",
            "admit",
            "ma",
            "--fingerprint",
            &fa,
            "--for",
            "agent-*",
        ],
    );
    assert_eq!(out.code, 3, "{}", out.stderr);
    a.loopx(&[
        "machine",
        "admit",
        "ma",
        "--fingerprint",
        &fa,
        "--for",
        "agent-*",
    ])
    .ok();
    a.loopx(&["signer", "require", "--machines"]).ok();
    a.agent("agent-b", &["todo", "add", "Covered by the pattern"])
        .ok();
    a.loopx(&["verify"]).ok();
    // The key stays in the git dir, readable by its owner only.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(a.repo.join(".git/loopx/machine_ed25519"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

/// A machine's signature says which clone wrote a tick, never that a human
/// vouches for code: an agent's validation, signed by its admitted
/// machine, does not run on Ada's clone, which trusts only Ada (issue 44;
/// a regression the first version of the signature check had).
#[test]
fn a_machine_signed_validation_does_not_run_where_only_humans_are_trusted() {
    if !have_openssh() {
        return;
    }
    let env = TestEnv::with_board();
    let (_h, a, b) = team(&env);
    let id = b
        .agent(
            "agent-b",
            &["todo", "add", "Deploy", "--", "touch", "PWNED"],
        )
        .ok()
        .stdout
        .trim()
        .to_owned();
    b.loopx(&["sync"]).ok();
    a.loopx(&["sync"]).ok();
    let shown = a.loopx(&["--json", "todo", "show", &id]).ok().json();
    assert_eq!(shown["validation_here"]["runs"], false, "{shown}");
    a.agent("agent-a", &["todo", "claim", &id]).ok();
    let out = a.agent("agent-a", &["--json", "todo", "done", &id]).code(3);
    assert_eq!(out.error_code(), "untrusted-validation", "{}", out.stderr);
    assert!(
        !a.repo.join("PWNED").exists(),
        "an agent's machine-signed validation ran"
    );
}
