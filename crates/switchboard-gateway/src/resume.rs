//! A request whose response stream broke with the replica serving it, asked for again.
//!
//! A legacy client (2025-11-25) whose response stream of a request breaks resumes it with a
//! `GET` carrying the last event's id (`Last-Event-ID`, SEP-1699). When the stream broke
//! because the process serving it died, no process has that stream any more: rmcp answers such
//! a resumption with an empty stream, and the client's request waits until its own timeout (a
//! minute in the TypeScript SDK) without learning anything. So every event id of a request's
//! response stream is tagged with the replica that serves it and the request's JSON-RPC id
//! (`<rmcp's id>~<replica>~<the id's JSON in hex>`); a resumption that names another replica
//! (reached here because that one is gone: the session's requests go to the replica serving
//! it) is answered with a JSON-RPC error for that id at once, and one that names this replica
//! is given to rmcp with its own id, and tagged again. When rmcp has no such stream any more
//! (a replica in between, passing the session's requests on, died and cut it: rmcp dropped the
//! request with its stream), its empty answer gets the same error, so the client stops asking.
//!
//! The session's own stream (the `GET` without a request, for what the server sends
//! unprompted) is tagged with the replica alone (`<rmcp's id>~<replica>`): asked for again with
//! another replica's id (the session was taken over), it is opened afresh, since that id means
//! nothing to this replica's rmcp (which would refuse it once it has sent the session anything,
//! and the client, refused twice, stops listening); what was sent meanwhile is caught up by the
//! session's catch-up (`session/memory.rs`: the lists that changed, the subscriptions).

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::BodyExt;
use http_body_util::combinators::BoxBody;

/// What follows rmcp's id in a tagged event id.
const SEP: char = '~';

/// A tagged `Last-Event-ID`: rmcp's id, the replica, the request's JSON-RPC id (as JSON).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Tagged<'a> {
    pub(crate) rmcp: &'a str,
    pub(crate) replica: &'a str,
    pub(crate) request: String,
}

/// Reads a `Last-Event-ID` this front tagged (`None`: not one of ours).
pub(crate) fn parse(last: &str) -> Option<Tagged<'_>> {
    let mut parts = last.splitn(3, SEP);
    let (rmcp, replica, hex) = (parts.next()?, parts.next()?, parts.next()?);
    let bytes: Option<Vec<u8>> =
        (0..hex.len()).step_by(2).map(|i| hex.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok())).collect();
    let request = String::from_utf8(bytes?).ok()?;
    serde_json::from_str::<serde_json::Value>(&request).ok()?;
    Some(Tagged { rmcp, replica, request })
}

/// Reads a `Last-Event-ID` of a session's own stream this front tagged: rmcp's id and the
/// replica (`None`: not one of ours, or a request's).
pub(crate) fn parse_stream(last: &str) -> Option<(&str, &str)> {
    let (rmcp, replica) = last.split_once(SEP)?;
    (!replica.contains(SEP) && !replica.is_empty()).then_some((rmcp, replica))
}

/// The tag for the events of a session's own stream: `~<replica>`.
pub(crate) fn stream_tag(replica: &str) -> String {
    format!("{SEP}{replica}")
}

/// The tag for a request's events: `~<replica>~<the id's JSON in hex>`.
pub(crate) fn tag(replica: &str, request: &str) -> String {
    let hex: String = request.bytes().map(|b| format!("{b:02x}")).collect();
    format!("{SEP}{replica}{SEP}{hex}")
}

/// `body` with `suffix` added to every event's id (rmcp writes each event whole in one frame,
/// its `id: ` line after `data: `).
pub(crate) fn tagged(body: BoxBody<Bytes, Infallible>, suffix: String) -> BoxBody<Bytes, Infallible> {
    body.map_frame(move |frame| match frame.into_data() {
        Ok(data) => http_body::Frame::data(with_suffix(data, &suffix)),
        Err(frame) => frame,
    })
    .boxed()
}

