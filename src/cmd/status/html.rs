//! `loopx status --html FILE`: the board as one self-contained page.
//!
//! Inline CSS, no external request, no framework; a few lines of inline JS
//! only filter the tables, and the page is whole without them. Every text
//! that comes from the state goes through [`esc`], the one escaping
//! function, so an agent-written title cannot inject markup.

use crate::cmd::wire::{esc, raise_command};
use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::{Args, View};
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::usage::{BUDGET_WINDOW, human_count};
use crate::model::{AgentId, Blocks, Gate, GateId, State, Todo, TodoId};
use crate::notify::answer_command_in;
use crate::op::board::{self, Board, Column, Counts};
use crate::op::stuck::{self, Stuck};
use crate::op::usage;
use crate::time::{Span, Timestamp};

mod agents;
pub mod live;
use agents::{agents, money, timeline};
pub(super) use agents::{money_rows, money_table};
use live::Frame;

/// The timeline shows this many ticks.
const TIMELINE: usize = 100;

/// How often `--watch` looks at the state ref.
pub(super) const POLL: Duration = Duration::from_millis(200);

/// What `--json status --html FILE` prints: what was written, where.
#[derive(serde::Serialize)]
struct Written<'a> {
    html: &'a Path,
    #[serde(rename = "ref")]
    state_ref: &'a str,
    tick: u64,
    bytes: usize,
}

pub fn run(ctx: &Ctx, args: &Args, file: &Path) -> Result<Exit> {
    let stdout = file == Path::new("-");
    if stdout && (args.watch || ctx.out.is_json()) {
        return Err(crate::error::Refusal::usage(
            crate::error::Code::BadUsage,
            "--html - writes the page to stdout, which --watch and --json cannot share",
        )
        .with_hint("give a file: `loopx status --html board.html`")
        .into());
    }
    if !args.watch {
        let view = View::read(ctx, args.at.as_ref(), TIMELINE, true)?;
        let html = page(&frame(ctx, &view, false), None);
        if stdout {
            ctx.out.emit(&(), || html)?;
            return Ok(Exit::Ok);
        }
        live::write_atomic(file, html.as_bytes())?;
        ctx.out.emit(
            &Written {
                html: file,
                state_ref: ctx.state_ref(),
                tick: view.snap.tip.tick,
                bytes: html.len(),
            },
            String::new,
        )?;
        ctx.out.status(&format!("wrote {}", file.display()));
        return Ok(Exit::Ok);
    }
    // Watch: the page once, then its sidecar whenever the ref moves. The
    // clock runs on from the context's time, so leases count down between
    // writes.
    let start = Instant::now();
    let last = std::cell::Cell::new(None);
    live::follow(
        file,
        POLL,
        args.max_updates,
        || Ok(last.get() != Some(crate::history::tip(ctx.repo()?)?.commit)),
        || {
            let mut view = View::read(ctx, None, TIMELINE, true)?;
            view.now = ctx
                .now
                .plus(Span::seconds(start.elapsed().as_secs() as i64));
            last.set(Some(view.snap.tip.commit));
            Ok(frame(ctx, &view, true))
        },
        |f, at| page(f, Some((file, at))),
        |f| {
            ctx.out.status(&format!(
                "wrote {} at tick {}",
                live::sidecar(file).display(),
                f.key
            ));
        },
    )?;
    Ok(Exit::Ok)
}

/// The board of `view` as a [`Frame`]: the header's figures and the
/// sections.
fn frame(ctx: &Ctx, view: &View, watch: bool) -> Frame {
    let board = view.board();
    let local = view.local(ctx);
    let claims = stuck::claims(&view.snap.state, view.now, &local);
    render(ctx.state_ref(), view, &board, &claims, watch)
}

