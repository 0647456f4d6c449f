//! `loopx man`: man pages generated from the command tree (clap_mangen),
//! one for `loopx` and one for each command.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::error::Exit;
use crate::output::Out;

/// Write the man pages: loopx(1), and loopx-todo-claim(1) and so on with --dir
///
/// Without --dir, prints loopx.1 (read it with `loopx man | man -l -`).
/// With --dir, writes loopx.1 and a page for every command into DIR, for
/// example ~/.local/share/man/man1 or /usr/local/share/man/man1.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Write every page into this directory (created if missing)
    // Its own id: the global `-C` (id `dir`) reaches every command.
    #[arg(long, id = "man_dir", value_name = "DIR")]
    dir: Option<PathBuf>,
}

#[derive(Serialize)]
struct Wire<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    dir: Option<&'a Path>,
    pages: Vec<Page>,
}

#[derive(Serialize)]
struct Page {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    roff: Option<String>,
}

/// `root` is the whole command line's definition (the `cli` layer hands it
/// down: commands do not import it).
pub fn run(out: &Out, args: &Args, mut root: clap::Command) -> Result<Exit> {
    root.build();
    let Some(dir) = &args.dir else {
        let roff = render(&root)?;
        let wire = Wire {
            dir: None,
            pages: vec![Page {
                name: "loopx.1".to_owned(),
                roff: Some(roff.clone()),
            }],
        };
        out.emit(&wire, || roff)?;
        return Ok(Exit::Ok);
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut pages = Vec::new();
    write_all(&root, "loopx", dir, &mut pages)?;
    let wire = Wire {
        dir: Some(dir),
        pages,
    };
    out.emit(&wire, || {
        format!(
            "Wrote {} man pages into {}.",
            wire.pages.len(),
            dir.display()
        )
    })?;
    Ok(Exit::Ok)
}

/// Writes the page of `cmd` (named `name`) and those of its subcommands.
fn write_all(cmd: &clap::Command, name: &str, dir: &Path, pages: &mut Vec<Page>) -> Result<()> {
    let cmd = cmd.clone().name(name.to_owned());
    let file = format!("{name}.1");
    let path = dir.join(&file);
    std::fs::write(&path, render(&cmd)?).with_context(|| format!("writing {}", path.display()))?;
    pages.push(Page {
        name: file,
        roff: None,
    });
    for sub in cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        let sub_name = format!("{name}-{}", sub.get_name());
        write_all(sub, &sub_name, dir, pages)?;
    }
    Ok(())
}

fn render(cmd: &clap::Command) -> Result<String> {
    let mut roff = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut roff)?;
    Ok(String::from_utf8(roff)?)
}
