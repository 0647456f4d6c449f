//! The trajectory as a self-contained HTML page: the todo graph and the
//! timeline of events.

use super::*;

pub(super) const STYLE: &str = r#"
:root{color-scheme:light dark;--bg:#fff;--fg:#1b1b1b;--mute:#666;--line:#ccc;--ok:#1b7a3a;--bad:#b00020;--acc:#0b57d0;--card:#f6f7f9}
@media (prefers-color-scheme:dark){:root{--bg:#121417;--fg:#e6e6e6;--mute:#9aa0a6;--line:#444;--ok:#7bd88f;--bad:#ff8a80;--acc:#8ab4f8;--card:#1c1f24}}
body{margin:0 auto;max-width:90rem;padding:.75rem;font:15px/1.45 system-ui,sans-serif;background:var(--bg);color:var(--fg)}
h1{font-size:1.3rem}h2{font-size:1.1rem;border-bottom:1px solid var(--line)}.mute{color:var(--mute)}
.graph{overflow-x:auto}svg text{font:11px system-ui,sans-serif;fill:var(--fg)}svg .id{fill:var(--mute)}
svg rect{fill:var(--card);stroke:var(--line)}svg .done rect{stroke:var(--ok);stroke-width:2}svg .abandoned rect{stroke-dasharray:4 3}
svg .failed rect{stroke:var(--bad);stroke-width:2}svg line{stroke:var(--line)}svg .gate polygon{fill:var(--card);stroke:var(--acc);stroke-width:2}
svg line.gl{stroke:var(--acc);stroke-dasharray:3 3}
table{border-collapse:collapse;width:100%;font-size:13px}th,td{text-align:left;padding:.2rem .4rem;border-bottom:1px solid var(--line);vertical-align:top}
td.nw,th{white-space:nowrap}code{font:12px ui-monospace,monospace}
.redaction{border:1px solid var(--line);background:var(--card);padding:.25rem .75rem;font-size:13px}.redaction ul{margin:.2rem 0 .5rem}
"#;

/// The page: the graph (todos by dependency depth, gates beside what they
/// hold), the gates with questions and answers, the todos, and the events.
pub(super) fn render(w: &Wire) -> String {
    let mut h = String::with_capacity(64 * 1024);
    let _ = writeln!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>loopx trajectory: {goal}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>Trajectory of goal {goal}</h1>\n<p>{obj}</p>\n<p class=\"mute\">{ticks} ticks to <time>{until}</time>; spent {usd} ({tokens} tokens).</p>",
        goal = esc(w.goal.as_str()),
        obj = esc(&w.objective),
        ticks = w.ticks,
        until = w.until,
        usd = Usd(w.spend.micros.0),
        tokens = crate::model::usage::human_count(w.spend.tokens),
    );
    banner(&mut h, w);
    graph(&mut h, w);
    h.push_str("<h2>Gates</h2>\n<table><thead><tr><th>Gate</th><th>Kind</th><th>Holds</th><th>Question</th><th>Answer</th><th>Opened</th></tr></thead><tbody>\n");
    for g in &w.gates {
        let _ = writeln!(
            h,
            "<tr id=\"{id}\"><td class=\"nw\"><code>{id}</code></td><td>{kind}</td><td class=\"nw\">{blocks}</td><td>{q}</td><td>{a}</td><td class=\"nw\">{by} <time>{at}</time></td></tr>",
            id = esc(&g.id),
            kind = g.kind,
            blocks = esc(&g.blocks),
            q = esc(&g.question),
            a = esc(g.answer.as_deref().unwrap_or(g.status)),
            by = esc(&g.opened_by),
            at = g.opened_at,
        );
    }
    h.push_str("</tbody></table>\n<h2>Todos</h2>\n<table><thead><tr><th>Todo</th><th>Status</th><th>After</th><th>Held by</th><th>Evidence</th><th>Reopened</th></tr></thead><tbody>\n");
    for n in &w.todos {
        let after: Vec<String> = n.after.iter().map(|a| esc(a.as_str())).collect();
        let _ = writeln!(
            h,
            "<tr id=\"{id}\"><td><code>{id}</code> {title}</td><td>{status}{ab}</td><td>{after}</td><td>{holders}</td><td>{p} passed, {f} failed{stale}</td><td>{r}</td></tr>",
            id = esc(n.id.as_str()),
            title = esc(&n.title),
            status = esc(&n.status),
            ab = if n.abandoned { ", abandoned" } else { "" },
            after = after.join(" "),
            holders = esc(&n.holders.join(" → ")),
            p = n.evidence_passed,
            f = n.evidence_failed,
            stale = if n.evidence_stale { ", stale" } else { "" },
            r = n.reopened,
        );
    }
    h.push_str("</tbody></table>\n<h2>Events</h2>\n<table><thead><tr><th>Tick</th><th>Commit</th><th>When</th><th>Who</th><th>What</th></tr></thead><tbody>\n");
    for e in &w.events {
        let _ = writeln!(
            h,
            "<tr><td class=\"nw\">{}</td><td class=\"nw\"><code>{}</code></td><td class=\"nw\"><time>{}</time></td><td class=\"nw\">{}</td><td>{}</td></tr>",
            e.tick,
            esc(&e.commit),
            e.at,
            esc(&e.by),
            esc(&e.text)
        );
    }
    h.push_str("</tbody></table>\n");
    checklist(&mut h, w);
    h.push_str("</body>\n</html>\n");
    h
}

/// What the redaction removed, kind by kind with how many places, and what
/// no rule removes.
fn banner(h: &mut String, w: &Wire) {
    let r = &w.redaction;
    let _ = writeln!(
        h,
        "<section class=\"redaction\" id=\"redaction\"><p><strong>{}</strong> {}.</p>\n<p>Removed:</p><ul>",
        if w.redacted {
            "Redacted for sharing."
        } else {
            "Not for sharing."
        },
        esc(r.roles)
    );
    for x in &r.removed {
        let _ = writeln!(
            h,
            "<li>{} as <code>{}</code>: {} {}</li>",
            esc(&x.what),
            esc(x.mark),
            x.found,
            if x.found == 1 { "place" } else { "places" }
        );
    }
    h.push_str("</ul>\n<p>Not removed (no rule finds them):</p><ul>");
    for k in &r.kept {
        let _ = write!(h, "<li>{}</li>", esc(k));
    }
    h.push_str("</ul>\n<p class=\"mute\">Review the page before sharing it: <a href=\"#checklist\">the checklist</a> is at the end.</p></section>\n");
}

/// The review a person still owes before the page is shared.
fn checklist(h: &mut String, w: &Wire) {
    h.push_str("<h2 id=\"checklist\">Before you share this</h2>\n<ol>");
    for c in &w.redaction.checklist {
        let _ = write!(h, "<li>{}</li>", esc(c));
    }
    h.push_str("</ol>\n");
}

/// The decision graph as inline SVG: one column per dependency depth, a
/// box per todo (green edge done, red failing evidence, dashed abandoned),
/// a line per dependency, and a diamond per gate beside what it holds.
pub(super) fn graph(h: &mut String, w: &Wire) {
    let ids: BTreeMap<&TodoId, &Node> = w.todos.iter().map(|n| (&n.id, n)).collect();
    let mut depth: BTreeMap<&TodoId, usize> = BTreeMap::new();
    fn depth_of<'a>(
        id: &'a TodoId,
        ids: &BTreeMap<&'a TodoId, &'a Node>,
        memo: &mut BTreeMap<&'a TodoId, usize>,
        guard: usize,
    ) -> usize {
        if let Some(d) = memo.get(id) {
            return *d;
        }
        let d = match ids.get(id) {
            Some(n) if guard < 64 => n
                .after
                .iter()
                .filter(|a| ids.contains_key(a))
                .map(|a| depth_of(a, ids, memo, guard + 1) + 1)
                .max()
                .unwrap_or(0),
            _ => 0,
        };
        memo.insert(id, d);
        d
    }
    for n in &w.todos {
        depth_of(&n.id, &ids, &mut depth, 0);
    }
    let (bw, bh, gx, gy) = (210.0, 40.0, 50.0, 14.0);
    let mut rows: BTreeMap<usize, usize> = BTreeMap::new();
    let mut pos: BTreeMap<&TodoId, (f64, f64)> = BTreeMap::new();
    for n in &w.todos {
        let d = depth[&n.id];
        let r = rows.entry(d).or_default();
        pos.insert(
            &n.id,
            (d as f64 * (bw + gx) + 10.0, *r as f64 * (bh + gy) + 10.0),
        );
        *r += 1;
    }
    let cols = rows.keys().max().map_or(1, |m| m + 1);
    let gate_x = cols as f64 * (bw + gx) + 10.0;
    let height =
        rows.values().max().copied().unwrap_or(0).max(w.gates.len()) as f64 * (bh + gy) + 20.0;
    let width = gate_x + bw + 20.0;
    let _ = writeln!(
        h,
        "<h2>Decision graph</h2>\n<div class=\"graph\"><svg id=\"graph\" viewBox=\"0 0 {width} {height}\" width=\"{width}\" height=\"{height}\" role=\"img\" aria-label=\"{} todos and {} gates\">",
        w.todos.len(),
        w.gates.len()
    );
    for n in &w.todos {
        let (x, y) = pos[&n.id];
        for a in &n.after {
            if let Some((ax, ay)) = pos.get(a) {
                let _ = write!(
                    h,
                    "<line x1=\"{}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/>",
                    ax + bw,
                    ay + bh / 2.0,
                    y + bh / 2.0
                );
            }
        }
    }
    for (i, g) in w.gates.iter().enumerate() {
        let (cx, cy) = (gate_x + 20.0, i as f64 * (bh + gy) + 10.0 + bh / 2.0);
        if let Some(t) = g.blocks.strip_prefix("todo:")
            && let Some((x, y)) = pos.iter().find(|(k, _)| k.as_str() == t).map(|(_, p)| *p)
        {
            let _ = write!(
                h,
                "<line class=\"gl\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{cy}\"/>",
                x + bw,
                y + bh / 2.0,
                cx - 16.0
            );
        }
        let _ = write!(
            h,
            "<g class=\"gate\" data-node=\"{id}\"><title>{id} {kind}: {q} → {a}</title><polygon points=\"{},{cy} {cx},{} {},{cy} {cx},{}\"/><text x=\"{}\" y=\"{}\">{id} {kind}</text><text x=\"{}\" y=\"{}\">{short}</text></g>",
            cx - 16.0,
            cy - 16.0,
            cx + 16.0,
            cy + 16.0,
            cx + 22.0,
            cy - 3.0,
            cx + 22.0,
            cy + 11.0,
            id = esc(&g.id),
            kind = g.kind,
            q = esc(&g.question),
            a = esc(g.answer.as_deref().unwrap_or(g.status)),
            short = esc(&shorten(g.answer.as_deref().unwrap_or(g.status), 26)),
        );
    }
    for n in &w.todos {
        let (x, y) = pos[&n.id];
        let mut class = String::from("todo");
        if n.status == "done" {
            class.push_str(" done");
        }
        if n.evidence_failed > 0 && n.status != "done" {
            class.push_str(" failed");
        }
        if n.abandoned {
            class.push_str(" abandoned");
        }
        let _ = write!(
            h,
            "<g class=\"{class}\" data-node=\"{id}\"><title>{id} {title} ({status}; held by {holders}; evidence {p} passed, {f} failed; reopened {r})</title><rect x=\"{x}\" y=\"{y}\" width=\"{bw}\" height=\"{bh}\" rx=\"4\"/><text class=\"id\" x=\"{}\" y=\"{}\">{id} · {status}</text><text x=\"{}\" y=\"{}\">{short}</text></g>",
            x + 6.0,
            y + 15.0,
            x + 6.0,
            y + 31.0,
            id = esc(n.id.as_str()),
            title = esc(&n.title),
            status = esc(&n.status),
            holders = esc(&n.holders.join(" → ")),
            p = n.evidence_passed,
            f = n.evidence_failed,
            r = n.reopened,
            short = esc(&shorten(&n.title, 32)),
        );
    }
    h.push_str("</svg></div>\n");
}

pub(super) fn shorten(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}
