//! `loopx signer require`: the team's signing policy, in the state.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::TickWire;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::Signatures;
use crate::op::Change;
use crate::tx;

/// Require every human act to be signed, on every machine (a signed human act)
///
/// Sets the policy `signatures = "humans"` in the state's loopx.toml. From then on every
/// clone and a guarded hub refuse a human act that is not signed by a key
/// the state announces for its actor and the machine trusts; a machine
/// whose allowed-signers file is missing, unreadable or empty refuses every
/// human act. Only a signed act can set or clear it.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Stop requiring signatures (machines that trust signers still do)
    #[arg(long)]
    off: bool,
}

#[derive(Serialize)]
struct Wire {
    required: bool,
    /// The policy now: `humans` or `off`.
    signatures: &'static str,
    #[serde(flatten)]
    tick: TickWire,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let required = !args.off;
    let signatures = if required {
        Signatures::Humans
    } else {
        Signatures::Off
    };
    let done = tx::commit(ctx, |_| {
        Ok(tx::op(ctx, Change::SignerRequire { signatures })?)
    })?;
    ctx.out.emit(
        &Wire {
            required,
            signatures: signatures.as_str(),
            tick: TickWire::of(&done),
        },
        || {
            if required {
                "Signatures are required: every human act must be signed by a key the state announces for its actor, on every machine.".to_owned()
            } else {
                "Signatures are no longer required by the state; machines that trust signers still ask for them.".to_owned()
            }
        },
    )?;
    Ok(Exit::Ok)
}
