//! Review mode of one session: the `ReviewGate` the file tools ask before writing. The question
//! goes to the session's [`Reviewer`] (an editor answering `toolhost/review`, docs/protocol.md)
//! when one is installed; with none, or no answer within the timeout, the configured fallback
//! applies. A cancelled call withdraws its question, and agents following the call over MCP hear
//! that it waits for review. The session also remembers how each running call is shown (its
//! title and caller), which its questions carry.

use crate::events::CallWatchers;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use toolhost_contract::config::{Dropped, Layer, Section};
use toolhost_contract::{BoxFuture, CancellationToken, ReviewGate, ReviewRequest, ReviewVerdict};
use toolhost_protocol::lsp_ext::{
    ReviewFallback, ReviewMode, ReviewParams, ReviewResult, ReviewSettings, SetReviewParams,
};

/// The default time a person has to answer (ten minutes).
pub const DEFAULT_TIMEOUT_MS: u64 = 600_000;

/// How a running call is shown in its question.
#[derive(Clone, Debug)]
struct CallLabel {
    title: String,
    caller: Option<String>,
    /// Reviewed whatever the session's mode.
    forced: bool,
}

/// Who answers reviews: the editor (`toolhost/review`), or a script in tests.
pub trait Reviewer: Send + Sync {
    /// Asks and waits for the answer; stops (withdrawing the question) when `stop` fires. An
    /// `Err` means the reviewer could not decide.
    fn review(
        &self,
        params: ReviewParams,
        stop: CancellationToken,
    ) -> BoxFuture<'_, Result<ReviewResult, String>>;
}

/// Review settings and the way to the reviewer, for one session.
pub struct SessionReview {
    settings: Mutex<ReviewSettings>,
    editor: Mutex<Option<Arc<dyn Reviewer>>>,
    calls: Mutex<HashMap<String, CallLabel>>,
    watchers: CallWatchers,
}

impl SessionReview {
    pub fn new(settings: ReviewSettings, watchers: CallWatchers) -> Self {
        SessionReview {
            settings: Mutex::new(settings),
            editor: Mutex::new(None),
            calls: Mutex::new(HashMap::new()),
            watchers,
        }
    }

    /// Who answers reviews: the editor that advertised `experimental.toolhost.review`, or none
    /// (the fallback applies at once).
    pub fn set_reviewer(&self, reviewer: Option<Arc<dyn Reviewer>>) {
        if let Ok(mut slot) = self.editor.lock() {
            *slot = reviewer;
        }
    }

    pub fn settings(&self) -> ReviewSettings {
        // Plain data: a panic elsewhere while holding the lock leaves it consistent.
        *self.settings.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `toolhost/setReview`: changes what the params name and returns the settings now.
    pub fn update(&self, params: &SetReviewParams) -> ReviewSettings {
        if let Ok(mut settings) = self.settings.lock() {
            if let Some(mode) = params.mode {
                settings.mode = mode;
            }
            if let Some(timeout) = params.timeout_ms {
                settings.timeout_ms = timeout.max(1);
            }
            if let Some(fallback) = params.fallback {
                settings.fallback = fallback;
            }
        }
        self.settings()
    }

    /// Remembers how a call is shown while it runs (its question carries the title and caller).
    pub fn begin_call(&self, call_id: &str, title: &str, caller: Option<&str>) {
        if let Ok(mut calls) = self.calls.lock() {
            let label = CallLabel {
                title: title.to_owned(),
                caller: caller.map(str::to_owned),
                forced: false,
            };
            calls.insert(call_id.to_owned(), label);
        }
    }

    /// How running call `call_id` is shown: its title and caller (questions carry them too).
    pub fn call_label(&self, call_id: &str) -> Option<(String, Option<String>)> {
        let calls = self.calls.lock().ok()?;
        calls.get(call_id).map(|l| (l.title.clone(), l.caller.clone()))
    }

    /// Reviews call `call_id`'s changes whatever the session's mode (the agent's `ask` mode).
    pub fn force_review(&self, call_id: &str) {
        if let Ok(mut calls) = self.calls.lock()
            && let Some(label) = calls.get_mut(call_id)
        {
            label.forced = true;
        }
    }

    /// Whether an editor answers reviews now.
    pub fn has_reviewer(&self) -> bool {
        self.editor.lock().is_ok_and(|e| e.is_some())
    }

    pub fn end_call(&self, call_id: &str) {
        if let Ok(mut calls) = self.calls.lock() {
            calls.remove(call_id);
        }
    }

    async fn ask(&self, request: ReviewRequest, cancel: CancellationToken) -> ReviewVerdict {
        let settings = self.settings();
        let Some(editor) = self.editor.lock().ok().and_then(|e| e.clone()) else {
            return ReviewVerdict::Unavailable { fallback: settings.fallback };
        };
        let label = self.calls.lock().ok().and_then(|c| c.get(&request.call_id).cloned());
        let hunks = request.hunks.len();
        let file = request.path.rsplit('/').next().unwrap_or(&request.path).to_owned();
        let params = ReviewParams {
            call_id: request.call_id.clone(),
            tool: request.tool,
            title: label.as_ref().map_or_else(|| request.path.clone(), |l| l.title.clone()),
            caller: label.and_then(|l| l.caller),
            path: request.path,
            before: request.before,
            after: request.after,
            hunks: request.hunks,
        };
        // Agents following the call (over MCP) quote this in their progress messages.
        let plural = if hunks == 1 { "" } else { "s" };
        self.watchers.forward(
            &request.call_id,
            &format!("waiting for the user's review of {hunks} hunk{plural} in {file}\n"),
        );
        // Stopping the wait (cancel or timeout) withdraws the question at the editor: the bridge
        // sends `$/cancelRequest` for it.
        let stop = cancel.child_token();
        let timer = {
            let stop = stop.clone();
            let timeout = Duration::from_millis(settings.timeout_ms);
            tokio::spawn(async move {
                tokio::time::sleep(timeout).await;
                stop.cancel();
            })
        };
        let answer = editor.review(params, stop.clone()).await;
        timer.abort();
        if cancel.is_cancelled() {
            return ReviewVerdict::Cancelled;
        }
        if stop.is_cancelled() {
            let (after_ms, fallback) = (settings.timeout_ms, settings.fallback);
            return ReviewVerdict::TimedOut { after_ms, fallback };
        }
        match answer {
            Ok(result) => {
                ReviewVerdict::Decided { accepted: result.accepted, comment: result.comment }
            }
            // The reviewer could not decide (an error reply, or the editor went away).
            Err(err) => {
                tracing::warn!("no answer to a review: {err}");
                ReviewVerdict::Unavailable { fallback: settings.fallback }
            }
        }
    }
}

impl ReviewGate for SessionReview {
    fn review(
        &self,
        request: ReviewRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, ReviewVerdict> {
        Box::pin(async move {
            if !request.required && !self.is_on(&request.call_id) {
                return ReviewVerdict::NotAsked;
            }
            self.ask(request, cancel).await
        })
    }

    fn is_on(&self, call_id: &str) -> bool {
        self.settings().mode == ReviewMode::Ask
            || self.calls.lock().is_ok_and(|c| c.get(call_id).is_some_and(|l| l.forced))
    }
}

/// The gate as a shared handle (the capability tools see, and what the server configures).
pub type SessionReviewHandle = Arc<SessionReview>;

/// The review settings a session starts with: off, ten minutes to answer, denied without one.
pub fn default_settings() -> ReviewSettings {
    ReviewSettings {
        mode: ReviewMode::Off,
        timeout_ms: DEFAULT_TIMEOUT_MS,
        fallback: ReviewFallback::Deny,
    }
}

/// `[review]` as one source gives it. Writing unreviewed changes (`fallback = "accept"`) weakens
/// review: only the user or a trusted workspace may choose it.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReviewSection {
    mode: Option<ReviewMode>,
    timeout_ms: Option<u64>,
    fallback: Option<ReviewFallback>,
}

impl Section for ReviewSection {
    type Settings = ReviewSettings;

