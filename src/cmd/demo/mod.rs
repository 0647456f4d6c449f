//! `loopx demo`: the main job in one command. It builds a throwaway
//! workspace (a bare hub and two clones standing for two machines), then runs
//! real turns through the real commands, as separate processes of this very
//! binary, and narrates each step for someone who has never heard of loopx.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::ctx::Ctx;
use crate::error::{Code, Exit};
use crate::output::Out;
use crate::time::Timestamp;

mod stall;
mod tools;

use tools::shown;

/// Show what loopx is for: two machines, two agents and a human, for real
///
/// Creates a workspace with a bare hub repository and two clones (machine-a
/// and machine-b), then runs agent turns, a failing check, a human-only gate,
/// a claim race across machines and an agent stopped for making no
/// progress, with the real commands. It takes a few
/// seconds and leaves the workspace to explore. With LOOPX_NOW set, every
/// step's clock is fixed and the output is reproducible.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Put the workspace here (it must not exist, or be empty)
    // Its own id: the global `-C` (id `dir`) reaches every command.
    #[arg(long, id = "demo_dir", value_name = "PATH")]
    dir: Option<PathBuf>,
    /// Keep the workspace (it is always kept; this flag is accepted for scripts)
    #[arg(long)]
    keep: bool,
}

#[derive(Serialize)]
struct Wire {
    workspace: String,
    commands: usize,
    ticks: usize,
}

/// Runs the demo. It needs no repository of its own: it makes them.
pub fn run(ctx: &Ctx, args: &Args) -> Result<Exit> {
    let out = Out::new(ctx.out.format, true);
    let env_now = ctx.env.get("LOOPX_NOW");
    let root = match &args.dir {
        Some(d) => {
            if d.exists() && d.read_dir().map(|mut r| r.next().is_some()).unwrap_or(true) {
                bail!(
                    crate::error::Refusal::usage(
                        Code::DirNotEmpty,
                        format!("{} exists and is not empty", d.display())
                    )
                    .with_hint(
                        "give a new or empty folder to --dir, or leave it out for a temporary one"
                    )
                );
            }
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
            d.canonicalize()
                .with_context(|| format!("resolving {}", d.display()))?
        }
        None => tempfile::Builder::new()
            .prefix("loopx-demo-")
            .tempdir()
            .context("creating a temporary workspace")?
            .keep(),
    };
    let clock =
        match env_now {
            Some(s) => Some(Timestamp::parse(s).map_err(|e| {
                crate::error::Refusal::usage(Code::BadEnv, format!("LOOPX_NOW: {e}"))
            })?),
            None => None,
        };
    let mut demo = Demo {
        exe: std::env::current_exe().context("finding the loopx binary")?,
        root,
        clock,
        quiet: out.is_json(),
        commands: 0,
        human_config: None,
        masks: Vec::new(),
        turns: None,
    };
    demo.play()?;
    let ticks = demo.count_ticks()?;
    out.emit(
        &Wire {
            workspace: demo.root.display().to_string(),
            commands: demo.commands,
            ticks,
        },
        String::new,
    )?;
    Ok(Exit::Ok)
}

struct Demo {
    exe: PathBuf,
    root: PathBuf,
    /// The fixed clock, advanced a minute per command, when LOOPX_NOW is set.
    clock: Option<Timestamp>,
    quiet: bool,
    commands: usize,
    /// Ada's own git settings (her signing key), given to her commands only.
    human_config: Option<PathBuf>,
    /// Texts shown as something stable (a fingerprint of a key made fresh
    /// each run).
    masks: Vec<(String, String)>,
    /// Turn tokens shown as `<turn N>`, once they follow from a fresh key's
    /// signatures (with a fixed clock only; `stall::learn_turns`).
    turns: Option<Vec<String>>,
}

