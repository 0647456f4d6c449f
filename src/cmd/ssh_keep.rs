//! `loopx ssh-keep` (hidden): the keeper of an ssh session to a hub,
//! started detached by loopx's first fetch over ssh
//! ([`crate::git::keep`]). People never need to run it.

use std::path::PathBuf;
use std::process::ExitCode;

/// Keep an ssh session to a hub open for sync (started by loopx itself)
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The unix socket to answer on (in loopx's private ssh directory)
    pub socket: PathBuf,
    /// The hub's URL
    pub url: String,
    /// The ssh command loopx's own git calls use for it
    pub ssh: String,
}

/// Runs the keeper; it exits by itself when idle or when its session
/// ends. Exit 1, silently, when it could not start.
pub fn main(args: &Args) -> ExitCode {
    match crate::git::keep::serve(&args.socket, &args.url, &args.ssh) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(1),
    }
}
