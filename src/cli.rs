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
    Init(cmd::init::Args),
    Status(cmd::status::Args),
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
    /// Record and list evidence of what was tried
    #[command(subcommand)]
    Evidence(cmd::evidence::Command),
    Sync(cmd::sync::Args),
    Doctor(cmd::doctor::Args),
    Gc(cmd::gc::Args),
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_tree_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
