//! The command line: global flags and the command tree (clap derive). Help
//! text is the `///` comment of each item.

use clap::Parser;

use crate::cmd::Command;
use crate::ctx::Global;

/// The control plane for long-running AI-agent work, with its state on a git ref
///
/// loopx keeps goals, todos with claims and leases, and their history as TOML
/// files in commits on refs/loopx/state. Every change is one commit (a tick);
/// claims are compare-and-swap races on that ref.
#[derive(Parser, Debug)]
#[command(
    name = "loopx",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Whether the command line calls `loopx hook`, found without clap: a bad
/// `loopx hook` command line still exits 0 (some runtimes read exit 2 as
/// "block").
pub fn is_hook_call(args: impl IntoIterator<Item = std::ffi::OsString>) -> bool {
    let mut args = args.into_iter().skip(1);
    while let Some(a) = args.next() {
        let a = a.to_string_lossy();
        if matches!(a.as_ref(), "-C" | "--format" | "--agent") {
            args.next();
        } else if !a.starts_with('-') {
            return a == "hook";
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_tree_is_consistent() {
        super::Cli::command().debug_assert();
    }

    #[test]
    fn a_hook_call_is_found_past_global_flags() {
        let call = |s: &str| super::is_hook_call(s.split(' ').map(std::ffi::OsString::from));
        assert!(call("loopx hook claude Stop"));
        assert!(call("loopx -C /r --format json hook"));
        assert!(call("loopx --json hook --bogus"));
        assert!(!call("loopx -C hook status"));
        assert!(!call("loopx status hook"));
    }
}