fn with_suffix(data: Bytes, suffix: &str) -> Bytes {
    let at =
        if data.starts_with(b"id: ") { Some(0) } else { data.windows(5).position(|w| w == b"\nid: ").map(|i| i + 1) };
    let Some(start) = at else { return data };
    let Some(end) = data[start..].iter().position(|b| *b == b'\n').map(|e| start + e) else { return data };
    let mut out = Vec::with_capacity(data.len() + suffix.len());
    out.extend_from_slice(&data[..end]);
    out.extend_from_slice(suffix.as_bytes());
    out.extend_from_slice(&data[end..]);
    Bytes::from(out)
}

/// The event that tells a client its request's stream cannot be resumed.
fn lost_event(tagged: &Tagged<'_>, why: &str) -> Bytes {
    let id: serde_json::Value = serde_json::from_str(&tagged.request).unwrap_or_default();
    let message = format!("{why}: whether this request took effect is unknown");
    let error = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": message}});
    Bytes::from(format!("event: message\ndata: {error}\n\n"))
}

/// rmcp's answer to a resumption here, ending with the request's error when it is empty
/// (rmcp no longer has the stream).
pub(crate) fn or_lost(body: BoxBody<Bytes, Infallible>, tagged: &Tagged<'_>) -> BoxBody<Bytes, Infallible> {
    let last =
        lost_event(tagged, "this request's stream was cut (a replica passing it on stopped) and cannot be resumed");
    let frames =
        futures::stream::unfold((body.into_data_stream(), Some(last), false), |(mut body, last, seen)| async move {
            use futures::StreamExt;
            match body.next().await {
                Some(Ok(data)) => Some((Ok::<_, Infallible>(http_body::Frame::data(data)), (body, last, true))),
                Some(Err(e)) => match e {},
                None if !seen => last.map(|event| (Ok(http_body::Frame::data(event)), (body, None, true))),
                None => None,
            }
        });
    BodyExt::boxed(http_body_util::StreamBody::new(frames))
}

/// The answer to a resumption of a request served by a replica that is gone: an event
/// stream with the request's error, then its end.
pub(crate) fn lost(tagged: &Tagged<'_>) -> http::Response<BoxBody<Bytes, Infallible>> {
    let why = format!(
        "the replica {} that served this request stopped before it answered (killed, or cut off)",
        tagged.replica
    );
    let event = lost_event(tagged, &why);
    let mut response = http::Response::new(http_body_util::Full::new(event).boxed());
    response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("text/event-stream"));
    response.headers_mut().insert(http::header::CACHE_CONTROL, http::HeaderValue::from_static("no-cache"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_id_is_tagged_and_read_back() {
        let suffix = tag("ab12", "\"req-7\"");
        let event = Bytes::from_static(b"data: {\"jsonrpc\":\"2.0\"}\nid: 3/0\nretry: 3000\n\n");
        let out = with_suffix(event, &suffix);
        let text = String::from_utf8_lossy(&out).to_string();
        let id = text.lines().find_map(|l| l.strip_prefix("id: ")).unwrap_or_default().to_string();
        assert_eq!(text.replace(&id, "X"), "data: {\"jsonrpc\":\"2.0\"}\nid: X\nretry: 3000\n\n");
        assert_eq!(parse(&id), Some(Tagged { rmcp: "3/0", replica: "ab12", request: "\"req-7\"".into() }));
        // A priming event (its id first), a keep-alive (no id), someone else's id.
        assert!(
            String::from_utf8_lossy(&with_suffix(Bytes::from_static(b"id: 0\ndata: \n\n"), &suffix))
                .starts_with(&format!("id: 0{suffix}\n"))
        );
        assert_eq!(with_suffix(Bytes::from_static(b":\n\n"), &suffix), Bytes::from_static(b":\n\n"));
        assert_eq!(parse("3/0"), None);
        assert_eq!(parse("3/0~ab~zz"), None);
        assert_eq!(parse(&format!("1{}", tag("r", "42"))).map(|t| t.request), Some("42".to_string()));
        // A session's own stream: the replica alone, never read as a request's.
        let stream = format!("7{}", stream_tag("ab12"));
        assert_eq!(parse_stream(&stream), Some(("7", "ab12")));
        assert_eq!(parse(&stream), None);
        assert_eq!(parse_stream(&format!("3/0{suffix}")), None);
        assert_eq!(parse_stream("7"), None);
        assert_eq!(parse_stream("7~"), None);
    }
}