    fn apply(self, review: &mut ReviewSettings, _layer: &mut Layer<'_>) {
        if let Some(mode) = self.mode {
            review.mode = mode;
        }
        if let Some(timeout) = self.timeout_ms {
            review.timeout_ms = timeout.max(1);
        }
        if let Some(fallback) = self.fallback {
            review.fallback = fallback;
        }
    }

    /// Review may be turned on (`mode = "ask"`), never off over the user's `ask`. Unreviewed
    /// writes (`fallback = "accept"`) are dropped. `timeout_ms` stays while nobody answering
    /// means denial; once the fallback is `accept`, a shorter wait would let changes through
    /// unreviewed sooner, so then only a longer one is taken.
    fn restrict_untrusted(&mut self, applied: &ReviewSettings) -> Vec<String> {
        let mut dropped = Dropped::new();
        dropped.unless("review.mode", &mut self.mode, |mode| {
            *mode == ReviewMode::Ask || applied.mode == ReviewMode::Off
        });
        dropped.unless("review.fallback", &mut self.fallback, |f| *f == ReviewFallback::Deny);
        let fallback = self.fallback.unwrap_or(applied.fallback);
        dropped.unless("review.timeout_ms", &mut self.timeout_ms, |ms| {
            fallback == ReviewFallback::Deny || *ms >= applied.timeout_ms
        });
        dropped.group()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(mode: ReviewMode, timeout_ms: u64, fallback: ReviewFallback) -> ReviewSection {
        ReviewSection { mode: Some(mode), timeout_ms: Some(timeout_ms), fallback: Some(fallback) }
    }

    #[test]
    fn an_untrusted_source_may_turn_review_on_but_never_off() {
        let on = ReviewSettings { mode: ReviewMode::Ask, ..default_settings() };
        let mut off = section(ReviewMode::Off, 1000, ReviewFallback::Deny);
        assert_eq!(off.restrict_untrusted(&on), ["review.mode"]);
        assert_eq!((off.mode, off.timeout_ms), (None, Some(1000)), "denial sooner only narrows");
        let mut ask = section(ReviewMode::Ask, 1000, ReviewFallback::Deny);
        assert!(ask.restrict_untrusted(&default_settings()).is_empty());
        assert_eq!(ask.mode, Some(ReviewMode::Ask));
    }

    #[test]
    fn an_untrusted_source_never_lets_changes_through_unreviewed() {
        let mut accept = section(ReviewMode::Ask, 1000, ReviewFallback::Accept);
        assert_eq!(accept.restrict_untrusted(&default_settings()), ["review.fallback"]);
        assert_eq!(accept.fallback, None);
        // Under the user's `accept`, a shorter wait means unreviewed writes sooner.
        let user = ReviewSettings { fallback: ReviewFallback::Accept, ..default_settings() };
        let mut shorter = ReviewSection { timeout_ms: Some(1000), ..Default::default() };
        assert_eq!(shorter.restrict_untrusted(&user), ["review.timeout_ms"]);
        let mut longer =
            ReviewSection { timeout_ms: Some(DEFAULT_TIMEOUT_MS * 2), ..Default::default() };
        assert!(longer.restrict_untrusted(&user).is_empty());
        // The workspace's own `deny` makes any wait safe.
        let mut deny = section(ReviewMode::Ask, 1000, ReviewFallback::Deny);
        assert!(deny.restrict_untrusted(&user).is_empty());
        assert_eq!(deny.timeout_ms, Some(1000));
    }
}
