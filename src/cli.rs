//! The command line: global flags and the command tree (clap derive). Help
//! text is the `///` comment of each item.

use clap::Parser;

use crate::cmd::Command;
use crate::ctx::Global;

/// Examples in `loopx --help`, as git, jj and gh show them.
const EXAMPLES: &str = "\
Examples:
  loopx init && loopx goal add web --objective 'Ship the site'
  loopx status                     what is happening, gates waiting on you first
  loopx status --html board.html --watch
  loopx digest --since 12h         what happened while you were away
  loopx log --since 2h --goal web  the ticks of the last two hours
  loopx gate answer GATE --choice approve

Global options go before or after the command (loopx --json status). Exit
statuses: 0 ok, 1 error, 2 usage, 3 refused by a rule or a failed check,
4 a conflict with another writer (see `loopx man` and docs/format.md).";

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
    max_term_width = 100,
    after_help = EXAMPLES
)]
pub struct Cli {
    #[command(flatten, next_help_heading = "Global options")]
    pub global: Global,
    #[command(flatten, next_help_heading = "Global options")]
    pub terminal: Terminal,
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// [`Parser::try_parse_from`] without dropping the command tree clap
    /// built to parse: a command line is parsed once or twice per process
    /// (`mcp --exec` parses its tool call's), and freeing every command's
    /// arguments one by one cost about as much as building the chosen
    /// command's (the process's exit returns the memory at once).
    pub fn parse_once(args: &[std::ffi::OsString]) -> Result<Cli, clap::Error> {
        use clap::{CommandFactory, FromArgMatches};
        let mut command = Cli::command();
        let parsed = command
            .try_get_matches_from_mut(args)
            .and_then(|mut matches| {
                // As clap's own derive: its conversion errors say which
                // command they are about.
                Cli::from_arg_matches_mut(&mut matches).map_err(|e| e.format(&mut Cli::command()))
            });
        std::mem::forget(command);
        parsed
    }
}

impl Cli {
    /// `quota should-run`'s command line parsed by hand, without clap: the
    /// most frequent command (an agent's poll before every turn) should not
    /// pay for building clap's command tree, about a quarter of its
    /// instructions. Only the exact forms clap accepts are taken here:
    /// `quota` and `should-run` as the first two words, the global options
    /// (`-C PATH`, `--format F`, `--json`, `--agent ID`, `--color WHEN`,
    /// `--no-pager`, with `=` or a separate value) anywhere, and
    /// should-run's own (`--goal G`, `--sync`) after `should-run`, each at
    /// most once. Anything else (help, `--`, an unknown or repeated flag,
    /// a value that is empty, starts with `-` or is not UTF-8, abbreviations)
    /// is None, and clap parses it as before, so its help and errors are
    /// unchanged. A test holds the answers equal to clap's.
    pub fn should_run(args: &[std::ffi::OsString]) -> Option<Cli> {
        let mut dir = None;
        let mut format = None;
        let mut json = false;
        let mut agent = None;
        let mut color = None;
        let mut no_pager = false;
        let mut goal = None;
        let mut sync = false;
        let mut words = 0;
        let mut it = args.iter().skip(1);
        while let Some(arg) = it.next() {
            let arg = arg.to_str()?;
            if !arg.starts_with('-') {
                // The two words, in order; any other word is clap's.
                let want = ["quota", "should-run"].get(words)?;
                (arg == *want).then_some(())?;
                words += 1;
                continue;
            }
            let (name, inline) = match arg.split_once('=') {
                Some((name, value)) if name.starts_with("--") => (name, Some(value)),
                _ => (arg, None),
            };
            let flag = |seen: &mut bool| -> Option<()> {
                (inline.is_none() && !*seen).then_some(())?;
                *seen = true;
                Some(())
            };
            let mut value = |slot: &Option<String>| -> Option<String> {
                slot.is_none().then_some(())?;
                let v = match inline {
                    Some(v) => v,
                    None => it.next()?.to_str()?,
                };
                (!v.is_empty() && !v.starts_with('-')).then(|| v.to_owned())
            };
            match name {
                "-C" => dir = Some(value(&dir)?),
                "--format" => format = Some(value(&format)?),
                "--agent" => agent = Some(value(&agent)?),
                "--color" => color = Some(value(&color)?),
                "--goal" if words == 2 => goal = Some(value(&goal)?),
                "--json" => flag(&mut json)?,
                "--no-pager" => flag(&mut no_pager)?,
                "--sync" if words == 2 => flag(&mut sync)?,
                _ => return None,
            }
        }
        (words == 2).then_some(())?;
        // The values as clap reads them (case-sensitive), with its defaults.
        fn choice<T: clap::ValueEnum>(v: Option<String>, default: &str) -> Option<T> {
            T::from_str(v.as_deref().unwrap_or(default), false).ok()
        }
        Some(Cli {
            global: Global {
                dir: dir.map(Into::into),
                format: choice(format, "human")?,
                json,
                agent,
                allow_bare: false,
            },
            terminal: Terminal {
                color: choice(color, "auto")?,
                no_pager,
            },
            command: Command::Quota(crate::cmd::quota::Command::ShouldRun(
                crate::cmd::quota::should_run::Args::new(goal, sync),
            )),
        })
    }
}

