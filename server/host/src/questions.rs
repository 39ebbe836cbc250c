//! The question channel of a session ([`SessionQuestions`], the `UserQuestions` capability tools
//! get): a call's questions go to the route it came with — the MCP client that made it, when that
//! client can elicit — else to the session's asker (the editor's `toolhost/askUser`, an ACP
//! client, a terminal), else nowhere (`NO_PROVIDER`). Every route implements the same
//! `UserQuestions` seam; this is only the router in front of them. Questions carry the asking
//! call's title and caller, share review's timeout, and are withdrawn when the call is cancelled.

use crate::events::CallWatchers;
use crate::review::SessionReviewHandle;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;
use toolhost_contract::{
    BoxFuture, CancellationToken, QuestionError, QuestionRequest, QuestionsHandle, UserQuestions,
};
use toolhost_protocol::lsp_ext::Answer;

/// The question channel of one session.
pub struct SessionQuestions {
    /// Who answers when a call has no route of its own (the editor, an ACP client, a terminal).
    asker: Mutex<Option<QuestionsHandle>>,
    /// Per call: the MCP client that made it, when it can elicit.
    routes: Mutex<HashMap<String, QuestionsHandle>>,
    review: SessionReviewHandle,
    watchers: CallWatchers,
}

fn no_provider() -> QuestionError {
    QuestionError::NoProvider(
        "nobody can answer questions here: no connected editor answers them and the calling MCP \
         client does not support elicitation"
            .to_owned(),
    )
}

impl SessionQuestions {
    pub fn new(review: SessionReviewHandle, watchers: CallWatchers) -> Self {
        SessionQuestions {
            asker: Mutex::new(None),
            routes: Mutex::new(HashMap::new()),
            review,
            watchers,
        }
    }

    /// Who answers the session's questions when a call has no route of its own (the editor that
    /// advertised `experimental.toolhost.askUser`, an ACP client, a terminal), or nobody.
    pub fn set_asker(&self, asker: Option<QuestionsHandle>) {
        *self.asker.lock().unwrap_or_else(PoisonError::into_inner) = asker;
    }

    /// Sends call `call_id`'s questions to `route` first (an MCP client's elicitation).
    pub fn route(&self, call_id: &str, route: QuestionsHandle) {
        self.routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(call_id.to_owned(), route);
    }

    pub fn unroute(&self, call_id: &str) {
        self.routes.lock().unwrap_or_else(PoisonError::into_inner).remove(call_id);
    }
}

impl UserQuestions for SessionQuestions {
    fn ask(
        &self,
        mut request: QuestionRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<Vec<Answer>, QuestionError>> {
        Box::pin(async move {
            if request.questions.is_empty() {
                return Err(QuestionError::EmptyQuestions);
            }
            if let Some((title, caller)) = self.review.call_label(&request.call_id) {
                request.title = Some(title);
                request.caller = caller;
            }
            let timeout_ms = self.review.settings().timeout_ms;
            let stop = cancel.child_token();
            let timer = {
                let stop = stop.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(timeout_ms)).await;
                    stop.cancel();
                })
            };
            // Agents following the call (over MCP) quote this in their progress messages.
            let what = if request.plan.is_some() { "review of the plan" } else { "answer" };
            self.watchers.forward(&request.call_id, &format!("waiting for the user's {what}\n"));
            let route = self
                .routes
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&request.call_id)
                .cloned();
            let mut answer = Err(no_provider());
            if let Some(route) = route {
                answer = route.ask(request.clone(), stop.clone()).await;
            }
            let asker = self.asker.lock().unwrap_or_else(PoisonError::into_inner).clone();
            if matches!(answer, Err(QuestionError::NoProvider(_)))
                && !stop.is_cancelled()
                && let Some(asker) = asker
            {
                answer = asker.ask(request, stop.clone()).await;
            }
            timer.abort();
            if cancel.is_cancelled() {
                return Err(QuestionError::Aborted);
            }
            if stop.is_cancelled() {
                return Err(QuestionError::Cancelled(format!(
                    "the question was not answered within {} s",
                    timeout_ms.div_ceil(1000)
                )));
            }
            answer
        })
    }
}
