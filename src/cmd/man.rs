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

/// One page: clap_mangen's sections, the synopsis as `--help` writes it
/// (`loopx todo claim [OPTIONS] <ID>`, not every flag with its value
/// dropped), the examples, and the sections every man page has: EXIT
/// STATUS, ENVIRONMENT and SEE ALSO.
fn render(cmd: &clap::Command) -> Result<String> {
    let usage = cmd.clone().render_usage().to_string();
    let usage = usage.trim().trim_start_matches("Usage:").trim().to_owned();
    let man = clap_mangen::Man::new(cmd.clone().override_usage(usage));
    let mut roff = Vec::new();
    man.render_title(&mut roff)?;
    man.render_name_section(&mut roff)?;
    man.render_synopsis_section(&mut roff)?;
    man.render_description_section(&mut roff)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut roff)?;
    }
    if cmd.has_subcommands() {
        man.render_subcommands_section(&mut roff)?;
    }
    // Each section rendered alone repeats roff's two-line preamble.
    let mut text = String::new();
    for (i, line) in String::from_utf8(roff)?.lines().enumerate() {
        if i < 2 || !(line.starts_with(".ie \\n(.g") || line.starts_with(".el .ds Aq")) {
            text.push_str(line);
            text.push('\n');
        }
    }
    if let Some(after) = cmd.get_after_long_help().or(cmd.get_after_help()) {
        text.push_str(".SH EXAMPLES\n.nf\n");
        for line in after.to_string().lines() {
            if line.trim_end() == "Examples:" {
                continue;
            }
            text.push_str(&roff_line(line));
            text.push('\n');
        }
        text.push_str(".fi\n");
    }
    text.push_str(".SH \"EXIT STATUS\"\n");
    for (code, what) in EXIT_STATUS {
        text.push_str(&format!(".TP\n{code}\n{}\n", roff_line(what)));
    }
    text.push_str(".SH ENVIRONMENT\n");
    for (var, what) in ENVIRONMENT {
        text.push_str(&format!(
            ".TP\n\\fB{}\\fR\n{}\n",
            roff_line(var),
            roff_line(what)
        ));
    }
    text.push_str(".SH \"SEE ALSO\"\n");
    text.push_str(&roff_line(&see_also(cmd).join(", ")));
    text.push('\n');
    let mut version = Vec::new();
    man.render_version_section(&mut version)?;
    for line in String::from_utf8(version)?.lines() {
        if !(line.starts_with(".ie \\n(.g") || line.starts_with(".el .ds Aq")) {
            text.push_str(line);
            text.push('\n');
        }
    }
    Ok(text)
}

/// The EXIT STATUS section (docs/format.md §11 has the full table).
const EXIT_STATUS: [(u8, &str); 5] = [
    (0, "Success, including should-run saying run."),
    (
        1,
        "An error that is neither a rule nor a conflict: I/O, git, a corrupt state, an unknown id.",
    ),
    (2, "Usage: a bad flag or a malformed argument."),
    (
        3,
        "Refused by a rule (permission, gate, quota, a failed validation), or a check that failed.",
    ),
    (
        4,
        "A conflict with another writer: a claim held by another agent, a stale epoch, a sync rejection.",
    ),
];

/// The ENVIRONMENT section: every variable loopx reads.
const ENVIRONMENT: [(&str, &str); 11] = [
    (
        "LOOPX_AGENT",
        "The registered agent loopx acts as when --agent is not given.",
    ),
    (
        "LOOPX_NOW",
        "A fixed clock (an RFC 3339 time), for reproducible scripts and tests.",
    ),
    ("LOOPX_SEED", "Makes generated ids deterministic."),
    (
        "LOOPX_REF",
        "The state ref for this command, over git config loopx.ref: on a state split into a ref per goal, refs/loopx/state (the shared ref) or refs/loopx/goals/GOAL.",
    ),
    (
        "LOOPX_NO_FAST",
        "Set to anything: reads always open the repository instead of answering a cache hit from the state cache's files alone (for comparison).",
    ),
    (
        "LOOPX_VERIFY_THREADS",
        "1 checks a chain on one thread; more than 1 always uses the pipelined check (three threads). Unset: pipelined for chains of 64 ticks or more on a machine with two cores or more. Both give the same answer.",
    ),
    (
        "LOOPX_PAGER, PAGER",
        "The pager for log, show and diff on a terminal (before PAGER, git config core.pager); empty or cat turns it off, as does --no-pager.",
    ),
    ("NO_COLOR", "Set to anything: no colour (as --color never)."),
    (
        "CLICOLOR, CLICOLOR_FORCE",
        "CLICOLOR=0: no colour; CLICOLOR_FORCE=1: colour even when not on a terminal.",
    ),
    ("TERM", "dumb: no colour."),
    (
        "HOME",
        "Where hooks install finds the agent runtimes' settings.",
    ),
];

/// loopx(1) and the page's neighbours: its parent and its own commands.
fn see_also(cmd: &clap::Command) -> Vec<String> {
    let bin = cmd.get_bin_name().unwrap_or("loopx").replace(' ', "-");
    let mut pages = Vec::new();
    if let Some((parent, _)) = bin.rsplit_once('-') {
        if parent != "loopx" {
            pages.push("loopx(1)".to_owned());
        }
        pages.push(format!("{parent}(1)"));
    }
    pages.extend(
        cmd.get_subcommands()
            .filter(|s| !s.is_hide_set() && s.get_name() != "help")
            .map(|s| format!("{bin}-{}(1)", s.get_name())),
    );
    pages.push("git(1)".to_owned());
    pages
}

/// Text as one line of roff: backslashes and hyphens escaped, and a line
/// that would start with a control character made plain.
fn roff_line(s: &str) -> String {
    let s = s.replace('\\', "\\e").replace('-', "\\-");
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}")
    } else {
        s
    }
}