/// How output meets the terminal: colour and the pager. Read by `lib` before
/// the command runs (colour through anstream, as clap's own output).
#[derive(clap::Args, Debug, Clone)]
pub struct Terminal {
    /// When to colour the output: auto honours NO_COLOR, CLICOLOR,
    /// CLICOLOR_FORCE and TERM=dumb, and colours only a terminal
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = ColorWhen::Auto)]
    pub color: ColorWhen,
    /// Never page long output (log, show, diff); the pager is $LOOPX_PAGER,
    /// git config core.pager, $PAGER or less, and only on a terminal
    #[arg(long, global = true)]
    pub no_pager: bool,
}

/// `--color`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    Auto,
    Always,
    Never,
}

impl ColorWhen {
    /// The choice as anstream (and so clap) takes it.
    pub fn choice(self) -> anstream::ColorChoice {
        match self {
            ColorWhen::Auto => anstream::ColorChoice::Auto,
            ColorWhen::Always => anstream::ColorChoice::Always,
            ColorWhen::Never => anstream::ColorChoice::Never,
        }
    }

    /// `--color` read from a command line clap has not parsed yet (so its
    /// own usage errors and help follow it too). The last one wins.
    pub fn scan(args: &[std::ffi::OsString]) -> Option<ColorWhen> {
        let mut found = None;
        let mut it = args.iter().skip(1).map(|a| a.to_string_lossy());
        while let Some(a) = it.next() {
            if a == "--" {
                break;
            }
            let value = match a.strip_prefix("--color") {
                Some("") => it.next().map(|v| v.into_owned()),
                Some(rest) => match rest.strip_prefix('=') {
                    Some(v) => Some(v.to_owned()),
                    None => continue,
                },
                None => continue,
            };
            found = match value.as_deref() {
                Some("auto") => Some(ColorWhen::Auto),
                Some("always") => Some(ColorWhen::Always),
                Some("never") => Some(ColorWhen::Never),
                _ => found,
            };
        }
        found
    }
}

/// Whether a command line asks for JSON (`--json`, `--format json`,
/// `--format=json`), found without clap: a usage error clap reports is then
/// written as JSON too.
pub fn wants_json(args: &[std::ffi::OsString]) -> bool {
    let mut json = false;
    let mut it = args.iter().skip(1).map(|a| a.to_string_lossy());
    while let Some(a) = it.next() {
        match a.as_ref() {
            "--" => break,
            "--json" => json = true,
            "--format" => json = it.next().is_some_and(|v| v == "json"),
            "--format=json" => json = true,
            "--format=human" => json = false,
            _ => {}
        }
    }
    json
}

