//! Builds a large loopx history quickly, for the benchmark only (`bench/run`).
//!
//! Every tick goes through the library's own path, as `tx` runs it:
//! `op::apply` on a copy of the state, `files::changes` for the changed
//! files, `message::render` for the commit message, `Store::write_commit`
//! and a compare-and-swap of the state ref through the store's writer
//! (`Store::writer`, the door `tx` uses). The one shortcut is
//! that the state stays in memory between ticks instead of being read back
//! from the tip (it is the same state: the files are canonical). Every
//! `tx::AUTO_PACK` ticks it runs the same repack a tick starts in the
//! background, but waits for it, and samples the loose-object count.
//!
//! ```text
//! bench_gen DIR --todos N [--ticks M] [--agents K] [--seed S]
//! ```
//!
//! DIR is a git repository without a state. The history is: init with goal
//! `bench`, K agents (`agent-a`, `agent-b`, …), N todos, then turns until M
//! ticks: an agent claims the oldest open todo, adds a note, marks it done,
//! and a human adds a replacement; done todos are archived every 20 turns.
//! The last tick is now; each tick is one second after the one before.
//! Prints one line of JSON with what it built.

use std::collections::{HashSet, VecDeque};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use loopx::model::{Actor, AgentId, GoalId, OpId, Priority, Runtime, State, TodoId};
use loopx::op::{
    AgentRegister, Change, Init, Op, TodoAdd, TodoArchive, TodoClaim, TodoDone, TodoUpdate,
};
use loopx::store::{Person, Store, Tip};
use loopx::time::{Span, Timestamp};

/// Done todos are archived after this many turns.
const ARCHIVE_EVERY: u64 = 20;

struct Args {
    dir: PathBuf,
    todos: u64,
    ticks: u64,
    agents: u64,
    seed: u64,
}

fn parse_args() -> Result<Args> {
    let mut args = std::env::args().skip(1);
    let mut out = Args {
        dir: PathBuf::from(
            args.next()
                .context("usage: bench_gen DIR --todos N [--ticks M] [--agents K] [--seed S]")?,
        ),
        todos: 100,
        ticks: 0,
        agents: 2,
        seed: 1,
    };
    while let Some(flag) = args.next() {
        let value: u64 = args
            .next()
            .with_context(|| format!("{flag} needs a value"))?
            .parse()
            .with_context(|| format!("{flag} needs a number"))?;
        match flag.as_str() {
            "--todos" => out.todos = value,
            "--ticks" => out.ticks = value,
            "--agents" => out.agents = value,
            "--seed" => out.seed = value,
            _ => bail!("unknown flag {flag}"),
        }
    }
    if !(1..=26).contains(&out.agents) {
        bail!("--agents must be 1 to 26");
    }
    Ok(out)
}

/// splitmix64: deterministic ids from the seed, no extra crate.
struct Ids(u64);

impl Ids {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// The repository, the state in memory and the tip it was written to.
struct Gen {
    dir: PathBuf,
    store: Store,
    committer: Person,
    state: State,
    tip: Option<Tip>,
    clock: Timestamp,
    ids: Ids,
    used: HashSet<TodoId>,
    max_loose: u64,
    repacks: u64,
    pack_time: std::time::Duration,
}

impl Gen {
    /// One tick, as `tx::run` makes it, without reading the state back.
    fn tick(&mut self, actor: &Actor, change: Change) -> Result<()> {
        let op = Op {
            id: OpId::from_hex(&format!("{:016x}", self.ids.next())),
            at: self.clock,
            actor: actor.clone(),
            signature: None,
            change,
        };
        let written = loopx::tx::Tick::new(
            &self.store,
            self.tip.as_ref(),
            &self.state,
            &op,
            &self.committer,
        )
        .write()
        .map_err(|e| match e {
            loopx::tx::TickError::Refused(r) => anyhow::anyhow!("{}: {}", r.code, r.message),
            loopx::tx::TickError::Failed(e) => e,
        })?;
        let (new, effect, after) = (
            written
                .tip
                .expect("a tick without skip_empty is always written"),
            written.effect,
            written.state,
        );
        let tick = new.tick;
        let reflog = format!("loopx: {}", effect.subject);
        self.store
            .writer()
            .cas(
                new.commit,
                self.tip.as_ref().map(|t| t.commit),
                &reflog,
                &self.committer,
            )
            .map_err(|e| anyhow::anyhow!("moving the state ref failed: {e:?}"))?;
        self.state = after;
        self.tip = Some(new);
        self.clock = self.clock.plus(Span::seconds(1));
        if tick.is_multiple_of(loopx::tx::AUTO_PACK) {
            self.pack()?;
        }
        Ok(())
    }

    /// The repack a tick starts every `AUTO_PACK` ticks, waited for here,
    /// with the loose-object count seen just before it.
    fn pack(&mut self) -> Result<()> {
        let dir = self.store.common_dir();
        let before = loopx::git::count_objects(dir)?;
        self.max_loose = self.max_loose.max(before.loose);
        let started = Instant::now();
        loopx::git::output(dir, &loopx::git::REPACK)?;
        self.pack_time += started.elapsed();
        self.repacks += 1;
        // Open the repository again, as the next loopx process would: this
        // long-lived process must not keep using its view of the packs from
        // before the repack (see bench/results/history.md).
        self.store = Store::discover(&self.dir)?;
        Ok(())
    }

    fn fresh_todo(&mut self) -> TodoId {
        loop {
            let id = TodoId::from_hex(&format!("{:08x}", self.ids.next() as u32));
            if self.used.insert(id.clone()) {
                return id;
            }
        }
    }

