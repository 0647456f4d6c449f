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
use std::time::{Duration, Instant};

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
    /// Whether stderr is a terminal a progress line may redraw in place.
    stderr_tty: bool,
    /// The progress line on stderr, while one is shown.
    meter: RefCell<Option<Meter>>,
}

/// A progress line in the making: what is counted, since when, and when it
/// was last drawn.
struct Meter {
    what: String,
    total: usize,
    start: Instant,
    drawn: Option<Instant>,
}

/// A progress line is drawn only once the work has taken this long (short
/// work shows none), then at most every [`METER_EVERY`].
const METER_AFTER: Duration = Duration::from_millis(250);
const METER_EVERY: Duration = Duration::from_millis(100);

impl Out {
    /// The process's stdout and stderr. `no_color`: never colour. Else
    /// colour as clap does (anstream): `--color`, then `NO_COLOR`,
    /// `CLICOLOR_FORCE`, `CLICOLOR=0`, a terminal and `TERM` (not `dumb`).
    /// JSON is never coloured and draws no progress, so it asks neither
    /// stream whether it is a terminal (two system calls saved at every
    /// agent's start).
    pub fn new(format: Format, no_color: bool) -> Self {
        let human = format == Format::Human;
        let mut out = Out::with_writers(
            format,
            human
                && !no_color
                && anstream::AutoStream::choice(&io::stdout()) != anstream::ColorChoice::Never,
            Box::new(Data(io::stdout())),
            Box::new(io::stderr()),
        );
        out.stderr_tty = human && io::stderr().is_terminal();
        out
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
            stderr_tty: false,
            meter: RefCell::new(None),
        }
    }

    /// Reports how far long work is: `done` of `total` ticks of `what`
    /// ("Verifying origin's history"). For people at a terminal, a line on
    /// stderr with the rate and the time left, redrawn in place and cleared
    /// when `done` reaches `total` or anything else is written; nothing in
    /// JSON mode or when stderr is not a terminal (a pipe, a file).
    pub fn progress(&self, what: &str, done: usize, total: usize) {
        if !self.shows_progress() {
            return;
        }
        let now = Instant::now();
        let mut meter = self.meter.borrow_mut();
        if meter
            .as_ref()
            .is_none_or(|m| m.what != what || m.total != total)
        {
            drop(meter);
            self.clear_progress();
            meter = self.meter.borrow_mut();
            *meter = Some(Meter {
                what: what.to_owned(),
                total,
                start: now,
                drawn: None,
            });
        }
        let m = meter.as_mut().expect("set above");
        if done >= total {
            drop(meter);
            self.clear_progress();
            return;
        }
        let due = match m.drawn {
            None => now.duration_since(m.start) >= METER_AFTER,
            Some(at) => now.duration_since(at) >= METER_EVERY,
        };
        if !due {
            return;
        }
        m.drawn = Some(now);
        let line = meter_line(&m.what, done, total, now.duration_since(m.start));
        let mut err = self.stderr.borrow_mut();
        let _ = write!(err, "\r\x1b[2K{}", term::line(&line));
        let _ = err.flush();
    }

    /// Whether progress is shown: human output and stderr a terminal.
    pub fn shows_progress(&self) -> bool {
        self.format == Format::Human && self.stderr_tty
    }

    /// Takes a progress line off the terminal, if one is shown.
    fn clear_progress(&self) {
        if let Some(m) = self.meter.borrow_mut().take()
            && m.drawn.is_some()
        {
            let mut err = self.stderr.borrow_mut();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }

    /// Sends the data written from now on through a pager (`command`, run
    /// by `sh -c` as git runs its pager, with `LESS=FRX` and `LV=-c` unless
    /// they are set), when the output is for people and stdout is a terminal. The
    /// pager is waited for when this output is dropped. Nothing happens for
    /// JSON, a pipe or a file. A pager that cannot start (its program is
    /// not on `path`, the `PATH` given, or `sh` fails) leaves the output
    /// unpaged and says why (`Err`), so nothing is lost.
    pub fn page(&self, command: &str, path: Option<&std::ffi::OsStr>) -> Result<(), String> {
        if self.format != Format::Human || !io::stdout().is_terminal() {
            return Ok(());
        }
        pager_program_found(command, path)?;
        let mut sh = std::process::Command::new("sh");
        sh.arg("-c")
            .arg(format!(
                "export LESS=\"${{LESS-FRX}}\" LV=\"${{LV--c}}\"; {command}"
            ))
            .stdin(std::process::Stdio::piped());
        let mut child = sh.spawn().map_err(|e| format!("sh cannot start: {e}"))?;
        let Some(stdin) = child.stdin.take() else {
            return Err("sh took no input".to_owned());
        };
        *self.stdout.borrow_mut() = Box::new(Data(Pager {
            stdin: Some(stdin),
            child,
        }));
        Ok(())
    }

    pub fn is_json(&self) -> bool {
        self.format == Format::Json
    }

    /// Writes `data` as JSON, or the human text, to stdout.
    pub fn emit<T: Serialize>(&self, data: &T, human: impl FnOnce() -> String) -> io::Result<()> {
        self.emit_painted(data, |p| p.push(&human()))
    }

    /// Writes `data` as JSON, or the human text the renderer paints, to
    /// stdout: text is escaped as it is added, and loopx's colours (when
    /// stdout takes colour) are added after ([`term::Painted`]). A newline
    /// ends it; empty text writes nothing.
    pub fn emit_painted<T: Serialize>(
        &self,
        data: &T,
        human: impl FnOnce(&mut term::Painted),
    ) -> io::Result<()> {
        self.clear_progress();
        match self.format {
            Format::Json => self.json_line(data),
            Format::Human => {
                let mut p = term::Painted::new(self.color);
                human(&mut p);
                let mut out = self.stdout.borrow_mut();
                write_human(&mut **out, p.as_str())?;
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

    /// A status line on stderr, for people (suppressed in JSON mode).
    pub fn status(&self, msg: &str) {
        self.clear_progress();
        if self.format == Format::Human {
            let _ = writeln!(self.stderr.borrow_mut(), "{}", term::safe(msg));
        }
    }

    /// A hint on stderr, in every format: it says what to do.
    pub fn hint(&self, msg: &str) {
        self.clear_progress();
        let _ = writeln!(self.stderr.borrow_mut(), "hint: {}", term::safe(msg));
    }

    pub fn warn(&self, msg: &str) {
        self.clear_progress();
        let _ = writeln!(self.stderr.borrow_mut(), "warning: {}", term::safe(msg));
    }

    /// Reports a failed command: on stderr always; in JSON mode also as a
    /// document on stdout, so agents parse one stream.
    pub fn error(&self, err: &anyhow::Error, exit: Exit) {
        self.clear_progress();
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

/// The progress line: `what: done of total ticks (rate/s, about N s
/// left)`. The rate and the time left appear once a tick is done.
fn meter_line(what: &str, done: usize, total: usize, elapsed: Duration) -> String {
    let pct = done * 100 / total.max(1);
    let mut line = format!("{what}: {done} of {total} ticks checked ({pct}%");
    let secs = elapsed.as_secs_f64();
    if done > 0 && secs > 0.0 {
        let rate = done as f64 / secs;
        let left = (total - done.min(total)) as f64 / rate;
        line.push_str(&format!(", {rate:.0} ticks/s, about {} left", span(left)));
    }
    line.push(')');
    line
}

/// Seconds as a person reads them: `42 s`, `3 min 5 s`, `2 h 4 min`.
fn span(secs: f64) -> String {
    let s = secs.ceil() as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
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
        self.emit_painted(data, |p| p.push(&human()))
    }

    /// Writes one record: `data` as a JSON line, or the human text the
    /// renderer paints (as [`Out::emit_painted`]).
    pub fn emit_painted<T: Serialize>(
        &mut self,
        data: &T,
        human: impl FnOnce(&mut term::Painted),
    ) -> io::Result<()> {
        if self.json {
            serde_json::to_writer(&mut self.out, data).map_err(io::Error::from)?;
            return self.out.write_all(b"\n");
        }
        let mut p = term::Painted::new(self.color);
        human(&mut p);
        write_human(&mut self.out, p.as_str())
    }

    /// Flushes what is buffered; call it once the stream is complete.
    pub fn finish(mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Writes human text that is ready for the terminal, ending it with a
/// newline; empty text writes nothing.
fn write_human(out: &mut dyn Write, text: &str) -> io::Result<()> {
    if text.is_empty() {
        return Ok(());
    }
    out.write_all(text.as_bytes())?;
    if !text.ends_with('\n') {
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// Whether the program a pager command starts with can run: a path that
/// is a file, or a name found in one of `path`'s folders. A command that
/// starts with shell syntax (a variable, a quote, a builtin such as `exec`)
/// is left to `sh`. `Err` says what is missing.
fn pager_program_found(command: &str, path: Option<&std::ffi::OsStr>) -> Result<(), String> {
    let Some(first) = command.split_whitespace().next() else {
        return Ok(());
    };
    let shell = first.contains([
        '=', '$', '\'', '"', '\\', '(', '|', ';', '&', '<', '>', '`', '~',
    ]) || ["exec", "command", "eval", "env", "builtin", ":", "{"].contains(&first);
    if shell {
        return Ok(());
    }
    let runnable = |p: &std::path::Path| p.is_file();
    let found = if first.contains('/') {
        runnable(std::path::Path::new(first))
    } else {
        path.is_some_and(|path| std::env::split_paths(path).any(|dir| runnable(&dir.join(first))))
    };
    if found {
        Ok(())
    } else {
        Err(format!("{first} is not found"))
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

/// The data writer (stdout, or the pager): an error writing to it is told
/// apart from every other I/O error as [`OutputFailed`], so a full disk under
/// `loopx log > file` says "cannot write the output", never speaks of the
/// state. A closed pipe stays as it is (it ends the command quietly).
struct Data<W>(W);

impl<W: Write> Write for Data<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf).map_err(OutputFailed::wrap)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().map_err(OutputFailed::wrap)
    }
}

/// A write to the command's output (stdout) failed: the one error every
/// command reports as "cannot write the output: …" ([`output_failed`]).
#[derive(Debug)]
pub struct OutputFailed(io::Error);

impl OutputFailed {
    fn wrap(e: io::Error) -> io::Error {
        if e.kind() == io::ErrorKind::BrokenPipe {
            return e;
        }
        io::Error::new(e.kind(), OutputFailed(e))
    }
}

impl std::fmt::Display for OutputFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot write the output: {}", self.0)
    }
}

impl std::error::Error for OutputFailed {}

/// The failed write to the command's output somewhere in `err`'s chain,
/// looked for as [`is_broken_pipe`] looks: its text ("cannot write the
/// output: No space left on device (os error 28)").
pub fn output_failed(err: &anyhow::Error) -> Option<String> {
    err.chain().find_map(|e| {
        let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
        while let Some(e) = next {
            if let Some(failed) = e.downcast_ref::<OutputFailed>() {
                return Some(failed.to_string());
            }
            let io = e.downcast_ref::<io::Error>().or_else(|| {
                e.downcast_ref::<serde_json::Error>()
                    .and_then(|j| std::error::Error::source(j))
                    .and_then(|s| s.downcast_ref::<io::Error>())
            });
            next = io
                .and_then(|io| io.get_ref())
                .map(|inner| inner as &(dyn std::error::Error + 'static));
        }
        None
    })
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

    #[test]
    fn a_pager_whose_program_is_missing_is_found_out_before_it_starts() {
        let path = std::ffi::OsString::from("/nowhere:/bin:/usr/bin");
        let path = Some(path.as_os_str());
        assert_eq!(pager_program_found("sh -c cat", path), Ok(()));
        assert_eq!(pager_program_found("/bin/sh", None), Ok(()));
        assert_eq!(
            pager_program_found("no-such-pager-53 -R", path),
            Err("no-such-pager-53 is not found".to_owned())
        );
        assert!(pager_program_found("/nowhere/less", path).is_err());
        assert!(pager_program_found("less", None).is_err());
        // Shell syntax is left to sh.
        for shell in ["LESS=R less", "exec less", "$PAGER", "'less' -R", "~/bin/p"] {
            assert_eq!(pager_program_found(shell, path), Ok(()), "{shell}");
        }
    }

    #[test]
    fn a_failed_write_to_the_output_is_told_apart() {
        struct Failing(io::ErrorKind);
        impl Write for Failing {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(match self.0 {
                    io::ErrorKind::StorageFull => io::Error::from_raw_os_error(28),
                    kind => kind.into(),
                })
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        for format in [Format::Json, Format::Human] {
            let out = Out::with_writers(
                format,
                false,
                Box::new(Data(Failing(io::ErrorKind::StorageFull))),
                Box::new(io::sink()),
            );
            let err = anyhow::Error::from(out.emit(&1, || "one".to_owned()).unwrap_err())
                .context("reading the state");
            let text = output_failed(&err).expect("an output error");
            assert!(
                text.starts_with("cannot write the output: ") && text.contains("os error 28"),
                "{text}"
            );
            let mut stream = out.stream();
            let streamed = stream
                .emit(&2, || "two".to_owned())
                .and_then(|()| stream.finish())
                .unwrap_err();
            assert!(output_failed(&streamed.into()).is_some());
        }
        // A closed pipe stays a closed pipe; other I/O is not the output's.
        let out = Out::with_writers(
            Format::Json,
            false,
            Box::new(Data(Failing(io::ErrorKind::BrokenPipe))),
            Box::new(io::sink()),
        );
        let pipe = anyhow::Error::from(out.emit(&1, String::new).unwrap_err());
        assert!(is_broken_pipe(&pipe) && output_failed(&pipe).is_none());
        assert!(output_failed(&anyhow::Error::from(io::Error::from_raw_os_error(28))).is_none());
    }

    fn captured(format: Format) -> (Out, Capture, Capture) {
        let (o, e) = (Capture::default(), Capture::default());
        let out = Out::with_writers(format, false, Box::new(o.clone()), Box::new(e.clone()));
        (out, o, e)
    }

    #[test]
    fn a_progress_line_says_the_rate_and_the_time_left() {
        assert_eq!(
            meter_line("Verifying", 0, 20_000, Duration::ZERO),
            "Verifying: 0 of 20000 ticks checked (0%)"
        );
        assert_eq!(
            meter_line("Verifying", 5_000, 20_000, Duration::from_secs(2)),
            "Verifying: 5000 of 20000 ticks checked (25%, 2500 ticks/s, about 6 s left)"
        );
        assert_eq!(
            meter_line("Verifying", 1, 1_000, Duration::from_secs(1)),
            "Verifying: 1 of 1000 ticks checked (0%, 1 ticks/s, about 16 min 39 s left)"
        );
        assert_eq!(span(7_400.0), "2 h 3 min");
    }

    #[test]
    fn progress_is_drawn_in_place_on_a_terminal_only() {
        let backdate = |out: &Out| {
            let mut m = out.meter.borrow_mut();
            let m = m.as_mut().expect("a meter");
            m.start = m.start.checked_sub(Duration::from_secs(1)).unwrap();
        };
        for (tty, format) in [
            (false, Format::Human),
            (true, Format::Json),
            (true, Format::Human),
        ] {
            let (mut out, o, e) = captured(format);
            out.stderr_tty = tty;
            out.progress("Verifying", 0, 10);
            if out.meter.borrow().is_some() {
                backdate(&out);
            }
            out.progress("Verifying", 5, 10);
            out.progress("Verifying", 10, 10);
            out.status("Done.");
            assert_eq!(o.text(), "");
            let shown = tty && format == Format::Human;
            let text = e.text();
            if shown {
                assert!(
                    text.starts_with("\r\x1b[2KVerifying: 5 of 10 ticks checked (50%, "),
                    "{text:?}"
                );
                assert!(text.ends_with(" left)\r\x1b[2KDone.\n"), "{text:?}");
            } else {
                let quiet = if format == Format::Human {
                    "Done.\n"
                } else {
                    ""
                };
                assert_eq!(text, quiet, "tty {tty}, {format:?}");
            }
        }
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
    fn text_never_colours_only_loopx_does() {
        let o = Capture::default();
        let out = Out::with_writers(
            Format::Human,
            true,
            Box::new(o.clone()),
            Box::new(Capture::default()),
        );
        out.emit(&1, || "\x1b[32mpassed\x1b[0m".to_owned()).unwrap();
        out.emit_painted(&1, |p| p.line(Some(term::Colour::Green), "+\x1b[31mx"))
            .unwrap();
        let mut s = out.stream();
        s.emit(&1, || "\x1b[1mbold".to_owned()).unwrap();
        s.finish().unwrap();
        assert_eq!(
            o.text(),
            "\\e[32mpassed\\e[0m\n\x1b[32m+\\e[31mx\x1b[0m\n\\e[1mbold\n"
        );
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
