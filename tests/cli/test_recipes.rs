//! The `loopx.notify` recipes of docs/format.md, run as written against a
//! local HTTP server: the message says where (the repository's path) and
//! keeps its lines, the answer commands run from anywhere, the Slack one
//! needs no variable of the shell that ticked, the mail one is UTF-8
//! text, and an HTTP error counts as a failed notification (retried), not
//! as sent.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::sync::{Arc, Mutex};

use crate::common::{TestEnv, run};

/// One request the server received.
#[derive(Clone, Debug)]
pub(crate) struct Request {
    pub path: String,
    pub headers: String,
    pub body: String,
}

/// An HTTP server on 127.0.0.1 that records each request and answers 200,
/// or 500 for a path under `/revoked`. Returns its base URL.
pub(crate) fn server() -> (String, Arc<Mutex<Vec<Request>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut first = String::new();
            if reader.read_line(&mut first).is_err() {
                continue;
            }
            let path = first.split(' ').nth(1).unwrap_or_default().to_owned();
            let mut headers = String::new();
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                headers.push_str(&line);
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let status = if path.starts_with("/revoked") {
                "500 Internal Server Error"
            } else {
                "200 OK"
            };
            // Recorded before answering: once curl has its answer, the
            // test may look.
            log.lock().unwrap().push(Request {
                path,
                headers,
                body: String::from_utf8_lossy(&body).into_owned(),
            });
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
            );
        }
    });
    (url, seen)
}

/// The recipe in docs/format.md's Notifications section that contains
/// `marker`, as a script.
fn recipe(marker: &str) -> String {
    let doc = include_str!("../../docs/format.md");
    let section = &doc[doc.find("### Notifications").expect("the section")..];
    section
        .split("```sh\n")
        .skip(1)
        .map(|b| &b[..b.find("```").expect("a closed block")])
        .find(|b| b.contains(marker))
        .unwrap_or_else(|| panic!("no recipe with {marker}"))
        .to_owned()
}

pub(crate) fn have(program: &str) -> bool {
    let ok = Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        crate::common::skipped(format_args!(
            "skipped: the notify recipes need {program} (apt-get install {program}); .ci/run installs it"
        ));
    }
    ok
}

/// Opens a permission gate as agent-a, whose environment has nothing of
/// the human's shell; returns the gate's id.
fn open_gate(env: &TestEnv) -> String {
    let out = run(env.command().env("LOOPX_AGENT", "agent-a").args([
        "gate",
        "open",
        "--kind",
        "permission",
        "--question",
        "May I push to main?",
        "--json",
    ]))
    .ok();
    // Notifications go out from a detached runner: wait for it.
    crate::test_notify::settle(&env.repo);
    out.json()["gate"]["id"]
        .as_str()
        .expect("a gate id")
        .to_owned()
}

fn configure(env: &TestEnv, name: &str, script: &str) {
    let path = env.root().join(name);
    std::fs::write(&path, script).unwrap();
    env.git(&[
        "config",
        "loopx.notify",
        &format!("sh '{}'", path.display()),
    ]);
}

#[test]
fn the_ntfy_recipe_keeps_the_lines_and_an_http_error_is_a_failure() {
    if !have("curl") || !have("jq") {
        return;
    }
    let (url, seen) = server();
    let env = TestEnv::with_board();
    let script = recipe("ntfy.sh");
    assert!(script.contains("--data-binary @-") && script.contains("-fsS"));
    configure(
        &env,
        "ntfy.sh",
        &script.replace("https://ntfy.sh/my-loopx-topic", &format!("{url}/my-topic")),
    );
    let id = open_gate(&env);
    let got = seen.lock().unwrap().clone();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].path, "/my-topic");
    assert!(got[0].headers.contains("Title: loopx gate"), "{got:?}");
    // Where, the question, then one answer command per option that runs
    // from anywhere, one per line.
    let path = repo_path(&env);
    let lines: Vec<&str> = got[0].body.lines().collect();
    assert_eq!(
        lines,
        [
            path.clone(),
            "May I push to main?".to_owned(),
            format!("loopx -C {path} gate answer {id} --choice approve"),
            format!("loopx -C {path} gate answer {id} --choice reject"),
        ],
        "{:?}",
        got[0].body
    );
    let status = env.loopx(&["status", "--json"]).ok().json();
    assert!(status.get("notify_failed").is_none(), "{status}");

    // The topic answers 500: the notification failed and will be retried.
    configure(
        &env,
        "ntfy-revoked.sh",
        &script.replace("https://ntfy.sh/my-loopx-topic", &format!("{url}/revoked")),
    );
    let second = open_gate(&env);
    assert_eq!(seen.lock().unwrap().len(), 2);
    let status = env.loopx(&["status", "--json"]).ok().json();
    let failed = status["notify_failed"].as_array().expect("a failed notify");
    assert_eq!(failed.len(), 1, "{status}");
    assert_eq!(failed[0]["gate"], second.as_str());
    assert!(
        failed[0]["reason"]
            .as_str()
            .unwrap()
            .contains("curl: (22) The requested URL returned error: 500"),
        "curl's own line: {status}"
    );
}

