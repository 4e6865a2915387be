//! The dashboard at `/`: a page, a script and a style sheet embedded in the binary (no CDN;
//! works offline). The page itself needs no login; everything it shows comes from `/api`,
//! which does (the session cookie from the one-time login URL). A strict Content Security
//! Policy allows only this server's own script, style and API, and images inline (`data:`,
//! for tool results).

use axum::Router;
use axum::http::{HeaderValue, header};
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
    asset!("questions.js", "text/javascript; charset=utf-8"),
    asset!("sampling.js", "text/javascript; charset=utf-8"),
    asset!("schema.js", "text/javascript; charset=utf-8"),
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("favicon.svg", "image/svg+xml"),
];

fn serve(asset: &'static Asset) -> Response {
    let mut response = asset.body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(asset.content_type));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // The assets change with the binary: revalidate each time (they are small).
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
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
