//! Signing keys for the tests: real ones, made by `ssh-keygen` in the temp
//! dir, and the git settings that make a machine trust them or sign with
//! them.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{Machine, TestEnv};

/// Whether `ssh-keygen` and `ssh-agent` can run here; says how to get them
/// when not (a skipped test says why, and how to run it).
pub fn have_openssh() -> bool {
    let found = |p: &str| {
        Command::new(p)
            .arg("-?")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok()
    };
    let ok = found("ssh-keygen") && found("ssh-agent") && found("ssh-add");
    if !ok {
        crate::common::skipped(format_args!(
            "skipped: ssh-keygen/ssh-agent are not installed (apt-get install openssh-client; `bash .ci/run` does)"
        ));
    }
    ok
}

/// Makes an unencrypted ed25519 key `<tmp>/keys/<name>` and returns the path
/// of its public half.
pub fn keygen(env: &TestEnv, name: &str) -> PathBuf {
    let dir = env.root().join("keys");
    std::fs::create_dir_all(&dir).expect("mkdir keys");
    let key = dir.join(name);
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
        .arg(&key)
        .output()
        .expect("ssh-keygen runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join(format!("{name}.pub"))
}

/// The SHA256 fingerprint of a public key file, as `ssh-keygen -lf` says.
pub fn fingerprint(public: &Path) -> String {
    let out = Command::new("ssh-keygen")
        .arg("-lf")
        .arg(public)
        .output()
        .expect("ssh-keygen runs");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .nth(1)
        .expect("a fingerprint")
        .to_owned()
}

/// This machine trusts `principal` with `public`, in an allowed-signers file
/// of its own.
pub fn trust(m: &Machine, principal: &str, public: &Path) {
    let key = std::fs::read_to_string(public).expect("read the key");
    let file = m.repo.with_extension("allowed_signers");
    let mut text = std::fs::read_to_string(&file).unwrap_or_default();
    text.push_str(&format!("{principal} {key}"));
    std::fs::write(&file, text).expect("write allowed signers");
    m.git(&[
        "config",
        "loopx.allowedSignersFile",
        &file.to_string_lossy(),
    ]);
}

/// The human of this machine signs with `public` (its private half next to
/// it, or in ssh-agent).
pub fn sign_with(m: &Machine, public: &Path) {
    m.git(&["config", "gpg.format", "ssh"]);
    m.git(&["config", "user.signingKey", &public.to_string_lossy()]);
}

/// The human of this machine announces `public` as signer `name` in the
/// state (signed with it when this machine signs with it): from format 4 a
/// signed act counts only with a key the state announces for its actor.
pub fn announce(m: &Machine, name: &str, public: &Path) {
    m.loopx(&[
        "signer",
        "announce",
        name,
        "--key",
        &public.to_string_lossy(),
    ])
    .ok();
}

/// `name` makes a key (see [`keygen`]) that `m` trusts, signs its human
/// acts with, and announces in the state: a signing human, set up. Returns
/// the public half.
pub fn signer(env: &TestEnv, m: &Machine, name: &str) -> PathBuf {
    let public = keygen(env, name);
    trust(m, name, &public);
    sign_with(m, &public);
    announce(m, name, &public);
    public
}
