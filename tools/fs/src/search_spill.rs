//! Tool-owned spill of glob and grep (docs/tools.md, glob and grep): when a plain-accepted direct
//! result is over its item cap, the complete formatted list is stored and the page's footer names
//! its locator.

use crate::FsLimits;
use crate::glob::{GlobOutput, Recovery, render_glob};
use crate::grep::{GrepOutput, full_grep_text, render_grep};
use toolhost_contract::spill::{SpillHandle, SpillRequest};
use toolhost_contract::{
    BoxFuture, CanonicalResult, Execution, PostDecision, PostExecute, PostNext, ToolError,
};
use toolhost_protocol::{ContentBlock, ToolExecutionResult};

/// The post-execute listener (registered after the generic spill, so it runs inside it).
pub struct SearchSpill {
    limits: FsLimits,
}

impl SearchSpill {
    pub fn new(limits: FsLimits) -> Self {
        SearchSpill { limits }
    }

    /// The canonical value of a glob/grep result when it is over its item cap.
    fn over_cap(&self, name: &str, value: &serde_json::Value) -> Option<OverCap> {
        match name {
            "glob" => {
                let out: GlobOutput = serde_json::from_value(value.clone()).ok()?;
                (out.paths.len() as u64 > self.limits.glob_max_results)
                    .then_some(OverCap::Glob(out))
            }
            "grep" => {
                let out: GrepOutput = serde_json::from_value(value.clone()).ok()?;
                (out.matches.len() as u64 > self.limits.grep_max_matches)
                    .then_some(OverCap::Grep(out))
            }
            _ => None,
        }
    }
}

/// An over-cap search result.
enum OverCap {
    Glob(GlobOutput),
    Grep(GrepOutput),
}

impl OverCap {
    /// The complete formatted list to store.
    fn full_text(&self, limits: &FsLimits) -> String {
        match self {
            OverCap::Glob(out) => out.paths.join("\n"),
            OverCap::Grep(out) => full_grep_text(out, limits),
        }
    }

    fn file_name(&self) -> &'static str {
        match self {
            OverCap::Glob(_) => "glob-results.txt",
            OverCap::Grep(_) => "grep-results.txt",
        }
    }

    /// The capped page with the given recovery footer.
    fn render(&self, limits: &FsLimits, recovery: Recovery<'_>) -> String {
        match self {
            OverCap::Glob(out) => render_glob(out, limits, recovery),
            OverCap::Grep(out) => render_grep(out, limits, recovery),
        }
    }
}

impl PostExecute for SearchSpill {
    fn decide<'a>(
        &'a self,
        exec: &'a Execution,
        result: &'a CanonicalResult,
        next: PostNext<'a>,
    ) -> BoxFuture<'a, Result<PostDecision, ToolError>> {
        Box::pin(async move {
            let decision = next.run().await?;
            let plain_accept =
                matches!(&decision, PostDecision::Accept { content: None, value: None, .. });
            if !plain_accept || !exec.is_direct() {
                return Ok(decision);
            }
            let ToolExecutionResult::Success { value, .. } = result.result() else {
                return Ok(decision);
            };
            let Some(over) = self.over_cap(&exec.name, value) else {
                return Ok(decision);
            };
            let (Some(store), Some(session_id)) =
                (exec.capability::<SpillHandle>(), exec.session_id.clone())
            else {
                return Ok(decision);
            };
            let request = SpillRequest {
                session_id,
                tool_name: exec.name.clone(),
                call_id: exec.call_id.clone(),
                label: "result".to_owned(),
                suggested_name: over.file_name().to_owned(),
                content: over.full_text(&self.limits),
            };
            let Ok(receipt) = store.save_text(request).await else {
                return Ok(decision);
            };
            let text = over.render(
                &self.limits,
                Recovery::Stored { locator: &receipt.locator, hint: &receipt.retrieval_hint },
            );
            let PostDecision::Accept { additional_contexts, .. } = decision else {
                return Ok(decision);
            };
            Ok(PostDecision::Accept {
                content: Some(vec![ContentBlock::text(text)]),
                value: None,
                additional_contexts,
            })
        })
    }
}
