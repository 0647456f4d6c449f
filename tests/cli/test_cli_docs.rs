//! `docs/cli.md` is generated from the clap definitions (every command, flag,
//! default and possible value) and checked here, so it cannot go stale.
//!
//! When a command's help changes, regenerate it with
//!
//! ```text
//! LOOPX_REGEN_DOCS=1 cargo test --test cli cli_docs
//! ```

use std::fmt::Write as _;

use clap::{Arg, ArgAction, Command, CommandFactory};

use crate::common::text_diff;

/// How the file is regenerated; printed at its top and on a failure.
const REGEN: &str = "LOOPX_REGEN_DOCS=1 cargo test --test cli cli_docs";

#[test]
fn cli_docs_are_up_to_date() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/cli.md");
    let want = render();
    if std::env::var_os("LOOPX_REGEN_DOCS").is_some() {
        std::fs::write(&path, &want).expect("write docs/cli.md");
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/cli.md is out of date: regenerate it with `{REGEN}`\n\
         (- generated from the code, + docs/cli.md):\n{}",
        text_diff(&want, &have)
    );
}

/// The reference covers every command that is not hidden, and every one of
/// its flags: a command added without help text fails here.
#[test]
fn cli_docs_cover_every_command_with_help() {
    let mut root = loopx::cli::Cli::command();
    root.build();
    let doc = render();
    let mut missing = Vec::new();
    walk(&root, &mut Vec::new(), &mut |path, cmd| {
        let name = path.join(" ");
        if !doc.contains(&format!("\n## `{name}`\n")) {
            missing.push(format!("{name}: no section"));
        }
        if cmd.get_about().is_none() {
            missing.push(format!("{name}: no help text (the `///` comment)"));
        }
        for arg in shown_args(cmd, path.len() == 1) {
            if arg.get_help().is_none() && arg.get_long_help().is_none() {
                missing.push(format!("{name} {}: no help text", arg.get_id()));
            }
        }
    });
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// The commands below `cmd`, depth first, each with its path of names.
fn walk<'c>(cmd: &'c Command, path: &mut Vec<String>, f: &mut impl FnMut(&[String], &'c Command)) {
    path.push(cmd.get_name().to_owned());
    f(path, cmd);
    for sub in cmd.get_subcommands() {
        if !sub.is_hide_set() && sub.get_name() != "help" {
            walk(sub, path, f);
        }
    }
    path.pop();
}

/// The arguments documented under a command: the global ones only at the
/// top, never the automatic `--help` and `--version`.
fn shown_args(cmd: &Command, top: bool) -> impl Iterator<Item = &Arg> {
    cmd.get_arguments().filter(move |a| {
        !a.is_hide_set()
            && !matches!(
                a.get_action(),
                ArgAction::Help | ArgAction::HelpLong | ArgAction::Version
            )
            && (top || !a.is_global_set())
    })
}

fn render() -> String {
    let mut root = loopx::cli::Cli::command();
    root.build();
    let mut out = String::new();
    out.push_str("# loopx command-line reference\n\n");
    let _ = writeln!(
        out,
        "<!-- Generated from the clap definitions by tests/cli/test_cli_docs.rs; do not edit.\n     Regenerate with: {REGEN} -->\n"
    );
    out.push_str(
        "Every command, flag, default and possible value, as `loopx help` knows them. \
         Exit statuses, JSON output and error codes are in [format.md](format.md).\n\n",
    );
    out.push_str("## Contents\n\n");
    walk(&root, &mut Vec::new(), &mut |path, _| {
        let name = path.join(" ");
        let _ = writeln!(
            out,
            "{}- [`{name}`](#{})",
            "  ".repeat(path.len() - 1),
            name.replace(' ', "-")
        );
    });
    walk(&root, &mut Vec::new(), &mut |path, cmd| {
        section(&mut out, path, cmd);
    });
    while out.contains("\n\n\n") {
        out = out.replace("\n\n\n", "\n\n");
    }
    format!("{}\n", out.trim_end())
}

fn section(out: &mut String, path: &[String], cmd: &Command) {
    let name = path.join(" ");
    let _ = write!(out, "\n## `{name}`\n\n");
    if let Some(about) = cmd.get_long_about().or(cmd.get_about()) {
        let _ = writeln!(out, "{}\n", about.to_string().trim_end());
    }
    let usage = cmd
        .clone()
        .bin_name(&name)
        .render_usage()
        .to_string()
        .trim_start_matches("Usage: ")
        .to_owned();
    let _ = writeln!(out, "**Usage:** `{usage}`\n");
    let subs: Vec<&Command> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .collect();
    if !subs.is_empty() {
        out.push_str("**Commands:**\n\n");
        for s in subs {
            let about = s.get_about().map(|a| a.to_string()).unwrap_or_default();
            let _ = writeln!(
                out,
                "- [`{}`](#{}-{}): {about}",
                s.get_name(),
                name.replace(' ', "-"),
                s.get_name()
            );
        }
        out.push('\n');
    }
    let top = path.len() == 1;
    let (positional, options): (Vec<&Arg>, Vec<&Arg>) =
        shown_args(cmd, top).partition(|a| a.is_positional());
    if !positional.is_empty() {
        out.push_str("**Arguments:**\n\n");
        for a in positional {
            item(out, &format!("`{}`", value_name(a, true)), a);
        }
        out.push('\n');
    }
    if !options.is_empty() {
        out.push_str(if top {
            "**Options** (global: they work after any command too):\n\n"
        } else {
            "**Options:**\n\n"
        });
        for a in options {
            item(out, &flag(a), a);
        }
        out.push('\n');
    }
}

/// `-C <PATH>`, `--ttl <SPAN>`, `--force`, `-n, --limit <N>`.
fn flag(a: &Arg) -> String {
    let mut names = Vec::new();
    if let Some(s) = a.get_short() {
        names.push(format!("-{s}"));
    }
    if let Some(l) = a.get_long() {
        names.push(format!("--{l}"));
    }
    let mut s = names.join(", ");
    if a.get_action().takes_values() {
        s.push(' ');
        s.push_str(&value_name(a, false));
    }
    format!("`{s}`")
}

/// `<ID>`, `[TITLE]`, `<ARGV>...`.
fn value_name(a: &Arg, positional: bool) -> String {
    let names: Vec<String> = match a.get_value_names() {
        Some(v) => v.iter().map(|n| n.to_string()).collect(),
        None => vec![a.get_id().as_str().to_uppercase()],
    };
    let many = matches!(a.get_action(), ArgAction::Append)
        || a.get_num_args().is_some_and(|r| r.max_values() > 1);
    let mut s = names
        .iter()
        .map(|n| format!("<{n}>"))
        .collect::<Vec<_>>()
        .join(" ");
    if positional && !a.is_required_set() {
        s = format!("[{}]", s.trim_start_matches('<').trim_end_matches('>'));
    }
    if many {
        s.push_str("...");
    }
    s
}

/// One list item: the name, its help, then its default, environment
/// variable and possible values.
fn item(out: &mut String, name: &str, a: &Arg) {
    let help = a
        .get_long_help()
        .or(a.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    let mut lines = help.trim_end().lines();
    let _ = writeln!(out, "- {name}: {}", lines.next().unwrap_or_default());
    for l in lines {
        if l.is_empty() {
            out.push('\n');
        } else {
            let _ = writeln!(out, "  {l}");
        }
    }
    let mut facts = Vec::new();
    if a.is_required_set() && !a.is_positional() {
        facts.push("Required.".to_owned());
    }
    let defaults: Vec<String> = a
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    if !defaults.is_empty() && a.get_action().takes_values() && !a.is_hide_default_value_set() {
        facts.push(format!("Default: `{}`.", defaults.join(" ")));
    }
    if let Some(env) = a.get_env() {
        facts.push(format!("Environment: `{}`.", env.to_string_lossy()));
    }
    let values: Vec<String> = a
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| match v.get_help() {
            Some(h) => format!("`{}` ({h})", v.get_name()),
            None => format!("`{}`", v.get_name()),
        })
        .collect();
    if !values.is_empty() && a.get_action().takes_values() {
        facts.push(format!("Values: {}.", values.join(", ")));
    }
    if !facts.is_empty() {
        let _ = writeln!(out, "  {}", facts.join(" "));
    }
}
