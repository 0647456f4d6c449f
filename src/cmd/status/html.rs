//! `loopx status --html FILE`: the board as one self-contained page.
//!
//! Inline CSS, no external request, no framework; a few lines of inline JS
//! only filter the tables, and the page is whole without them. Every text
//! that comes from the state goes through [`esc`], the one escaping
//! function, so an agent-written title cannot inject markup.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};

use super::{Args, View};
use crate::ctx::Ctx;
use crate::error::Exit;
use crate::model::{Gate, Todo};
use crate::notify::answer_command;
use crate::op::board::{self, Board, Counts};
use crate::time::{Span, Timestamp};

/// The timeline shows this many ticks.
const TIMELINE: usize = 100;

/// How often `--watch` looks at the state ref.
const POLL: Duration = Duration::from_millis(200);

/// The only way state text enters the page: `&`, `<`, `>`, `"` and `'`
/// become character references, so the text is inert in element content
/// and in quoted attribute values alike.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

pub fn run(ctx: &Ctx, args: &Args, file: &Path) -> Result<Exit> {
    if !args.watch {
        let view = View::read(ctx, args.at.as_ref(), TIMELINE, true)?;
        write(ctx, &view, file, false)?;
        ctx.out.status(&format!("wrote {}", file.display()));
        return Ok(Exit::Ok);
    }
    // Watch: write now, then whenever the ref moves. The clock runs on
    // from the context's time, so leases count down between writes.
    let start = Instant::now();
    let mut last = None;
    let mut written = 0u64;
    loop {
        let tip = crate::history::tip(ctx)?.commit;
        if last != Some(tip) {
            let mut view = View::read(ctx, None, TIMELINE, true)?;
            view.now = ctx
                .now
                .plus(Span::seconds(start.elapsed().as_secs() as i64));
            write(ctx, &view, file, true)?;
            ctx.out.status(&format!(
                "wrote {} at tick {}",
                file.display(),
                view.snap.tip.tick
            ));
            last = Some(view.snap.tip.commit);
            written += 1;
            if args.max_updates.is_some_and(|n| written >= n) {
                return Ok(Exit::Ok);
            }
        }
        std::thread::sleep(POLL);
    }
}

/// Writes the page through a temporary file and a rename, so a browser
/// reloading mid-write never reads half a page.
fn write(ctx: &Ctx, view: &View, file: &Path, watch: bool) -> Result<()> {
    let board = view.board();
    let page = render(ctx.state_ref(), view, &board, watch);
    let tmp = file.with_extension("html.tmp");
    std::fs::write(&tmp, page).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, file).with_context(|| format!("cannot write {}", file.display()))?;
    Ok(())
}

