//! `loopx signer reclaim`: the holder of a key binds it to a signer of
//! their own, voiding another human's announcement of it (format 7).

use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use crate::cmd::{TickWire, commit_change, slug};
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::SignerName;
use crate::op::{Change, SignerReclaim};
use crate::trust;

/// Reclaim your SSH key from someone else's announcement, signed with it (a human act)
///
/// Before format 7 anyone could announce any public key; the key's holder
/// takes it back by signing with it. The other announcement is removed
/// from then on (older history stays as it was).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Your signer's name (a slug, e.g. ada)
    name: String,
    /// Your public key file; its private half signs the reclaim
    #[arg(long, value_name = "FILE.pub")]
    key: PathBuf,
}

#[derive(Serialize)]
struct Wire<'a> {
    name: &'a SignerName,
    key: &'a str,
    fingerprint: String,
    /// The signers whose announcement of the key was removed.
    voided: Vec<String>,
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
    let key = super::announce::read_public(&path)?;
    let before = crate::cmd::tx::load(ctx)?.state;
    ctx.repo()?
        .sign_acts_with(super::announce::private_half(&path));
    let done = commit_change(
        ctx,
        Change::SignerReclaim(SignerReclaim {
            name: name.clone(),
            key: key.clone(),
        }),
    )?;
    let voided: Vec<String> = before
        .signers
        .values()
        .filter(|s| s.key == key && s.name != name)
        .map(|s| s.name.to_string())
        .collect();
    let fingerprint = trust::fingerprint(&key).map_err(|e| anyhow::anyhow!(e))?;
    ctx.out.emit(
        &Wire {
            name: &name,
            key: &key,
            fingerprint: fingerprint.clone(),
            voided: voided.clone(),
            tick: TickWire::of(&done),
        },
        || {
            let gone = if voided.is_empty() {
                String::new()
            } else {
                format!("; removed the announcement by {}", voided.join(", "))
            };
            format!("Reclaimed your key ({fingerprint}) as signer {name}{gone}.")
        },
    )?;
    Ok(Exit::Ok)
}
