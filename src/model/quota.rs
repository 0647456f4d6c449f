//! Quota: the spends an agent has made, one per turn, and the turn token
//! that ties a spend to the turn `should-run` started. Stored at
//! `quota/<agent>.toml`. Spent slots are always counted from these records
//! inside the goal's window, never kept as a counter.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{
    actor::Actor,
    id::{AgentId, GoalId},
};
use crate::time::{Span, Timestamp};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ledger {
    pub agent: AgentId,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spends: Vec<Spend>,
    /// Each turn's usage: the maxima of its reports (format 3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub usage: Vec<super::usage::Entry>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spend {
    pub turn: String,
    pub goal: GoalId,
    pub at: Timestamp,
    /// A human's correction: the spend no longer counts, but stays recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub void: Option<Void>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Void {
    pub by: Actor,
    pub at: Timestamp,
    pub reason: String,
}

impl Ledger {
    /// An agent's empty ledger.
    pub fn new(agent: AgentId) -> Self {
        Ledger {
            agent,
            spends: Vec::new(),
            usage: Vec::new(),
        }
    }

    /// The spends that count against `goal` at `now`: not voided, inside
    /// the rolling window, oldest first (a sync replay can append them out
    /// of time order, so they are sorted here).
    pub fn counting(&self, goal: &GoalId, window: Span, now: Timestamp) -> Vec<&Spend> {
        let from = now.minus(window);
        let mut v: Vec<&Spend> = self
            .spends
            .iter()
            .filter(|s| &s.goal == goal && s.void.is_none() && s.at > from && s.at <= now)
            .collect();
        v.sort_by_key(|s| s.at);
        v
    }

    pub fn spent(&self, turn: &str) -> Option<&Spend> {
        self.spends.iter().find(|s| s.turn == turn)
    }
}

/// What `should-run` hands out and `spend-slot` takes back. Opaque to
/// callers; it names the goal, the agent, a stable turn id and the time it
/// was issued, so it stays valid after sync replays ticks onto another base.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnToken {
    pub goal: GoalId,
    pub agent: AgentId,
    pub turn: String,
    pub issued: Timestamp,
}

const TOKEN_PREFIX: &str = "lxt1";

impl fmt::Display for TurnToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{TOKEN_PREFIX}:{}:{}:{}:{}",
            self.goal,
            self.agent,
            self.turn,
            self.issued.unix()
        )
    }
}

impl TurnToken {
    pub fn parse(s: &str) -> Result<Self, String> {
        let bad = || format!("{s:?} is not a turn token");
        // `:` separates the parts: slugs never contain it.
        let parts: Vec<&str> = s.trim().split(':').collect();
        let [prefix, goal, agent, turn, issued] = parts.as_slice() else {
            return Err(bad());
        };
        if *prefix != TOKEN_PREFIX
            || turn.len() != 16
            || !turn
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(bad());
        }
        Ok(TurnToken {
            goal: GoalId::new(goal).map_err(|_| bad())?,
            agent: AgentId::new(agent).map_err(|_| bad())?,
            turn: (*turn).to_owned(),
            issued: Timestamp::from_unix(issued.parse().map_err(|_| bad())?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_even_with_dots_in_ids() {
        let t = TurnToken {
            goal: GoalId::new("release.v2").unwrap(),
            agent: AgentId::new("agent.a").unwrap(),
            turn: "0123456789abcdef".into(),
            issued: Timestamp::from_unix(1_796_029_200),
        };
        let s = t.to_string();
        assert_eq!(s, "lxt1:release.v2:agent.a:0123456789abcdef:1796029200");
        assert_eq!(TurnToken::parse(&s).unwrap(), t);
        for bad in [
            "",
            "lxt1",
            "x.main.a.0123456789abcdef.1",
            "lxt1.main.a.xyz.1",
            "lxt1.main.a.0123456789abcdef.soon",
        ] {
            assert!(TurnToken::parse(bad).is_err(), "{bad}");
        }
    }
}
