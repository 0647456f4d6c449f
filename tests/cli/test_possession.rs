//! A key proves it is yours before it is announced (issue 44, format 7):
//! an announcement is signed with the key it names, so a rogue cannot
//! squat Ada's key and Ada cannot announce Bob's; a new key waits until
//! the old one approves it; a key nobody else announces is not reclaimed.

use crate::common::TestEnv;
use crate::common::keys::{have_openssh, keygen, sign_with, trust};

/// Copies the public half of `public` alone into `<tmp>/copies/`: what a
/// teammate (or a rogue) can get of someone else's key.
fn copy_public(env: &TestEnv, public: &std::path::Path) -> std::path::PathBuf {
    let dir = env.root().join("copies");
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join(public.file_name().unwrap());
    std::fs::copy(public, &copy).unwrap();
    copy
}

#[test]
fn only_its_holder_announces_a_key_and_a_new_key_waits_for_the_old() {
    if !have_openssh() {
        return;
    }
    let env = TestEnv::with_board();
    let hub = env.hub("hub");
    let a = env.machine();
    a.git(&["remote", "add", "origin", &hub]);
    a.loopx(&["sync"]).ok();
    let ada = keygen(&env, "ada");
    let bob = keygen(&env, "bob");
    trust(&a, "ada", &ada);
    sign_with(&a, &ada);
    // A rogue clone holds only Ada's public key: it cannot announce it,
    // under any name, and nothing moves.
    let rogue = env.clone_machine("rogue", &hub);
    rogue.git(&["config", "user.name", "Rogue"]);
    rogue.git(&["config", "user.email", "rogue@example.com"]);
    rogue.loopx(&["sync"]).ok();
    let stolen = copy_public(&env, &ada);
    let before = rogue.tip();
    for name in ["ada", "rogue"] {
        let out = rogue
            .loopx(&[
                "--json",
                "signer",
                "announce",
                name,
                "--key",
                stolen.to_str().unwrap(),
            ])
            .code(3);
        assert_eq!(out.error_code(), "signing-failed", "{}", out.stderr);
        assert!(
            out.stderr.contains("announce only your own key"),
            "{}",
            out.stderr
        );
        assert_eq!(rogue.tip(), before, "a refused announcement moves nothing");
    }
    // Ada cannot announce Bob's key as hers (she has his public half).
    let bobs = copy_public(&env, &bob);
    let tip = a.tip();
    let out = a
        .loopx(&[
            "--json",
            "signer",
            "announce",
            "bob",
            "--key",
            bobs.to_str().unwrap(),
        ])
        .code(3);
    assert_eq!(out.error_code(), "signing-failed", "{}", out.stderr);
    assert_eq!(a.tip(), tip);
    // Her own key, signed with it.
    let out = a
        .loopx(&[
            "--json",
            "signer",
            "announce",
            "ada",
            "--key",
            ada.to_str().unwrap(),
        ])
        .ok()
        .json();
    assert_eq!(out["pending"], false);
    // Bob, a newcomer on his own clone, announces his own key; Ada's
    // machine, which trusts only her, takes the announcement (it grants
    // nothing until she trusts him).
    a.loopx(&["sync"]).ok();
    let b = env.clone_machine("bob", &hub);
    b.git(&["config", "user.name", "Bob"]);
    b.git(&["config", "user.email", "bob@example.com"]);
    b.loopx(&["sync"]).ok();
    b.loopx(&["signer", "announce", "bob", "--key", bob.to_str().unwrap()])
        .ok();
    b.loopx(&["sync"]).ok();
    a.loopx(&["sync"]).ok();
    // Ada rotates: her new key announces itself and waits.
    let ada2 = keygen(&env, "ada2");
    let out = a
        .loopx(&[
            "--json",
            "signer",
            "announce",
            "ada",
            "--key",
            ada2.to_str().unwrap(),
        ])
        .ok()
        .json();
    assert_eq!(out["pending"], true, "{out}");
    let listed = a.loopx(&["--json", "signer", "list"]).ok().json();
    let row = listed["signers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "ada")
        .unwrap()
        .clone();
    assert_eq!(row["fingerprint"], crate::common::keys::fingerprint(&ada));
    assert_eq!(
        row["pending"]["fingerprint"],
        crate::common::keys::fingerprint(&ada2)
    );
    // Signed with the new key before approval, her act is refused.
    trust(&a, "ada", &ada2);
    sign_with(&a, &ada2);
    let tip = a.tip();
    let out = a
        .loopx(&["--json", "goal", "add", "docs", "--objective", "Too early"])
        .code(3);
    assert_eq!(out.error_code(), "not-announced", "{}", out.stderr);
    assert_eq!(a.tip(), tip);
    // The new key may not approve itself.
    let new_fp = crate::common::keys::fingerprint(&ada2);
    let approve = [
        "--json",
        "signer",
        "approve",
        "ada",
        "--fingerprint",
        new_fp.as_str(),
    ];
    let out = a.loopx(&approve).code(3);
    assert_eq!(out.error_code(), "not-own-key", "{}", out.stderr);
    assert_eq!(a.tip(), tip);
    // The old key approves it; from then on the new key signs.
    sign_with(&a, &ada);
    // Approving is never blind: another fingerprint approves nothing.
    let wrong = crate::common::keys::fingerprint(&bob);
    let out = a
        .loopx(&[
            "--json",
            "signer",
            "approve",
            "ada",
            "--fingerprint",
            &wrong,
        ])
        .code(3);
    assert_eq!(out.error_code(), "fingerprint-mismatch", "{}", out.stderr);
    assert_eq!(a.tip(), tip);
    a.loopx(&approve).ok();
    let out = a.loopx(&approve).code(3);
    assert_eq!(out.error_code(), "nothing-pending", "{}", out.stderr);
    sign_with(&a, &ada2);
    a.loopx(&[
        "goal",
        "add",
        "docs",
        "--objective",
        "Signed with the new key",
    ])
    .ok();
    // A reclaim of a key nobody else announces changes nothing.
    let out = a
        .loopx(&[
            "--json",
            "signer",
            "reclaim",
            "ada",
            "--key",
            ada2.to_str().unwrap(),
        ])
        .code(3);
    assert_eq!(out.error_code(), "already-announced", "{}", out.stderr);
    // Every clone replays and verifies it all.
    a.loopx(&["sync"]).ok();
    b.loopx(&["sync"]).ok();
    b.loopx(&["verify"]).ok();
    a.loopx(&["verify"]).ok();
}
