//! The status page in a real browser: headless Chromium loads it, runs its
//! script, and the DOM it dumps is checked. Opt-in for plain `cargo test`
//! (it needs Chromium); `.ci/run` installs Debian's `chromium` and runs it:
//!
//!     LOOPX_CHROMIUM=/usr/bin/chromium cargo test --test cli test_browser::

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::TestEnv;

const PWNED: &str = "<script>document.title='PWNED'</script>";

pub(crate) fn chromium() -> Option<PathBuf> {
    match std::env::var_os("LOOPX_CHROMIUM") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => {
            crate::common::skipped(format_args!(
                "skipped: the browser test needs Chromium; run it with \
                 LOOPX_CHROMIUM=/usr/bin/chromium cargo test --test cli test_browser:: \
                 (apt-get install chromium)"
            ));
            None
        }
    }
}

/// Where screenshots go: under the target directory, kept as CI artifacts.
pub(crate) fn shots() -> PathBuf {
    let target = option_env!("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    let dir = target.join("browser");
    std::fs::create_dir_all(&dir).expect("mkdir target/browser");
    dir
}

pub(crate) fn headless(bin: &Path, home: &Path, args: &[&str]) -> std::process::Output {
    let out = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .args(["--no-first-run", "--disable-extensions"])
        .arg(format!(
            "--user-data-dir={}",
            home.join("chromium").display()
        ))
        .args(args)
        .env("HOME", home)
        .output()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A board worth a screenshot, with injected markup in agent-written text.
fn board() -> TestEnv {
    let env = TestEnv::with_board();
    env.loopx(&["goal", "add", "docs", "--objective", "Write the manual"])
        .ok();
    let t = env.add("Write the parser", &["--goal", "main", "--priority", "P1"]);
    env.add("Test the parser", &["--goal", "main", "--after", &t]);
    let evil = env.add(PWNED, &["--goal", "main"]);
    env.add("Chapter 1", &["--goal", "docs"]);
    let d = env.add("Chapter 2", &["--goal", "docs"]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    env.agent("agent-b", &["todo", "claim", &evil]).ok();
    env.agent("agent-b", &["todo", "update", &evil, "--note", PWNED])
        .ok();
    env.loopx(&["todo", "update", &d, "--status", "deferred"])
        .ok();
    env.loopx(&[
        "gate",
        "open",
        "--goal",
        "main",
        "--kind",
        "permission",
        "--question",
        "May I push the parser to production?",
        "--option",
        "approve",
        "--option",
        "reject",
    ])
    .ok();
    env.loopx(&[
        "gate",
        "open",
        "--goal",
        "docs",
        "--question",
        PWNED,
        "--option",
        PWNED,
        "--option",
        "no",
    ])
    .ok();
    env
}

fn count(dom: &str, key: &str) -> u64 {
    let dl = &dom[dom.find("id=\"counts\"").expect("counts")..];
    let dd = &dl[dl.find(&format!("data-count=\"{key}\">")).expect(key)..];
    let v = &dd[dd.find('>').unwrap() + 1..];
    v[..v.find('<').unwrap()].parse().expect("a number")
}

#[test]
fn chromium_renders_the_page_and_runs_nothing_injected() {
    let Some(bin) = chromium() else { return };
    let env = board();
    let page = env.root().join("status.html");
    env.loopx(&["status", "--html", page.to_str().unwrap()])
        .ok();
    let json = env.loopx(&["status", "--json"]).ok().json();
    let url = format!("file://{}", page.display());
    let home = env.root().join("home");

    let dom = String::from_utf8(headless(&bin, &home, &["--dump-dom", &url]).stdout).unwrap();
    // The page's own script ran (the filter box shows), so an injected one
    // would have run too; yet the title is the page's own.
    assert!(
        dom.contains("id=\"filter\"") && dom.contains("display: block"),
        "the page's script did not run: {dom}"
    );
    let title = &dom[dom.find("<title>").unwrap() + 7..dom.find("</title>").unwrap()];
    assert_eq!(
        title,
        format!("loopx refs/loopx/state tick {}", json["tick"])
    );
    assert!(!dom.contains("PWNED</title>"));
    // The gates section is the first section, the human's gate first in it.
    let first = &dom[dom.find("<section").unwrap()..];
    assert!(first.starts_with("<section id=\"gates\">"), "{first:.200}");
    let human = json["gates"][0]["id"].as_str().unwrap();
    assert!(first.find(human).unwrap() < first.find("id=\"goals\"").unwrap());
    // The counts the browser shows are the JSON's.
    for k in [
        "ready", "open", "waiting", "claimed", "blocked", "deferred", "done",
    ] {
        assert_eq!(count(&dom, k), json["counts"][k].as_u64().unwrap(), "{k}");
    }
    assert_eq!(count(&dom, "agents"), json["agents"].as_u64().unwrap());

    for (name, size) in [("status.png", "1200,1600"), ("status-360.png", "360,1800")] {
        let shot = shots().join(name);
        let _ = std::fs::remove_file(&shot);
        headless(
            &bin,
            &home,
            &[
                &format!("--screenshot={}", shot.display()),
                &format!("--window-size={size}"),
                &url,
            ],
        );
        let png = std::fs::read(&shot).expect("a screenshot");
        assert!(png.starts_with(b"\x89PNG"), "{name} is a PNG");
        assert!(png.len() > 10_000, "{name} shows something");
    }
}

/// The turn token `quota should-run` gives `agent`.
pub(crate) fn turn(env: &TestEnv, agent: &str, goal: &str) -> String {
    env.agent(agent, &["quota", "should-run", "--goal", goal, "--json"])
        .ok()
        .json()["turn_token"]
        .as_str()
        .expect("a turn token")
        .to_owned()
}

/// A busy, realistic state (no markup in it): two goals, 52 todos with
/// dependencies, three agents (one quiet), settled turns with dollars, a
/// tripped budget, a permission gate on a todo, a publish gate, failing
/// evidence, a blocked todo with its reason and an expired lease.
pub fn busy() -> TestEnv {
    let env = TestEnv::new();
    env.loopx(&[
        "init",
        "--goal",
        "parser",
        "--objective",
        "Replace the hand-written config parser with one that reports line and column",
    ])
    .ok();
    env.loopx(&[
        "goal",
        "add",
        "website",
        "--objective",
        "Publish the documentation site with search and a changelog",
    ])
    .ok();
    for (a, rt) in [
        ("claude-code-634098a0", "claude-code"),
        ("codex-review", "codex"),
        ("gemini-docs", "gemini"),
    ] {
        env.loopx(&["agent", "register", a, "--runtime", rt]).ok();
    }
    env.loopx(&["goal", "set", "parser", "--budget-usd", "40"])
        .ok();
    env.loopx(&[
        "goal",
        "set",
        "website",
        "--budget-usd",
        "6",
        "--budget-agent",
        "gemini-docs",
    ])
    .ok();
    let parser = [
        "Write the tokenizer",
        "Parse tables and arrays of tables",
        "Report line and column in every error",
        "Fuzz the parser for an hour",
        "Port the 214 fixture files",
        "Benchmark against the old parser",
        "Delete the old parser",
        "Handle CRLF line endings",
        "Reject duplicate keys with both positions",
        "Keep comments for the formatter",
        "Unicode escapes in basic strings",
        "Dates and times with offsets",
        "Integer overflow is an error, not a wrap",
        "Inline tables may not span lines",
        "Error messages name the expected token",
        "Document the error format",
        "Golden tests for 40 broken files",
        "Stream large files without reading them whole",
        "Parse 10 MB under 100 ms",
        "Remove the regex dependency",
        "Dotted keys in inline tables",
        "Multi-line literal strings",
        "Make errors implement std::error::Error",
        "Release notes for the new parser",
        "Ask the security team to review the fuzz corpus",
        "Migration guide for plugin authors",
    ];
    let site = [
        "Pick a static site generator",
        "Port the README into the getting-started page",
        "Search over every page, offline",
        "Changelog page generated from CHANGELOG.md",
        "Dark mode that follows the system",
        "Fix the 37 broken links",
        "API reference from rustdoc",
        "Landing page copy",
        "Screenshots of the status page",
        "Deploy previews for pull requests",
        "Analytics-free visit counter",
        "Redirects from the old wiki",
        "Accessibility pass (axe, keyboard only)",
        "Versioned docs for 0.1 and 0.2",
        "404 page with search",
        "Sitemap and robots.txt",
        "Code blocks with copy buttons",
        "Mobile navigation menu",
        "Localise the getting-started page",
        "Publish to the production domain",
        "Print stylesheet for the manual",
        "RSS feed of releases",
        "Contributors page",
        "Install page per platform",
        "Compress images to under 200 KB",
        "Announce the site",
    ];
    let mut p: Vec<String> = Vec::new();
    for (i, title) in parser.iter().enumerate() {
        let prio = ["P0", "P1", "P2", "P3"][i % 4];
        let mut args = vec!["--goal", "parser", "--priority", prio];
        let dep;
        if i > 0 && i % 3 == 0 {
            dep = p[i - 1].clone();
            args.extend(["--after", dep.as_str()]);
        }
        p.push(env.add(title, &args));
    }
    let mut w: Vec<String> = Vec::new();
    for (i, title) in site.iter().enumerate() {
        let prio = ["P1", "P2", "P2", "P3"][i % 4];
        let mut args = vec!["--goal", "website", "--priority", prio];
        let dep;
        if i > 0 && i % 4 == 0 {
            dep = w[i - 1].clone();
            args.extend(["--after", dep.as_str()]);
        }
        w.push(env.add(title, &args));
    }
    let claude = "claude-code-634098a0";
    // Done work, with passing evidence and settled turns that cost money.
    for t in [&p[0], &p[1], &p[2]] {
        env.agent(claude, &["todo", "claim", t]).ok();
        env.agent(
            claude,
            &[
                "evidence",
                "run",
                "--todo",
                t,
                "--summary",
                "cargo test",
                "--",
                "true",
            ],
        )
        .ok();
        env.agent(claude, &["todo", "done", t, "--note", "merged"])
            .ok();
    }
    for (cost, todo) in [("4.10", &p[4]), ("6.35", &p[4]), ("3.80", &p[5])] {
        let tok = turn(&env, claude, "parser");
        env.agent(claude, &["todo", "claim", todo]).ok();
        env.agent(
            claude,
            &[
                "settle", "--turn", &tok, "--todo", todo, "--outcome", "advanced",
                "--usage",
                &format!(
                    r#"{{"input_tokens": 900000, "output_tokens": 60000, "cost_usd": {cost}, "model": "claude-sonnet-4-5", "runtime": "claude-code"}}"#
                ),
            ],
        )
        .ok();
    }
    // A failing check on a claimed todo.
    env.agent("codex-review", &["todo", "claim", &p[8]]).ok();
    env.agent(
        "codex-review",
        &[
            "evidence",
            "run",
            "--todo",
            &p[8],
            "--summary",
            "cargo test duplicate_keys",
            "--",
            "false",
        ],
    )
    .code(3);
    let tok = turn(&env, "codex-review", "parser");
    env.agent(
        "codex-review",
        &[
            "settle", "--turn", &tok, "--todo", &p[8], "--outcome", "advanced", "--usage",
            r#"{"input_tokens": 400000, "output_tokens": 30000, "cost_usd": 1.95, "model": "gpt-5-codex", "runtime": "codex"}"#,
        ],
    )
    .ok();
    // Blocked, with its reason.
    env.agent("codex-review", &["todo", "claim", &p[7]]).ok();
    env.agent(
        "codex-review",
        &[
            "todo",
            "update",
            &p[7],
            "--status",
            "blocked",
            "--note",
            "needs a Windows machine to reproduce the CRLF bug",
        ],
    )
    .ok();
    env.loopx(&["todo", "update", &w[20], "--status", "deferred"])
        .ok();
    // The docs agent spends past its budget: the record opens a spend gate.
    env.agent("gemini-docs", &["todo", "claim", &w[0]]).ok();
    env.agent("gemini-docs", &["todo", "done", &w[0], "--note", "Zola"])
        .ok();
    for cost in ["2.40", "4.05"] {
        let tok = turn(&env, "gemini-docs", "website");
        env.agent("gemini-docs", &["todo", "claim", &w[1]]).ok();
        env.agent(
            "gemini-docs",
            &[
                "settle", "--turn", &tok, "--todo", &w[1], "--outcome", "advanced", "--usage",
                &format!(
                    r#"{{"input_tokens": 700000, "output_tokens": 50000, "cost_usd": {cost}, "model": "gemini-2.5-pro", "runtime": "gemini"}}"#
                ),
            ],
        )
        .ok();
    }
    // A permission gate on one todo, a publish gate on the site.
    env.loopx(&[
        "gate",
        "open",
        "--goal",
        "parser",
        "--kind",
        "permission",
        "--blocks",
        &format!("todo:{}", p[24]),
        "--question",
        "May the agent send the fuzz corpus (2 GB, includes customer configs) to the security team's bucket?",
        "--option",
        "approve",
        "--option",
        "reject",
    ])
    .ok();
    env.loopx(&[
        "gate",
        "open",
        "--goal",
        "website",
        "--kind",
        "publish",
        "--blocks",
        &format!("todo:{}", w[19]),
        "--question",
        "Publish the site on docs.example.org now, or wait for the search index?",
        "--option",
        "publish now",
        "--option",
        "wait for search",
    ])
    .ok();
    // A claim whose short lease runs out while nobody ticks.
    env.agent("codex-review", &["todo", "claim", &p[11], "--ttl", "10m"])
        .ok();
    env.advance(40 * 60);
    // The others renew; the docs agent has gone quiet, its lease runs out.
    for t in [&p[4], &p[5]] {
        env.agent(claude, &["todo", "renew", t]).ok();
    }
    env.agent("codex-review", &["todo", "renew", &p[8]]).ok();
    env.advance(25 * 60);
    env.agent(claude, &["todo", "claim", &p[10]]).ok();
    env.agent(
        claude,
        &[
            "todo",
            "update",
            &p[10],
            "--note",
            "escapes done, surrogates next",
        ],
    )
    .ok();
    env
}

/// Screenshots of the busy state at 1280 and 390 px, for the README.
#[test]
fn chromium_shows_the_busy_state_at_1280_and_390() {
    let Some(bin) = chromium() else { return };
    let env = busy();
    let page = env.root().join("status.html");
    env.loopx(&["status", "--html", page.to_str().unwrap()])
        .ok();
    let url = format!("file://{}", page.display());
    let home = env.root().join("home");
    for (name, size) in [("busy-1280.png", "1280,2200"), ("busy-390.png", "390,1500")] {
        let shot = shots().join(name);
        let _ = std::fs::remove_file(&shot);
        headless(
            &bin,
            &home,
            &[
                &format!("--screenshot={}", shot.display()),
                &format!("--window-size={size}"),
                &url,
            ],
        );
        assert!(
            std::fs::read(&shot)
                .expect("a screenshot")
                .starts_with(b"\x89PNG")
        );
    }
    std::fs::copy(&page, shots().join("busy.html")).unwrap();
}

/// Appended to a copy of the page: measures the layout the browser made
/// and writes what is wrong into `<pre id="report">` as a JSON list.
/// 1. no cell, card, gate or list item is wider than its box;
/// 2. numbers, times, ids, agent names, counts and column headers stay on
///    one line (no digit or letter-by-letter wrapping);
/// 3. an answer command breaks only between words (a command whose words
///    are each one `.nw` span is checked by 2).
const MEASURE: &str = r#"<script>
(function(){var bad=[];
function shown(e){return e.getClientRects().length>0;}
function name(e){return e.tagName.toLowerCase()+(e.id?'#'+e.id:'')+' "'+e.textContent.trim().slice(0,50)+'"';}
function lines(r){var tops={};Array.prototype.forEach.call(r.getClientRects(),function(x){if(x.width>0)tops[Math.round(x.top)]=1;});return Object.keys(tops).length;}
document.querySelectorAll('td, th, .card, .gate, li, h1, h2, h3, h4, p, dl').forEach(function(e){
 if(shown(e)&&e.scrollWidth>e.clientWidth+1)bad.push('overflows: '+name(e)+' '+e.scrollWidth+'>'+e.clientWidth);});
document.querySelectorAll('time, .id, td.num, thead th, .nw, dd, dt').forEach(function(e){
 if(!shown(e))return;var r=document.createRange();r.selectNodeContents(e);if(lines(r)>1)bad.push('wraps: '+name(e));});
document.querySelectorAll('pre code').forEach(function(e){var t=e.firstChild;if(!t||t.nodeType!==3)return;var i=0;
 t.textContent.split(' ').forEach(function(w){if(w){var r=document.createRange();r.setStart(t,i);r.setEnd(t,i+w.length);
 if(lines(r)>1)bad.push('command broken mid-word: '+w);}i+=w.length+1;});});
var o=document.createElement('pre');o.id='report';o.textContent=JSON.stringify(bad);document.body.appendChild(o);})();
</script>"#;

/// The page's layout problems at a window width, as the browser measured
/// them (see [`MEASURE`]).
pub(crate) fn layout_problems(bin: &Path, home: &Path, page: &Path, width: u32) -> Vec<String> {
    let html = std::fs::read_to_string(page).unwrap();
    let copy = page.with_file_name(format!("measure-{width}.html"));
    std::fs::write(&copy, html.replace("</body>", &format!("{MEASURE}</body>"))).unwrap();
    let url = format!("file://{}", copy.display());
    let dom = String::from_utf8(
        headless(
            bin,
            home,
            &["--dump-dom", &format!("--window-size={width},3000"), &url],
        )
        .stdout,
    )
    .unwrap();
    let start = dom
        .find("<pre id=\"report\">")
        .expect("the measuring script ran")
        + 17;
    let report = &dom[start..start + dom[start..].find("</pre>").unwrap()];
    let report = report
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str(&report).unwrap_or_else(|e| panic!("{e}: {report}"))
}

/// The busy page in Chromium: money, what is stuck and why, gates and
/// todos linked both ways, and a layout that holds at 1280 and 390 px.
#[test]
fn chromium_shows_money_stuck_work_and_links_and_nothing_overflows() {
    let Some(bin) = chromium() else { return };
    let env = busy();
    let page = env.root().join("busy.html");
    env.loopx(&["status", "--html", page.to_str().unwrap()])
        .ok();
    let json = env.loopx(&["status", "--json"]).ok().json();
    let home = env.root().join("home");
    let url = format!("file://{}", page.display());
    let dom = String::from_utf8(headless(&bin, &home, &["--dump-dom", &url]).stdout).unwrap();
    // Money: every budget with its spend, the tripped one marked.
    assert_eq!(json["budgets"].as_array().unwrap().len(), 2, "{json}");
    assert!(dom.contains("data-budget=\"tripped\""), "a tripped budget");
    assert!(dom.contains("data-usd=\"16.2\">$16.20"), "the goal's spend");
    assert!(dom.contains("data-usd=\"6.45\">$6.45"), "the agent's spend");
    assert!(
        dom.contains("$40.00") && dom.contains("$6.00"),
        "the budgets"
    );
    // What is stuck, and why.
    let stuck = &dom[dom.find("id=\"stuck\"").unwrap()..dom.find("id=\"money\"").unwrap()];
    for (kind, why) in [
        ("blocked", "needs a Windows machine"),
        ("expired", "lease expired at"),
        ("gated", "held by gate"),
        ("quiet", "last heard from"),
    ] {
        let at = stuck
            .find(&format!("data-stuck=\"{kind}\""))
            .unwrap_or_else(|| panic!("no {kind} item: {stuck}"));
        let item = &stuck[at..at + stuck[at..].find("</li>").unwrap()];
        assert!(item.contains(why), "{kind}: {item}");
    }
    // Each gate on a todo links to the todo and names its title; the todo's
    // card links back to the gate; agents link to their rows.
    for g in json["gates"].as_array().unwrap() {
        let id = g["id"].as_str().unwrap();
        let Some(todo) = g["blocks"].as_str().unwrap().strip_prefix("todo:") else {
            continue;
        };
        let title = env.loopx(&["todo", "show", todo, "--json"]).ok().json()["title"]
            .as_str()
            .unwrap()
            .to_owned();
        let gate = &dom[dom
            .find(&format!("<article class=\"gate\" id=\"{id}\""))
            .unwrap()..];
        let gate = &gate[..gate.find("</article>").unwrap()];
        assert!(gate.contains(&format!("href=\"#{todo}\"")), "{gate}");
        assert!(gate.contains(&title), "{gate}");
        let card = &dom[dom.find(&format!("id=\"{todo}\" data-column=")).unwrap()..];
        let card = &card[..card.find("</article>").unwrap()];
        assert!(card.contains(&format!("href=\"#{id}\"")), "{card}");
    }
    for a in ["claude-code-634098a0", "codex-review", "gemini-docs"] {
        assert!(dom.contains(&format!("id=\"agent-{a}\"")), "{a}'s row");
        assert!(
            dom.contains(&format!("href=\"#agent-{a}\"")),
            "a link to {a}"
        );
    }
    // The layout holds, measured by the browser at both widths.
    for width in [1280, 390] {
        let problems = layout_problems(&bin, &home, &page, width);
        assert!(
            problems.is_empty(),
            "at {width} px:\n{}",
            problems.join("\n")
        );
    }
}

/// Under --watch, a lease counts down on the page's own clock: with no
/// tick at all, it reads "expired" once its time has passed.
#[test]
fn chromium_turns_a_lease_expired_without_a_tick() {
    let Some(bin) = chromium() else { return };
    let env = TestEnv::with_board();
    let t = env.add("Write the parser", &[]);
    env.agent("agent-a", &["todo", "claim", &t, "--ttl", "2m"])
        .ok();
    let page = env.root().join("watch.html");
    env.loopx(&[
        "status",
        "--html",
        page.to_str().unwrap(),
        "--watch",
        "--max-updates",
        "1",
    ])
    .ok();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("data-until="), "a live lease");
    // The page never reloads: it loads its sidecar again, whose frame has
    // the same key, so nothing is swapped and the clock counts on.
    assert!(!html.contains("http-equiv=\"refresh\""));
    let home = env.root().join("home");
    let url = format!("file://{}", page.display());
    let lease_of = |dom: &str| -> String {
        let card = &dom[dom
            .find(&format!("id=\"{t}\" data-column="))
            .expect("the card")..];
        let card = &card[..card.find("</article>").unwrap()];
        let time = &card[card.find("<time").expect("a lease")..];
        time[time.find('>').unwrap() + 1..time.find("</time>").unwrap()].to_owned()
    };
    // A moment after loading, the lease still runs...
    let now = String::from_utf8(
        headless(
            &bin,
            &home,
            &["--virtual-time-budget=1000", "--dump-dom", &url],
        )
        .stdout,
    )
    .unwrap();
    assert!(lease_of(&now).ends_with(" left"), "{}", lease_of(&now));
    // ...three minutes later (the browser's virtual clock), it has expired,
    // though the file never changed.
    let later = String::from_utf8(
        headless(
            &bin,
            &home,
            &["--virtual-time-budget=180000", "--dump-dom", &url],
        )
        .stdout,
    )
    .unwrap();
    assert_eq!(lease_of(&later), "expired");
    assert_eq!(std::fs::read_to_string(&page).unwrap(), html);
}

/// The busy state with a budget gate on a whole goal (the parser's budget
/// lowered under its spend) and a turn of a model no price names.
fn gated() -> TestEnv {
    let env = busy();
    let claims = env.loopx(&["status", "--json"]).ok().json()["claims"].clone();
    let held = claims
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["owner"] == "codex-review" && c["expired"] == false)
        .expect("codex-review holds a todo")["todo"]
        .as_str()
        .unwrap()
        .to_owned();
    let tok = turn(&env, "codex-review", "parser");
    env.agent(
        "codex-review",
        &[
            "settle",
            "--turn",
            &tok,
            "--todo",
            &held,
            "--outcome",
            "advanced",
            "--usage",
            r#"{"input_tokens": 300000, "output_tokens": 20000, "model": "claude-opus-5-5"}"#,
        ],
    )
    .ok();
    env.loopx(&["goal", "set", "parser", "--budget-usd", "15"])
        .ok();
    env
}

/// Under --watch the page follows the state in place: a filter typed, the
/// page scrolled and the tick table folded stay while ticks land from
/// another process over about ten seconds, and each new tick shows. A
/// goal-wide gate is one banner, its question shown once, with the raise
/// command beside its answers. Screenshots at 1280 and 390 px, light and
/// dark, go to target/browser as live-*.png (docs/status.png,
/// status-390.png, status-dark.png and status-390-dark.png are copies).
#[test]
fn chromium_follows_watch_in_place_keeping_the_filter_and_the_scroll() {
    use crate::common::cdp::{Browser, wait_for};
    let Some(bin) = chromium() else { return };
    let env = gated();
    let json = env.loopx(&["status", "--json"]).ok().json();
    let gate = json["gates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["kind"] == "spend" && g["blocks"] == "goal")
        .unwrap_or_else(|| panic!("a goal-wide budget gate: {json}"))
        .clone();
    let raise = gate["raise"].as_str().expect("a raise command").to_owned();
    assert!(
        raise.starts_with("loopx goal set parser --budget-usd "),
        "{raise}"
    );
    let page = env.root().join("live.html");
    let mut watch = env
        .command()
        .args(["status", "--html", page.to_str().unwrap(), "--watch"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("loopx starts");
    wait_for("the page", || page.exists().then_some(()));
    let home = env.root().join("home");
    let url = format!("file://{}", page.display());
    let mut b = Browser::open(&bin, &home, &url, 1280, 900);
    wait_for("the page's script", || {
        (b.eval("var f=document.getElementById('filter');document.readyState==='complete'&&!!f&&f.style.display==='block'") == true).then_some(())
    });
    // One banner for the goal's gate; its question once on the page; no
    // card of the goal repeats it, done cards are not held, stuck rows
    // name the gate without its question.
    let question = gate["question"].as_str().unwrap();
    let id = gate["id"].as_str().unwrap();
    let text = b
        .eval("document.body.innerText")
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(text.matches(question).count(), 1, "{text}");
    assert_eq!(
        b.eval(&format!(
            "document.querySelectorAll('[data-banner=\"{id}\"]').length"
        )),
        1
    );
    assert_eq!(
        b.eval("document.querySelectorAll('[data-column=\"done\"] [data-held]').length"),
        0
    );
    assert_eq!(
        b.eval(&format!(
            "document.querySelectorAll('#stuck [data-gate=\"{id}\"]').length"
        )),
        1
    );
    let held = b.eval("document.querySelectorAll('#goal-parser [data-held=\"goal\"]').length");
    assert!(held.as_u64().unwrap() > 3, "cards say held (goal): {held}");
    // The raise command beside the answers, and the gate's scope named as
    // the CLI names it.
    let article = b
        .eval(&format!("document.getElementById('{id}').innerText"))
        .as_str()
        .unwrap()
        .to_owned();
    assert!(article.contains(&raise), "{article}");
    assert!(article.contains("spend on goal"), "{article}");
    // Money says what it cannot count.
    let money = b
        .eval("document.getElementById('money').innerText")
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        money.contains("unpriced (model claude-opus-5-5)"),
        "{money}"
    );

    // Type a filter, scroll, fold the tick table.
    b.eval("document.getElementById('filter').focus()");
    b.call("Input.insertText", serde_json::json!({"text": "parser"}));
    b.eval("document.getElementById('ticks').open=false;window.scrollTo(0,600)");
    let hidden_before = b.eval("document.querySelectorAll('.card[hidden]').length");
    assert!(
        hidden_before.as_u64().unwrap() > 10,
        "the filter hides cards"
    );
    let start_tick = json["tick"].as_u64().unwrap();
    for (i, title) in [
        "Parser: second pass",
        "Website footer",
        "Parser: third pass",
    ]
    .iter()
    .enumerate()
    {
        // A tick from another process, every few seconds.
        std::thread::sleep(std::time::Duration::from_secs(3));
        env.add(
            title,
            &[
                "--goal",
                if title.starts_with("Parser") {
                    "parser"
                } else {
                    "website"
                },
            ],
        );
        let want = format!("tick {}", start_tick + 1 + i as u64);
        wait_for("the new tick on the page", || {
            b.eval("document.title")
                .as_str()?
                .ends_with(&want)
                .then_some(())
        });
        let state = b.eval(&format!(
            "JSON.stringify([document.getElementById('filter').value, window.scrollY, document.getElementById('ticks').open, document.querySelector('h1').textContent, Array.prototype.filter.call(document.querySelectorAll('.card'), function(c){{return !c.hidden && c.textContent.indexOf({title:?})>=0;}}).length])"
        ));
        let state: serde_json::Value = serde_json::from_str(state.as_str().unwrap()).unwrap();
        assert_eq!(state[0], "parser", "the filter stays");
        assert_eq!(state[1], 600, "the scroll stays");
        assert_eq!(state[2], false, "the folded table stays folded");
        assert!(state[3].as_str().unwrap().ends_with(&want), "{state}");
        // A new card shows when it matches the filter, hides when not.
        let shown = if title.starts_with("Parser") { 1 } else { 0 };
        assert_eq!(state[4], shown, "{title}: {state}");
    }
    // The page itself was never reloaded: only its sidecar.
    assert!(b.eval("performance.getEntriesByType('navigation').length") == 1);
    let _ = watch.kill();
    let _ = watch.wait();
    // The banner, the raise command and the unpriced note fit at both
    // widths.
    for width in [1280, 390] {
        let problems = layout_problems(&bin, &home, &page, width);
        assert!(
            problems.is_empty(),
            "at {width} px:\n{}",
            problems.join("\n")
        );
    }
    std::fs::copy(&page, shots().join("live.html")).unwrap();

    // Screenshots without the filter, at the top, both widths, both schemes.
    b.eval("var f=document.getElementById('filter');f.value='';f.dispatchEvent(new Event('input'));document.getElementById('ticks').open=true;window.scrollTo(0,0)");
    for (width, height, scheme, name) in [
        (1280, 1100, "light", "live-1280.png"),
        (390, 1100, "light", "live-390.png"),
        (1280, 1100, "dark", "live-1280-dark.png"),
        (390, 1100, "dark", "live-390-dark.png"),
    ] {
        b.call(
            "Emulation.setDeviceMetricsOverride",
            serde_json::json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600}),
        );
        b.call(
            "Emulation.setEmulatedMedia",
            serde_json::json!({"features": [{"name": "prefers-color-scheme", "value": scheme}]}),
        );
        b.eval("window.scrollTo(0,0)");
        let png = b.screenshot();
        assert!(png.starts_with(b"\x89PNG"), "{name} is a PNG");
        std::fs::write(shots().join(name), png).unwrap();
    }
}
