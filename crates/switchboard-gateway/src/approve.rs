//! A call the policy asks about, put to the downstream client that made it: a form-mode
//! elicitation with one property, `decision`, a `oneOf` of the four answers with their titles
//! (`allow_once` "Allow once", `allow_session` "Allow for this session", `allow_always`
//! "Always allow", `deny` "Deny"), the tool, its arguments and the rule in the message. It
//! rides the call's own question channel, so a client of an earlier revision is asked on the
//! call's stream and a 2026-07-28 client gets an `input_required` round. Declined, cancelled,
//! or an answer that is not one of the four: deny.

use rmcp::model::JsonObject;
use serde_json::{Value, json};
use switchboard::elicitation::{ElicitationAnswer, ElicitationRequest};
use switchboard::policy::{Approval, ApprovalRequest, Approver, BoxFuture};
use tokio::sync::oneshot;

use crate::relay::Ask;

/// Asks through one call's question channel.
pub(crate) struct AskClient {
    asks: crate::relay::AskSender,
}

impl AskClient {
    pub(crate) fn new(asks: crate::relay::AskSender) -> Self {
        AskClient { asks }
    }
}

/// The form: one required `decision`.
pub(crate) fn decision_schema() -> Value {
    let choices: Vec<Value> = Approval::ALL.iter().map(|a| json!({"const": a.as_str(), "title": a.title()})).collect();
    json!({
        "type": "object",
        "properties": {"decision": {"type": "string", "title": "Decision", "oneOf": choices}},
        "required": ["decision"],
    })
}

/// What the person is told: the tool, the arguments (long values cut), the rule.
pub(crate) fn message(request: &ApprovalRequest) -> String {
    let mut text = request.summary();
    if let Some(args) = &request.arguments {
        let shown = serde_json::to_string_pretty(&cut(&Value::Object(args.clone()))).unwrap_or_default();
        text.push_str("\n\nArguments:\n");
        text.push_str(&shown);
    }
    text
}

fn cut(v: &Value) -> Value {
    match v {
        Value::String(s) if s.chars().count() > 200 => {
            Value::String(format!("{}… ({} characters)", s.chars().take(200).collect::<String>(), s.chars().count()))
        }
        Value::Array(a) => Value::Array(a.iter().map(cut).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), cut(v))).collect()),
        other => other.clone(),
    }
}

/// The answer in a form's content.
pub(crate) fn decision(content: &JsonObject) -> Approval {
    content.get("decision").and_then(Value::as_str).and_then(Approval::parse).unwrap_or(Approval::Deny)
}

impl Approver for AskClient {
    fn approve<'a>(&'a self, request: ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            let question = ElicitationRequest::new(request.server.clone(), message(&request), decision_schema());
            let (reply, answer) = oneshot::channel();
            if self.asks.send(Box::new(Ask::Elicit { request: question, reply })).is_err() {
                return Approval::Deny;
            }
            match answer.await {
                Ok(ElicitationAnswer::Accept(content)) => decision(&content),
                _ => Approval::Deny,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_offers_the_four_answers_with_their_titles() {
        let schema = decision_schema();
        let one_of = schema["properties"]["decision"]["oneOf"].as_array().cloned().unwrap_or_default();
        let pairs: Vec<(String, String)> = one_of
            .iter()
            .map(|c| (c["const"].as_str().unwrap_or("").into(), c["title"].as_str().unwrap_or("").into()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("allow_once".into(), "Allow once".into()),
                ("allow_session".into(), "Allow for this session".into()),
                ("allow_always".into(), "Always allow".into()),
                ("deny".into(), "Deny".into()),
            ]
        );
        let mut content = JsonObject::new();
        content.insert("decision".into(), json!("allow_session"));
        assert_eq!(decision(&content), Approval::AllowSession);
        content.insert("decision".into(), json!("yes please"));
        assert_eq!(decision(&content), Approval::Deny);
    }
}
