//! Who did something: a registered agent or a human.
//!
//! Stored as one readable string, `agent:<id>` or `human:<Name> <<email>>`,
//! wherever the state or an operation names an actor.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::id::AgentId;

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Actor {
    Agent(AgentId),
    Human { name: String, email: String },
}

impl Actor {
    pub fn agent(&self) -> Option<&AgentId> {
        match self {
            Actor::Agent(id) => Some(id),
            Actor::Human { .. } => None,
        }
    }

    pub fn is_human(&self) -> bool {
        matches!(self, Actor::Human { .. })
    }

    /// The short name shown in subjects and tables: the agent id or the
    /// human's name.
    pub fn name(&self) -> &str {
        match self {
            Actor::Agent(id) => id.as_str(),
            Actor::Human { name, .. } => name,
        }
    }

    /// The email recorded as the tick's author.
    pub fn email(&self) -> String {
        match self {
            Actor::Agent(id) => format!("{id}@agents.loopx.invalid"),
            Actor::Human { email, .. } => email.clone(),
        }
    }

    fn parse(s: &str) -> Result<Self, String> {
        if let Some(id) = s.strip_prefix("agent:") {
            return AgentId::new(id).map(Actor::Agent);
        }
        if let Some(rest) = s.strip_prefix("human:") {
            let (name, email) = match rest.rfind(" <") {
                Some(i) if rest.ends_with('>') => (&rest[..i], &rest[i + 2..rest.len() - 1]),
                _ => (rest, ""),
            };
            return Ok(Actor::Human {
                name: name.to_owned(),
                email: email.to_owned(),
            });
        }
        Err(format!(
            "{s:?} is not an actor: expected agent:<id> or human:<name> <<email>>"
        ))
    }
}

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Actor::Agent(id) => write!(f, "agent:{id}"),
            Actor::Human { name, email } => write!(f, "human:{name} <{email}>"),
        }
    }
}

impl Serialize for Actor {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Actor {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(crate::time::Text("an actor", Actor::parse))
    }
}

/// Who is calling this process, and where that came from (the context
/// decides it: DESIGN §4 "Who is acting"; the tick writer asks whether it
/// is the human, who may sign with their configured key).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Caller {
    /// `--agent` or `LOOPX_AGENT`, or derived from a runtime session.
    Agent(AgentId),
    /// A runtime marker without a session id: refused when identity matters.
    UnknownAgent {
        runtime: &'static str,
        marker: &'static str,
    },
    Human,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actors_round_trip_as_strings() {
        for s in [
            "agent:agent-a",
            "human:Ada Lovelace <ada@example.com>",
            "human:x <>",
        ] {
            assert_eq!(Actor::parse(s).unwrap().to_string(), s);
        }
        assert!(Actor::parse("robot:x").is_err());
        assert!(Actor::parse("agent:../x").is_err());
    }
}
