//! Usage: the tokens and dollars a turn cost, as a runtime reported them
//! (or as the recording machine priced them), and the budgets a human sets
//! on a goal and its agents. The ledger entries live in `quota/<agent>.toml`
//! beside the spends (format 3); budgets live in `goals/<goal>.toml`.
//!
//! Dollars are kept as whole micro-dollars ([`Usd`]) so sums are exact and
//! every machine adds them up alike; they read and write as decimal dollars.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::id::{AgentId, GoalId};
use crate::time::{Span, Timestamp};

/// An amount of US dollars, in whole micro-dollars; written as a decimal
/// number of dollars (`0.0125`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Usd(pub u64);

impl Usd {
    pub const ZERO: Usd = Usd(0);

    /// Dollars as a number; None for a negative, infinite or huge value.
    pub fn from_dollars(d: f64) -> Option<Usd> {
        let micros = (d * 1_000_000.0).round();
        (d.is_finite() && d >= 0.0 && micros < 9.0e15).then_some(Usd(micros as u64))
    }

    pub fn dollars(self) -> f64 {
        self.0 as f64 / 1_000_000.0
    }

    pub fn saturating_add(self, o: Usd) -> Usd {
        Usd(self.0.saturating_add(o.0))
    }
}

impl fmt::Display for Usd {
    /// `$0.0125`: cents always, more digits only where they are not zero.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whole = self.0 / 1_000_000;
        let frac = format!("{:06}", self.0 % 1_000_000);
        let frac = frac.trim_end_matches('0');
        let frac = if frac.len() < 2 {
            format!("{frac:0<2}")
        } else {
            frac.to_owned()
        };
        write!(f, "${whole}.{frac}")
    }
}

impl Serialize for Usd {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.dollars())
    }
}

impl<'de> Deserialize<'de> for Usd {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = f64::deserialize(d)?;
        Usd::from_dollars(v).ok_or_else(|| {
            serde::de::Error::custom(format!("{v} is not an amount of dollars (0 or more)"))
        })
    }
}

/// What one report of a turn's usage says. Every figure is optional on
/// input; a missing one is 0. `input_tokens` counts every input token,
/// cached ones included; `cached_input_tokens` is the part of it read
/// from a cache.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default, skip_serializing_if = "is_zero")]
    pub input_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
    /// Dollars, as reported, or priced from tokens (then `estimated`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<Usd>,
    /// The cost was computed from tokens and a price table, not reported.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The keys `--usage` accepts, for the error that lists them.
pub const USAGE_KEYS: &str = "input_tokens, output_tokens, cached_input_tokens (whole numbers ≥ 0), cost_usd (dollars ≥ 0), model, runtime (text)";

impl Usage {
    /// Tokens as budgets count them: input (cached included) plus output.
    pub fn tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// Whether it reports nothing at all.
    pub fn is_empty(&self) -> bool {
        self.input_tokens == 0
            && self.output_tokens == 0
            && self.cached_input_tokens == 0
            && self.cost_usd.is_none()
    }

