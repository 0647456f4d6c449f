//! A turn token as the turn's commands take it (`settle`, `refresh-state`,
//! `quota spend-slot`, `quota void-slot`).

use crate::error::{Code, Refusal};
use crate::model::Actor;
use crate::model::quota::TurnToken;

/// Parses `--turn TOKEN` (exit 2 when malformed).
pub fn parse_token(s: &str) -> Result<TurnToken, Refusal> {
    TurnToken::parse(s).map_err(|e| {
        Refusal::usage(
            Code::BadToken,
            format!("{e}: pass the turn_token that `loopx quota should-run` printed"),
        )
    })
}

/// The acting agent must be the token's agent.
pub fn own_token(actor: &Actor, token: &TurnToken) -> Result<(), Refusal> {
    match actor.agent() {
        Some(a) if *a == token.agent => Ok(()),
        Some(a) => Err(Refusal::conflict(
            Code::NotYourTurn,
            format!("the turn token belongs to {}, not {a}", token.agent),
        )),
        None => Err(Refusal::rule(
            Code::AgentsOnly,
            "only a registered agent may spend a slot: claims belong to registered agents",
        )
        .with_hint("pass --agent ID (or set LOOPX_AGENT)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{AgentId, GoalId};
    use crate::time::Timestamp;

    #[test]
    fn a_token_belongs_to_its_agent_only() {
        let token = crate::op::turn::new_token(
            &AgentId::new("agent-a").unwrap(),
            &GoalId::new("main").unwrap(),
            "00",
            Timestamp::from_unix(1_800_000_000),
        );
        let parsed = parse_token(&token.to_string()).unwrap();
        assert_eq!(parsed, token);
        let bad = parse_token("lxt1:nope").unwrap_err();
        assert_eq!(bad.code, Code::BadToken);
        let a = Actor::Agent(AgentId::new("agent-a").unwrap());
        let b = Actor::Agent(AgentId::new("agent-b").unwrap());
        let human = Actor::Human {
            name: "Ada".to_owned(),
            email: "ada@example.com".to_owned(),
        };
        assert!(own_token(&a, &token).is_ok());
        assert_eq!(own_token(&b, &token).unwrap_err().code, Code::NotYourTurn);
        assert_eq!(
            own_token(&human, &token).unwrap_err().code,
            Code::AgentsOnly
        );
    }
}
