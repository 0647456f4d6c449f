//! Samples of every secret shape the redactor knows, for its own tests and
//! for the tests of what leaves the team (the trajectory): each a line of
//! text and the part of it that must not survive. The fakes are built from
//! pieces so no scanner mistakes this file for a leak.

use super::shapes::{RULES, Rule, Set};

/// Secrets that must not survive, each in the context it is found in.
/// The fakes are built from pieces so no scanner mistakes this file for
/// a leak.
pub fn corpus() -> Vec<(String, &'static str)> {
    let x36 = "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8";
    let up16 = "Q3VJ7Z2WXK5LMN4P";
    vec![
        (format!("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCY{x36}"), "wJalr"),
        (format!("AWS_ACCESS_KEY_ID=AKIA{up16}"), up16),
        (format!("found key AKIA{up16} in config"), up16),
        (format!("session ASIA{up16}"), up16),
        (format!("GH_PAT=ghp_{x36}"), x36),
        (format!("remote: gho_{x36}"), x36),
        (format!("ghs_{x36} used"), x36),
        (format!("ghr_{x36}"), x36),
        (format!("github_pat_11ABCDEFG0_{x36}"), x36),
        (format!("token glpat-{}", &x36[..20]), &x36[..20]),
        ("git clone https://user:hunter2pass@example.com/repo.git".to_owned(), "hunter2pass"),
        (format!("https://x-access-token:ghs_{x36}@github.com/o/r"), x36),
        ("postgres://app:Pg-s3cret!@db.internal:5432/app".to_owned(), "Pg-s3cret!"),
        (format!("STRIPE=sk_live_{x36}"), x36),
        (format!("rk_live_{x36}"), x36),
        (format!("curl -u sk_test_{x36}:"), x36),
        (format!("Slack: xoxb-1234567890-{}", &x36[..24]), &x36[..24]),
        (format!("xoxp-1234567890-{}", &x36[..24]), &x36[..24]),
        (
            "post to https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"
                .to_owned(),
            "XXXXXXXXXXXXXXXXXXXXXXXX",
        ),
        (format!("OPENAI_API_KEY=sk-proj-{x36}"), x36),
        (format!("key sk-{x36}"), x36),
        (format!("anthropic sk-ant-api03-{x36}{x36}"), x36),
        (format!("google AIzaSyA-{x36}"), x36),
        (format!("//registry.npmjs.org/:_authToken=npm_{x36}"), x36),
        (format!("npm_{x36}"), x36),
        (
            "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
                .to_owned(),
            "dozjgNryP4J3jVmNHl0w5N",
        ),
        ("password=hunter2".to_owned(), "hunter2"),
        ("DB_PASSWORD: correct horse battery".to_owned(), "correct horse"),
        ("\"password\": \"hunter2x\"".to_owned(), "hunter2x"),
        ("{\"api_key\":\"k-123456\"}".to_owned(), "k-123456"),
        ("passphrase: open sesame now".to_owned(), "open sesame"),
        ("login\tada\tpassword\ts3cr3tTab".to_owned(), "s3cr3tTab"),
        ("password\thunter2tab".to_owned(), "hunter2tab"),
        ("client_secret = abcdef123".to_owned(), "abcdef123"),
        ("token=s3cr3t".to_owned(), "s3cr3t"),
        ("MY_TOKEN: tok-value-1".to_owned(), "tok-value-1"),
        ("apiKey: 'q9w8e7r6'".to_owned(), "q9w8e7r6"),
        ("APIKEY=abc123xyz".to_owned(), "abc123xyz"),
        ("access_key = zxcvbn987".to_owned(), "zxcvbn987"),
        ("private_key=pk-material".to_owned(), "pk-material"),
        ("credentials: user:pw-777".to_owned(), "pw-777"),
        ("GIT_AUTH=authvalue9".to_owned(), "authvalue9"),
        ("Authorization: Basic dXNlcjpwYXNz".to_owned(), "dXNlcjpwYXNz"),
        ("authorization: token abcdef0123".to_owned(), "abcdef0123"),
        ("-H 'Authorization: Bearer abc.def.ghi'".to_owned(), "abc.def"),
        ("curl -H \"X-Auth-Token: t0k3n-xyz\"".to_owned(), "t0k3n-xyz"),
        ("sent Bearer zzzyyyxxx111".to_owned(), "zzzyyyxxx111"),
        ("BEARER upper-case-credential".to_owned(), "upper-case-credential"),
        ("bearer: hdr-secret".to_owned(), "hdr-secret"),
        ("url?access_token=qs-secret&x=1".to_owned(), "qs-secret"),
        ("export SECRET='sq secret val'".to_owned(), "sq secret"),
        ("mysql_pwd=root123".to_owned(), "root123"),
        ("setting passwd := pw-assign".to_owned(), "pw-assign"),
    ]
}

/// A token of `rule`'s shape: its prefix and a body of its alphabet,
/// `extra` characters longer than its minimum.
pub(super) fn token(rule: &Rule, extra: usize) -> String {
    let pool: &[u8] = match rule.set {
        Set::Letters => b"qWeRtYuIoPaSdFgHjKlZxCvBnM",
        Set::Hex => b"0a1b2c3d4e5f6789",
        Set::Upper => b"Q7W3E9R2T5Y8U4I6O1PZ",
        _ => b"a1B2c3D4e5F6g7H8i9J0kLmNpQ",
    };
    let body: String = (0..rule.min + extra)
        .map(|i| pool[(i * 7 + 3) % pool.len()] as char)
        .collect();
    format!("{}{body}", rule.prefix)
}

/// One sample of every shape: the corpus above (the older shapes, key-value
/// pairs, headers, URLs), a token of each rule's shape, and the shapes with
/// no prefix (MaxMind, a bare AWS secret, an Azure AD client secret, a PEM
/// private key). Each is `(text, what must not survive)`.
pub fn every_shape() -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = corpus()
        .into_iter()
        .map(|(t, s)| (t, s.to_owned()))
        .collect();
    for rule in RULES {
        let t = token(rule, 0);
        all.push((t.clone(), t[rule.prefix.len()..].to_owned()));
    }
    let body29 = "Zx8Qw2Er5Ty7Ui0Op3As6Df9Gh1Jk";
    all.push((format!("key Ab3dE5_{body29}_mmk"), body29.to_owned()));
    let aws = ["wJalrXUtnFEMI", "/K7MDENG/bPxRfiCY", "EXAMPLEKEY"].concat();
    all.push((format!("aws secret {aws} here"), aws));
    let azure = "Zx8Qw2Er5Ty7Ui0Op3As6Df9Gh1Jk4Lm";
    all.push((format!("secret abc1Q~{azure}"), azure.to_owned()));
    let pem = ["-----BEGIN ", "PRIVATE KEY-----"].concat();
    all.push((
        format!("{pem} MIIEvQIBADANBgkqhkiG9w0BAQ"),
        "MIIEvQIBADANBgkqhkiG9w0BAQ".to_owned(),
    ));
    all
}
