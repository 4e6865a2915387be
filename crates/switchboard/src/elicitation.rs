//! Answering a server's `elicitation/create` (form mode): the server asks the person for a few
//! values described by a flat JSON schema. The embedding application decides how to ask (a
//! terminal prompt, a dialog, a policy); switchboard declares the `elicitation` capability only
//! when it has been given an [`Elicitor`], and declines for it otherwise.

use std::future::Future;
use std::pin::Pin;

use serde_json::{Map, Value};

/// A server's request for input.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ElicitationRequest {
    /// The server asking.
    pub server: String,
    /// What it says to the person.
    pub message: String,
    /// The requested schema: an object whose properties are strings, numbers, integers,
    /// booleans or enums, each possibly with `title`, `description` and `default`.
    pub schema: Value,
}

impl ElicitationRequest {
    /// A request (for tests and for applications that relay requests).
    pub fn new(server: impl Into<String>, message: impl Into<String>, schema: Value) -> Self {
        ElicitationRequest { server: server.into(), message: message.into(), schema }
    }
}

/// The person's answer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ElicitationAnswer {
    /// Values for the schema's properties.
    Accept(Map<String, Value>),
    /// The person said no; the operation may go on without the values.
    Decline,
    /// The person dismissed the whole operation.
    Cancel,
}

/// Something that can ask the person. Implemented by the CLI (on a terminal) and by
/// embedding applications.
pub trait Elicitor: Send + Sync + 'static {
    /// Asks, and waits for the answer.
    fn elicit(&self, request: ElicitationRequest) -> Pin<Box<dyn Future<Output = ElicitationAnswer> + Send + '_>>;
}

/// Accepts every request with each property's schema default (SEP-1034), for unattended use.
#[derive(Debug, Clone, Copy, Default)]
pub struct AcceptDefaults;

impl Elicitor for AcceptDefaults {
    fn elicit(&self, request: ElicitationRequest) -> Pin<Box<dyn Future<Output = ElicitationAnswer> + Send + '_>> {
        Box::pin(async move { ElicitationAnswer::Accept(schema_defaults(&request.schema)) })
    }
}

/// The `default` of every property that has one (for an enum without a default, none).
pub fn schema_defaults(schema: &Value) -> Map<String, Value> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props.iter().filter_map(|(name, prop)| Some((name.clone(), prop.get("default")?.clone()))).collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_are_taken_from_the_schema() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
            "free": {"type": "string"},
        }});
        let d = schema_defaults(&schema);
        assert_eq!(d.get("name"), Some(&json!("John Doe")));
        assert_eq!(d.get("age"), Some(&json!(30)));
        assert_eq!(d.get("status"), Some(&json!("active")));
        assert!(!d.contains_key("free"));
    }
}