/// For a command line that names a command group but none of its
/// subcommands (`loopx todo`): the group's path (`todo`, `goal trust`) and
/// its subcommands' names, read from the command line's definition.
pub fn missing_subcommand(args: &[std::ffi::OsString]) -> Option<(String, Vec<String>)> {
    let root = <Cli as clap::CommandFactory>::command();
    let mut cmd = &root;
    let mut path: Vec<String> = Vec::new();
    let mut it = args.iter().skip(1).map(|a| a.to_string_lossy());
    while let Some(a) = it.next() {
        if matches!(a.as_ref(), "-C" | "--format" | "--agent" | "--color") {
            it.next();
            continue;
        }
        if a.starts_with('-') {
            continue;
        }
        cmd = cmd.find_subcommand(a.as_ref())?;
        path.push(cmd.get_name().to_owned());
    }
    let subs: Vec<String> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .map(|s| s.get_name().to_owned())
        .collect();
    (!path.is_empty() && !subs.is_empty()).then(|| (path.join(" "), subs))
}

/// Whether the command line calls `loopx hook`, found without clap: a bad
/// `loopx hook` command line still exits 0 (some runtimes read exit 2 as
/// "block").
pub fn is_hook_call(args: impl IntoIterator<Item = std::ffi::OsString>) -> bool {
    let mut args = args.into_iter().skip(1);
    while let Some(a) = args.next() {
        let a = a.to_string_lossy();
        if matches!(a.as_ref(), "-C" | "--format" | "--agent" | "--color") {
            args.next();
        } else if !a.starts_with('-') {
            return a == "hook";
        }
    }
    false
}

