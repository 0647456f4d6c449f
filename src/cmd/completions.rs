//! `loopx completions SHELL`: the shell completion script, generated from
//! the command tree (clap_complete), so it cannot go stale.

use anyhow::Result;
use serde::Serialize;

use crate::error::Exit;
use crate::output::Out;

/// Print the completion script for a shell
///
/// bash: `source <(loopx completions bash)`, or save it as
/// ~/.local/share/bash-completion/completions/loopx. zsh: save it as `_loopx`
/// in a directory on $fpath. fish: save it as
/// ~/.config/fish/completions/loopx.fish. elvish and powershell: source the
/// output from the shell's startup file.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// bash, zsh, fish, elvish or powershell
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

#[derive(Serialize)]
struct Wire<'a> {
    shell: String,
    script: &'a str,
}

/// `tree` is the whole command line's definition (the `cli` layer hands it
/// down: commands do not import it).
pub fn run(out: &Out, args: &Args, mut tree: clap::Command) -> Result<Exit> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut tree, "loopx", &mut script);
    let script = String::from_utf8(script)?;
    out.emit(
        &Wire {
            shell: args.shell.to_string(),
            script: &script,
        },
        || script.clone(),
    )?;
    Ok(Exit::Ok)
}
