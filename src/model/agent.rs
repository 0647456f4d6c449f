//! A registered agent: its runtime and capabilities. Stored at
//! `agents/<id>.toml`.

use serde::{Deserialize, Serialize};

use super::{actor::Actor, id::AgentId};
use crate::time::Timestamp;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Agent {
    pub id: AgentId,
    pub runtime: Runtime,
    pub status: AgentStatus,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
    pub registered_at: Timestamp,
    pub registered_by: Actor,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Runtime {
    ClaudeCode,
    Codex,
    Cursor,
    Gemini,
    Custom,
}

impl Runtime {
    pub fn as_str(self) -> &'static str {
        match self {
            Runtime::ClaudeCode => "claude-code",
            Runtime::Codex => "codex",
            Runtime::Cursor => "cursor",
            Runtime::Gemini => "gemini",
            Runtime::Custom => "custom",
        }
    }

    pub const ALL: [Runtime; 5] = [
        Runtime::ClaudeCode,
        Runtime::Codex,
        Runtime::Cursor,
        Runtime::Gemini,
        Runtime::Custom,
    ];
}

impl std::str::FromStr for Runtime {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "claude" {
            return Ok(Runtime::ClaudeCode);
        }
        Runtime::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| {
                format!("{s:?} is not a runtime: use claude-code, codex, cursor, gemini or custom")
            })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgentStatus {
    Active,
    Retired,
}

impl AgentStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentStatus::Active => "active",
            AgentStatus::Retired => "retired",
        }
    }
}
