//! The dashboard at `/`: a page, a script and a style sheet embedded in the binary (no CDN;
//! works offline). The page itself needs no login; everything it shows comes from `/api`,
//! which does (the session cookie from the one-time login URL). A strict Content Security
//! Policy allows only this server's own script, style and API, and images inline (`data:`,
//! for tool results).

use axum::Router;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// What every dashboard response carries.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static str,
}

/// An embedded file of `assets/`, served at `/assets/<file>`.
macro_rules! asset {
    ($file:literal, $type:literal) => {
        Asset {
            path: concat!("/assets/", $file),
            content_type: $type,
            body: include_str!(concat!("../assets/", $file)),
        }
    };
}

const ASSETS: &[Asset] = &[
    Asset { path: "/", content_type: "text/html; charset=utf-8", body: include_str!("../assets/index.html") },
    asset!("app.js", "text/javascript; charset=utf-8"),
    asset!("approvals.js", "text/javascript; charset=utf-8"),
    asset!("asking.js", "text/javascript; charset=utf-8"),
    asset!("calls.js", "text/javascript; charset=utf-8"),
    asset!("complete.js", "text/javascript; charset=utf-8"),
    asset!("core.js", "text/javascript; charset=utf-8"),
    asset!("dom.js", "text/javascript; charset=utf-8"),
    asset!("library.js", "text/javascript; charset=utf-8"),
    asset!("people.js", "text/javascript; charset=utf-8"),
    asset!("questions.js", "text/javascript; charset=utf-8"),
    asset!("sampling.js", "text/javascript; charset=utf-8"),
    asset!("schema.js", "text/javascript; charset=utf-8"),
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("favicon.svg", "image/svg+xml"),
];

/// The headers of everything the dashboard serves: its type, the CSP, no sniffing, no
/// referrer, no framing, and how it is cached.
fn secure(headers: &mut HeaderMap, content_type: &'static str, cache: &'static str) {
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
}

fn serve(asset: &'static Asset) -> Response {
    let mut response = asset.body.into_response();
    // The assets change with the binary: revalidate each time (they are small).
    secure(response.headers_mut(), asset.content_type, "no-cache");
    response
}

/// The page a browser gets when its login link cannot log it in (used, expired, from another
/// run, or no code): what happened and the command that makes a new one, as a page (the
/// browser followed a link a person clicked; JSON would be all they saw).
pub(crate) fn login_failed() -> Response {
    const PAGE: &str = r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>switchboard: log in again</title>
<link rel="icon" href="/assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/assets/style.css">
</head>
<body>
<main class="notice">
<h1>This login link does not work any more</h1>
<p>A login link logs in one browser once; this one was used already, has expired, or is from a
<code>switchboard serve</code> that has stopped since.</p>
<p>For a new one, run <code>switchboard dashboard</code>: it opens the dashboard of the running
<code>serve</code> in your browser (<code>switchboard dashboard --print-url</code> prints the link
instead).</p>
</main>
</body>
</html>
"#;
    let mut response = (StatusCode::UNAUTHORIZED, PAGE).into_response();
    secure(response.headers_mut(), "text/html; charset=utf-8", "no-store");
    response
}

/// The dashboard's routes.
pub fn routes() -> Router {
    ASSETS
        .iter()
        .fold(Router::new(), |router, asset| router.route(asset.path, get(move || async move { serve(asset) })))
}

#[cfg(test)]
mod tests {
    use super::ASSETS;

    #[test]
    fn the_page_loads_only_embedded_assets() {
        let page = ASSETS[0].body;
        for link in page.split(['"', '\'']).filter(|s| s.starts_with('/') || s.contains("://")) {
            assert!(ASSETS.iter().any(|a| a.path == link), "the page refers to {link}, which is not embedded");
        }
        // Nothing from another host, and no inline script (the CSP would block it).
        for asset in ASSETS {
            let body = asset.body.replace("http://www.w3.org/2000/svg", "");
            assert!(!body.contains("https://") && !body.contains("http://"), "{} loads remote content", asset.path);
        }
        assert!(!page.contains("<script>"), "inline script in the page");
        let handler = page.split(" on").skip(1).any(|rest| {
            let name: String = rest.chars().take_while(char::is_ascii_alphabetic).collect();
            !name.is_empty() && rest[name.len()..].starts_with('=')
        });
        assert!(!handler, "an inline event handler in the page");
        // Every module the script imports is embedded, and none sets HTML from data.
        for script in ASSETS.iter().filter(|a| a.path.ends_with(".js")) {
            for import in script.body.lines().filter_map(|l| l.split(" from \"./").nth(1)) {
                let path = format!("/assets/{}", import.trim_end_matches(['"', ';']));
                assert!(ASSETS.iter().any(|a| a.path == path), "{} imports {path}, which is not embedded", script.path);
            }
            assert!(!script.body.contains("innerHTML"), "{}: server data must be shown as text", script.path);
        }
        let body = |path: &str| ASSETS.iter().find(|a| a.path == path).map(|a| a.body).unwrap_or_default();
        assert!(body("/assets/app.js").contains("from \"./calls.js\""));
        assert!(body("/assets/calls.js").contains("from \"./schema.js\""), "arguments are checked");
    }
}
