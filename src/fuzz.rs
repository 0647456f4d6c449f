//! Entry points for the fuzz targets under `fuzz/` (cargo-fuzz), one per
//! parser of untrusted input: a tick's message, a state file, one tick
//! checked against its parent, a runtime's hook payload and an MCP message.
//!
//! Each takes raw bytes and must never panic, loop or allocate without
//! bound, whatever the bytes. They live in the library (hidden from the
//! docs) so that the fuzz crate needs nothing private, and so that the
//! suite runs every committed corpus and crash input through them
//! (`fuzz::tests`): a fuzz target that no longer compiles, or an input that
//! panics again, fails `cargo test`, not only the fuzz step of CI.

use crate::hook::{self, Runtime};
use crate::model::{FORMAT, State, files};
use crate::op::message;
use crate::store::{Person, Store, Tip};
use crate::time::Timestamp;
use crate::trust::lineage::Lineage;
use crate::verify::{self, Signing, Verified};

/// A tick message: the trailers, the op, rendering it again, and applying
/// it to an empty state (as the first tick) and to a small live state.
pub fn op_message(data: &[u8]) {
    let Ok(msg) = std::str::from_utf8(data) else {
        return;
    };
    let _ = message::kind_of(msg);
    let _ = message::tick_of(msg);
    let _ = message::op_id_of(msg);
    let Ok(parsed) = message::parse(msg) else {
        return;
    };
    let extra = extra_trailers(&parsed);
    let _ = crate::tx::plan_tick(None, &State::default(), &parsed.op, parsed.format, &extra);
    with_chain(|chain| {
        let last = chain.states.last().expect("the seed chain has ticks");
        let _ = crate::tx::plan_tick(
            Some(&last.tip),
            &last.state,
            &parsed.op,
            parsed.format,
            &extra,
        );
    });
}

/// One state file: its path on the first line, its bytes after. Its
/// check, a state decoded from it, and that state written and read back.
pub fn state_file(data: &[u8]) {
    let Some(nl) = data.iter().position(|&b| b == b'\n') else {
        return;
    };
    let Ok(path) = std::str::from_utf8(&data[..nl]) else {
        return;
    };
    let bytes = &data[nl + 1..];
    let _ = files::check_file(path, bytes);
    let meta = format!("format = {FORMAT}\n");
    let tree: Vec<(&str, &[u8])> = if path == files::META {
        vec![(path, bytes)]
    } else {
        vec![(files::META, meta.as_bytes()), (path, bytes)]
    };
    let _ = files::decode_archive(tree.iter().copied());
    let _ = files::decode_evidence(tree.iter().copied());
    let Ok(state) = files::decode(tree.iter().copied()) else {
        return;
    };
    // A state that loads is one a tick may build on: every file it would
    // write must read back.
    let written = files::encode_all(&state);
    let again: Vec<(&str, &[u8])> = written
        .iter()
        .filter_map(|(p, b)| b.as_deref().map(|b| (p.as_str(), b)))
        .collect();
    if let Err(r) = files::decode(again.iter().copied()) {
        panic!(
            "a state that decodes writes files that do not: {}",
            r.message
        );
    }
}

/// One commit checked by `verify` against a parent from a real history:
/// the first byte picks the parent, the second how the commit's tree is
/// made (what its own op plans, the parent's, or files from the input),
/// the rest is the message (and the files). The author and date come from
/// the message's op where it parses, so the check gets past them.
pub fn verify_tick(data: &[u8]) {
    with_chain(|chain| verify_tick_in(chain, data));
}

fn verify_tick_in(chain: &SeedChain, data: &[u8]) {
    let [pick, how, rest @ ..] = data else {
        return;
    };
    let (msg_bytes, extra_files) = match rest.iter().position(|&b| b == 0) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    let Ok(msg) = std::str::from_utf8(msg_bytes) else {
        return;
    };
    let parent = usize::from(*pick) % (chain.states.len() + 1);
    let parent: Option<&Verified> = parent.checked_sub(1).map(|i| &chain.states[i]);
    let parsed = message::parse(msg).ok();
    let (author, time) = match &parsed {
        Some(p) if how & 0x80 == 0 => (
            Person {
                name: p.op.actor.name().to_owned(),
                email: p.op.actor.email().to_owned(),
            },
            p.op.at.unix(),
        ),
        _ => (chain.fallback.clone(), 1_700_000_000),
    };
    let base = parent.map(|p| p.tip.tree);
    let tree = match how % 3 {
        0 => parsed.as_ref().and_then(|p| {
            let before = parent.map_or(State::default(), |v| v.state.clone());
            let extra = extra_trailers(p);
            let planned =
                crate::tx::plan_tick(parent.map(|v| &v.tip), &before, &p.op, p.format, &extra)
                    .ok()?;
            chain.scratch.tree(base, &planned.changes).ok()
        }),
        1 => base,
        _ => chain.scratch.tree(base, &input_files(extra_files)).ok(),
    };
    let Some(tree) = tree.or(base) else {
        return;
    };
    let entry = crate::store::Entry {
        // Any id: only a finding names it (nothing is exempt).
        commit: chain.states[0].tip.commit,
        tree,
        parent: parent.map(|p| p.tip.commit),
        parents: usize::from(parent.is_some()),
        message: msg.to_owned(),
        time,
        author,
    };
    let now = Timestamp::from_unix(1_800_000_000);
    let mut lineage = chain.lineages[parent.map_or(0, |p| p.tip.tick as usize)].clone();
    let _ = verify::check_tick(
        &chain.scratch,
        &chain.store,
        parent,
        &entry,
        now,
        &Signing::none(),
        &mut lineage,
    );
}

