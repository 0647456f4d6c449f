//! The command line: global flags and the command tree (clap derive). Help
//! text is the `///` comment of each item.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::cmd;
use crate::output::Format;

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

#[derive(Args, Debug)]
pub struct Global {
    /// Run as if loopx was started in PATH
    #[arg(short = 'C', global = true, value_name = "PATH")]
    pub dir: Option<PathBuf>,
    /// Output format
    #[arg(long, global = true, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Same as --format json
    #[arg(long, global = true)]
    pub json: bool,
    /// Act as this registered agent [default: $LOOPX_AGENT, or the agent-runtime session]
    #[arg(long, global = true, value_name = "ID")]
    pub agent: Option<String>,
}

impl Global {
    pub fn format(&self) -> Format {
        if self.json { Format::Json } else { self.format }
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
    Demo(cmd::demo::Args),
    Init(cmd::init::Args),
    Status(cmd::status::Args),
    Log(cmd::log::Args),
    Show(cmd::show::Args),
    Diff(cmd::diff::Args),
    /// Add, list, show and change goals
    #[command(subcommand)]
    Goal(cmd::goal::Command),
    /// Register and list agents
    #[command(subcommand)]
    Agent(cmd::agent::Command),
    /// Add, claim, update and finish todos
    #[command(subcommand)]
    Todo(cmd::todo::Command),
    /// Open, answer and list gates: questions that block a scope
    #[command(subcommand)]
    Gate(cmd::gate::Command),
    /// Announce, list and trust the SSH keys that sign human acts
    #[command(subcommand)]
    Signer(cmd::signer::Command),
    /// Record and list evidence of what was tried
    #[command(subcommand)]
    Evidence(cmd::evidence::Command),
    /// The turn's gate: should this agent run now, and the slots turns spend
    #[command(subcommand)]
    Quota(cmd::quota::Command),
    RefreshState(cmd::refresh_state::Args),
    Settle(cmd::settle::Args),
    Sync(cmd::sync::Args),
    Doctor(cmd::doctor::Args),
    Gc(cmd::gc::Args),
    Hook(cmd::hook::Args),
    /// Install, remove and check the hooks that wire agent runtimes and git to loopx
    #[command(subcommand)]
    Hooks(cmd::hooks::Command),
    Mcp(cmd::mcp::Args),
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
