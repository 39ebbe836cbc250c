//! How one MCP server is reached and treated: transport, call timeout, startup strictness,
//! reconnect policy; the environment a stdio server starts with; `${VAR}` in HTTP headers.
//! `[mcp.servers.<name>]` becomes these types in `crate::section`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// One configured server.
#[derive(Clone, Debug, PartialEq)]
pub struct McpServerConfig {
    /// `[A-Za-z0-9_-]{1,32}`, unique; part of every public tool name.
    pub name: String,
    pub transport: McpTransport,
    /// How long one `tools/call` may take (default 60 s).
    pub tool_call_timeout: Duration,
    /// Whether a server that cannot start fails the host's startup (default: no, it is reported
    /// by `toolhost mcp-servers` and retried as a reconnect).
    pub fail_on_startup_error: bool,
    pub reconnect: ReconnectPolicy,
    /// Started on first use (a call naming one of its tools, or a status request that asks for
    /// every server) instead of with the host.
    pub lazy: bool,
}

impl McpServerConfig {
    pub fn new(name: impl Into<String>, transport: McpTransport) -> Self {
        McpServerConfig {
            name: name.into(),
            transport,
            tool_call_timeout: Duration::from_millis(60_000),
            fail_on_startup_error: false,
            reconnect: ReconnectPolicy::default(),
            lazy: false,
        }
    }
}

/// Where the server is.
#[derive(Clone, Debug, PartialEq)]
pub enum McpTransport {
    /// A child process speaking newline-delimited JSON-RPC on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Added to the scrubbed environment ([`scrubbed_env`]).
        env: BTreeMap<String, String>,
        /// The working directory (default: the first workspace root).
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        url: String,
        /// Values may hold `${VAR}`, expanded from toolhost's environment when connecting.
        headers: BTreeMap<String, String>,
    },
}

impl McpTransport {
    /// `stdio` or `streamable-http` (status output).
    pub fn kind(&self) -> &'static str {
        match self {
            McpTransport::Stdio { .. } => "stdio",
            McpTransport::Http { .. } => "streamable-http",
        }
    }
}

/// Reconnecting after an established connection closed. Attempt `k` (from 1) waits
/// `min(max_delay, initial_delay · 2^(k−1))`; the budget of `max_attempts` per outage resets
/// only once a connection has survived `max_delay`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReconnectPolicy {
    pub enabled: bool,
    pub initial_delay: Duration,
    pub max_delay: Duration,
    pub max_attempts: u32,
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        ReconnectPolicy {
            enabled: true,
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_millis(30_000),
            max_attempts: 10,
        }
    }
}

impl ReconnectPolicy {
    /// The wait before attempt `attempt` (1-based).
    pub fn delay(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
        self.initial_delay.saturating_mul(factor).min(self.max_delay)
    }
}

/// Whether a variable of toolhost's environment is withheld from stdio servers: credentials
/// (names containing KEY, PASSWORD, SECRET or TOKEN, any case) and toolhost's own `DSH_*`.
pub fn is_scrubbed(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "PASSWORD", "SECRET", "TOKEN"].iter().any(|word| upper.contains(word))
        || name.starts_with("DSH_")
}

/// The environment of a stdio server: `parent` without the scrubbed names, then `extra`
/// (the entry's own `env`, which may set anything, credentials included).
pub fn scrubbed_env(
    parent: impl IntoIterator<Item = (String, String)>,
    extra: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> =
        parent.into_iter().filter(|(name, _)| !is_scrubbed(name)).collect();
    env.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
    env
}

/// Expands `${VAR}` in `template` with `lookup`; `$${` is a literal `${`. An unset variable is an
/// error naming it (a header silently sent empty would fail later, far from the cause).
pub fn expand_env(
    template: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(literal) = after.strip_prefix("${") {
            out.push_str("${");
            rest = literal;
        } else if let Some(body) = after.strip_prefix('{') {
            let Some(end) = body.find('}') else {
                return Err(format!("unclosed \"${{\" in \"{template}\""));
            };
            let name = &body[..end];
            match lookup(name) {
                Some(value) => out.push_str(&value),
                None => return Err(format!("environment variable {name} is not set")),
            }
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_the_cap() {
        let policy = ReconnectPolicy::default();
        let delays: Vec<u64> = (1..=8).map(|k| policy.delay(k).as_millis() as u64).collect();
        assert_eq!(delays, [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000]);
        assert_eq!(policy.delay(200), Duration::from_millis(30_000));
    }

    #[test]
    fn credentials_and_dsh_variables_are_scrubbed() {
        let parent = [
            ("PATH", "/bin"),
            ("GITHUB_TOKEN", "t"),
            ("aws_secret_access_key", "s"),
            ("DB_PASSWORD", "p"),
            ("OPENAI_API_KEY", "k"),
            ("DSH_SESSION", "x"),
            ("HOME", "/root"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()));
        let extra = BTreeMap::from([("API_KEY".to_owned(), "given".to_owned())]);
        let env = scrubbed_env(parent, &extra);
        let names: Vec<&str> = env.keys().map(String::as_str).collect();
        assert_eq!(names, ["API_KEY", "HOME", "PATH"]);
    }

    #[test]
    fn headers_expand_environment_variables() {
        let lookup = |name: &str| (name == "TOKEN").then(|| "abc".to_owned());
        assert_eq!(expand_env("Bearer ${TOKEN}", lookup).as_deref(), Ok("Bearer abc"));
        assert_eq!(expand_env("$${TOKEN} $5", lookup).as_deref(), Ok("${TOKEN} $5"));
        assert_eq!(
            expand_env("${MISSING}", lookup),
            Err("environment variable MISSING is not set".to_owned())
        );
        assert!(expand_env("${OPEN", lookup).is_err());
    }
}
