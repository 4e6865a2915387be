//! Answering a server's `elicitation/create`. Form mode: the server asks the person for a few
//! values described by a flat JSON schema. URL mode (2025-11-25): the server asks the person to
//! open a URL (to log in somewhere, pay, consent) and the answer is only whether they agreed.
//! The embedding application decides how to ask (a terminal prompt, a dialog, a policy);
//! switchboard declares the `elicitation` capability only when it has been given an
//! [`Elicitor`] (URL mode only when [`Elicitor::takes_urls`]), and declines otherwise.

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
    /// Form mode: the requested schema, an object whose properties are strings, numbers,
    /// integers, booleans or enums, each possibly with `title`, `description` and `default`.
    /// URL mode: `null`.
    pub schema: Value,
    /// URL mode: the http(s) URL the person is asked to open (show it whole; never open it
    /// without their consent). Other schemes are declined before any elicitor sees them.
    pub url: Option<String>,
    /// URL mode: the server's id for this elicitation.
    pub elicitation_id: Option<String>,
    /// When the question is one of a 2026-07-28 `input_required` round: the server's key for
    /// it (a host relaying the round to its own client keeps it).
    pub input_key: Option<String>,
}

impl ElicitationRequest {
    /// With the key of the `input_required` round it belongs to.
    pub fn with_input_key(mut self, key: Option<String>) -> Self {
        self.input_key = key;
        self
    }

    /// A form-mode request (for tests and for applications that relay requests).
    pub fn new(server: impl Into<String>, message: impl Into<String>, schema: Value) -> Self {
        ElicitationRequest {
            server: server.into(),
            message: message.into(),
            schema,
            url: None,
            elicitation_id: None,
            input_key: None,
        }
    }

