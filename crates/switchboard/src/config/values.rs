//! Reading one field's value of a server entry: each kind of value with the message that
//! names the field when it is not that kind.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value};

use super::{MAX_SHUTDOWN_GRACE, MAX_TIMEOUT, MESSAGE_BYTES_RANGE};

pub(super) type FieldError = (Option<String>, String);

pub(super) fn err<T>(field: &str, msg: impl Into<String>) -> Result<T, FieldError> {
    Err((Some(field.to_string()), msg.into()))
}

/// Takes a field out of the entry by any of its names; two aliases set at once is an error.
pub(super) fn take(obj: &mut Map<String, Value>, names: &[&str]) -> Result<Option<(String, Value)>, FieldError> {
    let mut found: Option<(String, Value)> = None;
    for n in names {
        if let Some(v) = obj.remove(*n) {
            if let Some((prev, _)) = &found {
                return err(n, format!("both `{prev}` and `{n}` are set; keep one"));
            }
            found = Some(((*n).to_string(), v));
        }
    }
    Ok(found)
}

pub(super) fn as_string(field: &str, v: Value) -> Result<String, FieldError> {
    match v {
        Value::String(s) => Ok(s),
        other => err(field, format!("must be a string, found {}", kind(&other))),
    }
}

pub(super) fn as_bool(field: &str, v: Value) -> Result<bool, FieldError> {
    match v {
        Value::Bool(b) => Ok(b),
        other => err(field, format!("must be true or false, found {}", kind(&other))),
    }
}

pub(super) fn as_ms(field: &str, v: Value) -> Result<Duration, FieldError> {
    let max = MAX_TIMEOUT.as_millis();
    match v.as_u64() {
        Some(ms) if ms > 0 && u128::from(ms) <= max => Ok(Duration::from_millis(ms)),
        Some(0) | None => err(field, format!("must be a positive number of milliseconds, found {}", excerpt_value(&v))),
        Some(_) => err(field, format!("must be at most {max} milliseconds (7 days), found {}", excerpt_value(&v))),
    }
}

pub(super) fn as_grace(field: &str, v: Value) -> Result<Duration, FieldError> {
    let max = MAX_SHUTDOWN_GRACE.as_millis();
    match v.as_u64() {
        Some(ms) if u128::from(ms) <= max => Ok(Duration::from_millis(ms)),
        _ => err(field, format!("must be 0 to {max} milliseconds, found {}", excerpt_value(&v))),
    }
}

pub(super) fn as_bytes(field: &str, v: Value) -> Result<usize, FieldError> {
    match v.as_u64().and_then(|n| usize::try_from(n).ok()) {
        Some(n) if MESSAGE_BYTES_RANGE.contains(&n) => Ok(n),
        _ => err(
            field,
            format!(
                "must be {} to {} bytes, found {}",
                MESSAGE_BYTES_RANGE.start(),
                MESSAGE_BYTES_RANGE.end(),
                excerpt_value(&v)
            ),
        ),
    }
}

/// A value for a message: its JSON, cut to a short excerpt.
pub(super) fn excerpt_value(v: &Value) -> String {
    crate::text::excerpt(&v.to_string(), 40)
}

pub(super) fn as_strings(field: &str, v: Value) -> Result<Vec<String>, FieldError> {
    match v {
        Value::Array(items) => {
            items.into_iter().enumerate().map(|(i, item)| as_string(&format!("{field}[{i}]"), item)).collect()
        }
        other => err(field, format!("must be an array of strings, found {}", kind(&other))),
    }
}

pub(super) fn as_string_map(field: &str, v: Value) -> Result<BTreeMap<String, String>, FieldError> {
    let Value::Object(map) = v else {
        return err(field, format!("must be an object of strings, found {}", kind(&v)));
    };
    map.into_iter()
        .map(|(k, v)| {
            let s = match v {
                Value::String(s) => s,
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                other => return err(&format!("{field}.{k}"), format!("must be a string, found {}", kind(&other))),
            };
            Ok((k, s))
        })
        .collect()
}

pub(super) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
