//! The `--usage` flags `settle` and `quota spend-slot` share: read a
//! turn's usage from JSON or a file, in loopx's shape or a runtime's own,
//! price the tokens a runtime reported without dollars (git config, else
//! the shipped table), and check it strictly. A bad usage is a usage error
//! (exit 2) and nothing is written.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::error::{Code, Refusal};
use crate::hook::usage::{self as formats, Format};
use crate::model::usage::{USAGE_KEYS, Usage};

/// The most a usage file may hold.
const FILE_LIMIT: u64 = 16 << 20;

#[derive(clap::Args, Debug, Default)]
pub struct UsageArgs {
    /// The turn's usage as a JSON object with any of input_tokens,
    /// output_tokens, cached_input_tokens, cost_usd, model, runtime
    #[arg(long, value_name = "JSON", conflicts_with = "usage_file")]
    usage: Option<String>,
    /// Read the usage from a file
    #[arg(long, value_name = "PATH")]
    usage_file: Option<PathBuf>,
    /// What the usage is written in: loopx (default), claude (`claude -p
    /// --output-format json`), codex (`codex exec --json`) or gemini
    /// (`gemini -p --output-format json`)
    #[arg(long, value_name = "FORMAT", value_enum)]
    usage_format: Option<Format>,
    /// The model, where the usage does not name one (Codex's does not)
    #[arg(long, value_name = "MODEL")]
    usage_model: Option<String>,
}

fn bad(message: String) -> Refusal {
    let accepted = format!("--usage takes a JSON object with any of: {USAGE_KEYS}");
    let hint = if message.contains(&accepted) {
        "--usage-format claude|codex|gemini reads a runtime's own output instead".to_owned()
    } else {
        format!(
            "{accepted}; --usage-format claude|codex|gemini reads a runtime's own output instead"
        )
    };
    Refusal::usage(Code::BadUsage, message).with_hint(hint)
}

/// The usage the flags give, priced at what `price_of` says a model costs
/// (git config, else the shipped table: `config::price`), with a note for
/// each model nothing prices; None when no usage flag was given. A
/// relative `--usage-file` is read from `cwd`.
pub fn read(
    cwd: &Path,
    price_of: &dyn Fn(&str) -> Option<crate::price::Price>,
    args: &UsageArgs,
) -> Result<Option<(Usage, Vec<String>)>> {
    let text = match (&args.usage, &args.usage_file) {
        (Some(t), _) => t.clone(),
        (None, Some(path)) => {
            use std::io::Read as _;
            let path = cwd.join(path);
            let cannot = |e: std::io::Error| {
                bad(format!(
                    "cannot read the usage file {}: {e}",
                    path.display()
                ))
            };
            let over = || {
                bad(format!(
                    "the usage file {} is over 16 MiB (the limit of a usage file)",
                    path.display()
                ))
            };
            // Only a regular file: a FIFO would block the read until a
            // writer came (forever, for a turn that ends with it), and a
            // device may never end. Its kind is taken from a stat, before
            // anything is opened, and again from the file opened without
            // blocking (the path may have changed in between). The size is
            // checked before reading, and the read stops at the limit.
            let not_regular = || {
                Refusal::usage(
                    Code::BadUsage,
                    format!(
                        "the usage file {} is not a regular file (a FIFO, a device or a directory): a usage file is read only from a regular file",
                        path.display()
                    ),
                )
                .with_hint("write the runtime's output to a file first, or pass it with --usage JSON; nothing was written")
            };
            if !std::fs::metadata(&path).map_err(cannot)?.is_file() {
                return Err(not_regular().into());
            }
            let file = {
                use std::os::unix::fs::OpenOptionsExt;
                std::fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
                    .open(&path)
                    .map_err(cannot)?
            };
            let meta = file.metadata().map_err(cannot)?;
            if !meta.is_file() {
                return Err(not_regular().into());
            }
            if meta.len() > FILE_LIMIT {
                return Err(over().into());
            }
            let mut bytes = Vec::new();
            file.take(FILE_LIMIT + 1)
                .read_to_end(&mut bytes)
                .map_err(cannot)?;
            if bytes.len() as u64 > FILE_LIMIT {
                return Err(over().into());
            }
            String::from_utf8(bytes).map_err(|_| {
                bad(format!(
                    "the usage file {} is not UTF-8 text",
                    path.display()
                ))
            })?
        }
        (None, None) => {
            if args.usage_format.is_some() || args.usage_model.is_some() {
                return Err(bad(
                    "--usage-format and --usage-model need --usage or --usage-file".to_owned(),
                )
                .into());
            }
            return Ok(None);
        }
    };
    let format = args.usage_format.unwrap_or(Format::Loopx);
    let mut parts = formats::parse(format, &text).map_err(bad)?;
    if parts.is_empty() {
        return Err(bad("the usage names no model with tokens".to_owned()).into());
    }
    let mut unpriced = Vec::new();
    for u in &mut parts {
        if u.model.is_none() {
            u.model.clone_from(&args.usage_model);
        }
        unpriced.extend(crate::price::fill(u, price_of));
    }
    let usage = formats::merge(parts);
    if usage.is_empty() {
        return Err(bad("the usage reports no tokens and no cost".to_owned()).into());
    }
    let notes = unpriced
        .into_iter()
        .map(|m| match m {
            Some(m) => format!(
                "loopx: no price for model {m}: its tokens count, its dollars do not; price it for the team with `loopx settings set --price {m}=IN/OUT` (dollars per million tokens), or on this machine with git config loopx.price.{m}.input and .output."
            ),
            None => "loopx: the usage names no model, so its dollars are unknown: pass --usage-model.".to_owned(),
        })
        .collect();
    Ok(Some((usage, notes)))
}