/// A runtime's hook payload: the first byte picks the runtime and event,
/// the rest is its stdin. Parsed, answered through the tool guard against
/// a small live state, and rendered back in the runtime's JSON.
pub fn hook_payload(data: &[u8]) {
    let Some((&pick, stdin)) = data.split_first() else {
        return;
    };
    let runtime = Runtime::HOOKED[usize::from(pick) % Runtime::HOOKED.len()];
    let events = runtime.events();
    if events.is_empty() {
        return;
    }
    let (name, event) = events[usize::from(pick / 8) % events.len()];
    let _ = runtime.event(name);
    let Ok(input) = hook::parse_input(runtime, event, stdin) else {
        return;
    };
    let state = with_chain(|c| c.states.last().expect("ticks").state.clone());
    if let Some(cmd) = input.command.as_deref() {
        let _ = hook::guard::risks(cmd);
        let _ = hook::guard::check(cmd, &state, None);
    }
    if let Some(text) = input.error_text.as_deref() {
        let _ = hook::limit::reset_time(text, Timestamp::from_unix(1_800_000_000));
    }
    if let Ok(text) = std::str::from_utf8(stdin) {
        for format in [
            hook::usage::Format::Claude,
            hook::usage::Format::Codex,
            hook::usage::Format::Gemini,
        ] {
            if let Ok(parts) = hook::usage::parse(format, text) {
                let _ = hook::usage::merge(parts);
            }
        }
        let _ = hook::usage::claude::transcript(text);
    }
    let text = input.prompt.unwrap_or_default();
    for answer in [
        hook::Answer::Context {
            text: text.clone(),
            agent: input.session,
        },
        hook::Answer::Deny(text.clone()),
        hook::Answer::Continue(text),
    ] {
        let _ = hook::render(runtime, event, &answer);
    }
}

/// One line of MCP input, answered by the server with a runner that
/// answers every tool call with a fixed document (the runner is what starts
/// a child loopx; the parsing, dispatch and argument checks are all here).
pub fn mcp_message(data: &[u8]) {
    struct Fixed;
    impl crate::mcp::Runner for Fixed {
        fn run(&self, argv: &[String]) -> Result<(serde_json::Value, bool), String> {
            Ok((serde_json::json!({ "ok": true, "argv": argv }), false))
        }
        fn parse(&self, words: &[String]) -> Result<(), clap::Error> {
            crate::cmd::parse(words)
        }
    }
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    for agent in [None, Some("agent-a".to_owned())] {
        let server = crate::mcp::Server {
            runner: &Fixed,
            agent,
        };
        let _ = server.handle(line);
    }
}

/// The trailers a tick carries beyond loopx's own, as `plan_tick` takes
/// them.
fn extra_trailers(parsed: &message::Parsed) -> Vec<(&str, String)> {
    parsed
        .trailers
        .iter()
        .filter(|(k, _)| !message::OWN_TRAILERS.contains(&k.as_str()))
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect()
}

/// Files from fuzz input: `path\x01bytes` records separated by `\x00`.
fn input_files(data: &[u8]) -> Vec<(String, Option<Vec<u8>>)> {
    data.split(|&b| b == 0)
        .filter_map(|rec| {
            let i = rec.iter().position(|&b| b == 1)?;
            let path = std::str::from_utf8(&rec[..i]).ok()?;
            // Only paths git can hold: the tree editor is not under test.
            let fine = !path.is_empty()
                && path
                    .split('/')
                    .all(|c| !c.is_empty() && c != "." && c != ".." && c != ".git");
            fine.then(|| (path.to_owned(), Some(rec[i + 1..].to_vec())))
        })
        .take(16)
        .collect()
}

/// A real history, written once per process into a temporary repository:
/// the ticks of `fuzz/seed-chain.txt` (messages loopx wrote), each
/// re-applied and committed, so every later input is checked against real
/// parents whose trees are in the object database.
struct SeedChain {
    _dir: tempfile::TempDir,
    store: Store,
    scratch: crate::store::Scratch,
    states: Vec<Verified>,
    /// The chain's op ids and identity after each seed tick (`[0]`: none).
    lineages: Vec<Lineage>,
    fallback: Person,
}

