//! The one place that writes to the terminal: data to stdout, status, hints,
//! warnings and errors to stderr.
//!
//! Commands build a serializable value and a human rendering; [`Out::emit`]
//! picks one by `--format`. JSON is one compact line per document, so agents
//! pay for few bytes, and keeps the exact text. Every human text (data,
//! status, hints, warnings, errors) goes through [`crate::term`] first, so
//! control characters an agent wrote cannot act on a person's terminal.

use std::cell::RefCell;
use std::io::{self, IsTerminal, Write};
use std::rc::Rc;

use serde::Serialize;

use crate::error::{Exit, Refusal, refusal_of};
use crate::term;

/// `--format human|json`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Human,
    Json,
}

/// Where a command's output goes: data to one writer (stdout), everything
/// for people to the other (stderr). Renderers only ever see these writers,
/// so they can be driven in-process (see [`Capture`]).
pub struct Out {
    pub format: Format,
    color: bool,
    stdout: RefCell<Box<dyn Write>>,
    stderr: RefCell<Box<dyn Write>>,
}

impl Out {
    /// The process's stdout and stderr. `no_color`: never colour. Else
    /// colour as clap does (anstream): `--color`, then `NO_COLOR`,
    /// `CLICOLOR_FORCE`, `CLICOLOR=0`, a terminal and `TERM` (not `dumb`).
    pub fn new(format: Format, no_color: bool) -> Self {
        Out::with_writers(
            format,
            !no_color
                && anstream::AutoStream::choice(&io::stdout()) != anstream::ColorChoice::Never,
            Box::new(io::stdout()),
            Box::new(io::stderr()),
        )
    }

    /// Output to the given writers (tests pass [`Capture`]s).
    pub fn with_writers(
        format: Format,
        color: bool,
        stdout: Box<dyn Write>,
        stderr: Box<dyn Write>,
    ) -> Self {
        Out {
            format,
            color,
            stdout: RefCell::new(stdout),
            stderr: RefCell::new(stderr),
        }
    }

    /// Sends the data written from now on through a pager (`command`, run
    /// by `sh -c` as git runs its pager, with `LESS=FRX` and `LV=-c` unless
    /// they are set), when the output is for people and stdout is a terminal. The
    /// pager is waited for when this output is dropped. Nothing happens for
    /// JSON, a pipe or a file, or when the pager cannot start.
    pub fn page(&self, command: &str) {
        if self.format != Format::Human || !io::stdout().is_terminal() {
            return;
        }
        let mut sh = std::process::Command::new("sh");
        sh.arg("-c")
            .arg(format!(
                "export LESS=\"${{LESS-FRX}}\" LV=\"${{LV--c}}\"; {command}"
            ))
            .stdin(std::process::Stdio::piped());
        let Ok(mut child) = sh.spawn() else { return };
        let Some(stdin) = child.stdin.take() else {
            return;
        };
        *self.stdout.borrow_mut() = Box::new(Pager {
            stdin: Some(stdin),
            child,
        });
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
                let text = self.safe(&text);
                let mut out = self.stdout.borrow_mut();
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
        let mut out = self.stdout.borrow_mut();
        // `io::Error::from` keeps a write's own error (a closed pipe).
        serde_json::to_writer(&mut *out, data).map_err(io::Error::from)?;
        out.write_all(b"\n")?;
        out.flush()
    }

    /// Human text as it may reach the terminal: control characters shown
    /// as escapes, loopx's own colours kept when colour is on.
    fn safe<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        if self.color {
            term::safe_keeping_colour(text)
        } else {
            term::safe(text)
        }
    }

    /// A status line on stderr, for people (suppressed in JSON mode).
    pub fn status(&self, msg: &str) {
        if self.format == Format::Human {
            let _ = writeln!(self.stderr.borrow_mut(), "{}", term::safe(msg));
        }
    }

    /// A hint on stderr, in every format: it says what to do.
    pub fn hint(&self, msg: &str) {
        let _ = writeln!(self.stderr.borrow_mut(), "hint: {}", term::safe(msg));
    }

    pub fn warn(&self, msg: &str) {
        let _ = writeln!(self.stderr.borrow_mut(), "warning: {}", term::safe(msg));
    }

    /// Reports a failed command: on stderr always; in JSON mode also as a
    /// document on stdout, so agents parse one stream.
    pub fn error(&self, err: &anyhow::Error, exit: Exit) {
        let refusal = refusal_of(err);
        {
            let mut stderr = self.stderr.borrow_mut();
            let _ = writeln!(stderr, "error: {}", term::safe(&format!("{err:#}")));
            if let Some(Refusal { hint: Some(h), .. }) = refusal {
                let _ = writeln!(stderr, "hint: {}", term::safe(&h.to_string()));
            }
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
                hint: Option<String>,
            }
            let _ = self.json_line(&Wire {
                error: Body {
                    code: refusal.map_or("error", |r| r.code.as_str()),
                    exit: exit.code(),
                    message: format!("{err:#}"),
                    hint: refusal
                        .and_then(|r| r.hint.as_ref())
                        .map(ToString::to_string),
                },
            });
        }
    }
}

