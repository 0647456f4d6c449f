//! The one place that writes to the terminal: data to stdout, status, hints,
//! warnings and errors to stderr.
//!
//! Commands build a serializable value and a human rendering; [`Out::emit`]
//! picks one by `--format`. JSON is one compact line per document, so agents
//! pay for few bytes.

use std::io::{self, IsTerminal, Write};

use serde::Serialize;

use crate::error::{Exit, Refusal, refusal_of};

/// `--format human|json`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Human,
    Json,
}

pub struct Out {
    pub format: Format,
    color: bool,
}

impl Out {
    /// `no_color`: `NO_COLOR` was set.
    pub fn new(format: Format, no_color: bool) -> Self {
        Out {
            format,
            color: !no_color && io::stdout().is_terminal(),
        }
    }

    pub fn is_json(&self) -> bool {
        self.format == Format::Json
    }

    /// Whether stdout takes ANSI colour.
    pub fn color(&self) -> bool {
        self.color
    }

    /// Writes `data` as JSON, or the human text, to stdout.
    pub fn emit<T: Serialize>(&self, data: &T, human: impl FnOnce() -> String) -> io::Result<()> {
        match self.format {
            Format::Json => self.json_line(data),
            Format::Human => {
                let text = human();
                if text.is_empty() {
                    return Ok(());
                }
                let mut out = io::stdout().lock();
                out.write_all(text.as_bytes())?;
                if !text.ends_with('\n') {
                    out.write_all(b"\n")?;
                }
                out.flush()
            }
        }
    }

    /// One JSON document on one line of stdout.
    pub fn json_line<T: Serialize>(&self, data: &T) -> io::Result<()> {
        let mut out = io::stdout().lock();
        serde_json::to_writer(&mut out, data).map_err(io::Error::other)?;
        out.write_all(b"\n")?;
        out.flush()
    }

    /// A status line on stderr, for people (suppressed in JSON mode).
    pub fn status(&self, msg: &str) {
        if self.format == Format::Human {
            let _ = writeln!(io::stderr(), "{msg}");
        }
    }

    /// A hint on stderr, in every format: it says what to do.
    pub fn hint(&self, msg: &str) {
        let _ = writeln!(io::stderr(), "hint: {msg}");
    }

    pub fn warn(&self, msg: &str) {
        let _ = writeln!(io::stderr(), "warning: {msg}");
    }

    /// Reports a failed command: on stderr always; in JSON mode also as a
    /// document on stdout, so agents parse one stream.
    pub fn error(&self, err: &anyhow::Error, exit: Exit) {
        let refusal = refusal_of(err);
        let mut stderr = io::stderr().lock();
        let _ = writeln!(stderr, "error: {err:#}");
        if let Some(Refusal { hint: Some(h), .. }) = refusal {
            let _ = writeln!(stderr, "hint: {h}");
        }
        if self.format == Format::Json {
            #[derive(Serialize)]
            struct Wire<'a> {
                error: Body<'a>,
            }
            #[derive(Serialize)]
            struct Body<'a> {
                code: &'a str,
                exit: u8,
                message: String,
                #[serde(skip_serializing_if = "Option::is_none")]
                hint: Option<&'a str>,
            }
            let _ = self.json_line(&Wire {
                error: Body {
                    code: refusal.map_or("error", |r| r.code.as_str()),
                    exit: exit.code(),
                    message: format!("{err:#}"),
                    hint: refusal.and_then(|r| r.hint.as_deref()),
                },
            });
        }
    }
}

/// A stream of records on stdout (`log`): JSON Lines, or one human block
/// per record, through one buffered lock, so a long history is written as it
/// is read instead of collected first.
pub struct Stream {
    json: bool,
    out: io::BufWriter<io::StdoutLock<'static>>,
}

impl Out {
    /// Starts a stream of records in this output's format.
    pub fn stream(&self) -> Stream {
        Stream {
            json: self.is_json(),
            out: io::BufWriter::new(io::stdout().lock()),
        }
    }
}

impl Stream {
    /// Writes one record: `data` as a JSON line, or the human text (a
    /// newline is added when it lacks one; empty text writes nothing).
    pub fn emit<T: Serialize>(
        &mut self,
        data: &T,
        human: impl FnOnce() -> String,
    ) -> io::Result<()> {
        if self.json {
            serde_json::to_writer(&mut self.out, data).map_err(io::Error::other)?;
            return self.out.write_all(b"\n");
        }
        let text = human();
        if text.is_empty() {
            return Ok(());
        }
        self.out.write_all(text.as_bytes())?;
        if !text.ends_with('\n') {
            self.out.write_all(b"\n")?;
        }
        Ok(())
    }

    /// Flushes what is buffered; call it once the stream is complete.
    pub fn finish(mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Writes narration straight to stdout (the demo's running commentary).
pub fn print_stdout(text: &str) {
    let mut out = io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// Whether an error is a closed stdout (`loopx log | head`), which exits
/// quietly.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}
