//! `loopx portfolio add`.

use anyhow::Result;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};

/// Follow a repository: `loopx status --all` shows it
///
/// The path is stored absolute and with links resolved, in your global git
/// config (`loopx.portfolio`, one value per repository), never in any
/// state. Adding a path twice changes nothing and says so.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  loopx portfolio add ~/src/web        follow the repository in ~/src/web
  loopx portfolio add .                follow the repository you are in")]
pub struct Args {
    /// The repository's folder (relative to where loopx runs)
    path: std::path::PathBuf,
}

#[derive(Serialize)]
struct Wire {
    path: String,
    /// False: it was followed already, and nothing changed.
    added: bool,
    /// It is not (yet) a git repository; `status --all` says so.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    not_a_repository: bool,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let given = super::absolute(ctx, &args.path);
    let path = std::fs::canonicalize(&given).map_err(|e| {
        Refusal::usage(
            Code::BadPath,
            format!("cannot follow {}: {e}", given.display()),
        )
        .with_hint("give the folder of a repository that exists (`loopx portfolio list` shows what you follow)")
    })?;
    super::storable(&path)?;
    let added = crate::service::portfolio::add(&path)?;
    let not_a_repository = crate::store::Store::discover(&path).is_err();
    let wire = Wire {
        path: path.to_string_lossy().into_owned(),
        added,
        not_a_repository,
    };
    if not_a_repository {
        ctx.out.warn(&format!(
            "{} is not a git repository (yet): `loopx status --all` shows it as such",
            wire.path
        ));
    }
    ctx.out.emit(&wire, || {
        if added {
            format!("Following {}.", wire.path)
        } else {
            format!("Already following {}: nothing changed.", wire.path)
        }
    })?;
    Ok(Exit::Ok)
}
