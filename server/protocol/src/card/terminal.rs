//! Terminal cards: what the card knows before a command runs, and its view parsed back from the
//! Native text (all the log keeps), so a replay shows the same exit pill, markers and spill links.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a terminal card knows before the command runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminalCall {
    pub command: String,
    /// The caller's label for the command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The working directory as the call gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// A terminal card's view: parsed back from the Native text (which is all the log keeps), so a
/// replay shows the same exit pill, markers and spill links as the live card.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminalView {
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The output without the final exit marker (empty while the command runs; clients append
    /// the `toolhost/callOutput` notifications they receive meanwhile).
    pub output: String,
    /// The exit pill: the exit code (0 when the text names none) …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// … or the signal that killed the command (`SIGTERM`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
    /// Files holding a stream's full output, when the text kept only its tail.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spill_paths: Vec<String>,
}

impl TerminalView {
    /// The view of a finished command from its Native text: a final `[killed by signal: X]` or
    /// `[exit code: N]` line becomes the pill and leaves the body (no marker ⇒ exit code 0).
    pub fn from_text(call: &TerminalCall, text: &str) -> TerminalView {
        let mut output = text;
        let (mut exit_code, mut signal) = (Some(0), None);
        if let Some((body, last)) = split_last_line(text) {
            if let Some(sig) =
                last.strip_prefix("[killed by signal: ").and_then(|r| r.strip_suffix(']'))
            {
                signal = Some(sig.to_owned());
                exit_code = None;
                output = body;
            } else if let Some(code) = last
                .strip_prefix("[exit code: ")
                .and_then(|r| r.strip_suffix(']'))
                .and_then(|c| c.parse::<i64>().ok())
            {
                exit_code = Some(code);
                output = body;
            }
        }
        let timed_out = output
            .lines()
            .any(|l| l.strip_prefix("[timed out after ").is_some_and(|r| r.ends_with("ms]")));
        let spill_paths = text
            .lines()
            .filter_map(|l| l.strip_prefix("[output truncated; full output: ")?.strip_suffix(']'))
            .filter(|p| p.starts_with('/'))
            .map(str::to_owned)
            .collect();
        TerminalView {
            command: call.command.clone(),
            description: call.description.clone(),
            cwd: call.cwd.clone(),
            output: output.to_owned(),
            exit_code,
            signal,
            timed_out,
            spill_paths,
        }
    }

    /// The view of a command that has not finished.
    pub fn running(call: &TerminalCall) -> TerminalView {
        TerminalView {
            command: call.command.clone(),
            description: call.description.clone(),
            cwd: call.cwd.clone(),
            output: String::new(),
            exit_code: None,
            signal: None,
            timed_out: false,
            spill_paths: Vec::new(),
        }
    }
}

/// `(everything before the last line, the last line)` when the text has more than one line.
fn split_last_line(text: &str) -> Option<(&str, &str)> {
    let at = text.rfind('\n')?;
    Some((&text[..at], &text[at + 1..]))
}
