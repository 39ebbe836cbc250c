//! How a host reaches the person through the editor connection: every call's cards, live output
//! and the session's notices as `toolhost/card`, `toolhost/callOutput` and `toolhost/notice`
//! ([`EditorListener`]); reviews as `toolhost/review` ([`EditorReviewer`]); questions as
//! `toolhost/askUser` ([`EditorAsker`]). A request the host stops waiting for (the call was
//! cancelled, the question timed out) is withdrawn with `$/cancelRequest` by the bridge.

use crate::editor::EditorBridge;
use toolhost_contract::{
    BoxFuture, CancellationToken, QuestionError, QuestionRequest, UserQuestions, answers_of,
};
use toolhost_host::HostListener;
use toolhost_host::review::Reviewer;
use toolhost_protocol::card::Card;
use toolhost_protocol::lsp_ext::{
    Answer, AskUserResult, CallOutputParams, NoticeParams, ReviewParams, ReviewResult, methods,
};

/// The editor hears every call's cards, live output and the notices.
pub struct EditorListener(pub EditorBridge);

impl HostListener for EditorListener {
    fn card(&self, card: &Card) {
        self.0.notify(methods::CARD, card);
    }

    fn call_output(&self, call_id: &str, text: &str) {
        let params = CallOutputParams { call_id: call_id.to_owned(), text: text.to_owned() };
        self.0.notify(methods::CALL_OUTPUT, &params);
    }

    fn notice(&self, notice: &NoticeParams) {
        self.0.notify(methods::NOTICE, notice);
    }
}

/// The editor answers reviews (it advertised `experimental.toolhost.review`).
pub struct EditorReviewer(pub EditorBridge);

impl Reviewer for EditorReviewer {
    fn review(
        &self,
        params: ReviewParams,
        stop: CancellationToken,
    ) -> BoxFuture<'_, Result<ReviewResult, String>> {
        Box::pin(async move {
            let answer = self.0.request(methods::REVIEW, &params, &stop).await;
            let value = answer.map_err(|e| format!("{} ({})", e.message, e.code))?;
            serde_json::from_value(value).map_err(|e| format!("unexpected result: {e}"))
        })
    }
}

/// The editor answers questions (it advertised `experimental.toolhost.askUser`).
pub struct EditorAsker(pub EditorBridge);

impl UserQuestions for EditorAsker {
    fn ask(
        &self,
        request: QuestionRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<Vec<Answer>, QuestionError>> {
        Box::pin(async move {
            let could_not =
                |e: String| QuestionError::Cancelled(format!("the editor could not ask: {e}"));
            let answer = self.0.request(methods::ASK_USER, &request.to_params(), &cancel).await;
            let value = answer.map_err(|e| could_not(format!("{} ({})", e.message, e.code)))?;
            let result: AskUserResult = serde_json::from_value(value)
                .map_err(|e| could_not(format!("unexpected result: {e}")))?;
            answers_of(result)
        })
    }
}
