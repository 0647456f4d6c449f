//! Secrets known by their shape: the token rules (gitleaks' prefixes and
//! alphabets), JWTs, Slack webhooks and the few shapes with no prefix.

use super::*;

/// `https://hooks.slack.com/services/T…/B…/…` and `…/workflows/…`.
pub(super) fn slack_webhook(line: &str, spans: &mut Vec<(usize, usize)>) {
    let mut from = 0;
    while let Some(i) = line[from..].find("hooks.slack.com/") {
        let start = from + i + "hooks.slack.com/".len();
        let end = line[start..]
            .find([' ', '\t', '"', '\'', '<', '>', ')'])
            .map_or(line.len(), |k| start + k);
        from = end.max(start);
        let path = &line[start..end];
        let cut = path.find('/').map_or(start, |k| start + k + 1);
        if end > cut {
            spans.push((cut, end));
        }
    }
}

/// Well-known token shapes, each starting at a word boundary.
pub(super) fn shapes(line: &str, spans: &mut Vec<(usize, usize)>) {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if !(b[i].is_ascii_alphanumeric()) || (i > 0 && is_token_byte(b[i - 1])) {
            i += 1;
            continue;
        }
        let start = i;
        let mut end = i;
        while end < b.len() && is_token_byte(b[end]) {
            end += 1;
        }
        let word = &line[start..end];
        if let Some(len) = shape(word, &line[start..]) {
            spans.push((start, start + len));
            i = start + len;
        } else {
            i = end;
        }
    }
}

/// The length of the token at the start of `word` (a run of token
/// characters) if it has a known shape; `rest` is the line from there, for
/// JWTs, whose parts are joined by dots.
fn shape(word: &str, rest: &str) -> Option<usize> {
    let body = |prefix: &str, min: usize| {
        word.strip_prefix(prefix)
            .filter(|b| b.len() >= min)
            .map(|_| word.len())
    };
    let upper_body = |prefix: &str, len: usize| {
        let b = word.strip_prefix(prefix)?;
        (b.len() >= len
            && b.as_bytes()[..len]
                .iter()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()))
        .then_some(prefix.len() + len)
    };
    for p in ["ghp_", "gho_", "ghs_", "ghr_", "ghu_"] {
        if let Some(n) = body(p, 30) {
            return Some(n);
        }
    }
    if let Some(n) = body("github_pat_", 22)
        .or_else(|| body("glpat-", 20))
        .or_else(|| body("npm_", 30))
        .or_else(|| body("AIza", 30))
        .or_else(|| body("sk_live_", 16))
        .or_else(|| body("rk_live_", 16))
        .or_else(|| body("sk_test_", 16))
        .or_else(|| body("sk-ant-", 20))
        .or_else(|| body("sk-", 20))
        .or_else(|| upper_body("AKIA", 16))
        .or_else(|| upper_body("ASIA", 16))
    {
        return Some(n);
    }
    for p in ["xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "xoxe-"] {
        if let Some(n) = body(p, 10) {
            return Some(n);
        }
    }
    if word.starts_with("eyJ") {
        return jwt(rest);
    }
    None
}

/// `eyJ….eyJ….sig`: three base64url parts joined by dots.
fn jwt(rest: &str) -> Option<usize> {
    let b = rest.as_bytes();
    let mut at = 0;
    for part in 0..3 {
        let start = at;
        while at < b.len() && (b[at].is_ascii_alphanumeric() || b[at] == b'_' || b[at] == b'-') {
            at += 1;
        }
        if at - start < 8 || (part == 1 && !rest[start..].starts_with("eyJ")) {
            return None;
        }
        if part < 2 {
            if b.get(at) != Some(&b'.') {
                return None;
            }
            at += 1;
        }
    }
    Some(at)
}

/// The characters a token of a [`Rule`] is made of after its prefix.
#[derive(Clone, Copy)]
pub(super) enum Set {
    /// Letters and digits.
    Alnum,
    /// Letters, digits, `_` and `-`.
    Word,
    /// Lowercase or uppercase hex digits.
    Hex,
    /// Uppercase letters and digits.
    Upper,
    /// Word characters and `.`, `=`, `+`, `/`, `~` (dotted or base64 tokens).
    Dotted,
    /// Word characters and `.` (no `/`, so a path never fits).
    Dots,
    /// Lowercase letters only (Hugging Face).
    Letters,
}

impl Set {
    fn has(self, c: u8) -> bool {
        match self {
            Set::Alnum => c.is_ascii_alphanumeric(),
            Set::Word => c.is_ascii_alphanumeric() || c == b'_' || c == b'-',
            Set::Hex => c.is_ascii_hexdigit(),
            Set::Upper => c.is_ascii_uppercase() || c.is_ascii_digit(),
            Set::Dotted => c.is_ascii_alphanumeric() || b"_-.=+/~".contains(&c),
            Set::Dots => c.is_ascii_alphanumeric() || b"_-.".contains(&c),
            Set::Letters => c.is_ascii_alphabetic(),
        }
    }
}

