//! loopx: a control plane for long-running AI-agent work, with its state as
//! TOML files in commits on a dedicated git ref.
//!
//! Layers, outermost first: [`cli`] parses, [`ctx`] resolves the context
//! (the only reader of the environment), [`cmd`] holds one file per command,
//! [`tx`] runs a tick, [`op`] holds the rules (pure), [`model`] the data
//! (serde only), and [`store`] is the only user of gix. [`sync`] shares the
//! state through a git remote (the network through [`git`], replays through
//! `op::apply`). [`output`] is the only writer to the terminal. The read-only history commands go through
//! [`history`] (ticks of the state ref, resolved and parsed) and [`diff`]
//! (file diffs and semantic summaries, pure). Agent runtimes reach loopx
//! through [`hook`] (their hook formats and the tool guard, pure, answered
//! by `loopx hook`) and [`mcp`] (the JSON-RPC loop of `loopx mcp`).

pub mod cache;
pub mod cli;
pub mod cmd;
pub mod config;
pub mod ctx;
pub mod diff;
pub mod env;
pub mod error;
pub mod fast;
#[doc(hidden)]
pub mod fuzz;
pub mod git;
pub mod history;
pub mod hook;
pub mod ids;
mod layering;
pub mod lockfile;
pub mod mcp;
pub mod model;
pub mod next;
pub mod notify;
pub mod op;
pub mod output;
pub mod price;
pub mod queue;
pub mod redact;
pub mod repo;
pub mod run;
pub mod service;
pub mod signing;
pub mod store;
pub mod sync;
pub mod term;
pub mod time;
pub mod trailer;
pub mod trust;
pub mod tx;
pub mod verify;

use std::process::ExitCode;

use crate::error::{Exit, exit_of};
use crate::output::{Out, is_broken_pipe};

/// Parses the command line, runs the command, and maps the result to an
/// exit status.
pub fn main() -> ExitCode {
    main_from(std::env::args_os())
}

/// What `loopx --version` prints.
fn version_line() -> String {
    format!("loopx {}\n", env!("CARGO_PKG_VERSION"))
}

