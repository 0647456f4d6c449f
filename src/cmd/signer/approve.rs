//! `loopx signer approve`: a signer's new key replaces its old one, once the
//! old key (or another announced human) signs the approval (format 7).

use anyhow::Result;
use serde::Serialize;

use crate::cmd::{TickWire, commit_change, slug};
use crate::ctx::Ctx;
use crate::error::{Code, Exit, Hint, N, Next, Refusal};
use crate::model::SignerName;
use crate::op::{Change, SignerApprove};
use crate::trust;

/// Approve a signer's new key, announced by its holder (a signed human act)
///
/// Sign it with the signer's current key (a rotation), or as another
/// announced human. The new key then replaces the old one in the state.
/// `--fingerprint` names the key you approve (read it with `ssh-keygen -lf
/// NEW.pub`): anyone claiming to be the signer can queue a pending key, so
/// approving is never blind.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The signer whose pending key to approve
    name: String,
    /// The new key's fingerprint, as its holder read it (SHA256:…)
    #[arg(long, value_name = "SHA256:…")]
    fingerprint: String,
}

#[derive(Serialize)]
struct Wire<'a> {
    name: &'a SignerName,
    key: &'a str,
    fingerprint: String,
    #[serde(flatten)]
    tick: TickWire,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let name = slug("signer", &args.name, SignerName::new)?;
    let state = crate::cmd::tx::load(ctx)?.state;
    let Some(key) = state
        .signers
        .get(&name)
        .and_then(|s| s.pending.as_ref())
        .map(|p| p.key.clone())
    else {
        return Err(Refusal::rule(
            Code::NothingPending,
            format!("signer {name} has no new key waiting for approval"),
        )
        .with_hint(Hint::new(
            format!("the holder announces the new key with {N} first; {N} shows pending keys"),
            [
                Next::AnnounceSigner(name.to_string()),
                Next::List("signer".to_owned()),
            ],
        ))
        .into());
    };
    let pending = trust::fingerprint(&key).map_err(|e| anyhow::anyhow!(e))?;
    if args.fingerprint.trim() != pending {
        return Err(Refusal::rule(
            Code::FingerprintMismatch,
            format!(
                "{name}'s pending key is {pending}, not {}: nothing was approved",
                args.fingerprint.trim()
            ),
        )
        .with_hint("if you did not announce that key, announce yours again (it replaces the pending one) and approve its fingerprint")
        .into());
    }
    let done = commit_change(
        ctx,
        Change::SignerApprove(SignerApprove {
            name: name.clone(),
            key: key.clone(),
        }),
    )?;
    let fingerprint = trust::fingerprint(&key).map_err(|e| anyhow::anyhow!(e))?;
    ctx.out.emit(
        &Wire {
            name: &name,
            key: &key,
            fingerprint: fingerprint.clone(),
            tick: TickWire::of(&done),
        },
        || format!("Approved signer {name}'s new key ({fingerprint}); it replaces the old one."),
    )?;
    Ok(Exit::Ok)
}