    /// A URL-mode request.
    pub fn url(
        server: impl Into<String>,
        message: impl Into<String>,
        url: impl Into<String>,
        elicitation_id: impl Into<String>,
    ) -> Self {
        ElicitationRequest {
            server: server.into(),
            message: message.into(),
            schema: Value::Null,
            url: Some(url.into()),
            elicitation_id: Some(elicitation_id.into()),
            input_key: None,
        }
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
    /// Asks, and waits for the answer. In URL mode, `Accept` (its values are ignored) means
    /// the person agreed to open the URL.
    fn elicit(&self, request: ElicitationRequest) -> Pin<Box<dyn Future<Output = ElicitationAnswer> + Send + '_>>;

    /// Whether it can ask the person to open a URL (URL mode); `false` unless overridden.
    fn takes_urls(&self) -> bool {
        false
    }
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

/// What is wrong with `values` as an answer to `schema` (a form-mode requested schema): a
/// missing required property, one the schema does not have, a wrong type, a value outside
/// `enum`/`oneOf`/`anyOf` choices or outside `minimum`/`maximum`, `minLength`/`maxLength`,
/// `minItems`/`maxItems`. Empty when the answer may be sent. Each problem names the property.
pub fn check_answer(schema: &Value, values: &Map<String, Value>) -> Vec<String> {
    let props = schema.get("properties").and_then(Value::as_object);
    let mut problems = Vec::new();
    for name in schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
        if !values.contains_key(name) {
            problems.push(format!("`{name}` is required"));
        }
    }
    for (name, value) in values {
        match props.and_then(|p| p.get(name)) {
            None => problems.push(format!("`{name}` is not asked for")),
            Some(prop) => {
                if let Err(why) = check_value(prop, value) {
                    problems.push(format!("`{name}` {why}"));
                }
            }
        }
    }
    problems
}

/// The values a property allows, from `enum`, or the `const`s of `oneOf`/`anyOf`.
fn choices(prop: &Value) -> Option<Vec<&Value>> {
    if let Some(list) = prop.get("enum").and_then(Value::as_array) {
        return Some(list.iter().collect());
    }
    let options = prop.get("oneOf").or_else(|| prop.get("anyOf"))?.as_array()?;
    Some(options.iter().filter_map(|o| o.get("const")).collect())
}

fn check_value(prop: &Value, value: &Value) -> Result<(), String> {
    let kind = prop.get("type").and_then(Value::as_str).unwrap_or("");
    let type_ok = match kind {
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        _ => true,
    };
    if !type_ok {
        return Err(format!("must be of type {kind}, not {value}"));
    }
    if let Some(allowed) = choices(prop)
        && !allowed.contains(&value)
    {
        return Err(format!("must be one of {}", allowed.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ")));
    }
    let bound = |key: &str| prop.get(key).and_then(Value::as_f64);
    let outside = |n: f64, lo: &str, hi: &str| bound(lo).is_some_and(|m| n < m) || bound(hi).is_some_and(|m| n > m);
    if let Some(n) = value.as_f64()
        && outside(n, "minimum", "maximum")
    {
        let (lo, hi) = (bound("minimum"), bound("maximum"));
        return Err(format!("must be within {} and {}", show(lo, "-inf"), show(hi, "inf")));
    }
    if let Some(s) = value.as_str()
        && outside(s.chars().count() as f64, "minLength", "maxLength")
    {
        let (lo, hi) = (bound("minLength"), bound("maxLength"));
        return Err(format!("must be {} to {} characters long", show(lo, "0"), show(hi, "any")));
    }
    if let Some(items) = value.as_array() {
        if outside(items.len() as f64, "minItems", "maxItems") {
            let (lo, hi) = (bound("minItems"), bound("maxItems"));
            return Err(format!("must have {} to {} items", show(lo, "0"), show(hi, "any")));
        }
        if let Some(item) = prop.get("items") {
            for (i, v) in items.iter().enumerate() {
                check_value(item, v).map_err(|why| format!("item {i} {why}"))?;
            }
        }
    }
    Ok(())
}

fn show(bound: Option<f64>, none: &str) -> String {
    bound.map_or_else(|| none.to_string(), |b| b.to_string())
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

    #[test]
    fn answers_are_checked_against_the_schema() {
        // The shapes server-everything's `trigger-elicitation-request` asks for.
        let schema = json!({"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string", "maxLength": 5},
            "check": {"type": "boolean"},
            "integer": {"type": "integer", "minimum": 1, "maximum": 100},
            "friend": {"type": "string", "enum": ["Monica", "Joey"]},
            "hero": {"type": "string", "oneOf": [{"const": "hero-1", "title": "Superman"}]},
            "fish": {"type": "array", "minItems": 1, "maxItems": 2,
                "items": {"anyOf": [{"const": "fish-1"}, {"const": "fish-2"}, {"const": "fish-3"}]}},
            "instruments": {"type": "array", "items": {"type": "string", "enum": ["Guitar", "Piano"]}},
        }});
        let ok = |v: Value| check_answer(&schema, v.as_object().unwrap());
        assert_eq!(
            ok(json!({"name": "Ada", "check": true, "integer": 7, "friend": "Joey", "hero": "hero-1",
            "fish": ["fish-1", "fish-3"], "instruments": ["Piano"]})),
            Vec::<String>::new()
        );
        assert_eq!(ok(json!({"integer": 7.0, "name": "Ada"})), Vec::<String>::new(), "7.0 is an integer");
        assert_eq!(ok(json!({})), vec!["`name` is required"]);
        assert_eq!(ok(json!({"name": "Ada", "colour": 1})), vec!["`colour` is not asked for"]);
        assert_eq!(ok(json!({"name": 5})), vec!["`name` must be of type string, not 5"]);
        assert_eq!(ok(json!({"name": "Adalbert"})), vec!["`name` must be 0 to 5 characters long"]);
        assert_eq!(ok(json!({"name": "A", "integer": 101})), vec!["`integer` must be within 1 and 100"]);
        assert_eq!(ok(json!({"name": "A", "integer": 1.5})), vec!["`integer` must be of type integer, not 1.5"]);
        assert_eq!(ok(json!({"name": "A", "friend": "Ross"})), vec![r#"`friend` must be one of "Monica", "Joey""#]);
        assert_eq!(ok(json!({"name": "A", "hero": "hero-2"})), vec![r#"`hero` must be one of "hero-1""#]);
        assert_eq!(ok(json!({"name": "A", "fish": []})), vec!["`fish` must have 1 to 2 items"]);
        assert_eq!(
            ok(json!({"name": "A", "fish": ["fish-9"]})),
            vec![r#"`fish` item 0 must be one of "fish-1", "fish-2", "fish-3""#]
        );
        assert_eq!(
            ok(json!({"name": "A", "instruments": ["Drums"]})),
            vec![r#"`instruments` item 0 must be one of "Guitar", "Piano""#]
        );
    }
}