#[cfg(test)]
mod printed_tests;

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_tree_is_consistent() {
        super::Cli::command().debug_assert();
    }

    /// `defer` leaves a command's own definition unbuilt until it is
    /// entered, so `loopx --help` (and `loopx todo --help`) show the
    /// variant's `///` line: it must be there, at every level, and say what
    /// the command's own help says first.
    #[test]
    fn every_command_has_its_summary_before_it_is_built() {
        fn check(unbuilt: &clap::Command, built: &clap::Command, path: &str) -> usize {
            let mut checked = 0;
            for sub in unbuilt.get_subcommands() {
                let name = format!("{path} {}", sub.get_name());
                let Some(about) = sub.get_about() else {
                    panic!("{name} has no `///` line on its variant");
                };
                let full = built.find_subcommand(sub.get_name()).expect("built");
                assert_eq!(
                    about.to_string(),
                    full.get_about()
                        .map(ToString::to_string)
                        .unwrap_or_default(),
                    "{name}: the variant's summary differs from the command's own"
                );
                let mut full = full.clone();
                full.build();
                checked += 1 + check(sub, &full, &name);
            }
            checked
        }
        let root = super::Cli::command();
        let mut built = root.clone();
        built.build();
        // The top level's commands and the ones under them (todo claim, …).
        assert!(check(&root, &built, "loopx") > 60);
    }

    /// The hand-written should-run parser answers exactly as clap does for
    /// every form it takes, and takes every should-run form made of the
    /// options it knows; anything else is clap's.
    #[test]
    fn should_run_by_hand_is_what_clap_parses() {
        use clap::Parser;
        use std::ffi::OsString;
        let run = |words: &[&str]| {
            let args: Vec<OsString> = std::iter::once("loopx")
                .chain(words.iter().copied())
                .map(OsString::from)
                .collect();
            let hand = super::Cli::should_run(&args).map(|c| format!("{c:?}"));
            let clap = super::Cli::try_parse_from(&args).map(|c| format!("{c:?}"));
            (hand, clap)
        };
        // A small deterministic generator (no dependency for it).
        let seed = std::cell::Cell::new(0x9e37_79b9_7f4a_7c15_u64);
        let next = |n: usize| {
            let mut x = seed.get();
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            seed.set(x);
            (x % n as u64) as usize
        };
        // Each option in its spellings; clap takes each once, anywhere for
        // the global ones, after `should-run` for its own. The parser must
        // take every arrangement of them, as clap does.
        let global: &[&[&[&str]]] = &[
            &[&["-C", "/r"], &["-C", "quota"]],
            &[
                &["--format", "json"],
                &["--format=human"],
                &["--format=json"],
            ],
            &[&["--json"]],
            &[&["--agent", "a1"], &["--agent=a2"]],
            &[
                &["--color", "never"],
                &["--color=always"],
                &["--color", "auto"],
            ],
            &[&["--no-pager"]],
        ];
        let own: &[&[&[&str]]] = &[&[&["--goal", "g"], &["--goal=h"]], &[&["--sync"]]];
        let mut taken = 0;
        for _ in 0..1500 {
            // Where each option goes: before `quota`, between the two
            // words, after `should-run`, or nowhere.
            let mut places: [Vec<&[&str]>; 3] = Default::default();
            for (options, global) in [(global, true), (own, false)] {
                for spellings in options {
                    let place = if global { next(4) } else { 2 + next(2) };
                    if let Some(options) = places.get_mut(place) {
                        let at = next(options.len() + 1);
                        options.insert(at, spellings[next(spellings.len())]);
                    }
                }
            }
            let [before, between, after] = places.map(|p| p.concat());
            let words: Vec<&str> =
                [before, vec!["quota"], between, vec!["should-run"], after].concat();
            let (hand, clap) = run(&words);
            let clap = clap.unwrap_or_else(|e| panic!("{words:?}: clap says {e}"));
            let hand = hand.unwrap_or_else(|| panic!("{words:?}: not taken by hand"));
            assert_eq!(hand, clap, "{words:?}");
            taken += 1;
        }
        assert!(taken > 500, "only {taken} forms taken");
        // Anything else falls to clap, whatever clap makes of it.
        let vocabulary = [
            "quota",
            "should-run",
            "status",
            "-C",
            "/r",
            "--format",
            "json",
            "xml",
            "--format=json",
            "--format=",
            "--json",
            "--json=1",
            "--agent",
            "a1",
            "--agent=",
            "--agent=-x",
            "-x",
            "--color",
            "sometimes",
            "--color=never",
            "--no-pager",
            "--goal",
            "--goal=g",
            "--sync",
            "--sync=yes",
            "--",
            "-h",
            "--help",
            "help",
            "--bogus",
            "",
            "--ag",
            "-Cdir",
            "-V",
            "--version",
            "spend-slot",
            "should",
        ];
        for _ in 0..4000 {
            let len = 1 + next(7);
            let words: Vec<&str> = (0..len)
                .map(|_| vocabulary[next(vocabulary.len())])
                .collect();
            let (hand, clap) = run(&words);
            if let Some(hand) = hand {
                let clap =
                    clap.unwrap_or_else(|e| panic!("{words:?}: taken by hand, clap says {e}"));
                assert_eq!(hand, clap, "{words:?}");
            }
        }
        for words in [
            &["quota", "should-run", "--bogus"][..],
            &["quota", "should-run", "--help"],
            &["quota", "should-run", "--goal"],
            &["quota", "should-run", "--goal", "--sync"],
            &["quota", "should-run", "--sync", "--sync"],
            &["quota", "should-run", "--json", "--json"],
            &["quota", "should-run", "--agent", "a", "--agent=b"],
            &["quota", "--goal", "g", "should-run"],
            &["quota", "should-run", "extra"],
            &["quota", "should-run", "--", "--json"],
            &["quota", "should-run", "--format", "JSON"],
            &["quota"],
            &["should-run"],
            &["help", "quota", "should-run"],
        ] {
            assert_eq!(run(words).0, None, "{words:?}");
        }
    }

    #[test]
    fn color_and_json_are_found_before_parsing() {
        use super::{ColorWhen, wants_json};
        let args = |s: &str| -> Vec<std::ffi::OsString> { s.split(' ').map(Into::into).collect() };
        assert_eq!(
            ColorWhen::scan(&args("loopx --color never log")),
            Some(ColorWhen::Never)
        );
        assert_eq!(
            ColorWhen::scan(&args("loopx log --color=always")),
            Some(ColorWhen::Always)
        );
        assert_eq!(ColorWhen::scan(&args("loopx log -- --color=always")), None);
        assert_eq!(ColorWhen::scan(&args("loopx --colors log")), None);
        assert!(wants_json(&args("loopx --json log --bogus")));
        assert!(wants_json(&args("loopx log --format json")));
        assert!(wants_json(&args("loopx --format=json log")));
        assert!(!wants_json(&args("loopx --json --format human log")));
        assert!(!wants_json(&args("loopx todo add -- --json")));
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
