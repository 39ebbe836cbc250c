//! The spill policy (docs/tools.md, "Spill"): a post-execute listener, registered outermost,
//! that applies each tool's declared [`SpillMode`] to its direct results. A tool with its own
//! spill stores its complete output in its own format and shows a page of it; then, for every
//! tool that does not bound its own output, Native text over the cap is stored whole and the
//! model gets its head, its tail and a locator it can `read` or `grep`.

use crate::execution::{CanonicalResult, Execution};
use crate::policy::{PostDecision, PostExecute, PostNext};
use toolhost_contract::spill::{
    OwnSpill, SpillHandle, SpillMode, SpillReceipt, SpillRequest, head_bytes, tail_bytes,
};
use toolhost_contract::{AdditionalContext, BoxFuture, ToolError};
use toolhost_protocol::{ContentBlock, ToolExecutionResult};

fn notice(omitted: usize, receipt: &SpillReceipt) -> String {
    format!(
        "(Omitted {omitted} bytes. Full formatted result stored at: {}. {})",
        receipt.locator, receipt.retrieval_hint
    )
}

/// The head…tail replacement of `text` bounded to `cap` bytes, or `None` when even the notice
/// does not fit (then the original is kept).
pub fn bounded_replacement(text: &str, cap: usize, receipt: &SpillReceipt) -> Option<String> {
    let total = text.len();
    // The notice's digits can only shrink once bytes are omitted, so `+ 2` covers the blank line.
    let reserve = notice(total, receipt).len() + 2;
    let budget = cap.saturating_sub(reserve);
    let head = head_bytes(text, budget.div_ceil(2));
    let tail = tail_bytes(text, budget / 2);
    let omitted = total - head.len() - tail.len();
    let note = notice(omitted, receipt);
    let replacement =
        if head.is_empty() && tail.is_empty() { note } else { format!("{head}{tail}\n\n{note}") };
    (replacement.len() <= cap && replacement.len() < total).then_some(replacement)
}

/// The spill policy. `max_inline_bytes` of 0 turns the generic spill off (tools' own spills
/// still apply).
pub struct SpillPolicy {
    max_inline_bytes: usize,
}

impl SpillPolicy {
    pub fn new(max_inline_bytes: usize) -> Self {
        SpillPolicy { max_inline_bytes }
    }

    /// The page a tool's own spill shows instead of its result, once the complete text is stored.
    async fn own_page(&self, exec: &Execution, own: OwnSpill) -> Option<Vec<ContentBlock>> {
        let (store, session_id) = (exec.capability::<SpillHandle>()?, exec.session_id.clone()?);
        let request = SpillRequest {
            session_id,
            tool_name: exec.name.clone(),
            call_id: exec.call_id.clone(),
            label: "result".to_owned(),
            suggested_name: own.file_name,
            content: own.content,
        };
        let receipt = store.save_text(request).await.ok()?;
        Some((own.page)(&receipt.locator, &receipt.retrieval_hint))
    }

    /// The generic spill of `blocks`: `None` keeps them as they are.
    async fn bounded(
        &self,
        exec: &Execution,
        blocks: &[ContentBlock],
    ) -> Option<Vec<ContentBlock>> {
        if self.max_inline_bytes == 0 {
            return None;
        }
        let text = blocks.iter().map(ContentBlock::as_text).collect::<Option<String>>()?;
        if text.len() <= self.max_inline_bytes {
            return None;
        }
        let (Some(store), Some(session_id)) =
            (exec.capability::<SpillHandle>(), exec.session_id.clone())
        else {
            tracing::warn!(tool = %exec.name, "oversized result kept inline: no spill store or session");
            return None;
        };
        let request = SpillRequest {
            session_id,
            tool_name: exec.name.clone(),
            call_id: exec.call_id.clone(),
            label: "result".to_owned(),
            suggested_name: format!("{}.txt", exec.name),
            content: text.clone(),
        };
        let receipt = match store.save_text(request).await {
            Ok(receipt) => receipt,
            Err(err) => {
                tracing::warn!(tool = %exec.name, %err, "oversized result kept inline");
                return None;
            }
        };
        bounded_replacement(&text, self.max_inline_bytes, &receipt)
            .map(|replacement| vec![ContentBlock::text(replacement)])
    }
}

