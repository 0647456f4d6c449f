//! The module-graph reader and the layering checks (see `super`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Which top-level modules each top-level module may use (its `crate::`
/// paths, `use` trees and `super::` climbs out of it). The picture of
/// docs/design.md's "Layers"; an edge missing here fails the test, and
/// so does an entry no code uses any more (remove it).
#[rustfmt::skip]
pub(super) const ALLOWED: &[(&str, &[&str])] = &[
    // The front: the crate root parses, builds the context, runs.
    ("lib", &["cli", "cmd", "ctx", "error", "output"]),
    ("cli", &["cmd", "ctx"]),
    ("fuzz", &["cmd", "git", "hook", "mcp", "model", "op", "store", "time", "trust", "tx", "verify"]),
    // The commands, and the context only they (and the front ends) hold.
    // cmd → fast: `cmd::tx::load` tries the start-up path's cache before
    // opening the repository.
    ("cmd", &["config", "ctx", "diff", "env", "error", "fast", "git", "history", "hook", "mcp", "model",
              "notify", "op", "output", "price", "queue", "redact", "run", "service", "store", "sync",
              "term", "time", "trust", "tx", "verify"]),
    ("ctx", &["config", "env", "error", "fast", "hook", "ids", "model", "output", "repo", "store", "time"]),
    // The MCP protocol and the runtimes' hook formats (pure).
    ("mcp", &[]),
    ("hook", &["error", "git", "model", "op", "time"]),
    // Below the commands: they take a `Repo` and explicit values.
    // service → config: a claim's worktree follows `loopx.worktree`.
    ("service", &["config", "error", "git", "history", "hook", "model", "op", "price", "repo", "store", "time"]),
    ("sync", &["error", "git", "model", "op", "repo", "store", "trust", "tx", "verify"]),
    ("notify", &["model", "repo", "store", "time"]),
    ("history", &["diff", "error", "model", "op", "repo", "store", "time", "tx"]),
    ("verify", &["env", "error", "model", "op", "repo", "signing", "store", "time", "trust", "tx"]),
    // tx::Commit::new(repo, caller).run(build) and tx::op(actor, at, ids, change);
    // tx → trailer: a goal ref's tick pins its shared tip in a trailer (tx/goalref.rs).
    ("tx", &["cache", "config", "error", "git", "ids", "model", "op", "queue", "repo", "store",
             "time", "trailer", "trust"]),
    // Seal and sign take the repository handle and the caller as values.
    ("trust", &["error", "hook", "model", "op", "repo", "signing", "store", "trailer"]),
    // The handle caches the signing setup, whose data sits below it.
    ("repo", &["config", "signing", "store", "time"]),
    // The allowed signers and the signing exemption, as data (read from
    // the settings and the allowed-signers file).
    ("signing", &["config", "error", "op", "store", "time"]),
    // The board's counts kept in a sharded head (`op::board::counts`).
    ("cache", &["env", "model", "op", "store", "time"]),
    // The start-up path that reads the state ref and the cache as files.
    ("fast", &["cache", "config", "env", "model", "store"]),
    ("run", &["model", "queue", "redact", "time"]),
    // Fresh ids, random or seeded (the context hands the source down).
    ("ids", &["model"]),
    ("config", &["price", "store", "time"]),
    // The rules and the data (pure).
    ("op", &["error", "model", "redact", "time", "trailer"]),
    ("diff", &["model", "time"]),
    ("price", &["model"]),
    ("model", &["error", "time"]),
    // The store: paths and bytes, through gix.
    ("store", &["env", "error", "lockfile", "trailer"]),
    // The system git; its ssh transport reads the snapshot of the
    // environment.
    ("git", &["env"]),
    // The process environment, read once (`Env::process`).
    ("env", &["error"]),
    ("queue", &["lockfile"]),
    ("output", &["error", "term"]),
    ("error", &["next"]),
];

/// Modules below which op/ and model/ must never reach, directly or
/// through any other module: git, the store, the context, the commands,
/// files and processes.
const IO: &[&str] = &[
    "cache", "cli", "cmd", "config", "ctx", "fast", "git", "history", "hook", "ids", "lockfile",
    "mcp", "notify", "output", "queue", "repo", "run", "service", "signing", "store", "sync",
    "trust", "tx", "verify",
];

/// Whether a top-level module is split into child modules (a directory:
/// op/, sync/, cmd/ …). Its children are nodes of a graph of their own,
/// which must have no cycle either; the parent's `mod.rs`, which declares
/// and dispatches to them, is not part of it.
fn split(modules: &BTreeSet<Vec<String>>, top: &str) -> bool {
    modules.iter().any(|m| m.len() >= 2 && m[0] == top)
}

