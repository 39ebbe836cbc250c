//! A hosted agent's terminals (`terminal/create`, `terminal/output`, `terminal/wait_for_exit`,
//! `terminal/kill`, `terminal/release`) run on toolhost's shell: each is a `bash` call by the
//! agent — in its own process group, under the shell's sandbox and limits, its card a live
//! terminal card with Stop — whose live output is kept here for the agent to read.

use super::{Chat, HostedError};
use agent_client_protocol::v1::schema::{CreateTerminalRequest, TerminalExitStatus};
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::{mpsc, watch};
use toolhost_host::{CallRequest, Lane};

/// What the agent gets when it asks for no limit: the most output kept per terminal.
const DEFAULT_OUTPUT_LIMIT: usize = 1 << 20;

/// One terminal: its call, its output so far, and its exit once known.
struct Terminal {
    call_id: String,
    /// The agent killed it (a stopped call's card reports no signal of its own).
    killed: Arc<std::sync::atomic::AtomicBool>,
    output: Arc<Mutex<Output>>,
    exit: watch::Receiver<Option<TerminalExitStatus>>,
}

/// Output kept within the agent's byte limit: the newest bytes, cut at a character boundary.
#[derive(Default)]
struct Output {
    text: String,
    limit: usize,
    truncated: bool,
}

impl Output {
    fn push(&mut self, more: &str) {
        self.text.push_str(more);
        if self.text.len() > self.limit {
            let mut cut = self.text.len() - self.limit;
            while !self.text.is_char_boundary(cut) {
                cut += 1;
            }
            self.text.drain(..cut);
            self.truncated = true;
        }
    }
}

/// The terminals of one chat, by id.
#[derive(Default)]
pub(crate) struct Terminals {
    open: Mutex<HashMap<String, Terminal>>,
    next: std::sync::atomic::AtomicU64,
}

/// `command args…` as one shell line, each word quoted.
fn shell_line(request: &CreateTerminalRequest) -> String {
    let quote = |word: &str| format!("'{}'", word.replace('\'', r"'\''"));
    let mut line = String::new();
    for var in &request.env {
        line.push_str(&format!("export {}={}; ", var.name, quote(&var.value)));
    }
    if request.args.is_empty() {
        // A command without arguments may be a whole shell line.
        line.push_str(&request.command);
    } else {
        line.push_str(&quote(&request.command));
        for arg in &request.args {
            line.push(' ');
            line.push_str(&quote(arg));
        }
    }
    line
}

impl Chat {
    /// `terminal/create`: starts the command as a `bash` call and answers its terminal id.
    pub(crate) fn create_terminal(
        &self,
        request: &CreateTerminalRequest,
    ) -> Result<String, HostedError> {
        let terminals = &self.terminals;
        let id = format!(
            "term_{}",
            terminals.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
        );
        let line = shell_line(request);
        let mut arguments = json!({
            "command": line,
            "description": format!("{}'s terminal", self.spec.title),
            // As long as the shell allows: the agent decides when to kill it.
            "timeoutMs": 1e12,
        });
        if let Some(cwd) = &request.cwd {
            arguments["workdir"] = json!(cwd.to_string_lossy());
        }
        let limit = request.output_byte_limit.map_or(DEFAULT_OUTPUT_LIMIT, |l| l as usize);
        let output = Arc::new(Mutex::new(Output { limit, ..Output::default() }));
        let (live_tx, mut live_rx) = mpsc::unbounded_channel::<String>();
        let call = CallRequest::new("bash", arguments)
            .by(Some(self.spec.title.clone()))
            .in_lane(Lane::new())
            .following(Some(live_tx));
        let handle = self.host.call(call).map_err(|e| {
            HostedError::new("AGENT_ERROR", format!("cannot start the terminal: {e}"))
        })?;
        let call_id = handle.call_id().to_owned();
        let (exit_tx, exit_rx) = watch::channel(None);
        let killed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let was_killed = Arc::clone(&killed);
        let kept = Arc::clone(&output);
        tokio::spawn(async move {
            while let Some(text) = live_rx.recv().await {
                kept.lock().unwrap_or_else(PoisonError::into_inner).push(&text);
            }
        });
        let kept = Arc::clone(&output);
        tokio::spawn(async move {
            let status = match handle.finish().await {
                Ok(outcome) => {
                    let card = outcome.card();
                    let view = card.terminal.as_ref();
                    // The final card's output is authoritative (live text may have been cut).
                    if let Some(view) = view {
                        let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
                        let truncated = kept.truncated;
                        kept.text.clear();
                        kept.push(&view.output);
                        kept.truncated |= truncated;
                    }
                    let code = view.and_then(|v| v.exit_code).and_then(|c| u32::try_from(c).ok());
                    let signal = view.and_then(|v| v.signal.clone());
                    let killed = was_killed.load(std::sync::atomic::Ordering::SeqCst);
                    let (code, signal) = match (code, signal, outcome.finalized.result.is_error()) {
                        // Stopped by the agent's kill: toolhost killed the command's group.
                        (None, None, _) if killed => (None, Some("SIGKILL".to_owned())),
                        (None, None, false) => (Some(0), None),
                        (code, signal, _) => (code, signal),
                    };
                    TerminalExitStatus::new().exit_code(code).signal(signal)
                }
                Err(_) => TerminalExitStatus::new().signal(Some("SIGKILL".to_owned())),
            };
            let _ = exit_tx.send(Some(status));
        });
        let terminal = Terminal { call_id, killed, output, exit: exit_rx };
        terminals.open.lock().unwrap_or_else(PoisonError::into_inner).insert(id.clone(), terminal);
        Ok(id)
    }

