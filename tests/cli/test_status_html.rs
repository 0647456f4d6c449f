//! `status --html`: the page agrees with `status` and `status --json`,
//! escapes every text from the state, and follows the ref with --watch.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::TestEnv;

/// A small deterministic generator, so a failing board can be rebuilt.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// A board drawn from `seed`: two goals, todos in every state, claims by
/// both agents, dependencies and gates of both sorts.
fn random_board(seed: u64) -> TestEnv {
    let env = TestEnv::with_board();
    env.loopx(&["goal", "add", "docs", "--objective", "Write the manual"])
        .ok();
    let mut r = Lcg(seed);
    let mut ids: Vec<String> = Vec::new();
    for i in 0..18 {
        let goal = if r.below(3) == 0 { "docs" } else { "main" };
        let pri = format!("P{}", r.below(4));
        let mut extra = vec!["--goal", goal, "--priority", &pri];
        let dep;
        if !ids.is_empty() && r.below(4) == 0 {
            dep = ids[r.below(ids.len() as u64) as usize].clone();
            extra.extend(["--after", &dep]);
        }
        let out = env.loopx(&[&["todo", "add", &format!("todo {i}")][..], &extra].concat());
        let Some(t) = out.stdout.split_whitespace().next().map(str::to_owned) else {
            continue;
        };
        if !out.stdout.is_empty() && out.code == 0 {
            ids.push(t);
        }
    }
    for t in &ids {
        let agent = if r.below(2) == 0 {
            "agent-a"
        } else {
            "agent-b"
        };
        match r.below(6) {
            0 => {
                let _ = env.agent(agent, &["todo", "claim", t]);
            }
            1 if env.agent(agent, &["todo", "claim", t]).code == 0 => {
                let _ = env.agent(agent, &["todo", "done", t]);
            }
            2 => {
                let _ = env.loopx(&["todo", "update", t, "--status", "blocked"]);
            }
            3 => {
                let _ = env.loopx(&["todo", "update", t, "--status", "deferred"]);
            }
            _ => {}
        }
    }
    env.loopx(&[
        "gate",
        "open",
        "--goal",
        "docs",
        "--kind",
        "permission",
        "--question",
        "May I publish?",
    ])
    .ok();
    env.loopx(&[
        "gate",
        "open",
        "--goal",
        "main",
        "--blocks",
        "agent:agent-b",
        "--question",
        "Which parser?",
        "--option",
        "pest",
        "--option",
        "hand-written",
    ])
    .ok();
    env
}

fn html(env: &TestEnv, extra: &[&str]) -> String {
    let file = env.root().join("board.html");
    let f = file.to_str().unwrap();
    env.loopx(&[&["status", "--html", f][..], extra].concat())
        .ok();
    std::fs::read_to_string(&file).expect("the page was written")
}

/// The value of `data-count="KEY"` in the first `<dl>` with `id`.
fn count(page: &str, id: &str, key: &str) -> u64 {
    let dl = &page[page.find(&format!("id=\"{id}\"")).expect(id)..];
    let dd = &dl[dl.find(&format!("data-count=\"{key}\">")).expect(key)..];
    let v = &dd[dd.find('>').unwrap() + 1..];
    v[..v.find('<').unwrap()].parse().expect("a number")
}