const STYLE: &str = r#"
:root{color-scheme:light dark;--bg:#fff;--fg:#1b1b1b;--mute:#666;--line:#ddd;--warn:#b00020;--warnbg:#fde7ea;--ok:#1b7a3a;--acc:#0b57d0;--card:#f6f7f9}
@media (prefers-color-scheme:dark){:root{--bg:#121417;--fg:#e6e6e6;--mute:#9aa0a6;--line:#333;--warn:#ff8a80;--warnbg:#3a1d20;--ok:#7bd88f;--acc:#8ab4f8;--card:#1c1f24}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:72rem;padding:.75rem;overflow-wrap:anywhere;font:15px/1.45 system-ui,sans-serif;background:var(--bg);color:var(--fg)}
h1{font-size:1.3rem;margin:.2rem 0}h2{font-size:1.15rem;margin:1.4rem 0 .4rem;border-bottom:1px solid var(--line)}h3{font-size:1rem;margin:1rem 0 .3rem}
.mute{color:var(--mute)}code,pre{font:13px/1.4 ui-monospace,monospace}
pre{background:var(--card);padding:.4rem .5rem;overflow-x:auto;margin:.2rem 0;white-space:pre-wrap;word-break:break-all}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:14px}
th,td{text-align:left;padding:.25rem .4rem;border-bottom:1px solid var(--line);vertical-align:top}
th{font-weight:600}
.gate{background:var(--card);border-left:4px solid var(--warn);padding:.5rem .7rem;margin:.5rem 0}
.failed td{color:var(--warn);background:var(--warnbg)}
.passed{color:var(--ok)}.bad{color:var(--warn)}
dl.counts{display:flex;flex-wrap:wrap;gap:.3rem 1rem;margin:.4rem 0}dl.counts div{display:flex;gap:.3rem}dl.counts dt{color:var(--mute)}dl.counts dd{margin:0;font-weight:600}
svg{max-width:100%;height:auto}svg rect{fill:var(--acc)}svg text{fill:var(--mute);font-size:9px}
#filter{display:none;width:100%;max-width:24rem;padding:.3rem;margin:.3rem 0;font:inherit}
"#;

/// Filtering only: rows whose text does not contain what was typed hide.
const SCRIPT: &str = r#"
(function(){var f=document.getElementById('filter');if(!f)return;f.style.display='block';
f.addEventListener('input',function(){var q=f.value.toLowerCase();
document.querySelectorAll('tbody tr').forEach(function(r){r.hidden=q!==''&&r.textContent.toLowerCase().indexOf(q)===-1;});});})();
"#;

/// The whole page.
pub fn render(state_ref: &str, view: &View, b: &Board, watch: bool) -> String {
    let mut h = String::with_capacity(64 * 1024);
    let tick = view.snap.tip.tick;
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    if watch {
        h.push_str("<meta http-equiv=\"refresh\" content=\"2\">\n");
    }
    let _ = writeln!(
        h,
        "<title>loopx {} tick {tick}</title>\n<style>{STYLE}</style>\n</head>\n<body>",
        esc(state_ref)
    );
    h.push_str("<header>\n");
    let _ = writeln!(h, "<h1>loopx {} · tick {tick}</h1>", esc(state_ref));
    let _ = write!(h, "<p class=\"mute\">as of <time>{}</time>", b.now);
    if let Some(tip) = view.tip_tick {
        let _ = write!(h, " (the tip is tick {tip})");
    }
    if watch {
        h.push_str(" · follows the state ref");
    }
    h.push_str("</p>\n");
    counts(&mut h, "counts", &b.counts, b.agents.len());
    h.push_str("<input id=\"filter\" type=\"search\" placeholder=\"Filter rows…\" aria-label=\"Filter rows\">\n</header>\n<main>\n");
    gates(&mut h, b);
    goals(&mut h, b);
    agents(&mut h, b);
    timeline(&mut h, b, &view.day);
    let _ = writeln!(h, "</main>\n<script>{SCRIPT}</script>\n</body>\n</html>");
    h
}

fn counts(h: &mut String, id: &str, c: &Counts, agents: usize) {
    let _ = write!(h, "<dl class=\"counts\" id=\"{id}\">");
    for (k, v) in [
        ("ready", c.ready),
        ("open", c.open),
        ("waiting", c.waiting),
        ("claimed", c.claimed),
        ("blocked", c.blocked),
        ("deferred", c.deferred),
        ("done", c.done),
        ("agents", agents),
    ] {
        let _ = write!(h, "<div><dt>{k}</dt><dd data-count=\"{k}\">{v}</dd></div>");
    }
    h.push_str("</dl>\n");
}

fn gates(h: &mut String, b: &Board) {
    let (human, other): (Vec<&Gate>, Vec<&Gate>) =
        b.gates.iter().partition(|g| g.kind.human_only());
    h.push_str("<section id=\"gates\">\n<h2>Waiting on a human</h2>\n");
    if human.is_empty() {
        h.push_str("<p class=\"mute\">Nothing waits on a human.</p>\n");
    }
    for g in human {
        gate(h, b, g);
    }
    if !other.is_empty() {
        h.push_str("<h3>Open decisions</h3>\n");
        for g in other {
            gate(h, b, g);
        }
    }
    h.push_str("</section>\n");
}

fn gate(h: &mut String, b: &Board, g: &Gate) {
    let _ = writeln!(
        h,
        "<article class=\"gate\" id=\"{id}\" data-kind=\"{kind}\">\n<h3>{q}</h3>\n<p class=\"mute\">{id} · {kind} on goal {goal}, blocks {blocks} · opened by {by} at <time>{at}</time> ({ago} ago)</p>",
        id = esc(g.id.as_str()),
        kind = g.kind.as_str(),
        q = esc(&g.question),
        goal = esc(g.goal.as_str()),
        blocks = esc(&g.blocks.to_string()),
        by = esc(g.opened_by.name()),
        at = g.opened_at,
        ago = b.now.since(g.opened_at),
    );
    h.push_str("<p>Answer with one of:</p>\n");
    for o in &g.options {
        let _ = writeln!(h, "<pre><code>{}</code></pre>", esc(&answer_command(g, o)));
    }
    h.push_str("</article>\n");
}

fn goals(h: &mut String, b: &Board) {
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
        h.push_str("<div class=\"scroll\"><table>\n<thead><tr><th scope=\"col\">Column</th><th scope=\"col\">Todo</th><th scope=\"col\">Pri</th><th scope=\"col\">Owner</th><th scope=\"col\">Lease</th><th scope=\"col\">After</th><th scope=\"col\">Last evidence</th></tr></thead>\n<tbody>\n");
        for c in &g.cards {
            let t = c.todo;
            let (owner, lease) = match &t.claim {
                Some(cl) if c.expired => (esc(cl.owner.as_str()), "expired".to_owned()),
                Some(cl) => (
                    esc(cl.owner.as_str()),
                    format!("{} left", cl.lease_until.since(b.now)),
                ),
                None => (String::new(), String::new()),
            };
            let after: Vec<String> = c.pending.iter().map(|p| esc(p.id.as_str())).collect();
            let _ = writeln!(
                h,
                "<tr data-column=\"{col}\"><td>{col}</td><td><code>{id}</code> {title}</td><td>{pri}</td><td>{owner}</td><td>{lease}</td><td>{after}</td><td>{ev}</td></tr>",
                col = c.column.as_str(),
                id = esc(t.id.as_str()),
                title = esc(&t.title),
                pri = t.priority,
                after = after.join(" "),
                ev = evidence(t),
            );
        }
        h.push_str("</tbody></table></div>\n</section>\n");
    }
    h.push_str("</section>\n");
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
        "<span class=\"{class}\">{word}</span> <time>{}</time>",
        e.at
    )
}