const STYLE: &str = r#"
:root{color-scheme:light dark;--bg:#fff;--fg:#1b1b1b;--mute:#666;--line:#ddd;--warn:#b00020;--warnbg:#fde7ea;--ok:#1b7a3a;--acc:#0b57d0;--card:#f6f7f9;--col:#eef0f3}
@media (prefers-color-scheme:dark){:root{--bg:#121417;--fg:#e6e6e6;--mute:#9aa0a6;--line:#333;--warn:#ff8a80;--warnbg:#3a1d20;--ok:#7bd88f;--acc:#8ab4f8;--card:#1c1f24;--col:#17191d}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:80rem;padding:.75rem;overflow-wrap:break-word;font:15px/1.45 system-ui,sans-serif;background:var(--bg);color:var(--fg)}
h1{font-size:1.3rem;margin:.2rem 0}h2{font-size:1.15rem;margin:1.4rem 0 .4rem;border-bottom:1px solid var(--line)}h3{font-size:1rem;margin:1rem 0 .3rem}
a{color:var(--acc)}.mute{color:var(--mute)}code,pre{font:13px/1.4 ui-monospace,monospace}
pre{background:var(--card);padding:.4rem .5rem;margin:.2rem 0;white-space:pre-wrap;word-break:normal;overflow-wrap:normal;overflow-x:auto}
.nw,time,.id{white-space:nowrap}
.gate pre{white-space:pre}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:14px}
th,td{text-align:left;padding:.25rem .4rem;border-bottom:1px solid var(--line);vertical-align:top}
th{font-weight:600;white-space:nowrap}td.num{text-align:right;white-space:nowrap}
@media (max-width:40rem){table.stack thead{display:none}table.stack tr{display:block;border-bottom:1px solid var(--line);padding:.3rem 0}table.stack td,table.stack th{display:block;border:0;padding:.1rem .2rem;text-align:left}table.stack td:empty{display:none}table.stack td[data-label]::before{content:attr(data-label) ": ";color:var(--mute)}table.ticks tr{display:grid;grid-template-columns:auto 1fr;gap:0 .5rem}table.ticks td:nth-child(n+3){grid-column:1/-1}}
.gate{background:var(--card);border-left:4px solid var(--warn);padding:.5rem .7rem;margin:.5rem 0}
.failed td{color:var(--warn);background:var(--warnbg)}
.passed{color:var(--ok)}.bad{color:var(--warn);font-weight:600}
.tag{display:inline-block;padding:0 .35rem;border-radius:.6rem;font-size:12px;background:var(--warnbg);color:var(--warn);white-space:nowrap}
dl.counts{display:flex;flex-wrap:wrap;gap:.3rem 1rem;margin:.4rem 0}dl.counts div{display:flex;gap:.3rem}dl.counts dt{color:var(--mute)}dl.counts dd{margin:0;font-weight:600}
ul.stuck{padding-left:1.1rem;margin:.3rem 0}ul.stuck li{margin:.25rem 0}
.board{display:grid;grid-template-columns:repeat(auto-fit,minmax(12rem,1fr));gap:.5rem;align-items:start}
.col{background:var(--col);border-radius:.4rem;padding:.3rem .4rem;min-width:0}.col h4{margin:.1rem 0 .3rem;font-size:13px;text-transform:uppercase;letter-spacing:.03em;color:var(--mute)}
.card{background:var(--bg);border:1px solid var(--line);border-radius:.3rem;padding:.3rem .4rem;margin:.3rem 0;font-size:13px}
.card.stuck{border-left:3px solid var(--warn)}.card p{margin:.15rem 0}
svg{max-width:100%;height:auto}svg rect{fill:var(--acc)}svg text{fill:var(--mute);font-size:9px}
#filter{display:none;width:100%;max-width:24rem;padding:.3rem;margin:.3rem 0;font:inherit}
:target{outline:2px solid var(--acc)}
summary{cursor:pointer;color:var(--mute);margin:.3rem 0}
"#;

/// Filtering: rows and cards whose text does not contain what was typed
/// hide. The clock: on a page `--watch` writes, times count on from the
/// page's own clock between frames, so a lease turns "expired" and "5m
/// ago" grows while nothing ticks. `loopxRefresh` applies both again after
/// a followed page swapped its sections in ([`live::SCRIPT`]). The page is
/// whole without it.
const SCRIPT: &str = r#"
(function(){var f=document.getElementById('filter'),b=document.body;
function filter(){if(!f)return;var q=f.value.toLowerCase();
document.querySelectorAll('tbody tr, .card').forEach(function(r){r.hidden=q!==''&&r.textContent.toLowerCase().indexOf(q)===-1;});}
if(f){f.style.display='block';f.addEventListener('input',filter);filter();}
function span(s){s=Math.max(0,Math.floor(s));var d=Math.floor(s/86400),h=Math.floor(s%86400/3600),m=Math.floor(s%3600/60),x=s%60,o='';
if(d)o+=d+'d';if(h)o+=h+'h';if(m)o+=m+'m';if(x||!o)o+=x+'s';return o;}
function tick(){var w=+b.getAttribute('data-written');if(!w)return;var now=+b.getAttribute('data-now')+(Date.now()-w)/1000;
document.querySelectorAll('[data-until]').forEach(function(e){var u=+e.getAttribute('data-until');
if(now>=u){e.textContent='expired';e.className='bad';}else{e.textContent=span(u-now)+' left';}});
document.querySelectorAll('[data-ago]').forEach(function(e){e.textContent=span(now-e.getAttribute('data-ago'))+' ago';});}
window.loopxRefresh=function(){filter();tick();};
tick();setInterval(tick,1000);})();
"#;

/// The page around a frame: one self-contained document (this page's
/// style, filter and clock). `live`: the page's file and the wall clock of
/// the write, for a page that follows the state through its sidecar
/// ([`live::follow`] calls it with both).
pub fn page(f: &Frame, live: Option<(&Path, u128)>) -> String {
    let mut h = String::with_capacity(f.head.len() + f.main.len() + 8 * 1024);
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let _ = writeln!(
        h,
        "<title>{}</title>\n<style>{STYLE}</style>\n</head>",
        esc(&f.title)
    );
    // The clock the script counts from: the board's time, and (on a
    // followed page) the wall clock when it was written.
    match live {
        Some((file, at)) => {
            let _ = writeln!(h, "<body{}>", live::body_attrs(file, f, at));
        }
        None => {
            let _ = writeln!(h, "<body data-now=\"{}\">", f.now);
        }
    }
    let _ = writeln!(
        h,
        "<header>\n<div id=\"live-head\">\n{}</div>\n<input id=\"filter\" type=\"search\" placeholder=\"Filter rows and cards…\" aria-label=\"Filter rows and cards\">\n</header>\n<main id=\"live-main\">\n{}</main>\n<script>{SCRIPT}</script>",
        f.head, f.main
    );
    if live.is_some() {
        let _ = writeln!(h, "<script>{}</script>", live::SCRIPT);
    }
    h.push_str("</body>\n</html>\n");
    h
}

/// The board as a frame: the header's figures and every section.
pub fn render(state_ref: &str, view: &View, b: &Board, claims: &[Stuck], watch: bool) -> Frame {
    let tick = view.snap.tip.tick;
    let mut head = String::with_capacity(2 * 1024);
    let _ = writeln!(head, "<h1>loopx {} · tick {tick}</h1>", esc(state_ref));
    let _ = write!(head, "<p class=\"mute\">as of <time>{}</time>", b.now);
    if let Some(tip) = view.tip_tick {
        let _ = write!(head, " (the tip is tick {tip})");
    }
    if watch {
        head.push_str(" · follows the state ref; times count on between updates");
    }
    head.push_str("</p>\n");
    counts(&mut head, "counts", &b.counts, b.agents.len());
    let mut h = String::with_capacity(64 * 1024);
    gates(&mut h, b, &view.snap.state);
    notify_failed(&mut h, &view.notify_failed);
    stuck(&mut h, b, claims);
    money(&mut h, view, b);
    goals(&mut h, b, claims);
    agents(&mut h, view, b);
    timeline(&mut h, b, &view.day);
    Frame {
        key: tick.to_string(),
        title: format!("loopx {state_ref} tick {tick}"),
        now: b.now.unix(),
        head,
        main: h,
    }
}

/// Gates whose `loopx.notify` command failed on this clone, with the
/// reason (the command's own last words on stderr); nothing when none.
pub(super) fn notify_failed(h: &mut String, failed: &[(GateId, String)]) {
    if failed.is_empty() {
        return;
    }
    h.push_str(
        "<section id=\"notify-failed\">\n<h2>Notifications failed</h2>\n<ul class=\"stuck\">\n",
    );
    for (gate, why) in failed {
        let _ = writeln!(
            h,
            "<li data-notify-failed=\"{id}\"><span class=\"tag\">not sent</span> gate <a href=\"#{id}\"><code class=\"id\">{id}</code></a>: {why} <span class=\"mute\">(retried after the next tick or sync)</span></li>",
            id = esc(gate.as_str()),
            why = esc(why),
        );
    }
    h.push_str("</ul>\n</section>\n");
}

/// The counts. `ready` (some active agent may claim it now) overlaps the
/// others: an open todo, or a claimed one whose lease ran out.
fn counts(h: &mut String, id: &str, c: &Counts, agents: usize) {
    let _ = write!(h, "<dl class=\"counts\" id=\"{id}\">");
    for (k, label, v) in [
        ("ready", "ready to claim", c.ready),
        ("open", "open", c.open),
        ("waiting", "waiting", c.waiting),
        ("claimed", "claimed", c.claimed),
        ("blocked", "blocked", c.blocked),
        ("deferred", "deferred", c.deferred),
        ("done", "done", c.done),
        ("agents", "agents", agents),
    ] {
        let _ = write!(
            h,
            "<div><dt>{label}</dt><dd data-count=\"{k}\">{v}</dd></div>"
        );
    }
    h.push_str("</dl>\n");
}

/// A link to a todo's card, with its id and title.
fn todo_link(t: &Todo) -> String {
    format!(
        "<a href=\"#{id}\"><code class=\"id\">{id}</code></a> {title}",
        id = esc(t.id.as_str()),
        title = esc(&t.title)
    )
}

/// A link to an agent's row.
fn agent_link(a: &AgentId) -> String {
    format!(
        "<a class=\"nw\" href=\"#agent-{id}\">{id}</a>",
        id = esc(a.as_str())
    )
}

/// A lease's end: a countdown (or "expired"), live on a watched page.
fn lease(until: Timestamp, expired: bool, now: Timestamp) -> String {
    if expired {
        format!(
            "<time class=\"bad\" datetime=\"{until}\" title=\"expired at {until}\">expired</time>"
        )
    } else {
        format!(
            "<time datetime=\"{until}\" data-until=\"{}\" title=\"until {until}\">{} left</time>",
            until.unix(),
            until.since(now)
        )
    }
}

/// "5m ago", live on a watched page.
fn ago(at: Timestamp, now: Timestamp) -> String {
    format!(
        "<time datetime=\"{at}\" data-ago=\"{}\" title=\"{at}\">{} ago</time>",
        at.unix(),
        now.since(at)
    )
}

fn gates(h: &mut String, b: &Board, state: &State) {
    let (human, other): (Vec<&Gate>, Vec<&Gate>) =
        b.gates.iter().partition(|g| g.kind.human_only());
    h.push_str("<section id=\"gates\">\n<h2>Waiting on you</h2>\n");
    if human.is_empty() {
        h.push_str("<p class=\"mute\">Nothing waits on a human.</p>\n");
    }
    for g in human {
        gate(h, b, g, state, None);
    }
    if !other.is_empty() {
        h.push_str("<h3>Open decisions</h3>\n");
        for g in other {
            gate(h, b, g, state, None);
        }
    }
    h.push_str("</section>\n");
}

/// What a gate holds, linked: the todo with its title, the agent, or the
/// goal.
fn blocks(b: &Board, g: &Gate) -> String {
    match &g.blocks {
        Blocks::Todo(id) => match find_card(b, id) {
            Some(c) => format!("todo {}", todo_link(c.todo)),
            None => format!("todo <code class=\"id\">{}</code>", esc(id.as_str())),
        },
        Blocks::Agent(a) => format!("agent {}", agent_link(a)),
        Blocks::Goal => format!(
            "all of goal <a href=\"#goal-{id}\">{id}</a>",
            id = esc(g.goal.as_str())
        ),
    }
}

fn find_card<'b, 's>(b: &'b Board<'s>, id: &TodoId) -> Option<&'b board::Card<'s>> {
    b.goals
        .iter()
        .flat_map(|g| g.cards.iter())
        .find(|c| &c.todo.id == id)
}

/// One gate and its answer commands (with `-C dir`: they run from
/// anywhere), and a budget gate's raise command.
pub(super) fn gate(h: &mut String, b: &Board, g: &Gate, state: &State, dir: Option<&Path>) {
    let budget = if g.budget {
        " <span class=\"tag\">budget reached</span>"
    } else {
        ""
    };
    // The meta line names the scope as the CLI does: `goal`,
    // `agent:<id>`, `todo:<id>`.
    let _ = writeln!(
        h,
        "<article class=\"gate\" id=\"{id}\" data-kind=\"{kind}\" data-scope=\"{scope}\">\n<h3>{q}{budget}</h3>\n<p>Holds {blocks}.</p>\n<p class=\"mute\"><code class=\"id\">{id}</code> · {kind} on <code class=\"nw\">{scope}</code> · goal {goal} · opened by {by} {ago}</p>",
        id = esc(g.id.as_str()),
        kind = g.kind.as_str(),
        scope = esc(&g.blocks.to_string()),
        q = esc(&g.question),
        blocks = blocks(b, g),
        goal = esc(g.goal.as_str()),
        by = esc(g.opened_by.name()),
        ago = ago(g.opened_at, b.now),
    );
    h.push_str("<p>Answer with one of:</p>\n");
    for o in &g.options {
        let _ = writeln!(
            h,
            "<pre><code>{}</code></pre>",
            esc(&answer_command_in(dir, g, o))
        );
    }
    // A budget gate's other way out: raise the budget (which answers it
    // `raised`), or, once raised, say so.
    // Each word kept whole: a browser may break after a hyphen, and
    // `--budget-agent` must not.
    let words = |cmd: &str| {
        cmd.split(' ')
            .map(|w| format!("<span class=\"nw\">{}</span>", esc(w)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    match raise_command(g, state, b.now) {
        Some((true, cmd)) => {
            let _ = writeln!(
                h,
                "<p>Or raise the budget (this answers it <code>raised</code>; the figure is a suggestion):</p>\n<pre data-raise=\"1\"><code>{}</code></pre>",
                words(&cmd)
            );
        }
        Some((false, cmd)) => {
            let _ = writeln!(
                h,
                "<p>The budget was raised since; close it with:</p>\n<pre data-raise=\"1\"><code>{}</code></pre>",
                words(&cmd)
            );
        }
        None => {}
    }
    h.push_str("</article>\n");
}

/// What is stuck and why: claims whose holder is gone or silent (with
/// when the lease frees them and the command that frees them now),
/// expired leases, blocked todos, todos a gate holds or nobody may take,
/// quiet agents; each linked to its card, gate or agent.
fn stuck(h: &mut String, b: &Board, claims: &[Stuck]) {
    h.push_str("<section id=\"stuck\">\n<h2>Stuck</h2>\n");
    let items = stuck_items(b, claims);
    if items.is_empty() {
        h.push_str("<p class=\"mute\">Nothing is stuck.</p>\n");
    } else {
        let _ = writeln!(h, "<ul class=\"stuck\">\n{}\n</ul>", items.join("\n"));
    }
    h.push_str("</section>\n");
}

/// [`stuck`]'s list items.
pub(super) fn stuck_items(b: &Board, claims: &[Stuck]) -> Vec<String> {
    let mut items = Vec::new();
    for s in claims {
        items.push(format!(
            "<li data-stuck=\"claim\" data-why=\"{why}\"><span class=\"tag\">stuck claim</span> {todo} · {owner}: {reason}; its lease frees it at <time datetime=\"{at}\">{at}</time>, or free it now with <code>{cmd}</code></li>",
            why = s.why.code(),
            todo = todo_link(s.todo),
            owner = agent_link(s.owner),
            reason = esc(&s.reason()),
            at = s.frees_at,
            cmd = esc(&s.free_now()),
        ));
    }
    // A gate on a whole goal or an agent is one row however many todos it
    // holds: (gate, how many).
    let mut wide: Vec<(&Gate, usize)> = Vec::new();
    for c in b.goals.iter().flat_map(|g| g.cards.iter()) {
        let Some(why) = c.stuck() else { continue };
        if let Some(g) = c.gates.first()
            && !c.expired
            && c.column != Column::Blocked
            && !matches!(g.blocks, Blocks::Todo(_))
        {
            match wide.iter_mut().find(|(x, _)| x.id == g.id) {
                Some((_, n)) => *n += 1,
                None => wide.push((g, 1)),
            }
            continue;
        }
        let kind = if c.expired {
            "expired"
        } else if c.column == Column::Blocked {
            "blocked"
        } else if !c.gates.is_empty() {
            "gated"
        } else {
            "not-ready"
        };
        let gate = match c.gates.first() {
            Some(g) if kind == "gated" => {
                format!(" <a href=\"#{id}\">answer it</a>", id = esc(g.id.as_str()))
            }
            _ => String::new(),
        };
        let owner = match &c.todo.claim {
            Some(cl) if c.expired => format!(" · {}", agent_link(&cl.owner)),
            _ => String::new(),
        };
        items.push(format!(
            "<li data-stuck=\"{kind}\"><span class=\"tag\">{label}</span> {todo}{owner}: {why}{gate}</li>",
            label = kind.replace('-', " "),
            todo = todo_link(c.todo),
            why = esc(&why),
        ));
    }
    for (g, n) in wide {
        let by = board::held_by(g);
        let whom = match &g.blocks {
            Blocks::Agent(a) => format!(" ({})", agent_link(a)),
            _ => String::new(),
        };
        items.push(format!(
            "<li data-stuck=\"gated\" data-gate=\"{id}\"><span class=\"tag\">gated</span> {n} todo{s} of goal {goal}: held ({by}){whom} by gate <a href=\"#{id}\"><code class=\"id\">{id}</code></a>, <a href=\"#{id}\">answer it</a></li>",
            id = esc(g.id.as_str()),
            s = if n == 1 { "" } else { "s" },
            goal = esc(g.goal.as_str()),
        ));
    }
    // An idle session agent is a session that ended, not work that is
    // stuck: the agents section lists those apart.
    for a in b
        .agents
        .iter()
        .filter(|a| a.quiet && !a.idle_session(b.now))
    {
        let holds = if a.holds.is_empty() {
            String::new()
        } else {
            format!(
                "; it holds {}",
                a.holds
                    .iter()
                    .map(|t| todo_link(t))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        items.push(format!(
            "<li data-stuck=\"quiet\"><span class=\"tag\">quiet</span> agent {}: last heard from {}{holds}</li>",
            agent_link(&a.agent.id),
            ago(a.last_seen, b.now)
        ));
    }
    items
}

fn goals(h: &mut String, b: &Board, claims: &[Stuck]) {
    h.push_str("<section id=\"goals\">\n<h2>Goals</h2>\n");
    if b.goals.is_empty() {
        h.push_str("<p class=\"mute\">No goals yet: add one with <code>loopx goal add ID --objective TEXT</code>.</p>\n");
    }
    for g in &b.goals {
        let _ = writeln!(
            h,
            "<section class=\"goal\" id=\"goal-{id}\">\n<h3>{id} <span class=\"mute\">({status})</span></h3>\n<p>{obj}</p>",
            id = esc(g.goal.id.as_str()),
            status = g.goal.status.as_str(),
            obj = esc(&g.goal.objective),
        );
        banners(h, b, &g.goal.id);
        counts(
            h,
            &format!("counts-{}", esc(g.goal.id.as_str())),
            &g.counts,
            b.agents.len(),
        );
        if g.cards.is_empty() {
            h.push_str("<p class=\"mute\">No live todos.</p>\n</section>\n");
            continue;
        }
        // A board: one column per state that has cards.
        h.push_str("<div class=\"board\">\n");
        for col in Column::ALL {
            let cards: Vec<&board::Card> = g.cards.iter().filter(|c| c.column == col).collect();
            if cards.is_empty() {
                continue;
            }
            let _ = writeln!(
                h,
                "<div class=\"col\" data-col=\"{c}\"><h4>{c} <span>{n}</span></h4>",
                c = col.as_str(),
                n = cards.len()
            );
            for c in cards {
                let held = claims.iter().find(|s| s.todo.id == c.todo.id);
                card(h, b, c, held);
            }
            h.push_str("</div>\n");
        }
        h.push_str("</div>\n</section>\n");
    }
    h.push_str("</section>\n");
}

/// One banner per open gate on the whole goal or on one agent of it, at
/// the top of the goal: what it holds and a link to the gate (its question
/// and answers are in "Waiting on you", once).
fn banners(h: &mut String, b: &Board, goal: &crate::model::GoalId) {
    for g in b
        .gates
        .iter()
        .filter(|g| &g.goal == goal && !matches!(g.blocks, Blocks::Todo(_)))
    {
        let what = match &g.blocks {
            Blocks::Agent(a) => format!("{} on this goal", agent_link(a)),
            _ => "every todo of this goal".to_owned(),
        };
        let _ = writeln!(
            h,
            "<p class=\"gate banner\" data-banner=\"{id}\"><span class=\"tag\">held ({by})</span> gate <a href=\"#{id}\"><code class=\"id\">{id}</code></a> ({kind}{budget}) holds {what}: <a href=\"#{id}\">answer it</a></p>",
            id = esc(g.id.as_str()),
            by = board::held_by(g),
            kind = g.kind.as_str(),
            budget = if g.budget { ", budget reached" } else { "" },
        );
    }
}

fn card(h: &mut String, b: &Board, c: &board::Card, held: Option<&Stuck>) {
    let t = c.todo;
    let why = c.stuck();
    let _ = write!(
        h,
        "<article class=\"card{}\" id=\"{id}\" data-column=\"{col}\">\n<p><code class=\"id\">{id}</code> <span class=\"mute\">{pri}</span> {title}</p>\n",
        if why.is_some() || held.is_some() {
            " stuck"
        } else {
            ""
        },
        id = esc(t.id.as_str()),
        col = c.column.as_str(),
        pri = t.priority,
        title = esc(&t.title),
    );
    if let Some(cl) = &t.claim {
        let _ = writeln!(
            h,
            "<p>{} · {}</p>",
            agent_link(&cl.owner),
            lease(cl.lease_until, c.expired, b.now)
        );
    }
    if !c.pending.is_empty() {
        let after: Vec<String> = c
            .pending
            .iter()
            .map(|p| {
                format!(
                    "<a href=\"#{id}\"><code class=\"id\">{id}</code></a>",
                    id = esc(p.id.as_str())
                )
            })
            .collect();
        let _ = writeln!(h, "<p class=\"mute\">after {}</p>", after.join(" "));
    }
    let ev = evidence(t);
    if !ev.is_empty() {
        let _ = writeln!(h, "<p>{ev}</p>");
    }
    // A gate on the todo shows its question here; a goal's or an agent's
    // is one banner at the top of the goal, and the card only says so.
    for g in &c.gates {
        match g.blocks {
            Blocks::Todo(_) => {
                let _ = writeln!(
                    h,
                    "<p data-held=\"todo\">held by gate <a href=\"#{id}\"><code class=\"id\">{id}</code></a>: {q}</p>",
                    id = esc(g.id.as_str()),
                    q = esc(&g.question)
                );
            }
            _ => {
                let by = board::held_by(g);
                let _ = writeln!(
                    h,
                    "<p data-held=\"{by}\">held ({by}) by <a href=\"#{id}\"><code class=\"id\">{id}</code></a></p>",
                    id = esc(g.id.as_str()),
                );
            }
        }
    }
    if let Some(s) = held {
        let _ = writeln!(h, "<p class=\"bad\">stuck: {}</p>", esc(&s.reason()));
    }
    match (&why, c.column) {
        (Some(w), Column::Blocked | Column::Open) if c.gates.is_empty() => {
            let _ = writeln!(h, "<p class=\"bad\">{}</p>", esc(w));
        }
        _ => {}
    }
    h.push_str("</article>\n");
}

/// The todo's last evidence: passed, failed, or stale (recorded before the
/// current claim began, so by an earlier attempt).
fn evidence(t: &Todo) -> String {
    let Some(e) = &t.last_evidence else {
        return String::new();
    };
    let stale = t.claim.as_ref().is_some_and(|c| c.since > e.at);
    let (class, word) = match (stale, e.passed) {
        (true, _) => ("mute", "stale"),
        (false, true) => ("passed", "passed"),
        (false, false) => ("bad", "failed"),
    };
    format!(
        "evidence <span class=\"{class}\">{word}</span> <time>{}</time>",
        e.at
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn esc_leaves_no_markup() {
        assert_eq!(
            esc(r#""><img src=x onerror=alert(1)>'&"#),
            "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;&#39;&amp;"
        );
    }
}
