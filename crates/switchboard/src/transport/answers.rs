//! Answers to `tools/call` decoded straight into their type.
//!
//! rmcp decodes every message it receives through two untagged enums: the message is buffered,
//! tried as a request, then as a response whose result is tried against each of the nineteen
//! result types in order (`tools/call` is the sixteenth), every failed try building an error.
//! For the answers that are the host's hot path that search is most of the decoding. A
//! transport that saw the request go out knows what answers it: [`ToolCalls`] remembers the
//! ids of the `tools/call` requests in flight, and [`decode`] reads an answer to one of them
//! as a response carrying a [`CallToolResult`], with rmcp's own checks (no `method`, no
//! `error`; a result that is not `complete` is not a `CallToolResult`). Anything else (an
//! error, `input_required`, a task, an answer to any other request) is decoded by rmcp as
//! before, so the outcome is the same, only cheaper.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::RoleClient;
use rmcp::model::{
    CallToolResult, ClientNotification, ClientRequest, JsonRpcMessage, JsonRpcResponse, JsonRpcVersion2_0, RequestId,
    ServerResult,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use serde::Deserialize;

/// More ids than this in flight and the set is cleared: ids whose answer never came (a
/// cancelled call whose server said nothing) must not pile up. Clearing only sends the next
/// answers down the general path.
const KEPT: usize = 4096;

/// The ids of the `tools/call` requests sent and not yet answered.
#[derive(Debug, Clone, Default)]
pub(crate) struct ToolCalls(Arc<Mutex<HashSet<RequestId>>>);

impl ToolCalls {
    /// Notes a message on its way out: a `tools/call` is remembered, a cancellation forgets.
    pub(crate) fn sent(&self, message: &TxJsonRpcMessage<RoleClient>) {
        match message {
            JsonRpcMessage::Request(r) if matches!(r.request, ClientRequest::CallToolRequest(_)) => {
                let mut ids = self.ids();
                if ids.len() >= KEPT {
                    ids.clear();
                }
                ids.insert(r.id.clone());
            }
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = &c.params.request_id
                {
                    self.ids().remove(id);
                }
            }
            _ => {}
        }
    }

    /// Whether `id` is a `tools/call` in flight (forgotten once asked: one answer each).
    fn take(&self, id: &RequestId) -> bool {
        self.ids().remove(id)
    }

    fn ids(&self) -> std::sync::MutexGuard<'_, HashSet<RequestId>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The shape rmcp accepts for a response, with the result's type known.
#[derive(Deserialize)]
struct ToolAnswer {
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    result: CallToolResult,
    #[serde(default)]
    method: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
}

/// `line` decoded as the answer to a `tools/call` in flight, when it is one whose result is a
/// complete `CallToolResult`; `None` sends it down rmcp's general decoding. `id` reads the
/// line's top-level id cheaply (asked only while calls are in flight).
pub(crate) fn decode(
    calls: &ToolCalls,
    id: impl FnOnce(&[u8]) -> Option<RequestId>,
    line: &[u8],
) -> Option<RxJsonRpcMessage<RoleClient>> {
    if calls.ids().is_empty() {
        return None;
    }
    let id = id(line)?;
    if !calls.take(&id) {
        return None;
    }
    let answer: ToolAnswer = serde_json::from_slice(line).ok()?;
    if answer.method.is_some() || answer.error.is_some() {
        return None;
    }
    Some(JsonRpcMessage::Response(JsonRpcResponse {
        jsonrpc: answer.jsonrpc,
        id: answer.id,
        result: ServerResult::CallToolResult(answer.result),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{CallToolRequest, CallToolRequestParams, NumberOrString};

    fn call(id: i64) -> TxJsonRpcMessage<RoleClient> {
        JsonRpcMessage::request(
            ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParams::new("echo"))),
            RequestId::Number(id),
        )
    }

    fn general(line: &[u8]) -> RxJsonRpcMessage<RoleClient> {
        serde_json::from_slice(line).unwrap_or_else(|e| panic!("rmcp decodes {}: {e}", String::from_utf8_lossy(line)))
    }

    /// Every answer the fast path takes is decoded exactly as rmcp decodes it; every other one
    /// is left to rmcp.
    #[test]
    fn the_same_message_as_rmcp_or_none() {
        let taken: &[&[u8]] = &[
            br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true,"_meta":{"a":1}}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","structuredContent":null}}"#,
            br#"{"id":1,"result":{"content":[{"type":"text","text":"x"}],"structuredContent":{"n":2}},"jsonrpc":"2.0"}"#,
        ];
        for line in taken {
            let calls = ToolCalls::default();
            calls.sent(&call(1));
            let fast = decode(&calls, |_| Some(RequestId::Number(1)), line).expect("taken");
            assert_eq!(
                serde_json::to_value(&fast).ok(),
                serde_json::to_value(general(line)).ok(),
                "{}",
                String::from_utf8_lossy(line)
            );
            assert!(decode(&calls, |_| Some(RequestId::Number(1)), line).is_none(), "one answer per call");
        }
        let left: &[&[u8]] = &[
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{}}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{"content":[]},"error":{"code":1,"message":"both"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","result":{"content":[]}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        ];
        for line in left {
            let calls = ToolCalls::default();
            calls.sent(&call(1));
            assert!(
                decode(&calls, |_| Some(RequestId::Number(1)), line).is_none(),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn only_answers_to_tool_calls_in_flight() {
        let line = br#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#;
        let calls = ToolCalls::default();
        assert!(decode(&calls, |_| Some(RequestId::Number(2)), line).is_none(), "never sent");
        calls.sent(&call(2));
        let cancel = JsonRpcMessage::notification(ClientNotification::CancelledNotification(
            rmcp::model::CancelledNotification::new(rmcp::model::CancelledNotificationParam::new(
                Some(NumberOrString::Number(2)),
                None,
            )),
        ));
        calls.sent(&cancel);
        assert!(decode(&calls, |_| Some(RequestId::Number(2)), line).is_none(), "cancelled");
        let list = JsonRpcMessage::request(ClientRequest::ListToolsRequest(Default::default()), RequestId::Number(3));
        calls.sent(&list);
        let tools = br#"{"jsonrpc":"2.0","id":3,"result":{"tools":[],"resultType":"complete"}}"#;
        assert!(decode(&calls, |_| Some(RequestId::Number(3)), tools).is_none(), "not a tools/call");
    }
}