    fn terminal<T>(&self, id: &str, read: impl FnOnce(&Terminal) -> T) -> Result<T, HostedError> {
        let open = self.terminals.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.get(id)
            .map(read)
            .ok_or_else(|| HostedError::new("AGENT_ERROR", format!("no terminal {id}")))
    }

    /// `terminal/output`: the output so far, whether it was cut, and the exit once known.
    pub(crate) fn terminal_output(
        &self,
        id: &str,
    ) -> Result<(String, bool, Option<TerminalExitStatus>), HostedError> {
        self.terminal(id, |t| {
            let output = t.output.lock().unwrap_or_else(PoisonError::into_inner);
            (output.text.clone(), output.truncated, t.exit.borrow().clone())
        })
    }

    /// `terminal/wait_for_exit`.
    pub(crate) async fn terminal_exit(&self, id: &str) -> Result<TerminalExitStatus, HostedError> {
        let mut exit = self.terminal(id, |t| t.exit.clone())?;
        let status = exit
            .wait_for(Option::is_some)
            .await
            .map_err(|_| HostedError::new("AGENT_ERROR", format!("terminal {id} went away")))?
            .clone();
        Ok(status.unwrap_or_default())
    }

    /// `terminal/kill`: stops the command (its call is cancelled: the group is killed); the
    /// terminal stays readable.
    pub(crate) fn kill_terminal(&self, id: &str) -> Result<(), HostedError> {
        let call_id = self.terminal(id, |t| {
            t.killed.store(true, std::sync::atomic::Ordering::SeqCst);
            t.call_id.clone()
        })?;
        self.host.cancel_call(&call_id);
        Ok(())
    }

    /// `terminal/release`: kills the command if it still runs and forgets the terminal.
    pub(crate) fn release_terminal(&self, id: &str) -> Result<(), HostedError> {
        self.kill_terminal(id)?;
        self.terminals.open.lock().unwrap_or_else(PoisonError::into_inner).remove(id);
        Ok(())
    }

    /// Every terminal of the chat is released (its agent went away).
    pub(crate) fn release_all_terminals(&self) {
        let ids: Vec<String> = self
            .terminals
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect();
        for id in ids {
            let _ = self.release_terminal(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_keeps_the_newest_bytes_within_the_limit() {
        let mut output = Output { limit: 5, ..Output::default() };
        output.push("abc");
        output.push("défg");
        assert!(output.truncated);
        assert!(output.text.len() <= 5, "{:?}", output.text);
        assert!(output.text.ends_with("fg"));
    }

    #[test]
    fn arguments_are_quoted_and_a_bare_command_is_a_shell_line() {
        let request: CreateTerminalRequest = serde_json::from_value(json!({
            "sessionId": "s", "command": "printf", "args": ["%s\\n", "it's"],
            "env": [{"name": "A", "value": "1 2"}]
        }))
        .expect("request");
        assert_eq!(shell_line(&request), r"export A='1 2'; 'printf' '%s\n' 'it'\''s'");
        let bare: CreateTerminalRequest =
            serde_json::from_value(json!({"sessionId": "s", "command": "echo hi && exit 3"}))
                .expect("request");
        assert_eq!(shell_line(&bare), "echo hi && exit 3");
    }
}
