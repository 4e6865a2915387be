//! An answer switchboard did not take: a message over `max_message_bytes`, a line or a body that
//! is not one JSON-RPC message. The transport fails the request it answered with an error of
//! its own making instead of closing (which is what rmcp does with a bad message), and the hub
//! tells that error from a server's own refusal by [`Refusal::of`]: not the server's "no", but
//! ours, so the caller hears that the answer came and was not taken.

use rmcp::model::{ErrorCode, ErrorData};

/// Why an answer was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    why: String,
}

/// The JSON-RPC error code of a refusal (in the range JSON-RPC leaves to implementations).
pub const REFUSED: i32 = -32001;

/// How a refusal's message starts, after which comes why.
const SAID: &str = "switchboard did not take the server's answer: ";

impl Refusal {
    pub(crate) fn new(why: impl Into<String>) -> Refusal {
        Refusal { why: why.into() }
    }

    /// The error answer that stands for the refused one.
    pub(crate) fn error(&self) -> ErrorData {
        ErrorData::new(ErrorCode(REFUSED), self.to_string(), None)
    }

    /// The refusal an error answer stands for, if it is one of ours (a server's own -32001
    /// with other words is the server's).
    pub(crate) fn of(error: &ErrorData) -> Option<Refusal> {
        if error.code.0 != REFUSED {
            return None;
        }
        error.message.strip_prefix(SAID).map(Refusal::new)
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{SAID}{}", self.why)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_told_from_a_server_s_own_error() {
        let ours = Refusal::new("a line over max_message_bytes (10 bytes)");
        assert_eq!(Refusal::of(&ours.error()), Some(ours.clone()));
        assert_eq!(
            ours.error().message,
            "switchboard did not take the server's answer: a line over max_message_bytes (10 bytes)"
        );
        // The same code with the server's own words, and our words with another code.
        assert_eq!(Refusal::of(&ErrorData::new(ErrorCode(REFUSED), "busy", None)), None);
        assert_eq!(Refusal::of(&ErrorData::new(ErrorCode(-32603), ours.error().message, None)), None);
    }
}
