//! `loopx signer require`: the team's signing policy, in the state.

use anyhow::Result;
use serde::Serialize;

use crate::cmd::TickWire;
use crate::cmd::tx;
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::Signatures;
use crate::op::{Change, SignerRequire};

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
    #[arg(long, conflicts_with = "machines")]
    off: bool,
    /// Also require every agent tick signed by an admitted machine allowed
    /// to act for its agent (policy `all`; refused until every active agent
    /// has one: `loopx machine list`)
    #[arg(long)]
    machines: bool,
}

#[derive(Serialize)]
struct Wire {
    required: bool,
    /// The policy now: `all`, `humans` or `off`.
    signatures: &'static str,
    #[serde(flatten)]
    tick: TickWire,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let required = !args.off;
    let signatures = if args.machines {
        Signatures::All
    } else if required {
        Signatures::Humans
    } else {
        Signatures::Off
    };
    let done = tx::start(ctx)?.run(|_| {
        Ok(tx::op(
            ctx,
            Change::SignerRequire(SignerRequire { signatures }),
        )?)
    })?;
    ctx.out.emit(
        &Wire {
            required,
            signatures: signatures.as_str(),
            tick: TickWire::of(&done),
        },
        || {
            if args.machines {
                "Signatures are required: every human act signed by its human's announced key, every agent tick by an admitted machine allowed to act for its agent.".to_owned()
            } else if required {
                "Signatures are required: every human act must be signed by a key the state announces for its actor, on every machine.".to_owned()
            } else {
                "Signatures are no longer required by the state; machines that trust signers still ask for them.".to_owned()
            }
        },
    )?;
    Ok(Exit::Ok)
}
