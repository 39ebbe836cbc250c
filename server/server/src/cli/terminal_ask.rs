//! Questions asked on the terminal: `toolhost call ask_user_question …` (or `exit_plan_mode`) run
//! by a person at a terminal asks them there — the questions and numbered options on stderr, the
//! answer typed on stdin — instead of failing for want of an editor.

use std::io::{BufRead, Write};
use toolhost_contract::{
    BoxFuture, CancellationToken, QuestionError, QuestionRequest, UserQuestions, answers_of,
};
use toolhost_protocol::lsp_ext::{Answer, AskUserParams, AskUserResult, Question, QuestionIntent};

/// Asks on the controlling terminal (stderr and stdin).
pub struct TerminalAsker;

/// What the person typed for one question: option numbers (several, comma- or space-separated,
/// for a multi-select question) or free text; `None` at end of input (dismissed).
fn parse_answer(question: &Question, line: &str) -> Answer {
    let line = line.trim();
    let numbers: Option<Vec<usize>> = line
        .split([',', ' '])
        .filter(|p| !p.is_empty())
        .map(|p| p.parse::<usize>().ok().filter(|n| (1..=question.options.len()).contains(n)))
        .collect();
    let mut answer = Answer { id: question.id.clone(), selected: Vec::new(), custom: None };
    match numbers {
        Some(numbers) if !numbers.is_empty() && !question.options.is_empty() => {
            for n in numbers {
                let label = question.options[n - 1].label.clone();
                if !answer.selected.contains(&label) {
                    answer.selected.push(label);
                }
            }
        }
        _ if !line.is_empty() => answer.custom = Some(line.to_owned()),
        _ => {}
    }
    answer
}

fn ask_blocking(params: &AskUserParams) -> std::io::Result<AskUserResult> {
    let mut err = std::io::stderr().lock();
    if let (QuestionIntent::PlanReview, Some(plan)) = (params.intent, &params.plan) {
        writeln!(err, "\n{plan}\n")?;
    }
    let stdin = std::io::stdin();
    let mut answers = Vec::new();
    for question in &params.questions {
        match &question.header {
            Some(header) => writeln!(err, "? {header}: {}", question.question)?,
            None => writeln!(err, "? {}", question.question)?,
        }
        for (i, option) in question.options.iter().enumerate() {
            match &option.description {
                Some(d) => writeln!(err, "  {}. {} — {d}", i + 1, option.label)?,
                None => writeln!(err, "  {}. {}", i + 1, option.label)?,
            }
        }
        let prompt = match (question.options.is_empty(), question.multi_select) {
            (true, _) => "> ",
            (false, true) => "numbers (e.g. 1,3), or your own answer > ",
            (false, false) => "number, or your own answer > ",
        };
        write!(err, "{prompt}")?;
        err.flush()?;
        let mut line = String::new();
        if stdin.lock().read_line(&mut line)? == 0 {
            return Ok(AskUserResult::dismissed());
        }
        answers.push(parse_answer(question, &line));
    }
    Ok(AskUserResult { answers, dismissed: false })
}

impl UserQuestions for TerminalAsker {
    fn ask(
        &self,
        request: QuestionRequest,
        stop: CancellationToken,
    ) -> BoxFuture<'_, Result<Vec<Answer>, QuestionError>> {
        Box::pin(async move {
            let params = request.to_params();
            let asking = tokio::task::spawn_blocking(move || ask_blocking(&params));
            let could_not = |e: String| QuestionError::Cancelled(format!("could not ask: {e}"));
            let result = tokio::select! {
                answered = asking => match answered {
                    Ok(result) => result.map_err(|e| could_not(e.to_string()))?,
                    Err(e) => return Err(could_not(e.to_string())),
                },
                // The read cannot be interrupted; the call goes on without it.
                () = stop.cancelled() => return Err(could_not("withdrawn".to_owned())),
            };
            answers_of(result)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::parse_answer;
    use toolhost_protocol::lsp_ext::{Question, QuestionOption};

    fn question(multi: bool) -> Question {
        Question {
            id: "q".into(),
            question: "Which?".into(),
            header: None,
            options: ["a", "b", "c"]
                .iter()
                .map(|l| QuestionOption { label: (*l).into(), description: None })
                .collect(),
            multi_select: multi,
        }
    }

    #[test]
    fn numbers_pick_options_and_anything_else_is_free_text() {
        assert_eq!(parse_answer(&question(false), "2\n").selected, vec!["b".to_owned()]);
        assert_eq!(
            parse_answer(&question(true), "3, 1 3").selected,
            vec!["c".to_owned(), "a".to_owned()]
        );
        let own = parse_answer(&question(false), "neither, thanks");
        assert_eq!((own.selected.len(), own.custom.as_deref()), (0, Some("neither, thanks")));
        assert_eq!(parse_answer(&question(false), "7").custom.as_deref(), Some("7"));
        assert_eq!(parse_answer(&question(false), "  ").custom, None);
    }
}
