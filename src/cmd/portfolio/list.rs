//! `loopx portfolio list`.

use anyhow::Result;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::error::Exit;

/// List the repositories you follow
///
/// As your global git config holds them (`loopx.portfolio`), in the order
/// they were added; `loopx status --all` shows what each holds.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  loopx portfolio list
  loopx status --all                   what waits on you in each of them")]
pub struct Args {}

#[derive(Serialize)]
struct Wire {
    repositories: Vec<Row>,
}

#[derive(Serialize)]
struct Row {
    path: String,
    /// The folder exists.
    exists: bool,
}

pub fn run(ctx: &Ctx, _args: &Args) -> Result<Exit> {
    let wire = Wire {
        repositories: crate::service::portfolio::list()?
            .into_iter()
            .map(|p| Row {
                exists: p.exists(),
                path: p.to_string_lossy().into_owned(),
            })
            .collect(),
    };
    ctx.out.emit(&wire, || {
        if wire.repositories.is_empty() {
            return "You follow no repository: add one with `loopx portfolio add PATH`.".to_owned();
        }
        wire.repositories
            .iter()
            .map(|r| {
                if r.exists {
                    r.path.clone()
                } else {
                    format!("{}  (missing)", r.path)
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    Ok(Exit::Ok)
}