/// A token shape: a fixed prefix at the start of a word, then at least
/// `min` characters of `set` (exactly `min` when `exact`).
pub(super) struct Rule {
    /// What the docs call it (the gitleaks rule it stands for).
    pub(super) name: &'static str,
    pub(super) prefix: &'static str,
    pub(super) set: Set,
    pub(super) min: usize,
    pub(super) exact: bool,
}

const fn r(name: &'static str, prefix: &'static str, set: Set, min: usize) -> Rule {
    Rule {
        name,
        prefix,
        set,
        min,
        exact: false,
    }
}

const fn x(name: &'static str, prefix: &'static str, set: Set, len: usize) -> Rule {
    Rule {
        name,
        prefix,
        set,
        min: len,
        exact: true,
    }
}

/// Token shapes by prefix, after gitleaks' default rules (written here,
/// not copied; docs/gates.md lists them). The older shapes of [`shape`]
/// (GitHub, GitLab PATs, AWS access keys, Slack, Stripe, OpenAI and
/// Anthropic, Google API keys, npm, JWTs) stay there.
pub(super) const RULES: &[Rule] = &[
    r("1Password secret key", "A3-", Set::Word, 30),
    r(
        "1Password service account token",
        "ops_eyJ",
        Set::Dotted,
        50,
    ),
    x("Adobe client secret", "p8e-", Set::Alnum, 32),
    r("age secret key", "AGE-SECRET-KEY-1", Set::Upper, 58),
    x("Airtable personal access token", "pat", Set::Dots, 79),
    x("Alibaba access key id", "LTAI", Set::Alnum, 20),
    r("Artifactory API key", "AKCp", Set::Alnum, 69),
    r("Artifactory reference token", "cmVmd", Set::Alnum, 59),
    x("AWS access key (A3T)", "A3T", Set::Upper, 17),
    x("AWS access key (ABIA)", "ABIA", Set::Upper, 16),
    x("AWS access key (ACCA)", "ACCA", Set::Upper, 16),
    r("Amazon Bedrock API key", "ABSK", Set::Dotted, 100),
    r(
        "Amazon Bedrock short-lived API key",
        "bedrock-api-key-",
        Set::Dotted,
        20,
    ),
    x("ClickHouse Cloud secret key", "4b1d", Set::Alnum, 38),
    r("Clojars API token", "CLOJARS_", Set::Alnum, 60),
    r("Cloudflare origin CA key", "v1.0-", Set::Word, 150),
    r("Databricks API token", "dapi", Set::Hex, 32),
    r("DigitalOcean access token", "doo_v1_", Set::Hex, 64),
    r(
        "DigitalOcean personal access token",
        "dop_v1_",
        Set::Hex,
        64,
    ),
    r("DigitalOcean refresh token", "dor_v1_", Set::Hex, 64),
    r("Doppler API token", "dp.pt.", Set::Alnum, 40),
    r("Duffel API token (test)", "duffel_test_", Set::Dotted, 40),
    r("Duffel API token (live)", "duffel_live_", Set::Dotted, 40),
    r("Dynatrace API token", "dt0c01.", Set::Dotted, 80),
    r("EasyPost API token", "EZAK", Set::Alnum, 54),
    r("EasyPost test API token", "EZTK", Set::Alnum, 54),
    r("Facebook page access token (EAAC)", "EAAC", Set::Alnum, 100),
    r("Facebook page access token (EAAM)", "EAAM", Set::Alnum, 100),
    r(
        "Flutterwave secret or encryption key",
        "FLWSECK_TEST-",
        Set::Word,
        12,
    ),
    r("Flutterwave public key", "FLWPUBK_TEST-", Set::Word, 32),
    r("Fly.io access token (fo1_)", "fo1_", Set::Word, 43),
    r("Fly.io macaroon (fm1a_)", "fm1a_", Set::Dotted, 100),
    r("Fly.io macaroon (fm1r_)", "fm1r_", Set::Dotted, 100),
    r("Fly.io macaroon (fm2_)", "fm2_", Set::Dotted, 100),
    r("Frame.io API token", "fio-u-", Set::Dotted, 64),
    r("GitLab CI/CD job token", "glcbt-", Set::Word, 20),
    r("GitLab deploy token", "gldt-", Set::Word, 20),
    r("GitLab feature flag client token", "glffct-", Set::Word, 20),
    r("GitLab feed token", "glft-", Set::Word, 20),
    r("GitLab incoming mail token", "glimt-", Set::Word, 25),
    r("GitLab Kubernetes agent token", "glagent-", Set::Word, 50),
    r("GitLab OAuth application secret", "gloas-", Set::Word, 64),
    r("GitLab pipeline trigger token", "glptt-", Set::Hex, 40),
    r(
        "GitLab runner registration token",
        "GR1348941",
        Set::Word,
        20,
    ),
    r("GitLab runner authentication token", "glrt-", Set::Word, 20),
    r("GitLab SCIM token", "glsoat-", Set::Word, 20),
    r("GitLab session cookie", "_gitlab_session=", Set::Alnum, 32),
    r("Grafana API key", "eyJrIjoi", Set::Dotted, 70),
    r("Grafana Cloud API token", "glc_", Set::Dotted, 32),
    r("Grafana service account token", "glsa_", Set::Word, 40),
    x("Harness personal access token", "pat.", Set::Dots, 68),
    x("Harness service account token", "sat.", Set::Dots, 68),
    r("Heroku API key v2", "HRKU-AA", Set::Word, 58),
    x("Hugging Face access token", "hf_", Set::Letters, 34),
    x(
        "Hugging Face organization token",
        "api_org_",
        Set::Letters,
        34,
    ),
    x("Infracost API token", "ico-", Set::Alnum, 32),
    r("42 Intra client secret (ud)", "s-s4t2ud-", Set::Hex, 64),
    r("42 Intra client secret (af)", "s-s4t2af-", Set::Hex, 64),
    r("JWT, base64-encoded", "ZXlKaGJHY2lPaU", Set::Dotted, 40),
    r("Linear API key", "lin_api_", Set::Alnum, 40),
    r("Notion API token", "ntn_", Set::Alnum, 46),
    x("Octopus Deploy API key", "API-", Set::Upper, 26),
    r("OpenShift user token", "sha256~", Set::Word, 43),
    r("Perplexity API key", "pplx-", Set::Alnum, 48),
    r("PlanetScale API token", "pscale_tkn_", Set::Dotted, 32),
    r("PlanetScale OAuth token", "pscale_oauth_", Set::Dotted, 32),
    r("PlanetScale password", "pscale_pw_", Set::Dotted, 32),
    r("Postman API token", "PMAK-", Set::Word, 59),
    x("Prefect API token", "pnu_", Set::Alnum, 36),
    x("Pulumi API token", "pul-", Set::Hex, 40),
    r("PyPI upload token", "pypi-", Set::Word, 50),
    r("ReadMe API token", "rdme_", Set::Alnum, 70),
    r("RubyGems API token", "rubygems_", Set::Hex, 48),
    r("Scalingo API token", "tk-us-", Set::Word, 48),
    x("SendGrid API token", "SG.", Set::Dotted, 66),
    r("Sendinblue API token", "xkeysib-", Set::Word, 80),
    r("Sentry organization token", "sntrys_eyJ", Set::Dotted, 60),
    r("Sentry user token", "sntryu_", Set::Hex, 64),
    r("SettleMint application token", "sm_aat_", Set::Alnum, 16),
    r("SettleMint personal token", "sm_pat_", Set::Alnum, 16),
    r("SettleMint service token", "sm_sat_", Set::Alnum, 16),
    r("Shippo API token (live)", "shippo_live_", Set::Hex, 40),
    r("Shippo API token (test)", "shippo_test_", Set::Hex, 40),
    x("Shopify access token", "shpat_", Set::Hex, 32),
    x("Shopify custom app token", "shpca_", Set::Hex, 32),
    x("Shopify private app token", "shppa_", Set::Hex, 32),
    x("Shopify shared secret", "shpss_", Set::Hex, 32),
    r("Slack app-level token", "xapp-", Set::Word, 20),
    r("Slack legacy token (xoxo)", "xoxo-", Set::Word, 10),
    r("Sourcegraph access token", "sgp_", Set::Word, 40),
    r("Square access token (EAAA)", "EAAA", Set::Word, 22),
    r("Square access token (sq0atp-)", "sq0atp-", Set::Word, 22),
    r("Square OAuth secret (sq0csp-)", "sq0csp-", Set::Word, 22),
    r("Stripe restricted test key", "rk_test_", Set::Alnum, 10),
    r("Stripe secret key (prod)", "sk_prod_", Set::Alnum, 10),
    r("Stripe restricted key (prod)", "rk_prod_", Set::Alnum, 10),
    x("Twilio API key", "SK", Set::Hex, 32),
    r("HashiCorp Vault batch token", "hvb.", Set::Word, 138),
    r("HashiCorp Vault service token", "hvs.", Set::Word, 90),
    r("Google OAuth access token", "ya29.", Set::Word, 20),
    r("Google OAuth client secret", "GOCSPX-", Set::Word, 28),
    x("Mailgun API key", "key-", Set::Hex, 32),
];

