//! Machines: one SSH key per clone, proposed in the state and admitted by
//! a signed human act (format 5). Stored at `machines/<name>.toml`.
//!
//! A machine counts only once admitted, and then only for the agents its
//! admission names (`agents`: ids or patterns with `*`); a revoked machine
//! counts no more. Which ticks it signed is checked by `trust::machine`.

use serde::{Deserialize, Serialize};

use super::{AgentId, actor::Actor, id::MachineName};
use crate::time::Timestamp;

/// `machines/<name>.toml`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    pub name: MachineName,
    /// The public key in OpenSSH form (`ssh-ed25519 AAAA…`), without its
    /// comment.
    pub key: String,
    pub proposed_by: Actor,
    pub proposed_at: Timestamp,
    /// The human whose signed act admitted it, when it is admitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admitted_by: Option<Actor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admitted_at: Option<Timestamp>,
    /// The agents it may act for: ids, or patterns where `*` matches any
    /// run of characters (`claude-code-*`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_by: Option<Actor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<Timestamp>,
}

impl Machine {
    /// Admitted and not revoked: its signatures count.
    pub fn admitted(&self) -> bool {
        self.admitted_by.is_some() && self.revoked_by.is_none()
    }

    /// Whether it may act for `agent` (admitted, not revoked, and one of
    /// its patterns matches).
    pub fn may_act_for(&self, agent: &AgentId) -> bool {
        self.admitted() && self.agents.iter().any(|p| matches(p, agent.as_str()))
    }
}

/// Whether `pattern` (`*` matches any run of characters, the rest is
/// literal) matches all of `id`.
pub fn matches(pattern: &str, id: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = id.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for p in middle {
        match rest.find(p) {
            Some(i) => rest = &rest[i + p.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Checks an agent pattern: an agent id's characters and `*`.
pub fn check_pattern(pattern: &str) -> Result<(), String> {
    if pattern.is_empty() || pattern.len() > 64 {
        return Err(format!("{pattern:?} is not 1 to 64 characters"));
    }
    let probe = pattern.replace('*', "x");
    AgentId::new(&probe).map(drop).map_err(|_| {
        format!(
            "{pattern:?} is not an agent id or a pattern of one (letters, digits, '-', and '*')"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn patterns_match_whole_ids() {
        assert!(matches("agent-a", "agent-a"));
        assert!(!matches("agent-a", "agent-ab"));
        assert!(matches("claude-code-*", "claude-code-1"));
        assert!(!matches("claude-code-*", "codex-1"));
        assert!(matches("*", "anything"));
        assert!(matches("a*b*c", "a-x-b-y-c"));
        assert!(!matches("a*b*c", "a-x-c"));
        assert!(matches("*-a", "agent-a"));
        assert!(!matches("ab*ba", "aba"));
    }
}