/// [`main`] for a given command line (the first word is the program):
/// `loopx mcp` runs each tool call through it.
pub fn main_from(args: impl IntoIterator<Item = std::ffi::OsString>) -> ExitCode {
    let args: Vec<std::ffi::OsString> = args.into_iter().collect();
    if let [_, flag] = args.as_slice()
        && (flag == "--version" || flag == "-V")
    {
        // clap's own answer, without building the whole command tree
        // first (about a third of the start-up of `loopx --version`).
        use std::io::Write;
        let _ = std::io::stdout().write_all(version_line().as_bytes());
        return ExitCode::SUCCESS;
    }
    // Before parsing, so clap's own help and errors follow `--color` too.
    if let Some(when) = cli::ColorWhen::scan(&args) {
        when.choice().write_global();
    }
    let parsed = cli::Cli::should_run(&args).map_or_else(|| cli::Cli::parse_once(&args), Ok);
    // `loopx --json todo`: which subcommands there are, not the command's
    // whole help as a message.
    if let Err(e) = &parsed
        && e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
        && cli::wants_json(&args)
        && let Some((path, subs)) = cli::missing_subcommand(&args)
    {
        let refusal = error::Refusal::usage(
            error::Code::MissingSubcommand,
            format!("{path} needs a subcommand"),
        )
        .with_hint(format!(
            "one of: {}; `loopx {path} --help` says what each does",
            subs.join(", ")
        ));
        Out::new(output::Format::Json, true).error(&refusal.into(), Exit::Usage);
        return ExitCode::from(Exit::Usage.code());
    }
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() && cli::is_hook_call(args.iter().cloned()) => {
            let first = e.to_string();
            let first = first.lines().next().unwrap_or_default().to_owned();
            Out::new(output::Format::Human, true).status(&format!(
                "loopx hook: {}; answering nothing.",
                first.trim_start_matches("error: ")
            ));
            return ExitCode::SUCCESS;
        }
        Err(e) if e.use_stderr() && cli::wants_json(&args) => {
            // A usage error under --json is a JSON document too, like every
            // other error (code `bad-usage`, exit 2).
            let text = e.render().to_string();
            let (message, hint) = usage_parts(&text);
            let mut refusal = error::Refusal::usage(error::Code::BadUsage, message);
            if let Some(hint) = hint {
                refusal = refusal.with_hint(hint);
            }
            Out::new(output::Format::Json, true).error(&refusal.into(), Exit::Usage);
            return ExitCode::from(Exit::Usage.code());
        }
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                Exit::Usage.code()
            } else {
                0
            });
        }
    };
    match &cli.command {
        cmd::Command::Hook(args) => return cmd::hook::main(&cli.global, args),
        cmd::Command::SshKeep(args) => return cmd::ssh_keep::main(args),
        cmd::Command::Mcp(args) if args.exec => {
            return cmd::mcp::exec().map_or_else(|code| code, main_from);
        }
        _ => {}
    }
    let format = cli.global.format();
    let result = ctx::Ctx::new(&cli.global).and_then(|ctx| match &cli.command {
        cmd::Command::Log(_) | cmd::Command::Show(_) | cmd::Command::Diff(_)
            if !cli.terminal.no_pager =>
        {
            if let Some(pager) = pager(&ctx)
                && let Err(why) = ctx.out.page(&pager, ctx.env.get_os("PATH"))
            {
                ctx.out.warn(&format!(
                    "cannot start the pager `{pager}` ({why}): the output follows without one; set LOOPX_PAGER, git config core.pager or PAGER to one that runs, or pass --no-pager"
                ));
            }
            cmd::run(&ctx, &cli.command)
        }
        // Generated from the command line's definition, which commands do
        // not import.
        cmd::Command::Completions(args) => cmd::completions::run(
            &ctx.out,
            args,
            <cli::Cli as clap::CommandFactory>::command(),
        ),
        cmd::Command::Man(args) => cmd::man::run(
            &ctx.out,
            args,
            <cli::Cli as clap::CommandFactory>::command(),
        ),
        command => cmd::run(&ctx, command),
    });
    match result {
        Ok(exit) => ExitCode::from(exit.code()),
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) if output::output_failed(&e).is_some() => {
            // The command's own output could not be written (a full disk
            // under `> file`): said as that, for every command, never as
            // the state's trouble.
            let message = output::output_failed(&e).unwrap_or_default();
            let failed = error::Refusal::error(error::Code::OutputFailed, message).with_hint(
                "write the output where there is room (`df -h` shows the disks); a command that only reads changed nothing, and `loopx log -n 1` shows the newest change",
            );
            Out::new(format, true).error(&anyhow::Error::new(failed), Exit::Error);
            ExitCode::from(Exit::Error.code())
        }
        Err(e) if error::is_disk_full(&e) && error::refusal_of(&e).is_none() => {
            // Anywhere else a full disk stops a command: said plainly, with
            // what git's atomic ref update guarantees.
            let full = error::Refusal::error(
                error::Code::DiskFull,
                format!(
                    "no space left on device while {}; the state ref moves only as a whole, so it holds the command's tick entirely or not at all",
                    e.chain().next().map(ToString::to_string).unwrap_or_default()
                ),
            )
            .with_hint("free some space on that disk (`df -h` shows it), then `loopx status` shows whether the command's tick landed");
            let e = anyhow::Error::new(full);
            Out::new(format, true).error(&e, Exit::Error);
            ExitCode::from(Exit::Error.code())
        }
        Err(e) => {
            let exit = exit_of(&e);
            Out::new(format, true).error(&e, exit);
            ExitCode::from(exit.code())
        }
    }
}

/// clap's rendered usage error as a message and a hint: its first line
/// without `error: `, and the rest (usage, "try --help") on one line.
fn usage_parts(text: &str) -> (String, Option<String>) {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let message = lines
        .next()
        .unwrap_or("bad usage")
        .trim_start_matches("error: ")
        .to_owned();
    let rest: Vec<&str> = lines.collect();
    (message, (!rest.is_empty()).then(|| rest.join("; ")))
}

/// The pager for long output, found as git finds its own: `LOOPX_PAGER`,
/// then git config `core.pager`, then `PAGER`, then `less`. Empty or `cat`
/// means none.
fn pager(ctx: &ctx::Ctx) -> Option<String> {
    let chosen = ctx
        .env
        .get("LOOPX_PAGER")
        .map(str::to_owned)
        .or_else(|| ctx.store().ok().and_then(|s| s.config("core.pager")))
        .or_else(|| ctx.env.get("PAGER").map(str::to_owned))
        .unwrap_or_else(|| "less".to_owned());
    let chosen = chosen.trim();
    (!chosen.is_empty() && chosen != "cat").then(|| chosen.to_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_version_shortcut_prints_what_clap_would() {
        let clap = <crate::cli::Cli as clap::CommandFactory>::command().render_version();
        assert_eq!(super::version_line(), clap.to_string());
    }
}
