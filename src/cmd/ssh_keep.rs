//! `loopx ssh-keep` (hidden): the keeper of an ssh session to a hub,
//! started detached by loopx's first fetch over ssh
//! ([`crate::git::keep`]). People never need to run it.

use std::path::PathBuf;
use std::process::ExitCode;

/// Keep an ssh session to a hub open for sync (started by loopx itself)
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The unix socket to answer on (in loopx's private ssh directory).
    /// The hub's URL and the ssh command loopx's own git calls use for it
    /// come on stdin, a line each (never in argv, which `ps` shows anyone)
    pub socket: PathBuf,
}

/// Runs the keeper; it exits by itself when idle or when its session
/// ends. Exit 1, silently, when it could not start.
pub fn main(args: &Args) -> ExitCode {
    let Ok((url, ssh)) = crate::git::keep::read_orders(&mut std::io::stdin().lock()) else {
        return ExitCode::from(1);
    };
    // Started by loopx, it leads a process group of its own: every ssh it
    // starts is in it, and goes with it.
    let lead = rustix::process::getpgrp() == rustix::process::getpid();
    match crate::git::keep::serve(&args.socket, &url, &ssh, lead) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(1),
    }
}
