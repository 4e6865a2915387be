#![allow(clippy::unwrap_used, clippy::expect_used)]

use jsonwebtoken::{EncodingKey, Header};
use serde_json::{Value, json};
use switchboard_testkit::issuer::{Issuer as Provider, Key};

use super::*;

fn key(kid: &str) -> Key {
    Key::new(kid)
}

const RESOURCE: &str = "http://127.0.0.1:7342/mcp";

fn now() -> i64 {
    i64::try_from(jsonwebtoken::get_current_timestamp()).unwrap()
}

fn token(key: &Key, kid: &str, claims: Value) -> String {
    key.sign_as(kid, &claims)
}

fn claims(issuer: &str) -> Value {
    json!({"iss": issuer, "sub": "alice-1", "aud": RESOURCE, "exp": now() + 300, "iat": now(),
           "name": "Alice", "groups": ["devs", "admins"], "scope": "openid mcp"})
}

fn verifier(provider: &Provider, scopes: &[&str]) -> Verifier {
    let mut config = IdentityConfig::new(vec![Issuer::new(provider.issuer.clone())]);
    config.scopes = scopes.iter().map(|s| s.to_string()).collect();
    Verifier::new(config, RESOURCE, reqwest::Client::new())
}

#[tokio::test]
async fn a_token_of_a_configured_issuer_says_who_is_calling() {
    let k1 = key("k1");
    let provider = Provider::start(&[&k1]);
    let v = verifier(&provider, &["mcp"]);
    let who = v.verify(&token(&k1, "k1", claims(&provider.issuer))).await.unwrap();
    assert_eq!(who.subject, "alice-1");
    assert_eq!(who.issuer, provider.issuer);
    assert_eq!(who.name.as_deref(), Some("Alice"));
    assert_eq!(who.groups, ["devs", "admins"]);
    assert_eq!(who.scopes, ["mcp", "openid"]);
    // The keys were fetched once, through discovery, and are kept.
    v.verify(&token(&k1, "k1", claims(&provider.issuer))).await.unwrap();
    assert_eq!(provider.fetches(), 1);
    let doc = v.metadata();
    assert_eq!(doc["resource"], RESOURCE);
    assert_eq!(doc["authorization_servers"], json!([provider.issuer]));
    assert_eq!(doc["scopes_supported"], json!(["mcp"]));
}

#[tokio::test]
async fn tokens_for_another_resource_out_of_time_or_of_another_issuer_are_refused() {
    let k1 = key("k1");
    let provider = Provider::start(&[&k1]);
    let v = verifier(&provider, &[]);
    let iss = provider.issuer.clone();
    let with = |patch: Value| {
        let mut c = claims(&iss);
        for (k, val) in patch.as_object().unwrap() {
            c[k] = val.clone();
        }
        token(&k1, "k1", c)
    };
    let err = v.verify(&with(json!({"aud": "https://elsewhere.example/mcp"}))).await.unwrap_err();
    assert!(matches!(err, IdentityError::Audience { .. }), "{err:?}");
    assert_eq!((err.status(), err.code()), (401, Some("invalid_token")));
    let err = v.verify(&with(json!({"exp": now() - 120}))).await.unwrap_err();
    assert!(matches!(err, IdentityError::Expired), "{err:?}");
    // Within the skew a clock a little behind is fine.
    v.verify(&with(json!({"exp": now() - 30}))).await.unwrap();
    let err = v.verify(&with(json!({"nbf": now() + 600}))).await.unwrap_err();
    assert!(matches!(err, IdentityError::NotYetValid), "{err:?}");
    let err = v.verify(&with(json!({"iss": "https://other.example"}))).await.unwrap_err();
    assert!(matches!(err, IdentityError::UnknownIssuer(_)), "{err:?}");
    // An audience list that holds the resource is fine.
    v.verify(&with(json!({"aud": ["https://other.example", RESOURCE]}))).await.unwrap();
    assert!(matches!(v.verify("not a token").await.unwrap_err(), IdentityError::Malformed(_)));
}