#[test]
fn status_json_and_html_agree_on_a_random_board() {
    for seed in [7, 1234] {
        let env = random_board(seed);
        let json = env.loopx(&["status", "--json"]).ok().json();
        let text = env.loopx(&["status"]).ok().stdout;
        let page = html(&env, &[]);
        let c = &json["counts"];
        // The text counts each todo once: the open ones split into ready
        // and held back, the claims that ran out said inside claimed.
        let n = |k: &str| c[k].as_u64().unwrap();
        let expired = match n("reclaimable") {
            0 => String::new(),
            r => format!(" ({r} expired, free to take)"),
        };
        assert_eq!(n("open"), n("ready") - n("reclaimable") + n("held"));
        let line = format!(
            "todos: {} ready, {} held back, {} waiting, {} claimed{expired}, {} blocked, {} deferred, {} done; {} agents",
            n("ready") - n("reclaimable"),
            c["held"],
            c["waiting"],
            c["claimed"],
            c["blocked"],
            c["deferred"],
            c["done"],
            json["agents"]
        );
        assert!(text.contains(&line), "seed {seed}: {line}\n{text}");
        for k in [
            "ready", "open", "waiting", "claimed", "blocked", "deferred", "done",
        ] {
            assert_eq!(
                count(&page, "counts", k),
                c[k].as_u64().unwrap(),
                "seed {seed}: {k}"
            );
        }
        assert_eq!(
            count(&page, "counts", "agents"),
            json["agents"].as_u64().unwrap()
        );
        // Every live todo is one row, under the column its count says.
        let rows = |col: &str| page.matches(&format!("data-column=\"{col}\"")).count() as u64;
        assert_eq!(rows("ready") + rows("open"), c["open"].as_u64().unwrap());
        assert_eq!(rows("ready"), c["ready"].as_u64().unwrap(), "seed {seed}");
        for k in ["waiting", "claimed", "blocked", "deferred", "done"] {
            assert_eq!(rows(k), c[k].as_u64().unwrap(), "seed {seed}: {k}");
        }
        // The gates, in the same order, the human's first and before the goals.
        let gates: Vec<&str> = json["gates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["id"].as_str().unwrap())
            .collect();
        assert_eq!(gates.len(), 2);
        let at: Vec<usize> = gates
            .iter()
            .map(|g| {
                page.find(&format!("<article class=\"gate\" id=\"{g}\""))
                    .expect(g)
            })
            .collect();
        assert!(at[0] < at[1] && at[1] < page.find("id=\"goals\"").unwrap());
        assert_eq!(json["gates"][0]["human_only"], true);
        for g in &gates {
            assert!(text.contains(g), "{g} in the text screen");
        }
        // The claims the JSON lists are the claimed rows' owners.
        for cl in json["claims"].as_array().unwrap() {
            assert!(page.contains(cl["todo"].as_str().unwrap()));
        }
    }
}

#[test]
fn the_page_stands_alone_and_shows_the_answer_command() {
    let env = TestEnv::with_board();
    env.loopx(&[
        "gate",
        "open",
        "--kind",
        "permission",
        "--question",
        "May I push?",
        "--option",
        "yes, push",
        "--option",
        "no",
    ])
    .ok();
    let id = env.loopx(&["status", "--json"]).ok().json()["gates"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let page = html(&env, &[]);
    assert!(page.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"));
    assert!(page.contains(&format!(
        "loopx gate answer {id} --choice &#39;yes, push&#39;"
    )));
    assert!(page.contains(&format!("loopx gate answer {id} --choice no</code>")));
    assert!(page.contains("prefers-color-scheme:dark"));
    assert!(page.contains("name=\"viewport\""));
    assert!(
        !page.contains("http-equiv=\"refresh\""),
        "only --watch reloads"
    );
    for external in ["src=\"http", "href=\"http", "url(", "@import", "//cdn"] {
        assert!(!page.contains(external), "{external}");
    }
    // The command on the page is the one that works.
    env.loopx(&["gate", "answer", &id, "--choice", "yes, push"])
        .ok();
}

const EVIL: [&str; 3] = [
    "<script>document.title='PWNED'</script>",
    "\"><img src=x onerror=alert(1)>",
    "'><svg onload=alert(2)>",
];

#[test]
fn no_text_from_the_state_is_markup() {
    let env = TestEnv::new();
    let evil = EVIL.concat();
    env.loopx(&["init", "--goal", "main", "--objective", &evil])
        .ok();
    env.loopx(&["agent", "register", "agent-a"]).ok();
    let t = env.add(&evil, &[]);
    let u = env.add(&format!("after {evil}"), &["--after", &t]);
    env.agent("agent-a", &["todo", "claim", &t]).ok();
    env.agent("agent-a", &["todo", "update", &t, "--note", &evil])
        .ok();
    env.agent(
        "agent-a",
        &["evidence", "add", "--todo", &t, "--summary", &evil],
    )
    .ok();
    env.loopx(&[
        "gate",
        "open",
        "--kind",
        "permission",
        "--question",
        &evil,
        "--option",
        &evil,
        "--option",
        "no",
    ])
    .ok();
    env.loopx(&[
        "gate",
        "open",
        "--blocks",
        &format!("todo:{u}"),
        "--question",
        &evil,
    ])
    .ok();
    let page = html(&env, &[]);
    // Every tag on the page is one the renderer writes, none carries an
    // event handler, and there is exactly one script (the filter).
    const TAGS: &[&str] = &[
        "!DOCTYPE",
        "html",
        "head",
        "meta",
        "title",
        "style",
        "body",
        "header",
        "h1",
        "h2",
        "h3",
        "h4",
        "p",
        "a",
        "ul",
        "li",
        "time",
        "dl",
        "div",
        "dt",
        "dd",
        "input",
        "main",
        "section",
        "article",
        "pre",
        "code",
        "span",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "br",
        "figure",
        "svg",
        "rect",
        "text",
        "figcaption",
        "details",
        "summary",
        "script",
    ];
    let mut rest = page.as_str();
    while let Some(i) = rest.find('<') {
        let tag = &rest[i + 1..];
        let end = tag.find('>').expect("a tag ends");
        let body = &tag[..end];
        let name = body
            .trim_start_matches('/')
            .split(|c: char| c.is_whitespace())
            .next()
            .unwrap();
        assert!(TAGS.contains(&name), "unexpected tag <{body}>");
        assert!(!body.to_lowercase().contains(" on"), "handler in <{body}>");
        rest = &tag[end..];
    }
    assert_eq!(page.matches("<script").count(), 1);
    assert!(page.contains("&lt;script&gt;document.title=&#39;PWNED&#39;&lt;/script&gt;"));
    assert!(page.contains("&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"));
}

/// Waits for `cond`, failing (not hanging) after a minute.
fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "waited for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn watch_writes_the_page_once_and_its_sidecar_when_another_process_ticks() {
    let env = TestEnv::with_board();
    let file = env.root().join("watch.html");
    let live = env.root().join("watch.html.live.js");
    let mut child = env
        .command()
        .args([
            "status",
            "--html",
            file.to_str().unwrap(),
            "--watch",
            "--max-updates",
            "2",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("loopx starts");
    wait_for("the first page", || Path::new(&file).exists());
    let page = std::fs::read_to_string(&file).unwrap();
    // No reload: the page loads its sidecar again, which holds the frame.
    assert!(!page.contains("http-equiv=\"refresh\""));
    assert!(page.contains("data-live=\"watch.html.live.js\""), "{page}");
    assert!(page.contains("data-key=\"3\""));
    let first = std::fs::read_to_string(&live).unwrap();
    assert!(first.starts_with("window.loopxLive&&window.loopxLive({\"key\":\"3\""));
    assert!(!first.contains("Watched todo"));
    // A second process ticks; the watcher sees the ref move and rewrites
    // the sidecar only.
    env.add("Watched todo", &[]);
    let mut status = None;
    wait_for("the watcher to stop", || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    assert!(status.unwrap().success());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), page);
    let second = std::fs::read_to_string(&live).unwrap();
    assert!(second.contains("Watched todo"), "{second}");
    assert!(second.contains("\"key\":\"4\""));
    assert!(second.contains("\"title\":\"loopx refs/loopx/state tick 4\""));
    // Nothing half-written is left behind.
    assert!(!env.root().join("watch.html.live.js.tmp").exists());
}

#[test]
fn watch_needs_html_and_not_at() {
    let env = TestEnv::with_board();
    env.loopx(&["status", "--watch"]).code(2);
    env.loopx(&["status", "--html", "x.html", "--watch", "--at", "1"])
        .code(2);
}

/// A gate on a whole goal (or on one agent) is one banner at the top of
/// its goal and one stuck row; its question shows once, in "Waiting on
/// you", whose meta line names the scope as the CLI does. Cards say "held
/// (goal)" or "held (agent)"; nothing holds a done todo.
#[test]
fn a_goal_wide_gate_is_one_banner_and_holds_no_done_todo() {
    let env = TestEnv::with_board();
    let done = env.add("Already shipped", &[]);
    env.agent("agent-a", &["todo", "claim", &done]).ok();
    env.agent("agent-a", &["todo", "done", &done]).ok();
    let mut open = Vec::new();
    for i in 0..4 {
        open.push(env.add(&format!("Open work {i}"), &[]));
    }
    let held = env.add("Held by agent-b's gate", &[]);
    env.agent("agent-b", &["todo", "claim", &held]).ok();
    let question =
        "Spend another 20 dollars on the parser, or stop for today and look at the bill?";
    env.loopx(&[
        "gate",
        "open",
        "--kind",
        "spend",
        "--question",
        question,
        "--option",
        "go",
        "--option",
        "stop",
    ])
    .ok();
    env.loopx(&[
        "gate",
        "open",
        "--kind",
        "permission",
        "--blocks",
        "agent:agent-b",
        "--question",
        "May agent-b use the network to download the fixture corpus from the vendor site?",
        "--option",
        "yes",
        "--option",
        "no",
    ])
    .ok();
    let gates = env.loopx(&["gate", "list", "--json"]).ok().json();
    let id_of = |blocks: &str| {
        gates
            .as_array()
            .or(gates["gates"].as_array())
            .unwrap()
            .iter()
            .find(|g| g["blocks"] == blocks)
            .unwrap_or_else(|| panic!("{blocks}: {gates}"))["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (goal_gate, agent_gate) = (id_of("goal"), id_of("agent:agent-b"));
    let page = html(&env, &[]);
    assert_eq!(page.matches(question).count(), 1, "the question once");
    assert_eq!(
        page.matches(
            "May agent-b use the network to download the fixture corpus from the vendor site?"
        )
        .count(),
        1
    );
    assert_eq!(
        page.matches(&format!("data-banner=\"{goal_gate}\""))
            .count(),
        1
    );
    assert_eq!(
        page.matches(&format!("data-banner=\"{agent_gate}\""))
            .count(),
        1
    );
    assert!(page.contains(&format!(
        "<code class=\"id\">{goal_gate}</code> · spend on <code class=\"nw\">goal</code> · goal main"
    )));
    assert!(page.contains(&format!(
        "<code class=\"id\">{agent_gate}</code> · permission on <code class=\"nw\">agent:agent-b</code> · goal main"
    )));
    let card = |id: &str| {
        let c = &page[page.find(&format!("id=\"{id}\" data-column=")).expect(id)..];
        c[..c.find("</article>").unwrap()].to_owned()
    };
    for t in &open {
        assert!(card(t).contains("held (goal) by"), "{}", card(t));
    }
    assert!(card(&held).contains("held (agent) by"), "{}", card(&held));
    assert!(!card(&done).contains("held"), "{}", card(&done));
    let stuck = &page[page.find("id=\"stuck\"").unwrap()..page.find("id=\"money\"").unwrap()];
    assert_eq!(
        stuck.matches(&format!("data-gate=\"{goal_gate}\"")).count(),
        1,
        "{stuck}"
    );
    assert!(
        stuck.contains("4 todos of goal main: held (goal) by gate"),
        "{stuck}"
    );
    assert!(!stuck.contains(question));
}
