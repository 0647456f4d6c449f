//! `loopx portfolio remove`.

use anyhow::Result;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::error::{Code, Exit, Refusal};

/// Stop following a repository
///
/// Takes the path as `portfolio list` shows it, or any path to the same
/// folder (relative, or through a link) while it still exists. Only your
/// global git config changes; the repository is left alone.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  loopx portfolio remove ~/src/web
  loopx portfolio remove /gone/folder   a folder that no longer exists")]
pub struct Args {
    /// The repository's folder
    path: std::path::PathBuf,
}

#[derive(Serialize)]
struct Wire {
    path: String,
    removed: bool,
}

pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let given = super::absolute(ctx, &args.path);
    let followed = crate::service::portfolio::list()?;
    // The path as written, else the folder it names now.
    let path = [Some(given.clone()), std::fs::canonicalize(&given).ok()]
        .into_iter()
        .flatten()
        .find(|p| followed.contains(p))
        .ok_or_else(|| {
            Refusal::usage(
                Code::BadPath,
                format!("you do not follow {}", given.display()),
            )
            .with_hint(
                "`loopx portfolio list` shows the paths you follow; remove one as it shows it",
            )
        })?;
    let removed = crate::service::portfolio::remove(&path)?;
    let wire = Wire {
        path: path.to_string_lossy().into_owned(),
        removed,
    };
    ctx.out
        .emit(&wire, || format!("No longer following {}.", wire.path))?;
    Ok(Exit::Ok)
}