/// A stream of records on stdout (`log`): JSON Lines, or one human block
/// per record, through one buffered lock, so a long history is written as it
/// is read instead of collected first.
pub struct Stream<'o> {
    json: bool,
    color: bool,
    out: io::BufWriter<StdoutOf<'o>>,
}

/// The data writer of an [`Out`], borrowed for a stream.
struct StdoutOf<'o>(std::cell::RefMut<'o, Box<dyn Write>>);

impl Write for StdoutOf<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl Out {
    /// Starts a stream of records in this output's format. Nothing else may
    /// write data until it is finished.
    pub fn stream(&self) -> Stream<'_> {
        Stream {
            json: self.is_json(),
            color: self.color,
            out: io::BufWriter::new(StdoutOf(self.stdout.borrow_mut())),
        }
    }
}

impl Stream<'_> {
    /// Writes one record: `data` as a JSON line, or the human text (a
    /// newline is added when it lacks one; empty text writes nothing).
    pub fn emit<T: Serialize>(
        &mut self,
        data: &T,
        human: impl FnOnce() -> String,
    ) -> io::Result<()> {
        if self.json {
            serde_json::to_writer(&mut self.out, data).map_err(io::Error::from)?;
            return self.out.write_all(b"\n");
        }
        let text = human();
        if text.is_empty() {
            return Ok(());
        }
        let text = if self.color {
            term::safe_keeping_colour(&text)
        } else {
            term::safe(&text)
        };
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

/// The pager's stdin, as stdout; dropping it closes the pipe and waits for
/// the pager, so the shell prompt comes back after the person quits it.
struct Pager {
    stdin: Option<std::process::ChildStdin>,
    child: std::process::Child,
}

impl Write for Pager {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.stdin {
            Some(s) => s.write(buf),
            None => Err(io::ErrorKind::BrokenPipe.into()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stdin.as_mut().map_or(Ok(()), Write::flush)
    }
}

impl Drop for Pager {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// Writes narration straight to stdout (the demo's running commentary).
pub fn print_stdout(text: &str) {
    let mut out = io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// A writer that keeps what is written, shared with the test that reads it:
/// `Out::with_writers(format, false, Box::new(c.clone()), …)`, then
/// `c.text()`.
#[derive(Clone, Default)]
pub struct Capture(Rc<RefCell<Vec<u8>>>);

impl Capture {
    /// Everything written so far, as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.borrow()).into_owned()
    }
}

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Whether an error is a closed stdout (`loopx log | head`), which exits
/// quietly, as git and ripgrep do. Looks through every layer, including a
/// JSON writer's error and an `io::Error` that wraps another.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
        while let Some(e) = next {
            let pipe = e
                .downcast_ref::<io::Error>()
                .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
                || e.downcast_ref::<serde_json::Error>()
                    .is_some_and(|j| j.io_error_kind() == Some(io::ErrorKind::BrokenPipe));
            if pipe {
                return true;
            }
            next = e
                .downcast_ref::<io::Error>()
                .and_then(|io| io.get_ref())
                .map(|inner| inner as &(dyn std::error::Error + 'static));
        }
        false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn captured(format: Format) -> (Out, Capture, Capture) {
        let (o, e) = (Capture::default(), Capture::default());
        let out = Out::with_writers(format, false, Box::new(o.clone()), Box::new(e.clone()));
        (out, o, e)
    }

    #[test]
    fn data_goes_to_one_writer_and_people_to_the_other() {
        let (out, o, e) = captured(Format::Human);
        out.emit(&1, || "one".to_owned()).unwrap();
        out.status("Done.");
        out.hint("do this");
        assert_eq!(o.text(), "one\n");
        assert_eq!(e.text(), "Done.\nhint: do this\n");

        let (out, o, e) = captured(Format::Json);
        out.emit(&serde_json::json!({"a": 1}), || unreachable!())
            .unwrap();
        out.status("quiet in JSON");
        let mut s = out.stream();
        s.emit(&2, String::new).unwrap();
        s.finish().unwrap();
        assert_eq!(o.text(), "{\"a\":1}\n2\n");
        assert_eq!(e.text(), "");
    }

    #[test]
    fn a_refusal_is_a_json_document_too() {
        let (out, o, e) = captured(Format::Json);
        let err = anyhow::Error::new(
            Refusal::rule(crate::error::Code::Claimed, "taken").with_hint("pick another"),
        );
        out.error(&err, Exit::Refused);
        assert!(e.text().starts_with("error: taken\nhint: pick another\n"));
        let doc: serde_json::Value = serde_json::from_str(o.text().trim()).unwrap();
        assert_eq!(doc["error"]["code"], "claimed");
        assert_eq!(doc["error"]["exit"], 3);
    }
}
