//! How a run fails: a kind (which limit, or the program's own exception) and a message, turned
//! into the one typed error `run_code` returns (`CODE_RUN_FAILED`, docs/tools.md).

use toolhost_contract::ToolError;

/// The error's class name and code.
pub const ERROR_NAME: &str = "CodeRunFailedError";
pub const ERROR_CODE: &str = "CODE_RUN_FAILED";

/// Why a run failed. The name (`as_str`) is the `<kind>` in the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// The program threw (or its TypeScript is not erasable, or it does not parse).
    Exception,
    /// The compute or the wall-clock limit (the message names which).
    Timeout,
    /// The call was cancelled.
    Abort,
    /// The program's thread died.
    WorkerExit,
    /// The program's result is not lossless JSON.
    InvalidOutput,
    /// Logs, result and nested values passed the output budget.
    OutputLimit,
    /// The JavaScript heap passed the memory limit.
    Memory,
    /// Recursion passed the stack limit.
    Stack,
    /// The program made more nested calls than allowed.
    CallLimit,
}

impl FailureKind {
    pub const ALL: [FailureKind; 9] = [
        FailureKind::Exception,
        FailureKind::Timeout,
        FailureKind::Abort,
        FailureKind::WorkerExit,
        FailureKind::InvalidOutput,
        FailureKind::OutputLimit,
        FailureKind::Memory,
        FailureKind::Stack,
        FailureKind::CallLimit,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Exception => "exception",
            FailureKind::Timeout => "timeout",
            FailureKind::Abort => "abort",
            FailureKind::WorkerExit => "worker-exit",
            FailureKind::InvalidOutput => "invalid-output",
            FailureKind::OutputLimit => "output-limit",
            FailureKind::Memory => "memory",
            FailureKind::Stack => "stack",
            FailureKind::CallLimit => "call-limit",
        }
    }

    /// The kind of a `run_code` failure, read back from its error (the message's stable
    /// `code run failed (<kind>)` prefix; the error info carries only the class and the code).
    pub fn of(error: &ToolError) -> Option<FailureKind> {
        if error.code() != Some(ERROR_CODE) {
            return None;
        }
        let rest = error.message.strip_prefix("code run failed (")?;
        let kind = &rest[..rest.find(')')?];
        FailureKind::ALL.into_iter().find(|k| k.as_str() == kind)
    }
}

impl std::fmt::Display for FailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed run: its kind and what happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub kind: FailureKind,
    pub message: String,
}

impl Failure {
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Failure { kind, message: message.into() }
    }

    /// The tool's error: `code run failed (<kind>): <message>`, then what the program had
    /// logged, so a failed run still shows its output.
    pub fn into_tool_error(self, logs: &[String]) -> ToolError {
        let mut message = format!("code run failed ({}): {}", self.kind, self.message);
        if !logs.is_empty() {
            message.push_str("\nCaptured output:\n");
            message.push_str(&logs.join("\n"));
        }
        ToolError::typed(ERROR_NAME, ERROR_CODE, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_carries_the_kind_and_the_logs() {
        let err = Failure::new(FailureKind::OutputLimit, "too much")
            .into_tool_error(&["a".to_owned(), "b".to_owned()]);
        assert_eq!(err.message, "code run failed (output-limit): too much\nCaptured output:\na\nb");
        assert_eq!(err.code(), Some("CODE_RUN_FAILED"));
        assert_eq!(FailureKind::of(&err), Some(FailureKind::OutputLimit));
        let err = Failure::new(FailureKind::Exception, "Error: x").into_tool_error(&[]);
        assert_eq!(err.message, "code run failed (exception): Error: x");
        assert_eq!(FailureKind::of(&err), Some(FailureKind::Exception));
        assert_eq!(FailureKind::of(&ToolError::plain("code run failed (stack): x")), None);
    }
}