/// The rules whose prefix starts with each byte, so a word is compared
/// with the few that could match it, never with all of them.
pub(super) fn rules_by_first() -> &'static [Vec<&'static Rule>] {
    static BY_FIRST: std::sync::OnceLock<Vec<Vec<&'static Rule>>> = std::sync::OnceLock::new();
    BY_FIRST.get_or_init(|| {
        let mut t: Vec<Vec<&'static Rule>> = vec![Vec::new(); 256];
        for r in RULES {
            if let Some(&c) = r.prefix.as_bytes().first() {
                t[c as usize].push(r);
            }
        }
        t
    })
}

/// The tokens of [`RULES`], each at the start of a word.
pub(super) fn prefixed(line: &str, spans: &mut Vec<(usize, usize)>) {
    let b = line.as_bytes();
    let by_first = rules_by_first();
    let mut i = 0;
    while i < b.len() {
        let candidates = &by_first[b[i] as usize];
        if candidates.is_empty() || (i > 0 && is_token_byte(b[i - 1])) {
            i += 1;
            continue;
        }
        let hit = candidates.iter().find_map(|r| {
            let body = line[i..].strip_prefix(r.prefix)?.as_bytes();
            let n = body.iter().take_while(|c| r.set.has(**c)).count();
            let fits = if r.exact { n == r.min } else { n >= r.min };
            fits.then_some(i + r.prefix.len() + n)
        });
        match hit {
            Some(end) => {
                spans.push((i, end));
                i = end;
            }
            None => i += 1,
        }
    }
    maxmind(line, spans);
}

