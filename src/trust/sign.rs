//! Signing human acts with the human's own git setup: `gpg.format = ssh`
//! and `user.signingKey` (a key file, or a public key whose private half is
//! in ssh-agent), or `loopx.signingKey`, through `ssh-keygen -Y sign` (or
//! git's `gpg.ssh.program`) exactly as git signs commits. Passphrases,
//! ssh-agent (with `ssh-add -c` confirmation) and FIDO keys then just work.
//!
//! A process that carries an agent identity never signs (the caller checks
//! `Caller::Human` before asking: the tick writer, which is handed the
//! caller as a value).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use anyhow::{Context, Result};

use crate::error::{Code, Refusal};
use crate::repo::Repo;

/// The key a human signs with, from git config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SigningKey {
    /// A key file: the private key, or a public key whose private half is
    /// in ssh-agent.
    File(PathBuf),
    /// A public key written in the config (`key::ssh-ed25519 …` or
    /// `ssh-ed25519 …`): its private half must be in ssh-agent.
    Literal(String),
}

/// The key a human act is signed with: the act's own
/// ([`Repo::sign_acts_with`]: a signer announcement's key), else
/// `loopx.signingKey`, else `user.signingKey` when `gpg.format = ssh`.
/// None: this human does not sign.
pub fn configured(repo: &Repo) -> Option<SigningKey> {
    if let Some(path) = repo.act_key() {
        return Some(SigningKey::File(path.to_owned()));
    }
    let raw = repo.config().signing_key.as_deref()?.trim();
    if let Some(key) = raw.strip_prefix("key::") {
        return Some(SigningKey::Literal(key.to_owned()));
    }
    if raw.starts_with("ssh-") || raw.starts_with("ecdsa-") || raw.starts_with("sk-") {
        return Some(SigningKey::Literal(raw.to_owned()));
    }
    Some(SigningKey::File(super::allowed::expand(
        raw,
        repo.home(),
        repo.store().root(),
    )))
}

/// Signs `record` under namespace `loopx` and returns the stored form of
/// the signature, checked to verify before it is used.
pub fn sign(repo: &Repo, key: &SigningKey, record: &[u8]) -> Result<String> {
    let program = repo
        .config()
        .ssh_program
        .clone()
        .unwrap_or_else(|| "ssh-keygen".to_owned());
    // A literal key goes through a file, with -U: the agent holds it.
    let (path, agent_only, _literal) = match key {
        SigningKey::File(p) => (p.clone(), false, None),
        SigningKey::Literal(text) => {
            let mut f = tempfile::Builder::new()
                .prefix("loopx-signing-key")
                .suffix(".pub")
                .tempfile()
                .context("writing the signing key to a temporary file")?;
            writeln!(f, "{text}").context("writing the signing key to a temporary file")?;
            (f.path().to_owned(), true, Some(f))
        }
    };
    let mut cmd = Command::new(&program);
    cmd.args(["-Y", "sign", "-n", super::NAMESPACE, "-f"])
        .arg(&path);
    if agent_only {
        cmd.arg("-U");
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            Refusal::error(
                Code::SigningFailed,
                format!("cannot run {program} to sign this human act: {e}"),
            )
            .with_hint("install OpenSSH's ssh-keygen (package openssh-client), or set git config gpg.ssh.program")
        })?;
    // ssh-keygen may exit before reading (no agent, no key): its status
    // says why. A closed pipe here must not read as loopx's own stdout
    // closing, which exits quietly.
    if let Err(e) = child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(record)
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        return Err(anyhow::anyhow!("handing the record to {program}: {e}"));
    }
    let out = child.wait_with_output().context("waiting for ssh-keygen")?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let hint = if repo.act_key().is_some() {
            "a key is announced signed by itself, so only its holder announces it: the private key must sit beside the .pub file or be loaded with `ssh-add`; announce only your own key; nothing was changed"
        } else {
            "check git config user.signingKey (or loopx.signingKey): the key file must exist, or its private half be loaded with `ssh-add`; nothing was changed"
        };
        return Err(Refusal::rule(
            Code::SigningFailed,
            format!(
                "{program} could not sign with {}: {}",
                path.display(),
                err.trim()
            ),
        )
        .with_hint(hint)
        .into());
    }
    let armored = String::from_utf8_lossy(&out.stdout);
    let stored = super::encode(&armored).map_err(|e| {
        Refusal::error(
            Code::SigningFailed,
            format!("{program} wrote no usable signature: {e}"),
        )
    })?;
    let sig = super::decode(&stored).map_err(|e| Refusal::error(Code::SigningFailed, e))?;
    super::verify(&sig, record).map_err(|e| {
        Refusal::rule(
            Code::SigningFailed,
            format!(
                "the signature made with {} cannot be used: {e}",
                path.display()
            ),
        )
        .with_hint("sign with an ed25519 or ECDSA key (or a FIDO sk- key)")
    })?;
    Ok(stored)
}
