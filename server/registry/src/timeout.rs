//! The built-in timeout policy: a `tools/execute` wrapper that installs each tool's declared
//! deadline and, when it fires, answers `TIMED_OUT` (after the body stopped).

use crate::execution::{Execution, failure_of};
use crate::policy::{AuthoredResult, ExecNext, ExecuteWrapper, WrapperOutcome};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio_util::sync::CancellationToken;
use toolhost_contract::{BoxFuture, ToolError};

/// The built-in timeout policy: a wrapper that installs the tool's deadline.
pub(crate) struct TimeoutWrapper;

impl ExecuteWrapper for TimeoutWrapper {
    fn wrap<'a>(
        &'a self,
        exec: &'a Execution,
        signal: CancellationToken,
        next: ExecNext<'a>,
    ) -> BoxFuture<'a, Result<WrapperOutcome, ToolError>> {
        Box::pin(async move {
            let Some(timeout) = exec.timeout else {
                return Ok(WrapperOutcome::Canonical(next.run(signal).await?));
            };
            let deadline = signal.child_token();
            let fired = Arc::new(AtomicBool::new(false));
            let timer = {
                let (deadline, fired) = (deadline.clone(), Arc::clone(&fired));
                tokio::spawn(async move {
                    tokio::time::sleep(timeout).await;
                    fired.store(true, Ordering::SeqCst);
                    deadline.cancel();
                })
            };
            let res = next.run(deadline).await;
            timer.abort();
            let res = res?;
            if fired.load(Ordering::SeqCst) {
                let result = failure_of(ToolError::timed_out(timeout.as_millis()));
                return Ok(WrapperOutcome::Authored(AuthoredResult {
                    result,
                    additional_contexts: res.additional_contexts,
                }));
            }
            Ok(WrapperOutcome::Canonical(res))
        })
    }
}