/// The messages of the seed history, separated by a line of `%%`.
pub const SEED_CHAIN: &str = include_str!("../fuzz/seed-chain.txt");

thread_local! {
    /// Built once per thread (a `Store` is not shared between threads);
    /// the temporary repository goes with the thread.
    static CHAIN: SeedChain = match build_seed_chain() {
        Ok(c) => c,
        Err(e) => panic!("the fuzz seed history cannot be built: {e:#}"),
    };
}

/// Runs `f` with this thread's seed history.
fn with_chain<R>(f: impl FnOnce(&SeedChain) -> R) -> R {
    CHAIN.with(f)
}

fn build_seed_chain() -> anyhow::Result<SeedChain> {
    let dir = tempfile::tempdir()?;
    crate::git::stdout_of(crate::git::command_in(dir.path(), &["init", "-q"]), &[])?;
    let store = Store::discover(dir.path())?;
    let scratch = store.scratch();
    let mut states: Vec<Verified> = Vec::new();
    let mut lineages = vec![Lineage::default()];
    for msg in SEED_CHAIN.split("\n%%\n").filter(|m| !m.trim().is_empty()) {
        let msg = format!("{}\n", msg.trim_end());
        let parsed = message::parse(&msg).map_err(anyhow::Error::msg)?;
        let parent = states.last();
        let before = parent.map_or(State::default(), |p| p.state.clone());
        let extra = extra_trailers(&parsed);
        let planned = crate::tx::plan_tick(
            parent.map(|p| &p.tip),
            &before,
            &parsed.op,
            parsed.format,
            &extra,
        )
        .map_err(|r| anyhow::anyhow!("seed tick refused: {}", r.message))?;
        let who = Person {
            name: parsed.op.actor.name().to_owned(),
            email: parsed.op.actor.email().to_owned(),
        };
        let tip: Tip = store.write_commit(
            parent.map(|p| &p.tip),
            &planned.changes,
            &planned.message,
            &who,
            &who,
            parsed.op.at.unix(),
        )?;
        let mut lineage = lineages.last().expect("the empty chain").clone();
        lineage.push(tip.commit, parsed.op.id.as_str(), parsed.format);
        lineages.push(lineage);
        states.push(Verified {
            tip,
            state: planned.state,
        });
    }
    anyhow::ensure!(!states.is_empty(), "the seed history is empty");
    Ok(SeedChain {
        _dir: dir,
        store,
        scratch,
        states,
        lineages,
        fallback: Person {
            name: "Mallory".to_owned(),
            email: "mallory@example.com".to_owned(),
        },
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Every committed input of one target (its seed corpus and the crash
    /// inputs kept as regressions) through its entry point.
    fn replay(target: &str, run: fn(&[u8])) {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
        let mut n = 0;
        for dir in [
            root.join("corpus").join(target),
            root.join("regressions").join(target),
        ] {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries {
                let path = e.expect("a corpus entry").path();
                let bytes = std::fs::read(&path).expect("a corpus file");
                run(&bytes);
                n += 1;
            }
        }
        assert!(n > 0, "no committed inputs for the fuzz target {target}");
    }

    #[test]
    fn the_seed_history_replays() {
        let n = super::with_chain(|chain| chain.states.len());
        assert!(n >= 10, "{n}");
    }

    #[test]
    fn op_message_inputs() {
        replay("op_message", super::op_message);
    }

    #[test]
    fn state_file_inputs() {
        replay("state_file", super::state_file);
    }

    #[test]
    fn verify_tick_inputs() {
        replay("verify_tick", super::verify_tick);
    }

    #[test]
    fn hook_payload_inputs() {
        replay("hook_payload", super::hook_payload);
    }

    #[test]
    fn mcp_message_inputs() {
        replay("mcp_message", super::mcp_message);
    }

    /// The verify target reaches a valid tick: a seed tick, checked against
    /// its real parent with its own message, passes (so the harness is not
    /// refusing everything before the rules run).
    #[test]
    fn a_seed_tick_verifies_through_the_harness() {
        super::with_chain(|chain| {
            let (parent, child) = (&chain.states[0], &chain.states[1]);
            let entry = chain.store.entry(child.tip.commit).expect("the entry");
            let got = crate::verify::check_tick(
                &chain.scratch,
                &chain.store,
                Some(parent),
                &entry,
                crate::time::Timestamp::from_unix(1_900_000_000),
                &crate::verify::Signing::none(),
                &mut chain.lineages[1].clone(),
            );
            assert!(got.is_ok(), "{:?}", got.err());
        });
    }
}