    /// Parses the JSON of `--usage` strictly: one object, only the known
    /// keys, whole non-negative token counts, a non-negative `cost_usd`,
    /// text for `model` and `runtime`. The error says what is accepted.
    pub fn from_json(text: &str) -> Result<Usage, String> {
        let accepted = format!("--usage takes a JSON object with any of: {USAGE_KEYS}");
        let v: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| format!("the usage is not valid JSON ({e}); {accepted}"))?;
        let serde_json::Value::Object(map) = v else {
            return Err(format!("the usage is not a JSON object; {accepted}"));
        };
        let mut u = Usage::default();
        for (k, v) in &map {
            let count = || {
                v.as_u64().ok_or_else(|| {
                    format!("{k} must be a whole number of tokens, 0 or more, not {v}; {accepted}")
                })
            };
            let text = || match v {
                serde_json::Value::String(s) if !s.trim().is_empty() && s.len() <= 100 => {
                    Ok(Some(s.trim().to_owned()))
                }
                serde_json::Value::Null => Ok(None),
                _ => Err(format!(
                    "{k} must be a short non-empty text, not {v}; {accepted}"
                )),
            };
            match k.as_str() {
                "input_tokens" => u.input_tokens = count()?,
                "output_tokens" => u.output_tokens = count()?,
                "cached_input_tokens" => u.cached_input_tokens = count()?,
                "cost_usd" => {
                    u.cost_usd = Some(v.as_f64().and_then(Usd::from_dollars).ok_or_else(|| {
                        format!(
                            "cost_usd must be a number of dollars, 0 or more, not {v}; {accepted}"
                        )
                    })?);
                }
                "model" => u.model = text()?,
                "runtime" => u.runtime = text()?,
                other => return Err(format!("unknown key {other:?} in the usage; {accepted}")),
            }
        }
        if u.cached_input_tokens > u.input_tokens {
            return Err(format!(
                "cached_input_tokens ({}) is more than input_tokens ({}): input_tokens counts cached tokens too",
                u.cached_input_tokens, u.input_tokens
            ));
        }
        Ok(u)
    }

    /// Folds a later report of the same turn in: each figure keeps its
    /// maximum. Returns whether anything grew.
    pub fn absorb(&mut self, later: &Usage) -> bool {
        let mut grew = false;
        for (mine, theirs) in [
            (&mut self.input_tokens, later.input_tokens),
            (&mut self.output_tokens, later.output_tokens),
            (&mut self.cached_input_tokens, later.cached_input_tokens),
        ] {
            if theirs > *mine {
                *mine = theirs;
                grew = true;
            }
        }
        if later.cost_usd > self.cost_usd {
            self.cost_usd = later.cost_usd;
            self.estimated = later.estimated;
            grew = true;
        }
        if self.model.is_none() && later.model.is_some() {
            self.model.clone_from(&later.model);
            grew = true;
        }
        if self.runtime.is_none() && later.runtime.is_some() {
            self.runtime.clone_from(&later.runtime);
            grew = true;
        }
        grew
    }
}

/// One turn's usage in the ledger: the maxima of every report for it.
/// Written flat (the usage's keys beside `turn`, `goal` and `at`) through
/// `EntryFile`: serde's `flatten` would buffer every entry, and the
/// ledger is read by every `should-run`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "EntryFile", into = "EntryFile")]
pub struct Entry {
    /// The turn id (16 hex digits), or the key a hook derived for the
    /// stretch of a session it read.
    pub turn: String,
    pub goal: GoalId,
    /// When the turn's usage was last raised.
    pub at: Timestamp,
    pub usage: Usage,
}

/// An [`Entry`] as its file writes it.
#[derive(Serialize, Deserialize)]
struct EntryFile {
    turn: String,
    goal: GoalId,
    at: Timestamp,
    #[serde(default, skip_serializing_if = "is_zero")]
    input_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    output_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    cached_input_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cost_usd: Option<Usd>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    estimated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    runtime: Option<String>,
}

impl From<EntryFile> for Entry {
    fn from(f: EntryFile) -> Self {
        Entry {
            turn: f.turn,
            goal: f.goal,
            at: f.at,
            usage: Usage {
                input_tokens: f.input_tokens,
                output_tokens: f.output_tokens,
                cached_input_tokens: f.cached_input_tokens,
                cost_usd: f.cost_usd,
                estimated: f.estimated,
                model: f.model,
                runtime: f.runtime,
            },
        }
    }
}

impl From<Entry> for EntryFile {
    fn from(e: Entry) -> Self {
        let u = e.usage;
        EntryFile {
            turn: e.turn,
            goal: e.goal,
            at: e.at,
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cached_input_tokens: u.cached_input_tokens,
            cost_usd: u.cost_usd,
            estimated: u.estimated,
            model: u.model,
            runtime: u.runtime,
        }
    }
}

