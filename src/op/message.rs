//! The commit message of a tick: for people first, lossless for machines.
//!
//! ```text
//! claim t-3fa9c2d1 "Write the parser" — agent-a      ← subject
//!
//! id = "o-5c1e…"                                      ← the op, as TOML
//! at = "2026-11-30T09:00:00Z"
//! actor = "agent:agent-a"
//!
//! [change]
//! op = "todo.claim"
//! …
//!
//! Loopx-Op: todo.claim                                ← trailers
//! Loopx-Agent: agent-a
//! Loopx-Tick: 7
//! Loopx-Format: 1
//! ```
//!
//! Humans get `Loopx-Human: Name <email>` instead of `Loopx-Agent`. Sync's
//! replays add `Loopx-Replayed-From: <commit>`.

use super::{Effect, Op};
use crate::model::Actor;

/// A parsed tick message.
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed {
    pub subject: String,
    pub op: Op,
    pub tick: u64,
    pub format: u32,
    pub trailers: Vec<(String, String)>,
}

/// Writes the message of tick number `tick` applying `op`, recorded in
/// `format` (this binary's [`FORMAT`](crate::model::FORMAT) for a new tick; verify re-renders an
/// older tick in its own).
pub fn render(
    op: &Op,
    effect: &Effect,
    tick: u64,
    format: u32,
    extra: &[(&str, String)],
) -> String {
    let mut body = toml::to_string(op).expect("ops always serialize to TOML");
    while body.ends_with('\n') {
        body.pop();
    }
    // The subject is one line whatever the user typed: a blank line in it
    // would end the subject early and make the tick unreadable.
    let subject = effect
        .subject
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let mut msg = format!("{subject} — {}\n\n{body}\n\n", op.actor.name());
    msg.push_str(&format!("Loopx-Op: {}\n", op.change.kind()));
    match &op.actor {
        Actor::Agent(id) => msg.push_str(&format!("Loopx-Agent: {id}\n")),
        Actor::Human { name, email } => msg.push_str(&format!("Loopx-Human: {name} <{email}>\n")),
    }
    msg.push_str(&format!("Loopx-Tick: {tick}\n"));
    msg.push_str(&format!("Loopx-Format: {format}\n"));
    for (k, v) in extra {
        msg.push_str(&format!("{k}: {v}\n"));
    }
    msg
}

/// Reads a tick message back. Errors say what is missing; a commit that is
/// not a loopx tick (someone committed onto the ref by hand) fails here.
pub fn parse(msg: &str) -> Result<Parsed, String> {
    let msg = msg.trim_end();
    let (subject, rest) = msg.split_once("\n\n").ok_or("the message has no body")?;
    let (body, trailer_block) = rest
        .rsplit_once("\n\n")
        .ok_or("the message has no trailers")?;
    let trailers: Vec<(String, String)> = crate::trailer::lines(trailer_block)
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let get = |key: &str| {
        trailers
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .ok_or(format!("the trailer {key} is missing"))
    };
    let tick = get("Loopx-Tick")?
        .parse()
        .map_err(|_| "Loopx-Tick is not a number".to_owned())?;
    let format = get("Loopx-Format")?
        .parse()
        .map_err(|_| "Loopx-Format is not a number".to_owned())?;
    let kind = get("Loopx-Op")?;
    let op: Op = toml::from_str(body).map_err(|e| {
        if super::Change::KINDS.contains(&kind) {
            format!("the op does not parse: {}", e.message())
        } else {
            format!("the op {kind:?} is unknown to this loopx: upgrade loopx")
        }
    })?;
    Ok(Parsed {
        subject: subject.to_owned(),
        op,
        tick,
        format,
        trailers,
    })
}

/// Reads only the tick number, cheaply, from a message's trailers.
pub fn tick_of(msg: &str) -> Option<u64> {
    crate::trailer::tick(msg)
}

/// Reads only the `Loopx-Op` trailer, cheaply: None for a commit that is
/// not a tick.
pub fn kind_of(msg: &str) -> Option<&str> {
    crate::trailer::value(msg, crate::trailer::OP)
}

/// The trailers `render` writes itself; a replay rewrites them and keeps
/// any others.
pub const OWN_TRAILERS: [&str; 5] = [
    "Loopx-Op",
    "Loopx-Agent",
    "Loopx-Human",
    "Loopx-Tick",
    "Loopx-Format",
];

/// The trailer a replayed tick carries: the id of its op, which every clone
/// can find (`git log --grep` on the state ref); format 1 ticks written
/// before round 2 name the commit the op was first written as instead.
pub const REPLAYED_FROM: &str = "Loopx-Replayed-From";

/// The trailer of a `sync-rejected` evidence tick: the id of the op that
/// lost (older ticks: the commit that held it).
pub const REJECTED_FROM: &str = "Loopx-Rejected-From";

/// Reads only the op id, cheaply: the first line of the body. None for a
/// commit that is not a tick.
pub fn op_id_of(msg: &str) -> Option<&str> {
    let (_, rest) = msg.split_once("\n\n")?;
    rest.lines()
        .next()?
        .strip_prefix("id = \"")?
        .strip_suffix('"')
}

#[cfg(test)]
mod tests;