#[tokio::test]
async fn a_forged_signature_a_symmetric_algorithm_and_a_missing_scope_are_refused() {
    let k1 = key("k1");
    let provider = Provider::start(&[&k1]);
    let v = verifier(&provider, &["mcp", "tools"]);
    // Another key under the published key's id.
    let forger = key("k1");
    let err = v.verify(&token(&forger, "k1", claims(&provider.issuer))).await.unwrap_err();
    assert!(matches!(err, IdentityError::Invalid(_)), "{err:?}");
    // HS256 with the public key's bytes as the secret (the classic confusion): not accepted.
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("k1".into());
    let hs = jsonwebtoken::encode(&header, &claims(&provider.issuer), &EncodingKey::from_secret(b"x")).unwrap();
    assert!(matches!(v.verify(&hs).await.unwrap_err(), IdentityError::Invalid(_)));
    let err = v.verify(&token(&k1, "k1", claims(&provider.issuer))).await.unwrap_err();
    match &err {
        IdentityError::Scope { missing } => assert_eq!(missing, &["tools"]),
        other => panic!("{other:?}"),
    }
    assert_eq!((err.status(), err.code()), (403, Some("insufficient_scope")));
    let challenge = v.challenge("http://127.0.0.1:7342/.well-known/oauth-protected-resource/mcp", &err);
    assert!(challenge.starts_with(
        "Bearer resource_metadata=\"http://127.0.0.1:7342/.well-known/oauth-protected-resource/mcp\", scope=\"mcp tools\""
    ));
    assert!(challenge.contains("error=\"insufficient_scope\""), "{challenge}");
    let none = v.challenge("http://x/.well-known/oauth-protected-resource", &IdentityError::Missing);
    assert!(!none.contains("error="), "no error code without a token (RFC 6750 §3.1): {none}");
}

#[tokio::test]
async fn a_new_key_is_fetched_when_a_token_names_it_but_not_more_often_than_refetch() {
    let (k1, k2) = (key("k1"), key("k2"));
    let provider = Provider::start(&[&k1]);
    let v = verifier(&provider, &[]);
    v.verify(&token(&k1, "k1", claims(&provider.issuer))).await.unwrap();
    assert_eq!(provider.fetches(), 1);
    // The issuer rotates. Within REFETCH of the last fetch a key not held is refused without
    // asking the issuer (made-up key ids do not become requests).
    provider.publish(&[&k1, &k2]);
    let err = v.verify(&token(&k2, "k2", claims(&provider.issuer))).await.unwrap_err();
    assert!(matches!(err, IdentityError::UnknownKey { .. }), "{err:?}");
    assert_eq!(provider.fetches(), 1);
    // Past it, a token under a key published since makes the verifier fetch again, and it is
    // accepted.
    let v = verifier(&provider, &[]).refetch_after(Duration::ZERO);
    v.verify(&token(&k1, "k1", claims(&provider.issuer))).await.unwrap();
    assert_eq!(provider.fetches(), 2);
    let k3 = key("k3");
    provider.publish(&[&k2, &k3]);
    v.verify(&token(&k3, "k3", claims(&provider.issuer))).await.unwrap();
    assert_eq!(provider.fetches(), 3);
    v.verify(&token(&k2, "k2", claims(&provider.issuer))).await.unwrap();
    assert_eq!(provider.fetches(), 3, "held since the last fetch");
    let err = v.verify(&token(&k2, "k9", claims(&provider.issuer))).await.unwrap_err();
    assert!(matches!(err, IdentityError::UnknownKey { .. }), "{err:?}");
}

#[tokio::test]
async fn groups_from_a_nested_claim_and_an_unreachable_issuer_is_said() {
    let k1 = key("k1");
    let provider = Provider::start(&[&k1]);
    let mut issuer = Issuer::new(provider.issuer.clone());
    issuer.groups_claim = "realm_access.roles".into();
    let v = Verifier::new(IdentityConfig::new(vec![issuer]), RESOURCE, reqwest::Client::new());
    let mut c = claims(&provider.issuer);
    c["realm_access"] = json!({"roles": ["ops"]});
    assert_eq!(v.verify(&token(&k1, "k1", c)).await.unwrap().groups, ["ops"]);
    // Nothing answers where the keys should be: 503, the token may be fine.
    let gone = Issuer::new("http://127.0.0.1:9");
    let v = Verifier::new(IdentityConfig::new(vec![gone]), RESOURCE, reqwest::Client::new());
    let mut c = claims("http://127.0.0.1:9");
    c["iss"] = json!("http://127.0.0.1:9");
    let err = v.verify(&token(&k1, "k1", c)).await.unwrap_err();
    assert!(matches!(err, IdentityError::Provider { .. }) && err.status() == 503, "{err:?}");
}