/// `XXXXXX_<29>_mmk`: a MaxMind license key, known by its suffix.
fn maxmind(line: &str, spans: &mut Vec<(usize, usize)>) {
    let mut from = 0;
    while let Some(k) = line[from..].find("_mmk") {
        let end = from + k + 4;
        from = end;
        if end < 40 || line.as_bytes().get(end).is_some_and(|c| is_token_byte(*c)) {
            continue;
        }
        let start = end - 40;
        let t = &line.as_bytes()[start..end];
        if (start == 0 || !is_token_byte(line.as_bytes()[start - 1]))
            && t[6] == b'_'
            && t[36] == b'_'
            && t[..6]
                .iter()
                .chain(&t[7..36])
                .all(u8::is_ascii_alphanumeric)
        {
            spans.push((start, end));
        }
    }
}

/// A bare AWS secret access key: exactly 40 characters of base64 (no `=`)
/// standing alone, with upper and lower case letters and digits, not all
/// hex (so commit ids and hashes pass).
pub(super) fn bare_aws_secret(line: &str, spans: &mut Vec<(usize, usize)>) {
    let b = line.as_bytes();
    let in_run = |c: u8| c.is_ascii_alphanumeric() || c == b'/' || c == b'+';
    let mut i = 0;
    while i < b.len() {
        if !in_run(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && in_run(b[i]) {
            i += 1;
        }
        let t = &b[start..i];
        let alone = (start == 0 || !matches!(b[start - 1], b'_' | b'-' | b'=' | b'.'))
            && b.get(i)
                .is_none_or(|c| !matches!(c, b'_' | b'-' | b'=' | b'.'));
        if t.len() == 40
            && alone
            && t.iter().any(u8::is_ascii_uppercase)
            && t.iter().any(u8::is_ascii_lowercase)
            && t.iter().any(u8::is_ascii_digit)
            && !t.iter().all(u8::is_ascii_hexdigit)
            && t[0] != b'/'
        {
            spans.push((start, i));
        }
    }
}

/// An Azure AD client secret: three characters, a digit, `Q~`, then 31 to
/// 34 of `[A-Za-z0-9_~.-]`.
pub(super) fn azure_client_secret(line: &str, spans: &mut Vec<(usize, usize)>) {
    let b = line.as_bytes();
    let set = |c: u8| c.is_ascii_alphanumeric() || b"_~.-".contains(&c);
    let mut from = 0;
    while let Some(k) = line[from..].find("Q~") {
        let q = from + k;
        from = q + 2;
        if q < 4 || !b[q - 1].is_ascii_digit() || !b[q - 4..q - 1].iter().all(|c| set(*c)) {
            continue;
        }
        let n = b[q + 2..].iter().take_while(|c| set(**c)).count();
        if (31..=34).contains(&n) {
            spans.push((q - 4, q + 2 + n));
        }
    }
}

/// The token shapes the redactor knows, for docs and tests: the names of
/// `RULES` and the older shapes.
pub fn shape_names() -> Vec<&'static str> {
    RULES
        .iter()
        .map(|r| r.name)
        .chain([
            "MaxMind license key",
            "AWS secret access key (bare)",
            "Azure AD client secret",
        ])
        .collect()
}
