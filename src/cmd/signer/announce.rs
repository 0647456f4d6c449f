//! `loopx signer announce`: put your public key in the state, so teammates
//! can find it and trust it with `loopx signer trust`. The announcement is
//! signed with the key it announces (format 7): only its holder announces
//! a key.

use std::path::PathBuf;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::cmd::{TickWire, commit_change, slug};
use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};
use crate::model::SignerName;
use crate::op::{Change, SignerAnnounce};
use crate::trust::{self, AllowedSigners};

/// Announce your SSH public key in the state, signed with it (a human act)
///
/// An announcement only lets teammates find the key: it counts on a
/// machine once someone there runs `loopx signer trust NAME`. It is signed
/// with the key it announces, so you must hold its private half (beside
/// the .pub file, or in ssh-agent). Announcing a new key under your
/// signer's name leaves it pending until `loopx signer approve NAME --fingerprint
/// SHA256:…`, signed with the old key or by another announced human,
/// approves it.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The signer's name (a slug, e.g. ada)
    name: String,
    /// The public key file (ed25519, ECDSA, or their sk- FIDO forms)
    #[arg(long, value_name = "FILE.pub")]
    key: PathBuf,
}

#[derive(Serialize)]
struct Wire<'a> {
    name: &'a SignerName,
    key: &'a str,
    fingerprint: String,
    trusted_here: bool,
    /// The signer had another key: this one waits for `signer approve`.
    pending: bool,
    #[serde(flatten)]
    tick: TickWire,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let name = slug("signer", &args.name, SignerName::new)?;
    let path = if args.key.is_absolute() {
        args.key.clone()
    } else {
        ctx.cwd.join(&args.key)
    };
    let key = read_public(&path)?;
    let pending = crate::cmd::tx::load(ctx)
        .is_ok_and(|s| s.state.signers.get(&name).is_some_and(|s| s.key != key));
    ctx.repo()?.sign_acts_with(private_half(&path));
    let done = commit_change(
        ctx,
        Change::SignerAnnounce(SignerAnnounce {
            name: name.clone(),
            key: key.clone(),
        }),
    )?;
    let fingerprint = trust::fingerprint(&key).map_err(|e| anyhow::anyhow!(e))?;
    let signers = AllowedSigners::load(ctx.repo()?)?;
    let trusted_here = signers.trusts(&key).is_some();
    ctx.out.emit(
        &Wire {
            name: &name,
            key: &key,
            fingerprint: fingerprint.clone(),
            trusted_here,
            pending,
            tick: TickWire::of(&done),
        },
        || {
            if pending {
                return format!(
                    "Announced a new key for signer {name} ({fingerprint}); it waits for approval: `loopx signer approve {name} --fingerprint {fingerprint}`, signed with {name}'s current key or by another announced human."
                );
            }
            let here = if trusted_here {
                "it is trusted here".to_owned()
            } else {
                format!("trust it on each machine with `loopx signer trust {name}`")
            };
            format!("Announced signer {name} ({fingerprint}); {here}.")
        },
    )?;
    Ok(Exit::Ok)
}

/// The key file that signs with the public key `path`: the private key
/// beside it (`id_ed25519` for `id_ed25519.pub`) when there is one, else
/// the public key itself, whose private half ssh-agent holds.
pub(super) fn private_half(path: &std::path::Path) -> PathBuf {
    path.to_str()
        .and_then(|p| p.strip_suffix(".pub"))
        .map(PathBuf::from)
        .filter(|p| p.is_file())
        .unwrap_or_else(|| path.to_owned())
}

/// The public key in `path`, normalized; refuses a private key or a file
/// that holds no usable public key.
pub(super) fn read_public(path: &std::path::Path) -> Result<String> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the public key {}", path.display()))?;
    if text.contains("PRIVATE KEY") {
        return Err(Refusal::usage(
            Code::BadKey,
            format!(
                "{} is a private key: never put it in the state",
                path.display()
            ),
        )
        .with_hint("pass the public half, the file ending in .pub")
        .into());
    }
    trust::normalize_key(&text).map_err(|e| {
        Refusal::usage(Code::BadKey, format!("{} is not a usable public key: {e}", path.display()))
            .with_hint("pass an ed25519 or ECDSA public key (or its sk- FIDO form), e.g. ~/.ssh/id_ed25519.pub")
            .into()
    })
}
