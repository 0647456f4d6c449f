//! `settings.set`: the team's shared settings (format 7), a human's act:
//! the default lease `todo claim` gives, the clock-skew margin every
//! machine allows, how long a holder may go without a tick before its
//! claim shows stuck, and prices by model, so two clones price a turn
//! alike.

use super::{Effect, Happened, Op, SettingsSet};
use crate::error::{Code, Refusal};
use crate::model::{State, TeamPrice};
use crate::time::Span;

/// The widest clock-skew margin a team may set: an hour. A wider one
/// would let a clock far ahead write ticks every other clone takes.
pub const MAX_SKEW: Span = Span::hours(1);

pub(super) fn set(state: &mut State, _op: &Op, c: &SettingsSet) -> Result<Effect, Refusal> {
    let SettingsSet {
        lease,
        clock_skew,
        stuck_after,
        prices,
        unprice,
        agent_slots,
        agent_window,
    } = c;
    if lease.is_none()
        && clock_skew.is_none()
        && stuck_after.is_none()
        && prices.is_empty()
        && unprice.is_empty()
        && agent_slots.is_none()
        && agent_window.is_none()
    {
        return Err(Refusal::usage(
            Code::NothingToSet,
            "nothing to set: give --lease, --clock-skew, --stuck-after, --price, --unprice, --agent-slots or --agent-window",
        ));
    }
    if let Some(w) = agent_window
        && (w.as_secs() <= 0 || *w > Span::MAX)
    {
        return Err(Refusal::usage(
            Code::BadTtl,
            format!(
                "--agent-window must be longer than 0s and at most {}",
                Span::MAX
            ),
        ));
    }
    if *agent_slots == Some(0) && agent_window.is_some() {
        return Err(Refusal::usage(
            Code::BadUsage,
            "--agent-slots 0 removes the agent-wide window, so --agent-window cannot go with it",
        ));
    }
    if let Some(s) = stuck_after
        && (s.as_secs() < 0 || *s > Span::MAX)
    {
        return Err(Refusal::usage(
            Code::BadTtl,
            format!(
                "--stuck-after must be from 0s (half the lease) to {}",
                Span::MAX
            ),
        ));
    }
    if let Some(l) = lease
        && (l.as_secs() <= 0 || *l > Span::MAX)
    {
        return Err(Refusal::usage(
            Code::BadTtl,
            format!("a lease must be longer than 0s and at most {}", Span::MAX),
        ));
    }
    if let Some(s) = clock_skew
        && *s > MAX_SKEW
    {
        return Err(Refusal::usage(
            Code::BadTtl,
            format!("the clock-skew margin may be at most {MAX_SKEW}, not {s}"),
        ));
    }
    for (model, p) in prices {
        check_model(model)?;
        check_price(model, p)?;
    }
    for model in unprice {
        check_model(model)?;
        if !state.meta.settings.prices.contains_key(model) && !prices.contains_key(model) {
            return Err(Refusal::rule(
                Code::NothingToSet,
                format!("the team has no price for {model} to remove"),
            ));
        }
    }
    let settings = &mut state.meta.settings;
    let mut changed = Vec::new();
    if let Some(l) = lease {
        settings.lease = *l;
        changed.push(format!("lease={l}"));
    }
    if let Some(s) = clock_skew {
        settings.clock_skew = *s;
        changed.push(format!("clock_skew={s}"));
    }
    match stuck_after {
        Some(s) if s.as_secs() == 0 => {
            settings.stuck_after = None;
            changed.push("stuck_after=half the lease".to_owned());
        }
        Some(s) => {
            settings.stuck_after = Some(*s);
            changed.push(format!("stuck_after={s}"));
        }
        None => {}
    }
    match (agent_slots, agent_window) {
        (Some(0), _) => {
            settings.agent_quota = None;
            changed.push("agent-wide slots=the largest of each agent's goals'".to_owned());
        }
        (None, None) => {}
        (slots, window) => {
            let old = settings.agent_quota.unwrap_or_default();
            let q = crate::model::QuotaPolicy {
                slots: slots.unwrap_or(old.slots),
                window: window.unwrap_or(old.window),
            };
            settings.agent_quota = Some(q);
            changed.push(format!("agent-wide slots={} per {}", q.slots, q.window));
        }
    }
    for model in unprice {
        settings.prices.remove(model);
        changed.push(format!("price {model} removed"));
    }
    for (model, p) in prices {
        settings.prices.insert(model.clone(), *p);
        changed.push(format!("price {model}={}/{}", p.input, p.output));
    }
    let subject = format!("settings {}", changed.join(", "));
    Ok(Effect::new(Happened::SettingsSet { changed }, subject))
}

/// A model id as runtimes report it: letters, digits and `.`, `-`, `_`,
/// `:`, `/`, `@`, at most 100 characters.
fn check_model(model: &str) -> Result<(), Refusal> {
    let ok = !model.is_empty()
        && model.len() <= 100
        && model
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".-_:/@".contains(c));
    if ok {
        Ok(())
    } else {
        Err(Refusal::usage(
            Code::BadPrice,
            format!("{model:?} is not a model id: letters, digits and . - _ : / @, at most 100"),
        ))
    }
}

fn check_price(model: &str, p: &TeamPrice) -> Result<(), Refusal> {
    let fine = |v: f64| v.is_finite() && (0.0..=1_000_000.0).contains(&v);
    if fine(p.input) && fine(p.output) && p.cached_input.is_none_or(fine) {
        Ok(())
    } else {
        Err(Refusal::usage(
            Code::BadPrice,
            format!("the price of {model} must be dollars per million tokens from 0 to 1000000"),
        ))
    }
}
