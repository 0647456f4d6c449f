//! Secrets named by their key or their place: `KEY=VALUE` pairs whose key
//! names a secret, `Authorization:` headers, `Bearer …` credentials and URL
//! userinfo.

/// The parts of a key: `AWS_SECRET_ACCESS_KEY` → aws, secret, access, key;
/// `apiKey` → api, key; `X-Auth-Token` → x, auth, token.
pub(super) fn key_parts(key: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        if !c.is_ascii_alphanumeric() {
            if !cur.is_empty() {
                parts.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !cur.is_empty() {
            parts.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        cur.push(c.to_ascii_lowercase());
    }
    if !cur.is_empty() {
        parts.push(cur);
    }
    parts
}

/// Whether a key (an environment variable, a JSON or YAML key, a flag's
/// name) names a secret.
pub fn is_secret_key(key: &str) -> bool {
    secret_parts(&key_parts(key))
}

/// [`is_secret_key`] of a key already split into its parts.
fn secret_parts(parts: &[String]) -> bool {
    let ends = |p: &str, w: &str| p.ends_with(w);
    parts.iter().enumerate().any(|(i, p)| {
        let next = parts.get(i + 1).map(String::as_str);
        ends(p, "password")
            || ends(p, "passwd")
            || ends(p, "passphrase")
            || ends(p, "secret")
            || ends(p, "token")
            || ends(p, "apikey")
            || ends(p, "credentials")
            || ends(p, "credential")
            || p == "privatekey"
            || p == "accesskey"
            || p == "auth"
            || p == "authorization"
            || p == "bearer"
            || p == "pwd" && parts.len() > 1
            || (matches!(
                p.as_str(),
                "api" | "access" | "private" | "secret" | "account" | "signing" | "master"
            ) && matches!(next, Some("key")))
    })
}

/// `Authorization: …` and `Proxy-Authorization: …`: everything after the
/// colon.
pub(super) fn authorization(line: &str, spans: &mut Vec<(usize, usize)>) {
    let lower = line.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find("authorization") {
        let at = from + i;
        from = at + "authorization".len();
        let rest = &lower[from..];
        let rest_trim = rest.trim_start_matches(['"', '\'']).trim_start();
        if let Some(after) = rest_trim.strip_prefix(':') {
            let value_start = line.len() - after.len();
            let value = &line[value_start..];
            let lead = value.len() - value.trim_start().len();
            let start = value_start + lead;
            let end = value_end_rest(line, start);
            if is_reference(&line[start..end]) {
                continue;
            }
            if end > start {
                spans.push((start, end));
            }
        }
    }
}

/// The end of a value that runs to the end of the line, or to its closing
/// quote when it starts with one.
fn value_end_rest(line: &str, start: usize) -> usize {
    let b = line.as_bytes();
    if let Some(&q) = b.get(start).filter(|q| **q == b'"' || **q == b'\'') {
        return line[start + 1..]
            .find(q as char)
            .map_or(line.len(), |i| start + 1 + i + 1);
    }
    line.trim_end().len().max(start)
}

/// `KEY=VALUE`, `KEY: VALUE`, `"KEY": "VALUE"`, `KEY := VALUE`, `KEY<tab>VALUE`.
pub(super) fn key_values(line: &str, spans: &mut Vec<(usize, usize)>) {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        // A key: a run of key characters.
        if !(b[i].is_ascii_alphanumeric() || b[i] == b'_') {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'_' | b'-' | b'.')) {
            i += 1;
        }
        let key = &line[start..i];
        // The separator, with optional quotes and spaces around it.
        let mut j = i;
        if j < b.len() && matches!(b[j], b'"' | b'\'') {
            j += 1;
        }
        let sep_start = j;
        while j < b.len() && b[j] == b' ' {
            j += 1;
        }
        let (sep, len) = match b.get(j) {
            Some(b'=') if b.get(j + 1) == Some(&b'>') => ('=', 2),
            Some(b'=') => ('=', 1),
            Some(b':') if b.get(j + 1) == Some(&b'=') => ('=', 2),
            Some(b':') if b.get(j + 1) != Some(&b'/') => (':', 1),
            _ if j < b.len() && b[sep_start] == b'\t' => ('\t', 0),
            _ => continue,
        };
        // A key that only names a service or a key (`ADAFRUIT_IO_KEY`,
        // `AccountKey`) is taken as a secret only when its value looks
        // like a credential.
        let parts = key_parts(key);
        let weak = !secret_parts(&parts);
        if weak && !credential_hint_parts(&parts) {
            continue;
        }
        j += len;
        while j < b.len() && matches!(b[j], b' ' | b'\t') {
            j += 1;
        }
        // A reference is no secret: `TOKEN=$API_TOKEN`, `${X}`, `$(cmd)`.
        if j >= b.len() || is_reference(&line[j..]) {
            continue;
        }
        let end = match b[j] {
            b'"' | b'\'' => {
                let q = b[j] as char;
                match line[j + 1..].find(q) {
                    // Keep the quotes: `"password": "[REDACTED]"`.
                    Some(k) => {
                        if k > 0 && (!weak || token_like(&line[j + 1..j + 1 + k])) {
                            spans.push((j + 1, j + 1 + k));
                        }
                        i = j + 1 + k + 1;
                        continue;
                    }
                    None => line.len(),
                }
            }
            _ if weak => {
                let end = line[j..]
                    .find([' ', '\t', '&', ';', ',', '"', '\'', '<', '>', ')'])
                    .map_or(line.len(), |k| j + k);
                if !token_like(&line[j..end]) {
                    i = end.max(i + 1);
                    continue;
                }
                end
            }
            // `KEY: VALUE` (YAML, headers, prose): a passphrase may have
            // spaces, so the rest of the line.
            _ if sep == ':' => line.trim_end().len(),
            // `KEY=VALUE` ends at a space or a separator of a query string.
            _ => line[j..]
                .find([' ', '\t', '&', ';', ',', '"', '\''])
                .map_or(line.len(), |k| j + k),
        };
        if end > j {
            spans.push((j, end));
        }
        i = end.max(i + 1);
    }
}

