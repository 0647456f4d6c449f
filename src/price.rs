//! The price table: dollars per million tokens for a handful of current
//! models, used where a runtime reports tokens but no dollars. The recording
//! machine prices the tokens once and stores the figure in the op, marked
//! `estimated`, so every machine reads the same number and nothing is
//! re-priced on read. git config overrides a row, or adds a model
//! (`loopx.price.<model>.input`, `.output`, `.cachedInput`; `config.rs`).
//!
//! Prices are list prices for standard (not batch) use, short contexts,
//! as published by each vendor in late 2025 (each row's source and date
//! are in docs/turn.md). A cache write is priced as plain input.
//!
//! A row prices its exact model id, or that id with a date (`-20250929`,
//! `-2025-09-29`) or `-latest` after it ([`matches()`], the one rule the
//! team's prices follow too). Any other id is unpriced: `gpt-5.2` is not
//! `gpt-5`, and `claude-opus-4-8` is not `claude-opus-4`.

use crate::model::TeamPrice;
use crate::model::usage::{Usage, Usd};

/// Dollars per million tokens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    /// Input tokens read from a cache.
    pub cached_input: f64,
}

/// The shipped table: a model id and its price. A row prices its id and
/// the id dated or `-latest` ([`matches()`]), so `claude-sonnet-4-5-20250929`
/// is priced as `claude-sonnet-4-5`; nothing else.
pub const TABLE: &[(&str, Price)] = &[
    ("claude-opus-4-5", p(5.0, 25.0, 0.50)),
    ("claude-opus-4-1", p(15.0, 75.0, 1.50)),
    ("claude-opus-4", p(15.0, 75.0, 1.50)),
    ("claude-sonnet-4-5", p(3.0, 15.0, 0.30)),
    ("claude-sonnet-4", p(3.0, 15.0, 0.30)),
    ("claude-haiku-4-5", p(1.0, 5.0, 0.10)),
    ("gpt-5.1", p(1.25, 10.0, 0.125)),
    ("gpt-5-mini", p(0.25, 2.0, 0.025)),
    ("gpt-5-codex", p(1.25, 10.0, 0.125)),
    ("gpt-5", p(1.25, 10.0, 0.125)),
    ("gemini-2.5-pro", p(1.25, 10.0, 0.125)),
    ("gemini-2.5-flash", p(0.30, 2.50, 0.03)),
];

const fn p(input: f64, output: f64, cached_input: f64) -> Price {
    Price {
        input,
        output,
        cached_input,
    }
}

/// Whether a price row for the id `row` prices `model`: the same id, or
/// the id followed by only a date (`-20250929`, `-2025-09-29`) or
/// `-latest`. A version is no date: `claude-opus-4` does not price
/// `claude-opus-4-8`, nor `gpt-5` price `gpt-5.2`.
pub fn matches(row: &str, model: &str) -> bool {
    let Some(rest) = model.strip_prefix(row) else {
        return false;
    };
    let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    let d = rest.strip_prefix('-').unwrap_or_default();
    rest.is_empty()
        || rest == "-latest"
        || (d.len() == 8 && digits(d))
        || (d.len() == 10
            && d.as_bytes()[4] == b'-'
            && d.as_bytes()[7] == b'-'
            && digits(&d[..4])
            && digits(&d[5..7])
            && digits(&d[8..]))
}

/// The table's row for a model id ([`matches()`]), with the key it matched;
/// None for a model the table does not price.
pub fn lookup(model: &str) -> Option<(&'static str, Price)> {
    TABLE
        .iter()
        .find(|(k, _)| matches(k, model))
        .map(|(k, p)| (*k, *p))
}

/// What the tokens of `u` cost at `price`: uncached input, cached input and
/// output, each at its rate.
pub fn cost(u: &Usage, price: &Price) -> Usd {
    let uncached = u.input_tokens.saturating_sub(u.cached_input_tokens) as f64;
    let dollars = (uncached * price.input
        + u.cached_input_tokens as f64 * price.cached_input
        + u.output_tokens as f64 * price.output)
        / 1_000_000.0;
    Usd::from_dollars(dollars).unwrap_or_default()
}

/// Prices a usage that reports tokens but no dollars at the price
/// `price_of` gives its model (git config, else the shipped table), marking
/// it estimated. Returns the model nothing prices (`Some(None)` when the
/// usage names no model), for the caller to tell; None when priced or
/// nothing to price.
pub fn fill(u: &mut Usage, price_of: impl Fn(&str) -> Option<Price>) -> Option<Option<String>> {
    if u.cost_usd.is_some() || (u.input_tokens == 0 && u.output_tokens == 0) {
        return None;
    }
    let Some(model) = u.model.clone() else {
        return Some(None);
    };
    match price_of(&model) {
        Some(p) => {
            u.cost_usd = Some(cost(u, &p));
            u.estimated = true;
            None
        }
        None => Some(Some(model)),
    }
}