fn agents(h: &mut String, b: &Board) {
    h.push_str("<section id=\"agents\">\n<h2>Agents</h2>\n");
    if b.agents.is_empty() {
        h.push_str("<p class=\"mute\">No active agents.</p>\n</section>\n");
        return;
    }
    h.push_str("<div class=\"scroll\"><table>\n<thead><tr><th scope=\"col\">Agent</th><th scope=\"col\">Runtime</th><th scope=\"col\">Holds</th><th scope=\"col\">Last tick</th><th scope=\"col\">Last turn</th><th scope=\"col\">Slots in window</th></tr></thead>\n<tbody>\n");
    for a in &b.agents {
        let holds: Vec<String> = a
            .holds
            .iter()
            .map(|t| format!("<code>{}</code> {}", esc(t.id.as_str()), esc(&t.title)))
            .collect();
        let last = match a.last_tick {
            Some(t) => format!("{} <time>{}</time>", t.tick, t.at),
            None => String::new(),
        };
        let turn = match &a.agent.last_turn {
            Some(t) => format!(
                "{} on {} <time>{}</time>",
                t.outcome.as_str(),
                esc(t.goal.as_str()),
                t.at
            ),
            None => String::new(),
        };
        let slots: Vec<String> = b
            .quota
            .iter()
            .filter(|q| q.agent == &a.agent.id)
            .map(|q| {
                format!(
                    "{}: {}/{} per {}",
                    esc(q.goal.id.as_str()),
                    q.slots.used,
                    q.slots.slots,
                    q.slots.window
                )
            })
            .collect();
        let _ = writeln!(
            h,
            "<tr><th scope=\"row\">{}</th><td>{}</td><td>{}</td><td>{last}</td><td>{turn}</td><td>{}</td></tr>",
            esc(a.agent.id.as_str()),
            a.agent.runtime.as_str(),
            holds.join("<br>"),
            slots.join("<br>"),
        );
    }
    h.push_str("</tbody></table></div>\n</section>\n");
}

fn timeline(h: &mut String, b: &Board, day: &[Timestamp]) {
    h.push_str("<section id=\"timeline\">\n<h2>Timeline</h2>\n");
    let hours = board::per_hour(day, b.now);
    let max = hours.iter().copied().max().unwrap_or(0).max(1);
    let total: u32 = hours.iter().sum();
    let _ = write!(
        h,
        "<figure><svg viewBox=\"0 0 240 60\" width=\"480\" height=\"120\" role=\"img\" aria-label=\"{total} ticks over the last 24 hours, per hour\">"
    );
    for (i, n) in hours.iter().enumerate() {
        let height = (*n as f64 / max as f64 * 48.0).round();
        let _ = write!(
            h,
            "<rect x=\"{}\" y=\"{}\" width=\"8\" height=\"{height}\"><title>{n} ticks, {} h ago</title></rect>",
            i * 10 + 1,
            50.0 - height,
            23 - i
        );
    }
    let _ = writeln!(
        h,
        "<text x=\"1\" y=\"59\">-24h</text><text x=\"218\" y=\"59\">now</text></svg><figcaption class=\"mute\">{total} ticks in the last 24 hours, per hour (at most {max} in an hour)</figcaption></figure>"
    );
    h.push_str("<div class=\"scroll\"><table>\n<thead><tr><th scope=\"col\">Tick</th><th scope=\"col\">When</th><th scope=\"col\">Who</th><th scope=\"col\">What</th></tr></thead>\n<tbody>\n");
    for t in b.ticks {
        let mark = if t.failed { "✗ failed: " } else { "" };
        let signed = match &t.signature {
            Some(s) => format!(" <span class=\"mute\">[{}]</span>", esc(s)),
            None => String::new(),
        };
        let _ = writeln!(
            h,
            "<tr{}><td>{}</td><td><time>{}</time></td><td>{}</td><td>{mark}{}{signed}</td></tr>",
            if t.failed { " class=\"failed\"" } else { "" },
            t.tick,
            t.at,
            esc(&t.actor),
            esc(&t.subject),
        );
    }
    h.push_str("</tbody></table></div>\n</section>\n");
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