/// A cap on a goal's (or one agent's) usage in a rolling window: dollars,
/// tokens (input plus output), or both. Reaching either opens a `spend`
/// gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd: Option<Usd>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    pub window: Span,
}

/// A budget's window when `--budget-window` is not given.
pub const BUDGET_WINDOW: Span = Span::hours(24);

/// A goal's budgets: the goal's own and each agent's.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budgets {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<Budget>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub agents: BTreeMap<AgentId, Budget>,
}

impl Budgets {
    pub fn is_empty(&self) -> bool {
        self.goal.is_none() && self.agents.is_empty()
    }

    /// The longest window of any budget here.
    pub fn longest(&self) -> Option<Span> {
        self.goal
            .iter()
            .chain(self.agents.values())
            .map(|b| b.window)
            .max_by_key(|w| w.as_secs())
    }
}

/// Spent against a budget: the sums inside its window.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Spent {
    pub usd: Usd,
    pub tokens: u64,
    /// Some of the dollars are estimates.
    pub estimated: bool,
    /// Turns whose tokens count but whose dollars nothing could price (a
    /// model no price names): the dollars leave them out.
    pub unpriced: u64,
    /// The models of those turns, sorted, each once ("unknown" for a turn
    /// that names none).
    pub unpriced_models: Vec<String>,
}

impl Spent {
    /// Adds one turn's usage.
    pub fn add(&mut self, u: &Usage) {
        self.tokens = self.tokens.saturating_add(u.tokens());
        match u.cost_usd {
            Some(c) => {
                self.usd = self.usd.saturating_add(c);
                self.estimated |= u.estimated;
            }
            None if u.tokens() > 0 => {
                self.unpriced += 1;
                let m = u.model.as_deref().unwrap_or("unknown");
                if let Err(at) = self.unpriced_models.binary_search_by(|x| x.as_str().cmp(m)) {
                    self.unpriced_models.insert(at, m.to_owned());
                }
            }
            None => {}
        }
    }

    /// `plus 3 turns unpriced (model claude-opus-5-5)`: what the dollars
    /// cannot count, or None when they count everything.
    pub fn unpriced_note(&self) -> Option<String> {
        (self.unpriced > 0).then(|| {
            format!(
                "plus {} turn{} unpriced (model{} {})",
                self.unpriced,
                if self.unpriced == 1 { "" } else { "s" },
                if self.unpriced_models.len() == 1 {
                    ""
                } else {
                    "s"
                },
                self.unpriced_models.join(", ")
            )
        })
    }
}

impl Budget {
    /// Whether `spent` has reached it.
    pub fn reached(&self, spent: &Spent) -> bool {
        self.usd.is_some_and(|u| spent.usd >= u) || self.tokens.is_some_and(|t| spent.tokens >= t)
    }
}

/// Parses a count with an optional `k` (thousand) or `M` (million) suffix:
/// `5000000`, `5M`, `1.5k`. `0` means "no limit".
pub fn parse_count(s: &str) -> Result<u64, String> {
    let bad = || format!("{s:?} is not a number of tokens: use a whole number, or k/M (1.5k, 5M)");
    let t = s.trim();
    let (num, mult) = match t.strip_suffix(['k', 'K']) {
        Some(n) => (n, 1_000.0),
        None => match t.strip_suffix('M') {
            Some(n) => (n, 1_000_000.0),
            None => (t, 1.0),
        },
    };
    if mult == 1.0 {
        return num.parse::<u64>().map_err(|_| bad());
    }
    let v: f64 = num.parse().map_err(|_| bad())?;
    let n = (v * mult).round();
    if !v.is_finite() || v < 0.0 || n >= 1.0e18 || (v * mult - n).abs() > 1e-6 {
        return Err(bad());
    }
    Ok(n as u64)
}