/// The team's price for `model` (`settings set --price`, in the state): its
/// own row, or the row of the id it adds a date (`-20250929`,
/// `-2025-09-29`) or `-latest` to ([`matches()`]). It comes before git
/// config and the shipped table, so every clone prices a turn alike.
pub fn team(team: &std::collections::BTreeMap<String, TeamPrice>, model: &str) -> Option<Price> {
    let row = team
        .get(model)
        .or_else(|| team.iter().find(|(k, _)| matches(k, model)).map(|(_, p)| p))?;
    Some(Price {
        input: row.input,
        output: row.output,
        cached_input: row.cached_input.unwrap_or(row.input),
    })
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_team_price_matches_its_id_a_dated_id_and_latest_only() {
        let rows = std::collections::BTreeMap::from([(
            "claude-opus-5-5".to_owned(),
            TeamPrice {
                input: 5.0,
                output: 25.0,
                cached_input: None,
            },
        )]);
        for id in [
            "claude-opus-5-5",
            "claude-opus-5-5-20261101",
            "claude-opus-5-5-2026-11-01",
            "claude-opus-5-5-latest",
        ] {
            let p = team(&rows, id).unwrap_or_else(|| panic!("{id}"));
            assert_eq!((p.input, p.output, p.cached_input), (5.0, 25.0, 5.0));
        }
        for id in ["claude-opus-5", "claude-opus-5-5-fast", "claude-opus-5-5x"] {
            assert!(team(&rows, id).is_none(), "{id}");
        }
        // A version is no date: `claude-opus-5` is not `claude-opus-5-5-…`.
        let rows = std::collections::BTreeMap::from([(
            "claude-opus-5".to_owned(),
            TeamPrice {
                input: 15.0,
                output: 75.0,
                cached_input: None,
            },
        )]);
        for id in [
            "claude-opus-5-5-20261101",
            "claude-opus-5-5",
            "claude-opus-5-123456",
        ] {
            assert!(team(&rows, id).is_none(), "{id}");
        }
    }

    use super::*;

    #[test]
    fn fill_prices_tokens_without_dollars_and_names_what_it_cannot() {
        let mut u = Usage {
            input_tokens: 1_000_000,
            model: Some("m".to_owned()),
            ..Usage::default()
        };
        assert_eq!(fill(&mut u.clone(), |_| None), Some(Some("m".to_owned())));
        assert_eq!(fill(&mut u, |_| Some(p(2.0, 0.0, 0.0))), None);
        assert_eq!(u.cost_usd, Usd::from_dollars(2.0));
        assert!(u.estimated);
        // Reported dollars and no tokens are left alone.
        let before = u.clone();
        assert_eq!(fill(&mut u, |_| Some(p(9.0, 9.0, 9.0))), None);
        assert_eq!(u, before);
        let mut empty = Usage::default();
        assert_eq!(fill(&mut empty, |_| None), None);
        let mut anonymous = Usage {
            output_tokens: 5,
            ..Usage::default()
        };
        assert_eq!(fill(&mut anonymous, |_| None), Some(None));
    }

    #[test]
    fn a_shipped_row_prices_its_id_a_dated_id_and_latest_only() {
        for (id, row) in [
            ("claude-sonnet-4-5", "claude-sonnet-4-5"),
            ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
            ("claude-opus-4-20250514", "claude-opus-4"),
            ("claude-opus-4-5-latest", "claude-opus-4-5"),
            ("gpt-5-mini-2025-08-07", "gpt-5-mini"),
            ("gpt-5-2025-08-07", "gpt-5"),
            ("gpt-5-codex", "gpt-5-codex"),
        ] {
            assert_eq!(lookup(id).map(|(k, _)| k), Some(row), "{id}");
        }
        // No family fallback: a newer version, a variant or a short date
        // is unpriced, not priced as its family.
        for id in [
            "gpt-5.2",
            "claude-opus-4-8",
            "claude-opus-5-5",
            "claude-opus-4-5-fast",
            "gpt-5-mini-2025",
            "gemini-2.5-pro-exp",
            "llama-3",
        ] {
            assert!(lookup(id).is_none(), "{id} is priced as {:?}", lookup(id));
        }
        // Every row's id is priced by its own row, not an earlier one.
        for (k, _) in TABLE {
            assert_eq!(lookup(k).map(|(r, _)| r), Some(*k));
        }
    }

    #[test]
    fn cached_input_is_priced_apart() {
        let u = Usage {
            input_tokens: 1_000_000,
            cached_input_tokens: 600_000,
            output_tokens: 100_000,
            ..Usage::default()
        };
        // 0.4M × $3 + 0.6M × $0.30 + 0.1M × $15 = 1.20 + 0.18 + 1.50
        assert_eq!(
            cost(&u, &lookup("claude-sonnet-4-5").unwrap().1),
            Usd(2_880_000)
        );
    }
}