/// `Bearer xyz` anywhere (a curl command line, a log).
pub(super) fn bearer(line: &str, spans: &mut Vec<(usize, usize)>) {
    let lower = line.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find("bearer ") {
        let at = from + i;
        from = at + "bearer ".len();
        let rest = &line[from..];
        let lead = rest.len() - rest.trim_start().len();
        let start = from + lead;
        let end = line[start..]
            .find([' ', '\t', '"', '\'', ','])
            .map_or(line.len(), |k| start + k);
        if end > start && !is_reference(&line[start..end]) {
            spans.push((start, end));
        }
    }
}

/// A value that names where the secret is rather than holding it:
/// `$TOKEN`, `${TOKEN}`, `$(cat f)`, optionally after a scheme (`Bearer
/// $TOKEN`) or in quotes.
fn is_reference(value: &str) -> bool {
    let v = value.trim_start_matches(['"', '\'']);
    let v = match v.split_once(' ') {
        Some((scheme, rest)) if scheme.chars().all(|c| c.is_ascii_alphabetic()) => {
            rest.trim_start()
        }
        _ => v,
    };
    v.starts_with('$')
}

/// `scheme://user:password@host`: the password.
pub(super) fn url_userinfo(line: &str, spans: &mut Vec<(usize, usize)>) {
    let mut from = 0;
    while let Some(i) = line[from..].find("://") {
        let start = from + i + 3;
        from = start;
        let auth_end = line[start..]
            .find(['/', ' ', '\t', '"', '\'', '<', '>', '?', '#'])
            .map_or(line.len(), |k| start + k);
        let Some(at) = line[start..auth_end].rfind('@') else {
            continue;
        };
        let userinfo = &line[start..start + at];
        match userinfo.find(':') {
            Some(c) if c + 1 < userinfo.len() => spans.push((start + c + 1, start + at)),
            // A token as the user name (`https://ghp_…@github.com`) is caught
            // by its shape; a plain user (`ssh://git@host`) is no secret.
            _ => {}
        }
    }
}

/// Services whose keys gitleaks' default rules look for beside their name.
/// Sorted, for a binary search.
pub(super) const SERVICES: &[&str] = &[
    "adafruit",
    "adobe",
    "airtable",
    "algolia",
    "alibaba",
    "anthropic",
    "artifactory",
    "asana",
    "atlassian",
    "aws",
    "azure",
    "beamer",
    "bitbucket",
    "bittrex",
    "cloudflare",
    "codecov",
    "cohere",
    "coinbase",
    "confluence",
    "confluent",
    "contentful",
    "databricks",
    "datadog",
    "digitalocean",
    "discord",
    "doppler",
    "drone",
    "dropbox",
    "etsy",
    "facebook",
    "fastly",
    "finicity",
    "finnhub",
    "flickr",
    "freshbooks",
    "gcp",
    "gitlab",
    "gitter",
    "gocardless",
    "hashicorp",
    "heroku",
    "hubspot",
    "huggingface",
    "intercom",
    "jfrog",
    "jira",
    "kraken",
    "kucoin",
    "launchdarkly",
    "linear",
    "linkedin",
    "lob",
    "looker",
    "mailchimp",
    "mailgun",
    "mapbox",
    "mattermost",
    "meraki",
    "messagebird",
    "netlify",
    "newrelic",
    "npm",
    "nuget",
    "nytimes",
    "okta",
    "openai",
    "plaid",
    "privateai",
    "pulumi",
    "pypi",
    "rapidapi",
    "sendbird",
    "sendgrid",
    "sentry",
    "shopify",
    "sidekiq",
    "slack",
    "snyk",
    "sonar",
    "sonarqube",
    "squarespace",
    "stripe",
    "sumologic",
    "telegram",
    "terraform",
    "travis",
    "twilio",
    "twitch",
    "twitter",
    "typeform",
    "vault",
    "yandex",
    "zendesk",
];

/// A key that names a credential only loosely: a part `key`, `keys`,
/// `creds`, `pat`, `sid`, or a service whose keys gitleaks' default rules
/// look for next to its name (`ADAFRUIT_IO_KEY=…`, `"heroku": "…"`). Its
/// value is redacted only when it looks like a credential ([`token_like`]).
pub(super) fn credential_hint_parts(parts: &[String]) -> bool {
    parts.iter().any(|p| {
        matches!(
            p.as_str(),
            "key" | "keys" | "creds" | "cred" | "pat" | "sid" | "pw" | "signature" | "sig"
        ) || SERVICES.binary_search(&p.as_str()).is_ok()
    })
}

/// Whether a value looks like a credential rather than a word: at least 16
/// characters of base64, hex or token alphabets with no space, letters and
/// digits both, and not a reference (`$X`) or a path.
fn token_like(v: &str) -> bool {
    let v = v.trim_matches(['"', '\'']);
    v.len() >= 16
        && !v.starts_with('$')
        && !v.starts_with('/')
        && v.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"_-+/=.~".contains(&c))
        && v.bytes().any(|c| c.is_ascii_digit())
        && v.bytes().any(|c| c.is_ascii_alphabetic())
}