/// Who runs a command in the demo.
#[derive(Clone, Copy)]
enum Who<'a> {
    /// Ada, with her own git settings.
    Human,
    /// A registered agent, through LOOPX_AGENT.
    Agent(&'a str),
    /// An agent that dropped LOOPX_AGENT to pass for a human: it has the
    /// machine's settings, not Ada's.
    Shedding(&'a str),
}

/// What one command printed, and how it exited.
struct Ran {
    code: i32,
    stdout: String,
}

const HUMAN: (&str, &str) = ("Ada Lovelace", "ada@example.com");

impl Demo {
    fn say(&self, text: &str) {
        if !self.quiet {
            crate::output::print_stdout(&format!("{text}\n"));
        }
    }

    fn act(&self, n: u32, title: &str, text: &str) {
        self.say(&format!("\n== Act {n}: {title}\n{text}"));
    }

    fn machine(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// Runs `loopx ARGS` on a machine, as `agent` (or the human), and shows
    /// the command and its output.
    fn loopx(
        &mut self,
        machine: &str,
        agent: Option<&str>,
        args: &[&str],
        want: &[i32],
    ) -> Result<Ran> {
        let who = agent.map_or(Who::Human, Who::Agent);
        self.run_as(machine, who, args, want)
    }

    fn run_as(&mut self, machine: &str, who: Who<'_>, args: &[&str], want: &[i32]) -> Result<Ran> {
        let mut c = Command::new(&self.exe);
        c.args(args).current_dir(self.machine(machine));
        self.isolate(&mut c);
        let label = match who {
            Who::Human => {
                if let Some(cfg) = &self.human_config {
                    c.env("GIT_CONFIG_GLOBAL", cfg);
                }
                "human".to_owned()
            }
            Who::Agent(a) => {
                c.env("LOOPX_AGENT", a);
                format!("LOOPX_AGENT={a}")
            }
            Who::Shedding(a) => format!("{a}, LOOPX_AGENT unset"),
        };
        if let Some(now) = self.clock {
            c.env("LOOPX_NOW", now.to_string())
                .env("LOOPX_SEED", "demo");
            self.clock = Some(now.plus(crate::time::Span::minutes(1)));
        }
        self.say(&self.masked(&format!("  [{machine}, {label}] $ loopx {}", shown(args))));
        let out = c
            .output()
            .with_context(|| format!("running loopx {}", args.join(" ")))?;
        self.commands += 1;
        let ran = Ran {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        };
        self.learn_turns(&ran.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        for line in ran.stdout.lines().chain(stderr.lines()) {
            self.say(&self.masked(&format!("    {line}")));
        }
        if ran.code != 0 {
            self.say(&format!("    (exit {})", ran.code));
        }
        if !want.contains(&ran.code) {
            bail!(
                "the demo expected `loopx {}` to exit {:?}, and it exited {}",
                args.join(" "),
                want,
                ran.code
            );
        }
        Ok(ran)
    }

    fn masked(&self, text: &str) -> String {
        let text = self
            .masks
            .iter()
            .fold(text.to_owned(), |t, (from, to)| t.replace(from, to));
        self.turns
            .iter()
            .flatten()
            .enumerate()
            .fold(text, |t, (i, hex)| {
                t.replace(hex.as_str(), &format!("<turn {}>", i + 1))
            })
    }

    fn todo_id(ran: &Ran) -> String {
        ran.stdout.trim().to_owned()
    }

    /// `agent` on `machine` asks whether to run (shown as JSON when
    /// `json`), and gets its turn token.
    fn turn(&mut self, machine: &str, agent: &str, json: bool) -> Result<String> {
        let args: &[&str] = if json {
            &["quota", "should-run", "--json"]
        } else {
            &["quota", "should-run"]
        };
        let ran = self.loopx(machine, Some(agent), args, &[0])?;
        let token = if json {
            let v: serde_json::Value =
                serde_json::from_str(&ran.stdout).context("reading should-run's JSON")?;
            v["turn_token"].as_str().map(str::to_owned)
        } else {
            ran.stdout
                .lines()
                .find_map(|l| l.strip_prefix("turn: "))
                .map(str::to_owned)
        };
        token.context("should-run gave no turn token")
    }

    /// Ada answers `gate` on machine A with `choice`, saying why.
    fn answer(&mut self, gate: &str, choice: &str, note: &str) -> Result<Ran> {
        let args = ["gate", "answer", gate, "--choice", choice, "--note", note];
        self.loopx("machine-a", None, &args, &[0])
    }

    /// `settle` of the turn `token` on `todo`, which advanced, then `rest`.
    fn advanced<'a>(token: &'a str, todo: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
        let mut args = vec![
            "settle",
            "--turn",
            token,
            "--todo",
            todo,
            "--outcome",
            "advanced",
        ];
        args.extend_from_slice(rest);
        args
    }

    fn play(&mut self) -> Result<()> {
        self.say(&format!(
            "loopx demo: a workspace with a hub and two machines, at\n  {}",
            self.root.display()
        ));

        // Set-up: a bare hub and two clones, each with its own identity.
        let hub = self.root.join("hub.git");
        std::fs::create_dir_all(&hub)?;
        self.git(&hub, &["init", "-q", "--bare", "-b", "main"])?;
        let a = self.machine("machine-a");
        std::fs::create_dir_all(&a)?;
        self.git(&a, &["init", "-q", "-b", "main"])?;
        for (k, v) in [("user.name", HUMAN.0), ("user.email", HUMAN.1)] {
            self.git(&a, &["config", k, v])?;
        }
        std::fs::write(a.join("README.md"), "# parser\n")?;
        self.git(&a, &["add", "README.md"])?;
        self.git(&a, &["commit", "-q", "-m", "Start the parser"])?;
        self.git(&a, &["remote", "add", "origin", "../hub.git"])?;
        self.git(&a, &["push", "-q", "origin", "main"])?;

        self.act(
            1,
            "one goal, shared through git",
            "Ada, a human, sets a goal and some work on machine A. loopx keeps it as\n\
             TOML files in commits on refs/loopx/state: no server, no database.\n\
             She shares it through an ordinary git remote, the hub.",
        );
        self.loopx(
            "machine-a",
            None,
            &[
                "init",
                "--goal",
                "release",
                "--objective",
                "Ship v1.0 of the parser",
            ],
            &[0],
        )?;
        let parser = Self::todo_id(&self.loopx(
            "machine-a",
            None,
            &["todo", "add", "Write the parser", "--priority", "P1"],
            &[0],
        )?);
        let notes = Self::todo_id(&self.loopx(
            "machine-a",
            None,
            &[
                "todo",
                "add",
                "Write the release notes",
                "--",
                "test",
                "-f",
                "RELEASE_NOTES.md",
            ],
            &[0],
        )?);
        let bench = Self::todo_id(&self.loopx(
            "machine-a",
            None,
            &["todo", "add", "Benchmark the parser", "--priority", "P3"],
            &[0],
        )?);
        self.loopx(
            "machine-a",
            None,
            &["agent", "register", "builder", "--runtime", "claude-code"],
            &[0],
        )?;
        self.loopx("machine-a", None, &["sync"], &[0])?;
        self.say("  Machine B clones the project; its first sync adopts the shared state.");
        self.git(&self.root, &["clone", "-q", "hub.git", "machine-b"])?;
        let b = self.machine("machine-b");
        for (k, v) in [("user.name", HUMAN.0), ("user.email", HUMAN.1)] {
            self.git(&b, &["config", k, v])?;
        }
        self.loopx("machine-b", None, &["sync"], &[0])?;
        self.loopx(
            "machine-b",
            Some("tester"),
            &["agent", "register", "tester", "--runtime", "codex"],
            &[0],
        )?;
        self.loopx("machine-b", None, &["sync"], &[0])?;
        self.loopx("machine-a", None, &["sync"], &[0])?;

        self.act(
            2,
            "an agent's turn",
            "The agent `builder` asks whether to run, claims the work, records a real\n\
             check as evidence, and settles the turn: one tick holds the todo's update,\n\
             the evidence, the outcome and the quota it spent.",
        );
        let token = self.turn("machine-a", "builder", true)?;
        self.loopx(
            "machine-a",
            Some("builder"),
            &["todo", "claim", &parser],
            &[0],
        )?;
        self.loopx(
            "machine-a",
            Some("builder"),
            &[
                "evidence",
                "run",
                "--todo",
                &parser,
                "--",
                "git",
                "--version",
            ],
            &[0],
        )?;
        let done = ["--done", "--note", "parser merged"];
        let settle = Self::advanced(&token, &parser, &done);
        self.loopx("machine-a", Some("builder"), &settle, &[0])?;
        self.loopx("machine-a", None, &["sync"], &[0])?;

        self.act(
            3,
            "a check that fails",
            "On machine B, `tester` takes the release notes. The todo carries a check\n\
             (the file must exist) that Ada wrote on machine A. Machine B runs no code\n\
             from the shared state that it did not write or see signed by someone it\n\
             trusts, until its owner allows it. Then the check runs and does not pass,\n\
             so nothing is marked done and no quota is spent; the failure is kept as\n\
             evidence.",
        );
        self.loopx("machine-b", None, &["sync"], &[0])?;
        let token_b = self.turn("machine-b", "tester", true)?;
        self.loopx(
            "machine-b",
            Some("tester"),
            &["todo", "claim", &notes],
            &[0],
        )?;
        let settle = Self::advanced(&token_b, &notes, &["--done"]);
        self.loopx("machine-b", Some("tester"), &settle, &[3])?;
        self.say(
            "  Machine B's owner lets the team's checks run: git config loopx.runValidations all",
        );
        self.git(
            &self.machine("machine-b"),
            &["config", "loopx.runValidations", "all"],
        )?;
        self.loopx("machine-b", Some("tester"), &settle, &[3])?;
        self.loopx(
            "machine-b",
            None,
            &["quota", "status", "--agent", "tester"],
            &[0],
        )?;
        self.loopx("machine-b", None, &["sync"], &[0])?;

        self.act(
            4,
            "a question only a human may answer, signed",
            "Publishing is for humans. Ada opens a publish gate; the agent is refused\n\
             when it answers as itself. Ada signs her human acts with an SSH key (made\n\
             here with ssh-keygen), and machine A trusts that key in the workspace's\n\
             allowed-signers file. So an agent that drops its identity to pass for a\n\
             human is refused too: it cannot reach Ada's key (here it lacks her git\n\
             settings; docs/gates.md says how to keep a real key out of reach), so its\n\
             answer is unsigned. Ada's answer carries her signature.",
        );
        self.loopx("machine-a", None, &["sync"], &[0])?;
        let gate = Self::todo_id(&self.loopx(
            "machine-a",
            None,
            &[
                "gate",
                "open",
                "--kind",
                "publish",
                "--question",
                "May we publish v1.0 to crates.io?",
            ],
            &[0],
        )?);
        self.loopx(
            "machine-a",
            Some("builder"),
            &["gate", "answer", &gate, "--choice", "approve"],
            &[3],
        )?;
        self.loopx("machine-a", Some("builder"), &["quota", "should-run"], &[3])?;
        match self.make_key()? {
            Some((public, fingerprint)) => {
                self.say("  Ada makes a key with ssh-keygen and sets gpg.format=ssh, user.signingKey.");
                let public = public.to_string_lossy().into_owned();
                self.loopx(
                    "machine-a",
                    None,
                    &["signer", "announce", "ada", "--key", &public],
                    &[0],
                )?;
                self.loopx(
                    "machine-a",
                    None,
                    &["signer", "trust", "ada", "--fingerprint", &fingerprint],
                    &[0],
                )?;
                self.run_as(
                    "machine-a",
                    Who::Shedding("builder"),
                    &["gate", "answer", &gate, "--choice", "approve"],
                    &[3],
                )?;
            }
            None => self.say(
                "  (ssh-keygen is not installed here, so this demo answers unsigned; install\n   openssh-client to see the signed answer.)",
            ),
        }
        self.answer(&gate, "approve", "release notes first")?;
        self.loopx("machine-a", None, &["gate", "show", &gate], &[0])?;
        self.loopx("machine-a", None, &["sync"], &[0])?;

        self.act(
            5,
            "two machines, one todo",
            "Both agents claim the benchmark at the same moment, each on its own\n\
             machine. Locally both succeed. Then both sync: the first push wins, and the\n\
             other machine replays its claim on top, sees it lost, and is told who won.",
        );
        self.loopx("machine-b", None, &["sync"], &[0])?;
        self.loopx(
            "machine-a",
            Some("builder"),
            &["todo", "claim", &bench],
            &[0],
        )?;
        self.loopx(
            "machine-b",
            Some("tester"),
            &["todo", "claim", &bench],
            &[0],
        )?;
        self.loopx("machine-a", Some("builder"), &["sync"], &[0])?;
        self.loopx("machine-b", Some("tester"), &["sync"], &[4])?;
        self.loopx("machine-b", None, &["todo", "show", &bench], &[0])?;

        self.stall_act(6, &bench)?;

        self.act(
            7,
            "what happened",
            "Every change was one commit. loopx reads the history back, and so does\n\
             plain git: the trail needs no loopx to audit.",
        );
        self.loopx("machine-a", None, &["sync"], &[0])?;
        self.loopx("machine-a", None, &["log", "-n", "12"], &[0])?;
        self.loopx("machine-a", None, &["status"], &[0])?;
        // The binary by its path: after `cargo run`, `loopx` is not on PATH.
        let exe = std::env::current_exe().context("finding the loopx binary")?;
        let exe = crate::hook::installer::shell_word(&exe.to_string_lossy());
        self.say(&format!(
            "\nExplore it yourself:\n  cd {}\n  {exe} status\n  {exe} log -p -n 3\n  git log --oneline refs/loopx/state",
            self.machine("machine-a").display()
        ));
        Ok(())
    }

    fn count_ticks(&self) -> Result<usize> {
        let n = self.git(
            &self.machine("machine-a"),
            &["rev-list", "--count", "refs/loopx/state"],
        )?;
        n.trim().parse().context("counting ticks")
    }
}