#[tokio::test]
async fn opaque_tokens_are_checked_by_introspection_and_the_answer_kept_a_little() {
    let provider = Provider::start(&[]);
    let (id, secret) = switchboard_testkit::issuer::INTROSPECTION_CLIENT;
    let mut issuer = Issuer::new(provider.issuer.clone());
    issuer.introspection = Some(Introspection::new(provider.introspection_url(), id, secret));
    let config = IdentityConfig { scopes: vec!["mcp".into()], ..IdentityConfig::new(vec![issuer]) };
    let fresh = || Verifier::new(config.clone(), RESOURCE, reqwest::Client::new());
    let v = fresh();
    provider.opaque("op4que-token", &claims(&provider.issuer));
    let who = v.verify("op4que-token").await.unwrap();
    assert_eq!(
        (who.subject.as_str(), who.groups.as_slice()),
        ("alice-1", &["devs".to_string(), "admins".to_string()][..])
    );
    v.verify("op4que-token").await.unwrap();
    assert_eq!(provider.introspections(), 1, "kept, not asked again");
    // Revoked: a verifier that kept no answer refuses it.
    provider.revoke("op4que-token");
    let err = fresh().verify("op4que-token").await.unwrap_err();
    assert!(matches!(err, IdentityError::Invalid(_)), "{err:?}");
    assert!(matches!(fresh().verify("never-issued").await.unwrap_err(), IdentityError::Invalid(_)));
    let mut other = claims(&provider.issuer);
    other["aud"] = json!("https://elsewhere.example/mcp");
    provider.opaque("for-elsewhere", &other);
    assert!(matches!(fresh().verify("for-elsewhere").await.unwrap_err(), IdentityError::Audience { .. }));
    let mut old = claims(&provider.issuer);
    old["exp"] = json!(now() - 600);
    provider.opaque("expired", &old);
    assert!(matches!(fresh().verify("expired").await.unwrap_err(), IdentityError::Expired));
    let mut narrow = claims(&provider.issuer);
    narrow["scope"] = json!("openid");
    provider.opaque("no-scope", &narrow);
    assert!(matches!(fresh().verify("no-scope").await.unwrap_err(), IdentityError::Scope { .. }));
}

/// A token that passed is kept (by digest) and not checked again until it expires, and it
/// expires at the same moment as without the cache; a refusal is not kept.
#[tokio::test]
async fn a_verified_token_is_kept_until_it_expires_and_no_longer() {
    let k1 = key("k1");
    let provider = Provider::start(&[&k1]);
    let v = verifier(&provider, &["mcp"]);
    let good = token(&k1, "k1", claims(&provider.issuer));
    assert_eq!(v.verify(&good).await.unwrap().subject, "alice-1");
    assert_eq!(v.verified.len(), 1);
    assert_eq!(v.verify(&good).await.unwrap().groups, ["devs", "admins"], "the same caller from the cache");
    // Refused: kept nowhere, refused again.
    let mut lacking = claims(&provider.issuer);
    lacking["scope"] = json!("openid");
    let refused = token(&k1, "k1", lacking);
    assert!(matches!(v.verify(&refused).await, Err(IdentityError::Scope { .. })));
    assert!(matches!(v.verify(&refused).await, Err(IdentityError::Scope { .. })));
    assert_eq!(v.verified.len(), 1);
    // Accepted for two more seconds (the skew past its exp): then refused, cache or not.
    let mut ending = claims(&provider.issuer);
    ending["exp"] = json!(now() - i64::try_from(SKEW.as_secs()).unwrap() + 2);
    let ending = token(&k1, "k1", ending);
    assert!(v.verify(&ending).await.is_ok());
    assert_eq!(v.verified.len(), 2);
    tokio::time::sleep(Duration::from_millis(3_100)).await;
    assert!(matches!(v.verify(&ending).await, Err(IdentityError::Expired)), "expired, as without the cache");
}
