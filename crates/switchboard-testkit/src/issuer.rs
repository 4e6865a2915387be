//! An authorization server's public face for tests of a protected gateway: its OpenID
//! configuration and JWKS served over HTTP on loopback (a thread of its own), P-256 keys
//! made here, and access tokens signed with them. The keys it publishes can change (rotation),
//! and the requests for them are counted.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

/// A P-256 signing key and its public JWK.
pub struct Key {
    signing: EncodingKey,
    /// The public JWK (with `kid`, `use`, `alg`).
    pub jwk: Value,
    kid: String,
}

impl Key {
    /// A new key named `kid`.
    pub fn new(kid: &str) -> Key {
        let rng = aws_lc_rs::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("a P-256 key");
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref()).expect("its pair");
        let point = pair.public_key().as_ref();
        let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
        let jwk = json!({"kty": "EC", "crv": "P-256", "x": b64(&point[1..33]), "y": b64(&point[33..65]),
                         "kid": kid, "use": "sig", "alg": "ES256"});
        Key { signing: EncodingKey::from_ec_der(pkcs8.as_ref()), jwk, kid: kid.to_string() }
    }

    /// `claims` signed with this key (ES256), its `kid` in the header.
    pub fn sign(&self, claims: &Value) -> String {
        self.sign_as(&self.kid, claims)
    }

    /// `claims` signed with this key under another key's id (a forgery).
    pub fn sign_as(&self, kid: &str, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(kid.to_string());
        jsonwebtoken::encode(&header, claims, &self.signing).expect("signed")
    }
}

/// The client a protected resource introspects as (`introspection` of the issuer's config).
pub const INTROSPECTION_CLIENT: (&str, &str) = ("sb-gateway", "introspection-secret");

/// The issuer: `issuer` is its identifier (`http://127.0.0.1:<port>`).
pub struct Issuer {
    /// Its identifier, as its tokens' `iss`.
    pub issuer: String,
    docs: Arc<Mutex<HashMap<String, Value>>>,
    key_fetches: Arc<AtomicUsize>,
    /// Opaque tokens and what introspection says of them.
    opaque: Arc<Mutex<HashMap<String, Value>>>,
    introspections: Arc<AtomicUsize>,
}

impl Issuer {
    /// Serves the issuer's metadata and `keys` until the process ends.
    pub fn start(keys: &[&Key]) -> Issuer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        let issuer = format!("http://127.0.0.1:{}", listener.local_addr().expect("its address").port());
        let docs = Arc::new(Mutex::new(HashMap::new()));
        docs.lock().expect("docs").insert(
            "/.well-known/openid-configuration".to_string(),
            json!({"issuer": issuer, "jwks_uri": format!("{issuer}/jwks")}),
        );
        let key_fetches = Arc::new(AtomicUsize::new(0));
        let opaque: Arc<Mutex<HashMap<String, Value>>> = Arc::default();
        let introspections = Arc::new(AtomicUsize::new(0));
        let it = Issuer {
            issuer,
            docs: docs.clone(),
            key_fetches: key_fetches.clone(),
            opaque: opaque.clone(),
            introspections: introspections.clone(),
        };
        it.publish(keys);
        std::thread::spawn(move || {
            for mut s in listener.incoming().flatten() {
                let mut buf = vec![0u8; 8192];
                let n = s.read(&mut buf).unwrap_or(0);
                let request = String::from_utf8_lossy(&buf[..n]).to_string();
                let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
                if path == "/jwks" {
                    key_fetches.fetch_add(1, Ordering::SeqCst);
                }
                let body = if path == "/introspect" {
                    introspections.fetch_add(1, Ordering::SeqCst);
                    Some(introspect(&request, &opaque))
                } else {
                    docs.lock().map(|d| d.get(&path).map(Value::to_string)).unwrap_or_default()
                };
                let response = match body {
                    Some(b) => format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{b}",
                        b.len()
                    ),
                    None => "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_string(),
                };
                let _ = s.write_all(response.as_bytes());
            }
        });
        it
    }

    /// Publishes `keys` from now on (a rotation).
    pub fn publish(&self, keys: &[&Key]) {
        let set = json!({"keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()});
        self.docs.lock().expect("docs").insert("/jwks".to_string(), set);
    }

    /// Registers an opaque token: introspection says it is active with `claims`.
    pub fn opaque(&self, token: &str, claims: &Value) {
        let mut answer = claims.clone();
        answer["active"] = json!(true);
        self.opaque.lock().expect("opaque").insert(token.to_string(), answer);
    }

    /// Revokes an opaque token: introspection says it is not active from now on.
    pub fn revoke(&self, token: &str) {
        self.opaque.lock().expect("opaque").insert(token.to_string(), json!({"active": false}));
    }

    /// Its introspection endpoint.
    pub fn introspection_url(&self) -> String {
        format!("{}/introspect", self.issuer)
    }

    /// How many times a token was introspected.
    pub fn introspections(&self) -> usize {
        self.introspections.load(Ordering::SeqCst)
    }

    /// How many times its keys were fetched.
    pub fn fetches(&self) -> usize {
        self.key_fetches.load(Ordering::SeqCst)
    }

    /// Claims of a token of this issuer for `audience`, valid for five minutes, for `subject`
    /// in `groups`, with the scope `mcp`.
    pub fn claims(&self, audience: &str, subject: &str, groups: &[&str]) -> Value {
        let now = i64::try_from(jsonwebtoken::get_current_timestamp()).unwrap_or(0);
        json!({"iss": self.issuer, "sub": subject, "aud": audience, "exp": now + 300, "iat": now,
               "name": subject, "groups": groups, "scope": "openid mcp"})
    }
}

/// The answer to an introspection request: the token's registered claims for the known client,
/// `{"active": false}` for an unknown token, an error object for another client.
fn introspect(request: &str, opaque: &Mutex<HashMap<String, Value>>) -> String {
    let (id, secret) = INTROSPECTION_CLIENT;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"));
    let authorized = request.lines().any(|l| {
        l.split_once(':')
            .is_some_and(|(k, v)| k.eq_ignore_ascii_case("authorization") && v.trim() == format!("Basic {basic}"))
    });
    if !authorized {
        return json!({"error": "invalid_client"}).to_string();
    }
    let body = request.split("\r\n\r\n").nth(1).unwrap_or_default();
    let token = body.split('&').find_map(|kv| kv.strip_prefix("token=")).unwrap_or_default();
    opaque.lock().map(|o| o.get(token).cloned()).ok().flatten().unwrap_or_else(|| json!({"active": false})).to_string()
}