impl PostExecute for SpillPolicy {
    fn decide<'a>(
        &'a self,
        exec: &'a Execution,
        result: &'a CanonicalResult,
        next: PostNext<'a>,
    ) -> BoxFuture<'a, Result<PostDecision, ToolError>> {
        Box::pin(async move {
            let decision = next.run().await?;
            let PostDecision::Accept { mut content, value: None, additional_contexts } = decision
            else {
                return Ok(decision);
            };
            let accept = |content: Option<Vec<ContentBlock>>,
                          additional_contexts: Vec<AdditionalContext>| {
                Ok(PostDecision::Accept { content, value: None, additional_contexts })
            };
            let mode = exec.tool().map_or(SpillMode::Generic, |tool| tool.spill_mode());
            if !exec.is_direct() || mode == SpillMode::Never {
                return accept(content, additional_contexts);
            }
            // A tool's own spill replaces only what nobody else replaced.
            if mode == SpillMode::Own
                && content.is_none()
                && let (Some(tool), ToolExecutionResult::Success { value, .. }) =
                    (exec.tool(), result.result())
                && let Some(own) = tool.spill_over(&exec.arguments, value)
            {
                content = self.own_page(exec, own).await;
            }
            let blocks = content.as_deref().unwrap_or(result.result().content());
            if let Some(bounded) = self.bounded(exec, blocks).await {
                content = Some(bounded);
            }
            accept(content, additional_contexts)
        })
    }
}

/// `[spill]` as one source gives it: the generic spill's cap in bytes (0: off).
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SpillSection {
    max_inline_bytes: Option<u64>,
}

impl toolhost_contract::config::Section for SpillSection {
    type Settings = u64;

    fn apply(self, max_inline_bytes: &mut u64, _layer: &mut toolhost_contract::config::Layer<'_>) {
        if let Some(v) = self.max_inline_bytes {
            *max_inline_bytes = v;
        }
    }

    /// A lower cap narrows what a result keeps inline; a higher one, or `0` (off), would let a
    /// workspace put results of any size into the model's context, so neither is taken.
    fn restrict_untrusted(&mut self, applied: &u64) -> Vec<String> {
        let mut dropped = toolhost_contract::config::Dropped::new();
        let applied = *applied;
        dropped.unless("spill.max_inline_bytes", &mut self.max_inline_bytes, |v| {
            *v > 0 && (applied == 0 || *v <= applied)
        });
        dropped.group()
    }
}

/// The generic spill's default cap (bytes of Native text a result keeps inline): 50,000, the cap
/// other hosts of these tools ship with, so a large `bash` or `web_fetch` result is cut at the
/// same byte everywhere (the notice's arithmetic depends on it) and models see familiar text.
pub const DEFAULT_MAX_INLINE_BYTES: u64 = 50_000;

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_contract::spill::RETRIEVAL_HINT;

    #[test]
    fn an_untrusted_source_may_lower_the_spill_cap_but_not_raise_or_disable_it() {
        use toolhost_contract::config::Section;
        for (asked, applied, kept) in
            [(1000, 50_000, true), (100_000, 50_000, false), (0, 50_000, false), (5, 0, true)]
        {
            let mut section = SpillSection { max_inline_bytes: Some(asked) };
            let dropped = section.restrict_untrusted(&applied);
            assert_eq!(section.max_inline_bytes.is_some(), kept, "{asked} over {applied}");
            assert_eq!(dropped.is_empty(), kept);
            if !kept {
                assert_eq!(dropped, ["spill.max_inline_bytes"]);
            }
        }
    }

    #[test]
    fn replacement_fits_the_cap() {
        let text = "x".repeat(10_000);
        let receipt = SpillReceipt {
            locator: "/spill/f.txt".into(),
            bytes: 10_000,
            retrieval_hint: RETRIEVAL_HINT.into(),
        };
        let rep = bounded_replacement(&text, 1000, &receipt).unwrap();
        assert!(rep.len() <= 1000, "{}", rep.len());
        assert!(rep.ends_with(&format!(
            "Full formatted result stored at: /spill/f.txt. {RETRIEVAL_HINT})"
        )));
        assert!(bounded_replacement(&text, 20, &receipt).is_none());
    }
}
