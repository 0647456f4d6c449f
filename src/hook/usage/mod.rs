//! What each runtime reports about usage, read into loopx's [`Usage`]
//! (pure: text in, figures out). One parser per runtime and format:
//!
//! - [`claude`]: Claude Code's result JSON (`claude -p --output-format
//!   json`, or the `result` line of `stream-json`: `total_cost_usd`,
//!   `usage`, `modelUsage`), and its session transcript (JSON Lines, one
//!   `usage` per assistant message, read from a byte offset on);
//! - [`codex`]: `codex exec --json` (JSON Lines; `turn.completed.usage`);
//! - [`gemini`]: `gemini -p --output-format json` (`stats.models.*.tokens`).
//!
//! loopx counts `input_tokens` with cached input included and
//! `cached_input_tokens` as the part of it read from a cache; each parser
//! maps its runtime's figures onto that. A parser returns one [`Usage`]
//! per model, so each model is priced at its own rate before [`merge`].

pub mod claude;
pub mod codex;
pub mod gemini;

use crate::model::usage::{Usage, Usd};

/// The formats `--usage-format` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// loopx's own JSON object (the default)
    Loopx,
    /// Claude Code's result JSON (`claude -p --output-format json` or `stream-json`)
    Claude,
    /// `codex exec --json` output (JSON Lines)
    Codex,
    /// `gemini -p --output-format json` output
    Gemini,
}

/// Reads `text` in `format`: one [`Usage`] per model.
pub fn parse(format: Format, text: &str) -> Result<Vec<Usage>, String> {
    match format {
        Format::Loopx => Usage::from_json(text).map(|u| vec![u]),
        Format::Claude => claude::result(text),
        Format::Codex => codex::exec_json(text),
        Format::Gemini => gemini::output(text),
    }
}

/// Adds up several models' usage: tokens summed, dollars summed over those
/// that have them (estimated if any is), the model named when there is one.
pub fn merge(parts: Vec<Usage>) -> Usage {
    let mut out = Usage::default();
    let mut models: Vec<String> = Vec::new();
    for u in parts {
        out.input_tokens = out.input_tokens.saturating_add(u.input_tokens);
        out.output_tokens = out.output_tokens.saturating_add(u.output_tokens);
        out.cached_input_tokens = out
            .cached_input_tokens
            .saturating_add(u.cached_input_tokens);
        if let Some(c) = u.cost_usd {
            out.cost_usd = Some(out.cost_usd.unwrap_or(Usd::ZERO).saturating_add(c));
            out.estimated |= u.estimated;
        }
        for m in u.model.iter().flat_map(|m| m.split('+')) {
            if !models.iter().any(|x| x == m) {
                models.push(m.to_owned());
            }
        }
        if out.runtime.is_none() {
            out.runtime = u.runtime;
        }
    }
    if !models.is_empty() {
        out.model = Some(crate::op::limits::fit(&models.join("+"), 100));
    }
    out
}

/// A JSON number as a token count: whole and not negative, else 0.
pub(crate) fn count(v: Option<&serde_json::Value>) -> u64 {
    v.and_then(serde_json::Value::as_u64).unwrap_or(0)
}