struct Source {
    /// Path relative to src/, with `/`.
    rel: String,
    /// The module the file is, from the crate root (`["op", "goal"]`).
    module: Vec<String>,
    /// The whole file as written.
    text: String,
    /// The code: comments and literals blanked, test items removed.
    code: String,
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("src is readable") {
        let p = e.expect("a directory entry").path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every source file of the library but tests (`tests.rs`, `tests/`,
/// `test_support.rs`, where tests may reach anywhere).
fn sources() -> Vec<Source> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    walk(&src, &mut paths);
    paths.sort();
    paths
        .into_iter()
        .filter_map(|p| {
            let rel = p
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if rel == "main.rs"
                || rel.ends_with("tests.rs")
                || rel.contains("/tests/")
                || rel.ends_with("test_support.rs")
            {
                return None;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            let code = without_test_items(&blank(&text));
            Some(Source {
                module: module_of(&rel),
                rel,
                text,
                code,
            })
        })
        .collect()
}

/// `op/goal.rs` → `[op, goal]`, `op/mod.rs` → `[op]`, `lib.rs` → `[]`.
fn module_of(rel: &str) -> Vec<String> {
    let rel = rel.strip_suffix(".rs").unwrap();
    let mut parts: Vec<String> = rel.split('/').map(str::to_owned).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The text with comments (doc comments too) and the contents of string
/// and character literals replaced by spaces, newlines kept, so what is
/// left is code and line numbers still hold.
fn blank(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let keep_lines = |out: &mut String, s: &[char]| {
        for ch in s {
            out.push(if *ch == '\n' { '\n' } else { ' ' });
        }
    };
    while i < c.len() {
        let rest = &c[i..];
        if rest.starts_with(&['/', '/']) {
            let end = rest.iter().position(|&x| x == '\n').unwrap_or(rest.len());
            keep_lines(&mut out, &rest[..end]);
            i += end;
        } else if rest.starts_with(&['/', '*']) {
            let (mut depth, mut j) = (0usize, 0);
            while j < rest.len() {
                if rest[j..].starts_with(&['/', '*']) {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with(&['*', '/']) {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            keep_lines(&mut out, &rest[..j]);
            i += j;
        } else if let Some(len) = raw_string(rest) {
            out.push('"');
            keep_lines(&mut out, &rest[1..len - 1]);
            out.push('"');
            i += len;
        } else if rest[0] == '"' {
            let mut j = 1;
            while j < rest.len() && rest[j] != '"' {
                j += if rest[j] == '\\' { 2 } else { 1 };
            }
            let j = (j + 1).min(rest.len());
            out.push('"');
            keep_lines(&mut out, &rest[1..j.saturating_sub(1).max(1)]);
            out.push('"');
            i += j;
        } else if rest[0] == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            let len = if rest.get(1) == Some(&'\\') {
                2 + rest[2..]
                    .iter()
                    .position(|&x| x == '\'')
                    .map_or(0, |p| p + 1)
            } else if rest.get(2) == Some(&'\'') {
                3
            } else {
                1
            };
            out.push('\'');
            keep_lines(&mut out, &rest[1..len]);
            i += len;
        } else {
            // An identifier whole, so a `r"` inside `bar"` is not read
            // as a raw string (a raw string's own prefix was read above;
            // `b"…"` goes on to the string branch).
            if rest[0].is_alphanumeric() || rest[0] == '_' {
                let end = rest
                    .iter()
                    .position(|&x| !(x.is_alphanumeric() || x == '_'))
                    .unwrap_or(rest.len());
                out.extend(&rest[..end]);
                i += end;
                continue;
            }
            out.push(rest[0]);
            i += 1;
        }
    }
    out
}

/// The length of a raw string literal (`r"…"`, `r#"…"#`, `br#"…"#`)
/// starting here, if one does.
fn raw_string(rest: &[char]) -> Option<usize> {
    let skip = match rest {
        ['r', ..] => 1,
        ['b' | 'c', 'r', ..] => 2,
        _ => return None,
    };
    let hashes = rest[skip..].iter().take_while(|&&x| x == '#').count();
    if rest.get(skip + hashes) != Some(&'"') {
        return None;
    }
    let body = skip + hashes + 1;
    let mut j = body;
    while j < rest.len() {
        if rest[j] == '"'
            && rest[j + 1..]
                .iter()
                .take(hashes)
                .filter(|&&x| x == '#')
                .count()
                == hashes
        {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(rest.len())
}

/// The code with every item under `#[cfg(test)]` blanked (up to its
/// `;`, or its braces' match), newlines kept.
fn without_test_items(code: &str) -> String {
    let mut out: Vec<char> = code.chars().collect();
    let needle: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut i = 0;
    while i + needle.len() <= out.len() {
        if out[i..].starts_with(&needle) {
            let mut j = i + needle.len();
            let mut depth = 0usize;
            while j < out.len() {
                match out[j] {
                    ';' if depth == 0 => break,
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            let end = (j + 1).min(out.len());
            for ch in &mut out[i..end] {
                if *ch != '\n' {
                    *ch = ' ';
                }
            }
            i = j + 1;
        } else {
            i += 1;
        }
    }
    out.into_iter().collect()
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Sep,
    Punct(char),
}

/// Tokens with the line each starts on.
fn tokens(code: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = code.chars().collect();
    let (mut out, mut i, mut line) = (Vec::new(), 0, 1);
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch.is_alphanumeric() || ch == '_' || ch == '$' {
            let start = i;
            i += 1;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            out.push((Tok::Word(word.trim_start_matches('$').to_owned()), line));
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push((Tok::Sep, line));
            i += 2;
        } else {
            out.push((Tok::Punct(ch), line));
            i += 1;
        }
    }
    out
}

/// Every path a file names, as written (`["crate", "op", "apply"]`,
/// `["super", "usage", "X"]`, `["goal", "apply"]`), with its line: the
/// leaves of each `use` tree, and each path in the code.
fn paths(code: &str) -> Vec<(Vec<String>, usize)> {
    let toks = tokens(code);
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let (tok, line) = (&toks[i].0, toks[i].1);
        match tok {
            Tok::Word(w)
                if w == "use"
                    && !matches!(i.checked_sub(1).map(|p| &toks[p].0), Some(Tok::Sep)) =>
            {
                let mut j = i + 1;
                use_tree(&toks, &mut j, (Vec::new(), line), &mut out);
                i = j;
            }
            // A path: `crate::…`, `super::…`, `self::…`, or a plain name
            // (which `resolve` keeps only when it names a child module).
            Tok::Word(w)
                if toks.get(i + 1).is_some_and(|t| t.0 == Tok::Sep)
                    && !matches!(i.checked_sub(1).map(|p| &toks[p].0), Some(Tok::Sep)) =>
            {
                let mut path = vec![w.clone()];
                let mut j = i + 1;
                while toks.get(j).is_some_and(|t| t.0 == Tok::Sep) {
                    match toks.get(j + 1) {
                        Some((Tok::Word(n), _)) => path.push(n.clone()),
                        _ => break,
                    }
                    j += 2;
                }
                out.push((path, line));
                i = j;
            }
            _ => i += 1,
        }
    }
    out
}

/// Expands one `use` tree from `toks[*j]` into its leaves, stopping
/// after the `;` (or before the `,`/`}` that ends a subtree).
fn use_tree(
    toks: &[(Tok, usize)],
    j: &mut usize,
    prefix: (Vec<String>, usize),
    out: &mut Vec<(Vec<String>, usize)>,
) {
    let (mut path, mut line) = prefix;
    loop {
        match toks.get(*j).map(|t| &t.0) {
            Some(Tok::Word(w)) if w == "as" => {
                *j += 2; // the alias
            }
            Some(Tok::Word(w)) => {
                if w != "self" || path.is_empty() {
                    path.push(w.clone());
                    line = toks[*j].1;
                }
                *j += 1;
            }
            Some(Tok::Sep) => *j += 1,
            Some(Tok::Punct('*')) => *j += 1,
            Some(Tok::Punct('{')) => {
                *j += 1;
                loop {
                    use_tree(toks, j, (path.clone(), line), out);
                    match toks.get(*j).map(|t| &t.0) {
                        Some(Tok::Punct(',')) => {
                            *j += 1;
                            if toks.get(*j).map(|t| &t.0) == Some(&Tok::Punct('}')) {
                                *j += 1;
                                break;
                            }
                        }
                        Some(Tok::Punct('}')) => {
                            *j += 1;
                            break;
                        }
                        _ => break,
                    }
                }
                if toks.get(*j).map(|t| &t.0) == Some(&Tok::Punct(';')) {
                    *j += 1;
                }
                return;
            }
            Some(Tok::Punct(';')) => {
                *j += 1;
                if !path.is_empty() {
                    out.push((path, line));
                }
                return;
            }
            Some(Tok::Punct(',' | '}')) | None => {
                if !path.is_empty() {
                    out.push((path, line));
                }
                return;
            }
            Some(Tok::Punct(_)) => *j += 1,
        }
    }
}

/// The module graph: top-level modules, and the children of each
/// [`split`] parent as `parent/child`.
struct Graph {
    /// Top-level module names (from src/*.rs and src/*/).
    top: BTreeSet<String>,
    /// (from, to) → the first place that makes the edge.
    top_edges: BTreeMap<(String, String), String>,
    /// The same between the children of the split parents.
    split_edges: BTreeMap<(String, String), String>,
    sources: Vec<Source>,
}

fn graph() -> Graph {
    let sources = sources();
    let modules: BTreeSet<Vec<String>> = sources
        .iter()
        .flat_map(|s| (1..=s.module.len()).map(|n| s.module[..n].to_vec()))
        .collect();
    let mut top: BTreeSet<String> = modules.iter().map(|m| m[0].clone()).collect();
    top.insert("lib".to_owned());
    // What a split parent re-exports from a child (`pub use effect::Effect`),
    // so `super::Effect` counts as the child it comes from.
    let mut reexports: BTreeMap<(String, String), String> = BTreeMap::new();
    for s in sources
        .iter()
        .filter(|s| s.module.len() == 1 && split(&modules, &s.module[0]))
    {
        for (p, _) in paths(&s.code) {
            let child = vec![s.module[0].clone(), p[0].clone()];
            if p.len() >= 2 && modules.contains(&child) {
                reexports.insert(
                    (s.module[0].clone(), p.last().unwrap().clone()),
                    p[0].clone(),
                );
            }
        }
    }
    let (mut top_edges, mut split_edges) = (BTreeMap::new(), BTreeMap::new());
    for s in &sources {
        for (p, line) in paths(&s.code) {
            let Some(target) = resolve(&s.module, &p, &modules) else {
                continue;
            };
            let at = format!("src/{}:{line}: {}", s.rel, p.join("::"));
            // The crate root (lib.rs, and what it defines) is `lib`.
            let root = "lib".to_owned();
            let from = s.module.first().unwrap_or(&root);
            let to = target.first().filter(|t| top.contains(*t)).unwrap_or(&root);
            if from != to {
                top_edges
                    .entry((from.clone(), to.clone()))
                    .or_insert_with(|| at.clone());
            }
            if from == to && split(&modules, from) && s.module.len() >= 2 {
                let child = |m: &[String]| -> Option<String> {
                    let name = m.get(1)?;
                    if modules.contains(&m[..2]) {
                        Some(name.clone())
                    } else {
                        reexports.get(&(from.clone(), name.clone())).cloned()
                    }
                };
                if let (Some(a), Some(b)) = (child(&s.module), child(&target))
                    && a != b
                {
                    split_edges
                        .entry((format!("{from}/{a}"), format!("{from}/{b}")))
                        .or_insert(at);
                }
            }
        }
    }
    Graph {
        top,
        top_edges,
        split_edges,
        sources,
    }
}

/// The path a file names, from the crate root (`["op", "usage", "X"]`),
/// or None for a path outside the crate (`std::…`, a local name).
fn resolve(
    module: &[String],
    path: &[String],
    modules: &BTreeSet<Vec<String>>,
) -> Option<Vec<String>> {
    let mut at: Vec<String> = module.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            at.clear();
            rest = &rest[1..];
        }
        Some("super" | "self") => {
            while let Some(w) = rest.first() {
                match w.as_str() {
                    "super" => {
                        at.pop()?;
                    }
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
        }
        Some(first) => {
            // `use child::X` inside a module file names its own child.
            let mut child = at.clone();
            child.push(first.to_owned());
            if !modules.contains(&child) {
                return None;
            }
        }
        None => return None,
    }
    at.extend(rest.iter().cloned());
    if at.is_empty() { None } else { Some(at) }
}

/// The first cycle found in a graph, as `a → b → … → a` with the place
/// that makes each edge.
fn cycle(edges: &BTreeMap<(String, String), String>) -> Option<Vec<String>> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (a, b) in edges.keys() {
        next.entry(a).or_default().push(b);
    }
    fn visit<'a>(
        n: &'a str,
        next: &BTreeMap<&'a str, Vec<&'a str>>,
        stack: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<&'a str>> {
        if let Some(i) = stack.iter().position(|&s| s == n) {
            let mut c = stack[i..].to_vec();
            c.push(n);
            return Some(c);
        }
        if done.contains(n) {
            return None;
        }
        stack.push(n);
        for &m in next.get(n).map(Vec::as_slice).unwrap_or(&[]) {
            if let Some(c) = visit(m, next, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(n);
        None
    }
    let (mut stack, mut done) = (Vec::new(), BTreeSet::new());
    for &n in next.keys() {
        if let Some(c) = visit(n, &next, &mut stack, &mut done) {
            return Some(
                c.windows(2)
                    .map(|w| {
                        format!(
                            "{} → {}  ({})",
                            w[0],
                            w[1],
                            edges[&(w[0].to_owned(), w[1].to_owned())]
                        )
                    })
                    .collect(),
            );
        }
    }
    None
}

/// Every tangle (a set of modules each of which reaches all the others,
/// a strongly connected component of more than one): one cycle through
/// it, then every edge inside it, each with the place that makes it.
fn cycles(edges: &BTreeMap<(String, String), String>) -> Vec<Vec<String>> {
    let nodes: BTreeSet<&str> = edges
        .keys()
        .flat_map(|(a, b)| [a.as_str(), b.as_str()])
        .collect();
    let reach = |from: &str| -> BTreeSet<&str> {
        let (mut seen, mut todo) = (BTreeSet::new(), vec![from]);
        while let Some(n) = todo.pop() {
            for (a, b) in edges.keys() {
                if a == n && seen.insert(b.as_str()) {
                    todo.push(b);
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&str, BTreeSet<&str>> = nodes.iter().map(|&n| (n, reach(n))).collect();
    let mut done = BTreeSet::new();
    let mut all = Vec::new();
    for &n in &nodes {
        if done.contains(n) || !reached[n].contains(n) {
            continue;
        }
        let tangle: BTreeSet<&str> = nodes
            .iter()
            .copied()
            .filter(|m| reached[n].contains(m) && reached[m].contains(n))
            .collect();
        done.extend(tangle.iter().copied());
        let inside: BTreeMap<(String, String), String> = edges
            .iter()
            .filter(|((a, b), _)| tangle.contains(a.as_str()) && tangle.contains(b.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut report = cycle(&inside).unwrap_or_default();
        report.push(format!("all edges among {tangle:?}:"));
        report.extend(
            inside
                .iter()
                .map(|((a, b), at)| format!("  {a} → {b}  ({at})")),
        );
        all.push(report);
    }
    all
}

#[test]
fn the_top_level_modules_form_no_cycle() {
    let g = graph();
    let found = cycles(&g.top_edges);
    assert!(
        found.is_empty(),
        "import cycles between top-level modules:\n{found:#?}"
    );
}

/// The command context (the environment, the caller, output) stops at the
/// front ends: the crate root, the command line and the commands (the hook
/// and MCP front ends are commands). Everything below takes a `Repo` and
/// explicit values. ALLOWED says the same edge by edge; this says it as
/// the rule, so a new module cannot quietly be allowed the context.
#[test]
fn the_context_stops_at_the_front_ends() {
    let g = graph();
    let bad: Vec<String> = g
        .top_edges
        .iter()
        .filter(|((a, b), _)| b == "ctx" && !["lib", "cli", "cmd"].contains(&a.as_str()))
        .map(|((a, _), at)| format!("{a} → ctx  ({at})"))
        .collect();
    assert!(
        bad.is_empty(),
        "below the commands, ctx is used by:\n{bad:#?}"
    );
}

#[test]
fn the_files_of_each_module_form_no_cycle() {
    // op/'s rule files, sync's steps, the commands under cmd/ …
    let g = graph();
    let found = cycles(&g.split_edges);
    assert!(
        found.is_empty(),
        "import cycles between the files of one module:\n{found:#?}"
    );
}

#[test]
fn every_edge_between_top_level_modules_is_allowed() {
    let g = graph();
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut bad = Vec::new();
    for ((a, b), at) in &g.top_edges {
        if !allowed
            .get(a.as_str())
            .is_some_and(|to| to.contains(&b.as_str()))
        {
            bad.push(format!("{a} → {b} is not in ALLOWED ({at})"));
        }
    }
    for (a, to) in ALLOWED {
        assert!(g.top.contains(*a), "ALLOWED names {a}, which is no module");
        for b in *to {
            if !g.top_edges.contains_key(&(a.to_string(), b.to_string())) {
                bad.push(format!(
                    "{a} → {b} is in ALLOWED but no code uses it: remove it"
                ));
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

/// docs/design.md's module table ("Layers": module, what it owns, what it
/// may import) says what `ALLOWED` says: one row per top-level module, its
/// last column the same modules.
#[test]
fn the_design_docs_table_matches_allowed() {
    let g = graph();
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/design.md"))
        .expect("docs/design.md is readable");
    let section = doc
        .split("\n## ")
        .find(|s| s.starts_with("Layers"))
        .and_then(|s| s.split("\n### ").next())
        .expect("docs/design.md has a Layers section");
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut rows: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").collect();
        let name = cells[0].trim().trim_matches('`');
        let imports = cells.last().unwrap();
        let names = imports
            .split(", ")
            .filter_map(|n| n.trim().strip_prefix('`')?.strip_suffix('`'))
            .map(str::to_owned)
            .collect();
        rows.insert(name.to_owned(), names);
    }
    let mut bad = Vec::new();
    for m in &g.top {
        if m == "layering" {
            continue;
        }
        let want: BTreeSet<String> = allowed
            .get(m.as_str())
            .map(|to| to.iter().map(|t| (*t).to_owned()).collect())
            .unwrap_or_default();
        match rows.get(m) {
            None => bad.push(format!("{m}: no row in docs/design.md's module table")),
            Some(got) if *got != want => bad.push(format!(
                "{m}: docs/design.md says it may import {got:?}, ALLOWED says {want:?}"
            )),
            Some(_) => {}
        }
    }
    for name in rows.keys() {
        if !g.top.contains(name) && name != "main.rs" {
            bad.push(format!(
                "docs/design.md's module table names {name}, which is no module"
            ));
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn op_and_model_reach_no_io() {
    let g = graph();
    for start in ["op", "model"] {
        // Breadth first, keeping how each module was reached.
        let mut how: BTreeMap<String, Vec<String>> = BTreeMap::new();
        how.insert(start.to_owned(), Vec::new());
        let mut queue = vec![start.to_owned()];
        while let Some(n) = queue.pop() {
            for ((a, b), at) in &g.top_edges {
                if *a == n && !how.contains_key(b) {
                    let mut path = how[&n].clone();
                    path.push(format!("{a} → {b}  ({at})"));
                    how.insert(b.clone(), path);
                    queue.insert(0, b.clone());
                }
            }
        }
        let bad: Vec<_> = how
            .iter()
            .filter(|(m, _)| IO.contains(&m.as_str()))
            .collect();
        assert!(
            bad.is_empty(),
            "{start} reaches modules that do I/O:\n{bad:#?}"
        );
        // Nor does any file it reaches touch files, processes or the
        // network itself.
        let mut io = Vec::new();
        for s in g
            .sources
            .iter()
            .filter(|s| s.module.first().is_some_and(|m| how.contains_key(m)))
        {
            let flat: String = s.code.split_whitespace().collect();
            for n in [
                "std::fs",
                "std::process",
                "std::net",
                "std::env",
                "std::io::stdin",
                "gix::",
            ] {
                if flat.contains(n) {
                    io.push(format!("src/{}: {n}", s.rel));
                }
            }
        }
        assert!(io.is_empty(), "{start} reaches I/O:\n{io:#?}");
    }
}

/// (file, needle) for each source file in `in_files` whose code (or
/// text, with `in_text`) holds a needle, whitespace ignored so a call
/// wrapped over lines is found too.
fn offenders(in_files: impl Fn(&str) -> bool, needles: &[&str], in_text: bool) -> Vec<String> {
    let mut bad = Vec::new();
    for s in sources() {
        if !in_files(&s.rel) {
            continue;
        }
        let hay = if in_text {
            s.text.clone()
        } else {
            s.code.split_whitespace().collect::<String>()
        };
        for n in needles {
            let n: String = if in_text {
                (*n).to_owned()
            } else {
                n.split_whitespace().collect()
            };
            if hay.contains(&n) {
                bad.push(format!("src/{}: {n}", s.rel));
            }
        }
    }
    bad
}

#[test]
fn the_layers_below_the_commands_never_print() {
    // `Ctx` and `Out` stop at the front ends (the graph checks the
    // imports); the layers below return typed reports.
    let bad = offenders(
        |f| {
            ["sync/", "verify/", "trust/", "signing/", "tx/"]
                .iter()
                .any(|d| f.starts_with(d))
                || [
                    "verify.rs",
                    "repo.rs",
                    "history.rs",
                    "notify.rs",
                    "tx.rs",
                    "ids.rs",
                ]
                .contains(&f)
        },
        &["println!", "eprintln!", "print!(", "eprint!("],
        false,
    );
    assert!(bad.is_empty(), "{bad:#?}");
}

/// One sync round enters its steps once each, in the order fetch →
/// observe → decide → execute (`sync::run`; the claim protocol's first
/// push is a round without the fetch). What keeps it a straight line:
/// - no step names a later one (a later step reads an earlier one's value:
///   decide takes what observe saw, execute the plan decide made);
/// - incoming ticks are verified once, in observe (`verify::chain_of`);
/// - observe and decide (with replay's plan) move no ref and write no
///   commit; fetch moves no ref here (git fetches into scratch refs of its
///   own); execute is the one step that moves the state, synced, verified
///   and tracking refs, removes the scratch refs, writes commits (through
///   the one tick writer) and pushes.
///
/// (`sync/redate.rs` and `sync/repair.rs` are commands of their own, not
/// steps of a round.)
#[test]
fn a_sync_round_is_fetch_observe_decide_execute() {
    let g = graph();
    let steps = ["fetch", "observe", "decide", "execute"];
    let step = |m: &str| {
        m.strip_prefix("sync/")
            .and_then(|m| steps.iter().position(|s| *s == m))
    };
    let backwards: Vec<String> = g
        .split_edges
        .iter()
        .filter(|((a, b), _)| matches!((step(a), step(b)), (Some(i), Some(j)) if i < j))
        .map(|((a, b), at)| format!("{a} → {b}  ({at})"))
        .collect();
    assert!(
        backwards.is_empty(),
        "a sync step reaches a later one:\n{backwards:#?}"
    );
    let writes = [
        ".cas(",
        "cas_ref(",
        "write_commit(",
        "write_tick(",
        "delete_ref(",
        "advance_ref(",
        "move_state(",
        "push_expecting(",
        "push_lease(",
    ];
    let pure = ["sync/observe.rs", "sync/decide.rs", "sync/replay.rs"];
    let mut bad = offenders(|f| pure.contains(&f), &writes, false);
    // fetch: git fetches into scratch refs of its own; reading them,
    // removing them and mirroring the tracking refs is execute's
    // (`execute::take_fetched`).
    bad.extend(offenders(
        |f| f == "sync/fetch.rs",
        &[
            ".cas(",
            "cas_ref(",
            "write_commit(",
            "write_tick(",
            "delete_ref(",
            "advance_ref(",
            "move_state(",
            "push_",
            "writer(",
        ],
        false,
    ));
    // The round itself (sync/mod.rs) only calls the steps.
    bad.extend(offenders(
        |f| f == "sync/mod.rs",
        &[
            ".cas(",
            "write_commit(",
            "write_tick(",
            "delete_ref(",
            "push_expecting(",
        ],
        false,
    ));
    assert!(
        bad.is_empty(),
        "a sync step other than execute writes:\n{bad:#?}"
    );
    // Verified once: the round's other files never check a chain or a tick.
    let checks = ["chain_of(", "check_tick(", "verify::chain("];
    let twice = offenders(
        |f| f.starts_with("sync/") && !["sync/observe.rs", "sync/repair.rs"].contains(&f),
        &checks,
        false,
    );
    assert!(
        twice.is_empty(),
        "incoming ticks verified outside observe:\n{twice:#?}"
    );
}

/// One door for ref moves: the store's [`crate::store::Writer`] is the
/// only type with a method that moves a ref (the compiler holds that:
/// `Store` has none), and it is built by `Store::writer` only in `tx`
/// and `sync/execute.rs`, and by `Store::repair_writer` only in
/// `cmd/doctor.rs` (doctor's repairs). Nothing else names the type, and
/// gix's ref edits are called only in the writer.
#[test]
fn refs_move_through_one_door() {
    let tx_or_execute = |f: &str| f == "tx.rs" || f.starts_with("tx/") || f == "sync/execute.rs";
    let mut bad = offenders(
        |f| !tx_or_execute(f) && !f.starts_with("store/"),
        &[".writer()"],
        false,
    );
    bad.extend(offenders(
        |f| f != "cmd/doctor.rs" && !f.starts_with("store/"),
        &["repair_writer("],
        false,
    ));
    // The type by its name (not `BufWriter` and the like).
    for s in sources() {
        let f = s.rel.as_str();
        if tx_or_execute(f) || f == "cmd/doctor.rs" || f.starts_with("store/") {
            continue;
        }
        let named = s.code.match_indices("Writer").any(|(i, _)| {
            !s.code[..i]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
        });
        if named {
            bad.push(format!("src/{f}: names the store's Writer"));
        }
    }
    bad.extend(offenders(
        |f| f != "store/write.rs",
        &["edit_reference", "Writer{"],
        false,
    ));
    assert!(
        bad.is_empty(),
        "a ref moves outside the one door:\n{bad:#?}"
    );
}

#[test]
fn gix_only_in_the_store() {
    let bad = offenders(|f| !f.starts_with("store/"), &["gix::", "use gix"], false);
    assert!(bad.is_empty(), "{bad:#?}");
}

/// The environment is read once, by `env` (`Env::process`); every other
/// file takes the captured snapshot (the context's, or `Env::process()`
/// below the commands). Building a child process's environment
/// (`Command::env`) is not reading it.
#[test]
fn the_environment_is_read_in_one_place() {
    let bad = offenders(
        |f| f != "env.rs",
        &["env::var(", "env::var_os(", "env::vars(", "env::vars_os("],
        false,
    );
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn the_system_git_only_from_git_rs() {
    let bad = offenders(|f| f != "git.rs", &["Command::new(\"git\")"], true);
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn rules_name_next_steps_and_never_spell_commands() {
    // Hints in op and model name a `Next` step; the front ends spell it.
    let bad = offenders(
        |f| f.starts_with("op/") || f.starts_with("model/"),
        &["`loopx ", "run `loopx", "with `loopx"],
        true,
    );
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn commands_reach_the_state_through_tx_and_history() {
    let state_calls: Vec<String> = [
        "tip(",
        "resolve(",
        "read_files(",
        "read_files_under(",
        "read_file(",
        "write_commit(",
        "cas(",
        "cas_ref(",
        "history(",
        "entry(",
        "diff_trees(",
        "message(",
        "first_parents(",
        "commit_by_prefix(",
        "merge_base(",
        "is_ancestor(",
    ]
    .iter()
    .map(|m| format!("store()?.{m}"))
    .collect();
    let needles: Vec<&str> = state_calls.iter().map(String::as_str).collect();
    let bad = offenders(|f| f.starts_with("cmd/"), &needles, false);
    assert!(bad.is_empty(), "{bad:#?}");
}

/// The reader itself: wrapped `use` groups, `super::` climbs, comments
/// and strings that only look like paths.
#[test]
fn the_reader_finds_paths_as_the_compiler_would() {
    let code = blank(
        "use crate::{\n    a::{self, B},\n    c::D as E,\n};\n// crate::commented::out\n\
         let s = \"crate::in_a_string\"; let r = r#\"crate::raw\"#; let c = '\"'; \
         let b = (b\"crate::bytes\", br#\"crate::raw_bytes\"#, bar::baz);\n\
         fn f<'a>() { super::super::x::y(); crate::z::w(); }\n\
         #[cfg(test)]\nmod tests { use crate::only_in_tests; }\n",
    );
    let code = without_test_items(&code);
    let got: Vec<String> = paths(&code)
        .into_iter()
        .map(|(p, l)| format!("{l}:{}", p.join("::")))
        .collect();
    assert_eq!(
        got,
        [
            "2:crate::a",
            "2:crate::a::B",
            "3:crate::c::D",
            "6:bar::baz",
            "7:super::super::x::y",
            "7:crate::z::w"
        ],
    );
    let modules: BTreeSet<Vec<String>> = [
        vec!["op".to_owned()],
        vec!["op".to_owned(), "goal".to_owned()],
    ]
    .into_iter()
    .collect();
    let from = ["op".to_owned(), "usage".to_owned()];
    let up = ["super".to_owned(), "goal".to_owned(), "f".to_owned()];
    assert_eq!(resolve(&from, &up, &modules).unwrap(), ["op", "goal", "f"]);
    let child = ["goal".to_owned(), "X".to_owned()];
    assert_eq!(
        resolve(&["op".to_owned()], &child, &modules).unwrap(),
        ["op", "goal", "X"]
    );
    assert_eq!(
        resolve(&from, &["std".to_owned(), "fs".to_owned()], &modules),
        None
    );
}

/// Not a check: prints the graph (`cargo test --lib layering::tests::print_the_graph
/// -- --ignored --nocapture`), to redraw docs/design.md's picture from.
#[test]
#[ignore]
#[allow(clippy::print_stdout)]
fn print_the_graph() {
    let g = graph();
    let mut by: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (a, b) in g.top_edges.keys() {
        by.entry(a).or_default().push(b);
    }
    for (a, to) in &by {
        println!("(\"{a}\", &{to:?}),");
    }
    for ((a, b), at) in g.top_edges.iter().chain(&g.split_edges) {
        println!("{a} → {b}  ({at})");
    }
}

/// The cycle finder reports a cycle with the places that make it.
#[test]
fn a_cycle_is_found_and_named() {
    let mut edges = BTreeMap::new();
    for (a, b) in [
        ("cli", "cmd"),
        ("cmd", "mcp"),
        ("mcp", "cli"),
        ("op", "model"),
    ] {
        edges.insert((a.to_owned(), b.to_owned()), format!("{a}.rs:1"));
    }
    let found = cycles(&edges);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0][0], "cli → cmd  (cli.rs:1)");
    assert_eq!(found[0][3], r#"all edges among {"cli", "cmd", "mcp"}:"#);
    assert_eq!(found[0].len(), 7);
}

/// The names a `Result` goes by here: `Result` itself and every type
/// alias whose right-hand side is a `Result` (or another such alias).
fn result_names(sources: &[Source]) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = ["Result".to_owned()].into();
    loop {
        let before = names.len();
        for s in sources {
            let flat: String = s.code.split_whitespace().collect::<Vec<_>>().join(" ");
            for (i, _) in flat.match_indices("type ") {
                let decl = &flat[i + 5..];
                let Some((lhs, rhs)) = decl.split_once('=') else {
                    continue;
                };
                let name: String = lhs
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() && names.contains(&last_segment(rhs.trim())) {
                    names.insert(name);
                }
            }
        }
        if names.len() == before {
            return names;
        }
    }
}

/// The type a path names, without its module path or generics
/// (`std::result::Result<T, E>` → `Result`).
fn last_segment(path: &str) -> String {
    let head: String = path
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
        .collect();
    head.rsplit("::").next().unwrap_or_default().to_owned()
}

/// No function returns a `Result` nested in a `Result` (an alias of one
/// included): a step's refusal is a variant of its error type (issue 43).
#[test]
fn no_result_is_nested_in_a_result() {
    let all = sources();
    let names = result_names(&all);
    let mut found = BTreeSet::new();
    for s in &all {
        let code: String = s.code.split_whitespace().collect();
        for name in &names {
            let outer = format!("{name}<");
            for (i, _) in code.match_indices(&outer) {
                // A whole name, not the tail of a longer one.
                if code[..i]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
                {
                    continue;
                }
                let inner = last_segment(&code[i + outer.len()..]);
                if !names.contains(&inner) {
                    continue;
                }
                let func = code[..i]
                    .rfind("fn")
                    .map(|f| {
                        code[f + 2..]
                            .chars()
                            .take_while(|c| c.is_alphanumeric() || *c == '_')
                            .collect::<String>()
                    })
                    .unwrap_or_default();
                found.insert(format!("{}: {func}", s.rel));
            }
        }
    }
    assert!(
        found.is_empty(),
        "a Result nested in a Result (give the step an error type of its own, with the refusal as a variant, as `verify::Unverified`):\n{found:#?}"
    );
}