/// Parses dollars with an optional `$` and `k`/`M` suffix: `20`, `$2.50`,
/// `1.5k`. `0` means "no limit".
pub fn parse_usd(s: &str) -> Result<Usd, String> {
    let bad = || {
        format!("{s:?} is not an amount of dollars: use a number such as 20 or 2.50 (k/M allowed)")
    };
    let t = s.trim();
    let t = t.strip_prefix('$').unwrap_or(t);
    let (num, mult) = match t.strip_suffix(['k', 'K']) {
        Some(n) => (n, 1_000.0),
        None => match t.strip_suffix('M') {
            Some(n) => (n, 1_000_000.0),
            None => (t, 1.0),
        },
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(bad());
    }
    let v: f64 = num.parse().map_err(|_| bad())?;
    Usd::from_dollars(v * mult).ok_or_else(bad)
}

/// A count as people read it: `1234`, `12.3k`, `5M`.
pub fn human_count(n: u64) -> String {
    let f = |v: f64, s: &str| {
        let t = format!("{v:.1}");
        format!("{}{s}", t.trim_end_matches(".0"))
    };
    if n >= 1_000_000 {
        f(n as f64 / 1_000_000.0, "M")
    } else if n >= 10_000 {
        f(n as f64 / 1_000.0, "k")
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_json_is_strict() {
        let u = Usage::from_json(
            r#"{"input_tokens": 1200, "output_tokens": 300, "cached_input_tokens": 800, "cost_usd": 0.0125, "model": "gpt-5", "runtime": "codex"}"#,
        )
        .unwrap();
        assert_eq!(u.input_tokens, 1200);
        assert_eq!(u.cost_usd, Some(Usd(12_500)));
        assert_eq!(u.model.as_deref(), Some("gpt-5"));
        for bad in [
            "[]",
            "{",
            r#"{"input_tokens": -1}"#,
            r#"{"input_tokens": 1.5}"#,
            r#"{"input_tokens": "12"}"#,
            r#"{"cost_usd": -0.5}"#,
            r#"{"cost_usd": "1"}"#,
            r#"{"tokens": 3}"#,
            r#"{"model": 3}"#,
            r#"{"input_tokens": 1, "cached_input_tokens": 2}"#,
        ] {
            let e = Usage::from_json(bad).unwrap_err();
            assert!(e.contains("input_tokens"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_later_report_keeps_the_maximum_of_each_figure() {
        let mut a = Usage::from_json(r#"{"input_tokens": 100, "output_tokens": 50}"#).unwrap();
        let same = a.clone();
        assert!(!a.absorb(&same));
        let b = Usage::from_json(r#"{"input_tokens": 80, "output_tokens": 70}"#).unwrap();
        assert!(a.absorb(&b));
        assert_eq!((a.input_tokens, a.output_tokens), (100, 70));
    }

    #[test]
    fn counts_and_dollars_take_suffixes() {
        assert_eq!(parse_count("5000000").unwrap(), 5_000_000);
        assert_eq!(parse_count("5M").unwrap(), 5_000_000);
        assert_eq!(parse_count("1.5k").unwrap(), 1_500);
        assert_eq!(parse_count("0").unwrap(), 0);
        for bad in ["", "-1", "5G", "1.5", "0.0001k", "k"] {
            assert!(parse_count(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_usd("20").unwrap(), Usd(20_000_000));
        assert_eq!(parse_usd("$2.50").unwrap(), Usd(2_500_000));
        assert_eq!(parse_usd("1.5k").unwrap(), Usd(1_500_000_000));
        for bad in ["", "-3", "abc", "1e3", "$"] {
            assert!(parse_usd(bad).is_err(), "{bad}");
        }
        assert_eq!(Usd(12_500).to_string(), "$0.0125");
        assert_eq!(Usd(20_000_000).to_string(), "$20.00");
        assert_eq!(Usd(1_230_000).to_string(), "$1.23");
        assert_eq!(human_count(5_000_000), "5M");
        assert_eq!(human_count(12_345), "12.3k");
        assert_eq!(human_count(999), "999");
    }
}
