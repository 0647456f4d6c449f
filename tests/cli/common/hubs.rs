//! A plain hub and one guarded by `loopx hub install`, and the check that a
//! forgery is refused by the guarded hub, by another clone's sync and by its
//! verify.

use std::path::{Path, PathBuf};

use super::forge;
use super::{Machine, TestEnv, git_in};

/// A plain hub (`origin`) and a guarded one (`guarded`, over file://), both
/// holding the environment's board.
pub struct Hubs {
    pub origin: PathBuf,
    pub guarded: PathBuf,
}

pub fn hubs(env: &TestEnv) -> Hubs {
    let origin = PathBuf::from(env.hub("hub.git"));
    let guarded = PathBuf::from(env.hub("guarded.git"));
    env.loopx(&["-C", guarded.to_str().unwrap(), "hub", "install"])
        .ok();
    env.git(&["remote", "add", "origin", origin.to_str().unwrap()]);
    env.git(&["remote", "add", "guarded", &guarded_url(&guarded)]);
    env.loopx(&["sync"]).ok();
    push_guarded(&env.machine());
    Hubs { origin, guarded }
}

pub fn guarded_url(guarded: &Path) -> String {
    format!("file://{}", guarded.display())
}

/// Pushes the machine's state to the guarded hub; it must be taken.
pub fn push_guarded(m: &Machine) {
    let (ok, err) = forge::push(m, "guarded", "+refs/loopx/state:refs/loopx/state");
    assert!(ok, "an honest push is taken: {err}");
}

/// A clone of the plain hub that knows the guarded one too.
pub fn clone<'e>(env: &'e TestEnv, h: &Hubs, name: &str) -> Machine<'e> {
    let m = env.clone_machine(name, h.origin.to_str().unwrap());
    m.git(&["remote", "add", "guarded", &guarded_url(&h.guarded)]);
    m.loopx(&["sync"]).ok();
    m
}

pub fn hub_tip(hub: &Path) -> String {
    git_in(hub, &["rev-parse", "refs/loopx/state"])
        .trim()
        .to_owned()
}

/// `forger`'s tip is a forgery on top of `start`: the guarded hub refuses
/// it for `rule` and stays put; the plain hub takes it, and `victim`'s sync
/// and verify refuse it for `rule` (with `refusal` when given), changing
/// nothing. Then the plain hub and the forger are put back at `start`.
pub fn refused_everywhere(
    h: &Hubs,
    forger: &Machine,
    victim: &Machine,
    start: &str,
    rule: &str,
    refusal: Option<&str>,
) {
    let forged = forger.tip().unwrap();
    assert_ne!(forged, start, "a forgery was made");
    let guarded_before = hub_tip(&h.guarded);
    let (ok, err) = forge::push(forger, "guarded", "refs/loopx/state:refs/loopx/state");
    assert!(!ok, "the guarded hub took it");
    assert!(
        err.contains("loopx hub: refusing refs/loopx/state") && err.contains(&format!("[{rule}]")),
        "the guarded hub says why ({rule}):\n{err}"
    );
    assert_eq!(hub_tip(&h.guarded), guarded_before, "the guarded hub moved");
    let (ok, err) = forge::push(forger, "origin", "+refs/loopx/state:refs/loopx/state");
    assert!(ok, "{err}");
    let victim_tip = victim.tip();
    let out = victim.loopx(&["--json", "sync"]).code(3);
    // Sync checks the signatures of what it takes before it re-applies
    // every tick: a signature refusal then names its own code.
    assert!(
        out.stderr.contains(&format!("[{rule}]")) || refusal.is_some_and(|r| out.error_code() == r),
        "sync names {rule}: {}\n{}",
        out.stdout,
        out.stderr
    );
    assert_eq!(victim.tip(), victim_tip, "a refused sync moves nothing");
    let v = victim
        .loopx(&[
            "verify",
            "--to",
            "refs/loopx/remotes/origin/state",
            "--json",
        ])
        .code(3)
        .json();
    assert_eq!(v["findings"][0]["rule"], rule, "{v}");
    assert_eq!(v["findings"][0]["commit"], forged.as_str(), "{v}");
    if let Some(code) = refusal {
        assert_eq!(v["findings"][0]["refusal"], code, "{v}");
    }
    forge::set_hub_ref(&h.origin, "refs/loopx/state", start);
    forger.git(&["update-ref", "refs/loopx/state", start]);
}