/// The repository's folder as the payload names it.
fn repo_path(env: &TestEnv) -> String {
    std::fs::canonicalize(&env.repo)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// Writes the Slack recipe's webhook file under the test's HOME.
fn webhook(env: &TestEnv, url: &str) {
    let dir = env.root().join("home/.config/loopx");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("slack-webhook"), format!("{url}\n")).unwrap();
}

#[test]
fn the_slack_recipe_posts_one_json_document_and_an_http_error_is_a_failure() {
    if !have("curl") || !have("jq") {
        return;
    }
    let (url, seen) = server();
    let env = TestEnv::with_board();
    let script = recipe("slack-webhook");
    assert!(!script.contains("SLACK_WEBHOOK_URL"), "{script}");
    configure(&env, "slack.sh", &script);
    // The remote is shown without its token.
    env.git(&[
        "remote",
        "add",
        "origin",
        "https://ada:s3cr3t@git.example.com/org/web.git",
    ]);
    webhook(&env, &format!("{url}/hooks/T0/B0/x"));
    let id = open_gate(&env);
    let got = seen.lock().unwrap().clone();
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0]
            .headers
            .to_ascii_lowercase()
            .contains("content-type: application/json")
    );
    let doc: serde_json::Value = serde_json::from_str(&got[0].body).expect("JSON");
    let path = repo_path(&env);
    assert_eq!(
        doc["text"],
        format!(
            "{path} (https://git.example.com/org/web.git)\nMay I push to main?\nloopx -C {path} gate answer {id} --choice approve\nloopx -C {path} gate answer {id} --choice reject"
        )
    );
    assert!(!got[0].body.contains("s3cr3t"), "{}", got[0].body);
    webhook(&env, &format!("{url}/revoked/hooks/T0/B0/x"));
    open_gate(&env);
    let status = env.loopx(&["status", "--json"]).ok().json();
    assert_eq!(
        status["notify_failed"].as_array().map_or(0, Vec::len),
        1,
        "{status}"
    );
}

#[test]
fn the_mail_recipe_sends_utf8_text_that_says_where() {
    if !have("jq") {
        return;
    }
    let mut env = TestEnv::with_board();
    // A stand-in for the MTA: it keeps what it is given.
    let bin = env.root().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let mail = env.root().join("mail.txt");
    std::fs::write(
        bin.join("sendmail"),
        format!(
            "#!/bin/sh\necho \"to: $*\" > '{m}'\ncat >> '{m}'\n",
            m = mail.display()
        ),
    )
    .unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(bin.join("sendmail"))
        .status()
        .unwrap();
    let path = std::env::var("PATH").unwrap_or_default();
    env.set_env("PATH", &format!("{}:{path}", bin.display()));
    configure(&env, "mail.sh", &recipe("sendmail"));
    let id = open_gate(&env);
    let text = std::fs::read_to_string(&mail).expect("the mail was sent");
    let (head, body) = text.split_once("\n\n").expect("headers, then the body");
    assert!(head.starts_with("to: me@example.com\n"), "{text}");
    assert!(
        head.contains("\nSubject: loopx: a gate waits on you in repo\n"),
        "{text}"
    );
    assert!(
        head.contains("\nContent-Type: text/plain; charset=UTF-8"),
        "{text}"
    );
    assert!(head.contains("\nMIME-Version: 1.0"), "{text}");
    let repo = repo_path(&env);
    assert!(
        body.starts_with(&format!("{repo}\n\nMay I push to main?\n\n")),
        "{text}"
    );
    assert!(
        body.contains(&format!(
            "loopx -C {repo} gate answer {id} --choice approve\n"
        )),
        "{text}"
    );
}
