//! The answer to a request with `"stream": false`: one JSON body, sent when the
//! last token is due.

use std::{sync::Arc, time::Instant};

use axum::{
    response::{IntoResponse, Response},
    Json,
};
use serde_json::{json, Value};
use tokio::sync::mpsc::UnboundedReceiver;

use super::{
    wire::{Endpoint, StreamPlan},
    AppState,
};
use crate::{
    engine::TokenDue,
    text::TokenText,
    truth::{Outcome, RequestTruth, TokenTruth},
};

pub(super) async fn whole_response(
    state: Arc<AppState>,
    plan: StreamPlan,
    mut truth: RequestTruth,
    mut rx: UnboundedReceiver<TokenDue>,
) -> Response {
    let answer = TokenText::answer(truth.id);
    let reasoning = TokenText::reasoning();
    let mut reasoning_text = String::new();
    let mut last_step = None;
    while let Some(due) = rx.recv().await {
        last_step = Some((due.step, due.due));
        let index = truth.tokens.len() as u64;
        truth
            .admitted_us
            .get_or_insert(state.truth.us(due.admitted));
        truth.tokens.push(TokenTruth {
            due_us: state.truth.us(due.due),
            written_us: None,
        });
        if index < plan.n_reasoning {
            reasoning_text.push_str(reasoning.token(index));
            truth.n_reasoning_tokens += 1;
        } else {
            truth.text.push_str(answer.token(index));
        }
        if due.last {
            break;
        }
    }
    if let Some((step, due)) = last_step {
        state.engine.released().wait_for(step).await;
        while Instant::now() < due {
            tokio::task::yield_now().await;
        }
    }
    let now = state.truth.now_us();
    for token in &mut truth.tokens {
        token.written_us = Some(now);
    }
    let n_generated = truth.tokens.len() as u64;
    let usage = plan.usage(n_generated, truth.prompt_tokens, truth.cached_tokens);
    let body = match plan.endpoint {
        Endpoint::Chat => {
            let mut message = json!({"role": "assistant", "content": truth.text});
            if !reasoning_text.is_empty() {
                message["reasoning_content"] = Value::String(reasoning_text);
            }
            json!({
                "id": plan.response_id, "object": "chat.completion", "created": plan.created, "model": plan.model,
                "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": if n_generated > 0 && !plan.ends_on_its_own { "length" } else { "stop" }}],
                "usage": usage,
            })
        }
        // (Only OpenAI's endpoints answer without a stream: `admit` refused the rest.)
        Endpoint::Completions | Endpoint::Responses | Endpoint::Messages => json!({
            "id": plan.response_id, "object": "text_completion", "created": plan.created, "model": plan.model,
            "choices": [{"index": 0, "text": truth.text, "logprobs": null, "finish_reason": if n_generated > 0 && !plan.ends_on_its_own { "length" } else { "stop" }}],
            "usage": usage,
        }),
    };
    truth.n_token_events = u64::from(n_generated > 0);
    truth.headers_us = Some(now);
    truth.outcome = Outcome::Completed;
    truth.ended_us = now;
    state.truth.push(truth);
    Json(body).into_response()
}
