//! `loopx signer trust`: add an announced signer's key to this machine's
//! allowed-signers file, after showing its fingerprint.

use std::io::{BufRead, IsTerminal};

use anyhow::Result;
use serde::Serialize;

use crate::cmd::slug;
use crate::cmd::tx;
use crate::ctx::{Caller, Ctx};
use crate::error::{Code, Exit, Refusal};
use crate::model::SignerName;
use crate::trust::{self, AllowedSigners, allowed};

/// Trust an announced signer's key on this machine
///
/// Shows the key's fingerprint and asks; compare it with the one the
/// signer reads from `ssh-keygen -lf KEY.pub` over a channel you trust.
/// `--fingerprint` does it unattended (on an agent's machine). The key goes
/// into the allowed-signers file git config `loopx.allowedSignersFile` (or
/// `gpg.ssh.allowedSignersFile`) names; with neither set, into
/// `.git/loopx/allowed_signers`, and `loopx.allowedSignersFile` is set to it.
/// From then on every human act this machine applies must be signed.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The announced signer's name (`loopx signer list`)
    name: String,
    /// The fingerprint you expect (SHA256:…): trust without asking
    #[arg(long, value_name = "SHA256:…")]
    fingerprint: Option<String>,
}

#[derive(Serialize)]
struct Wire<'a> {
    name: &'a SignerName,
    fingerprint: &'a str,
    allowed_signers_file: String,
    /// False when the file already listed the key.
    added: bool,
    /// Set when this trust turned signing on here: the tip whose history
    /// (written unsigned before) needs no signature (`loopx.signaturesFrom`).
    #[serde(skip_serializing_if = "Option::is_none")]
    signatures_from: Option<String>,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    if *ctx.caller() != Caller::Human {
        return Err(Refusal::rule(
            Code::HumansOnly,
            "only a human may change which keys this machine trusts, and this process is an agent",
        )
        .with_hint("ask a human to run `loopx signer trust NAME` from their own shell")
        .into());
    }
    let name = slug("signer", &args.name, SignerName::new)?;
    let snap = tx::load(ctx)?;
    let Some(signer) = snap.state.signers.get(&name) else {
        return Err(Refusal::error(
            Code::UnknownSignerName,
            format!("no signer {name} is announced in the state"),
        )
        .with_hint("`loopx signer list` shows them; the signer announces a key with `loopx signer announce NAME --key FILE.pub`")
        .into());
    };
    let fingerprint = trust::fingerprint(&signer.key).map_err(|e| anyhow::anyhow!(e))?;
    let signers = AllowedSigners::load(ctx.repo()?)?;
    match &args.fingerprint {
        Some(want) if want.trim() != fingerprint => {
            return Err(Refusal::rule(
                Code::FingerprintMismatch,
                format!("{name}'s announced key is {fingerprint}, not {}", want.trim()),
            )
            .with_hint("the announcement may not be theirs: ask the signer for `ssh-keygen -lf KEY.pub`; nothing was trusted")
            .into());
        }
        Some(_) => {}
        None => {
            if !std::io::stdin().is_terminal() {
                return Err(Refusal::usage(
                    Code::ConfirmFingerprint,
                    format!("{name}'s key is {fingerprint}; without a terminal to ask, pass it to confirm"),
                )
                .with_hint(format!("check it with the signer, then `loopx signer trust {name} --fingerprint {fingerprint}`"))
                .into());
            }
            ctx.out.status(&format!(
                "{name} was announced by {} at {}: {} {fingerprint}",
                signer.announced_by.name(),
                signer.announced_at,
                signer.key.split(' ').next().unwrap_or_default()
            ));
            ctx.out.status(
                "Trust this key to sign human acts on this machine? Compare the fingerprint with the signer's `ssh-keygen -lf KEY.pub`. [y/N]",
            );
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line)?;
            if !matches!(line.trim(), "y" | "Y" | "yes") {
                return Err(Refusal::rule(Code::NotConfirmed, "nothing was trusted").into());
            }
        }
    }
    let added_to = add_key(ctx, &signers, &name, &signer.key)?;
    let (path, added, signatures_from) = (added_to.path, added_to.added, added_to.signatures_from);
    let wire = Wire {
        name: &name,
        fingerprint: &fingerprint,
        allowed_signers_file: path.display().to_string(),
        added,
        signatures_from: signatures_from.clone(),
    };
    ctx.out.emit(&wire, || {
        let from = if signatures_from.is_some() {
            " The history before it stays valid as written (git config loopx.signaturesFrom)."
        } else {
            ""
        };
        if added {
            format!(
                "Trusted {name} ({fingerprint}) in {}; human acts here must now be signed by a trusted signer.{from}",
                path.display()
            )
        } else {
            format!("{name} ({fingerprint}) is already trusted in {}.", path.display())
        }
    })?;
    Ok(Exit::Ok)
}

/// Where a key was trusted.
pub(super) struct Added {
    pub(super) path: std::path::PathBuf,
    /// False when the file already listed the key.
    pub(super) added: bool,
    /// Set when this turned signing on here (`loopx.signaturesFrom`).
    pub(super) signatures_from: Option<String>,
}

/// Adds `key` under `name` to this machine's allowed-signers file (setting
/// one up under the git dir when none is configured), and when that turns
/// signing on here, keeps the history so far valid as written.
pub(super) fn add_key(
    ctx: &Ctx,
    signers: &AllowedSigners,
    name: &SignerName,
    key: &str,
) -> Result<Added> {
    let path = match &signers.path {
        Some(p) => p.clone(),
        None => {
            let p = ctx
                .store()?
                .common_dir()
                .join("loopx")
                .join("allowed_signers");
            crate::git::output(
                ctx.store()?.common_dir(),
                &[
                    "config",
                    "--local",
                    "loopx.allowedSignersFile",
                    &p.display().to_string(),
                ],
            )?;
            p
        }
    };
    let added = signers.trusts(key).is_none();
    if added {
        allowed::append(&path, name.as_str(), key)?;
    }
    // Turning signing on here: what this clone already holds was written
    // before any signature was asked for, so it stays valid as it is
    // (history before `loopx.signaturesFrom` needs none), unless the user
    // chose a commit already.
    let signatures_from = match (signers.enforced(), &ctx.config()?.signatures_from) {
        (false, None) => match crate::cmd::tx::tip(ctx)? {
            Some(tip) => {
                let commit = tip.commit.to_string();
                crate::git::output(
                    ctx.store()?.common_dir(),
                    &["config", "--local", "loopx.signaturesFrom", &commit],
                )?;
                Some(commit)
            }
            None => None,
        },
        _ => None,
    };
    Ok(Added {
        path,
        added,
        signatures_from,
    })
}