    fn add(&mut self, human: &Actor, goal: &GoalId, n: u64) -> Result<TodoId> {
        let todo = self.fresh_todo();
        let priority: Priority = format!("P{}", n % 5)
            .parse()
            .map_err(|e: String| anyhow::anyhow!(e))?;
        self.tick(
            human,
            Change::TodoAdd(TodoAdd::new(
                todo.clone(),
                goal.clone(),
                format!("Bench todo {n}: make the parser handle case {n}"),
                priority,
            )),
        )?;
        Ok(todo)
    }
}

fn run(args: &Args) -> Result<String> {
    let started = Instant::now();
    let store = Store::discover(&args.dir)?;
    if store.tip()?.is_some() {
        bail!("{} already holds a loopx state", args.dir.display());
    }
    let committer = store.committer().unwrap_or(Person {
        name: "loopx".into(),
        email: "loopx@loopx.invalid".into(),
    });
    let setup = 1 + args.agents + args.todos;
    let total = args.ticks.max(setup);
    let now = Timestamp::system_now();
    let mut g = Gen {
        dir: args.dir.clone(),
        store,
        committer,
        state: State::default(),
        tip: None,
        clock: now.minus(Span::seconds(i64::try_from(total)?)),
        ids: Ids(args.seed),
        used: HashSet::new(),
        max_loose: 0,
        repacks: 0,
        pack_time: std::time::Duration::ZERO,
    };
    let human = Actor::Human {
        name: "Bench".into(),
        email: "bench@example.com".into(),
    };
    let goal = GoalId::new("bench").map_err(anyhow::Error::msg)?;
    g.tick(
        &human,
        Change::Init(Init {
            goal: Some(goal.clone()),
            objective: Some("Benchmark goal".into()),
        }),
    )?;
    let agents: Vec<Actor> = (0..args.agents)
        .map(|i| {
            let name = format!("agent-{}", char::from(b'a' + i as u8));
            AgentId::new(&name).map(Actor::Agent)
        })
        .collect::<Result<_, _>>()
        .map_err(anyhow::Error::msg)?;
    for a in &agents {
        let id = a.agent().expect("built as agents").clone();
        g.tick(
            &human,
            Change::AgentRegister(AgentRegister {
                agent: id,
                runtime: Runtime::Custom,
                capabilities: Vec::new(),
                goals: None,
            }),
        )?;
    }
    let mut open: VecDeque<TodoId> = VecDeque::new();
    let mut n = 0;
    for _ in 0..args.todos {
        n += 1;
        open.push_back(g.add(&human, &goal, n)?);
    }
    // Turns: claim, note, done, and a replacement, until the history is long
    // enough; archive the done todos now and then.
    let mut turns = 0u64;
    let mut done: Vec<TodoId> = Vec::new();
    let tick_now = |g: &Gen| g.tip.as_ref().map_or(0, |t| t.tick);
    // Four ticks a turn, and one kept for the last archive.
    while tick_now(&g) + 5 <= total && !open.is_empty() {
        let agent = &agents[(turns % args.agents) as usize];
        let todo = open.pop_front().expect("checked non-empty");
        let epoch = g.state.todos[&todo].epoch;
        let lease = Span::minutes(45);
        g.tick(
            agent,
            Change::TodoClaim(TodoClaim {
                todo: todo.clone(),
                epoch,
                lease,
            }),
        )?;
        let epoch = g.state.todos[&todo].epoch;
        g.tick(
            agent,
            Change::TodoUpdate(TodoUpdate {
                todo: todo.clone(),
                epoch,
                status: None,
                note: Some(format!("turn {turns}: wrote the change and ran the tests")),
            }),
        )?;
        g.tick(
            agent,
            Change::TodoDone(TodoDone {
                todo: todo.clone(),
                epoch,
                note: Some("tests pass".into()),
                validation: None,
            }),
        )?;
        done.push(todo);
        n += 1;
        open.push_back(g.add(&human, &goal, n)?);
        turns += 1;
        if turns.is_multiple_of(ARCHIVE_EVERY) && tick_now(&g) < total {
            g.tick(
                &human,
                Change::TodoArchive(TodoArchive {
                    todos: std::mem::take(&mut done),
                }),
            )?;
        }
    }
    if !done.is_empty() {
        g.tick(
            &human,
            Change::TodoArchive(TodoArchive {
                todos: std::mem::take(&mut done),
            }),
        )?;
    }
    // Pad with notes on the oldest open todo, one tick each, to hit M exactly.
    while tick_now(&g) < total {
        let todo = open.front().context("no open todo left")?.clone();
        let epoch = g.state.todos[&todo].epoch;
        g.tick(
            &human,
            Change::TodoUpdate(TodoUpdate {
                todo,
                epoch,
                status: None,
                note: Some("a note to round the history up".into()),
            }),
        )?;
    }
    let count = loopx::git::count_objects(g.store.common_dir())?;
    let tip = g.tip.as_ref().context("at least one tick")?;
    Ok(format!(
        "{{\"ticks\":{},\"live_todos\":{},\"turns\":{turns},\"agents\":{},\"seconds\":{:.3},\"repacks\":{},\"repack_seconds\":{:.3},\"max_loose\":{},\"loose\":{},\"packs\":{},\"in_pack\":{},\"commit\":\"{}\"}}",
        tip.tick,
        g.state.todos.len(),
        args.agents,
        started.elapsed().as_secs_f64(),
        g.repacks,
        g.pack_time.as_secs_f64(),
        g.max_loose.max(count.loose),
        count.loose,
        count.packs,
        count.in_pack,
        tip.commit
    ))
}

fn main() -> ExitCode {
    let result = parse_args().and_then(|a| run(&a));
    match result {
        Ok(line) => {
            let _ = writeln!(std::io::stdout(), "{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "bench_gen: {e:#}");
            ExitCode::FAILURE
        }
    }
}
