//! Secrets kept at rest (people's tokens and inputs in a team's store): sealed with
//! AES-256-GCM under a key ring, each value bound to what it is for.
//!
//! A key ring is read from a file (`store.key_file`) or the environment
//! (`SWITCHBOARD_STORE_KEYS`): one key a line, `<id>:<32 bytes in base64>`, `#` comments
//! and blank lines skipped. The first key seals; every key opens. A sealed value is
//! `sb1:<id>:<base64 of nonce and ciphertext with its tag>`: the id says which key opens it, so
//! keys rotate without downtime: (1) add the new key as a later line on every replica (it opens
//! what others may seal with it), (2) move it first (it seals from now on), (3) seal again what
//! was sealed with the old one ([`KeyRing::reseal`]), (4) remove the old line.
//!
//! Each value is sealed with a context (the associated data: what it is and whose, e.g.
//! `token\0<issuer>\0<subject>\0<server>`), so a sealed value copied into another record or
//! another person's row does not open there.

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// The environment variable a key ring may come from.
pub const KEYS_ENV: &str = "SWITCHBOARD_STORE_KEYS";

const PREFIX: &str = "sb1";

/// Why a key ring cannot be read, or a value cannot be sealed or opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// The key ring is not usable (line numbers from 1; never the key itself).
    #[error("key ring, line {line}: {message}")]
    BadKeyRing {
        /// The line.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// The ring has no key.
    #[error("the key ring holds no key (lines `<id>:<32 bytes in base64>`)")]
    NoKey,
    /// The value names a key the ring does not hold.
    #[error("sealed with key `{0}`, which the key ring does not hold")]
    UnknownKey(String),
    /// Not a sealed value, or one that was altered, or sealed for another context.
    #[error("not a value this key ring sealed for this record (altered, moved, or another key's)")]
    Invalid,
    /// The system's random source failed.
    #[error("no random nonce: {0}")]
    Random(String),
}

/// The keys secrets are sealed with: the first seals, all open.
pub struct KeyRing {
    keys: Vec<(String, LessSafeKey)>,
    random: SystemRandom,
}

impl std::fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Key ids only: never a key.
        f.debug_struct("KeyRing").field("ids", &self.ids()).finish()
    }
}

impl KeyRing {
    /// Reads a ring from `text` (a key file's contents, or the environment variable's).
    pub fn parse(text: &str) -> Result<KeyRing, SealError> {
        let mut keys: Vec<(String, LessSafeKey)> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |message: &str| SealError::BadKeyRing { line: i + 1, message: message.to_string() };
            let (id, key) = line.split_once(':').ok_or_else(|| bad("not `<id>:<key in base64>`"))?;
            let id = id.trim();
            if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
                return Err(bad("a key id is letters, digits, `-` and `_`"));
            }
            if keys.iter().any(|(k, _)| k == id) {
                return Err(bad("this key id is on an earlier line too"));
            }
            let bytes = STANDARD.decode(key.trim()).map_err(|_| bad("the key is not base64"))?;
            if bytes.len() != 32 {
                return Err(bad("a key is 32 bytes (44 characters of base64)"));
            }
            let unbound = UnboundKey::new(&AES_256_GCM, &bytes).map_err(|_| bad("not an AES-256 key"))?;
            keys.push((id.to_string(), LessSafeKey::new(unbound)));
        }
        if keys.is_empty() {
            return Err(SealError::NoKey);
        }
        Ok(KeyRing { keys, random: SystemRandom::new() })
    }

    /// A new key line, `<id>:<32 random bytes in base64>`, for a key file.
    pub fn new_key_line(id: &str) -> Result<String, SealError> {
        let mut key = [0u8; 32];
        SystemRandom::new().fill(&mut key).map_err(|e| SealError::Random(e.to_string()))?;
        Ok(format!("{id}:{}", STANDARD.encode(key)))
    }

    /// The key ids, the sealing one first.
    pub fn ids(&self) -> Vec<&str> {
        self.keys.iter().map(|(id, _)| id.as_str()).collect()
    }

    /// Seals `plain` for `context` with the first key.
    pub fn seal(&self, context: &[u8], plain: &[u8]) -> Result<String, SealError> {
        let (id, key) = self.keys.first().ok_or(SealError::NoKey)?;
        let mut nonce = [0u8; NONCE_LEN];
        self.random.fill(&mut nonce).map_err(|e| SealError::Random(e.to_string()))?;
        let mut data = plain.to_vec();
        key.seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(context), &mut data)
            .map_err(|_| SealError::Invalid)?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&data);
        Ok(format!("{PREFIX}:{id}:{}", STANDARD.encode(out)))
    }

    /// Opens a value sealed for `context` by any key of the ring.
    pub fn open(&self, context: &[u8], sealed: &str) -> Result<Vec<u8>, SealError> {
        let mut parts = sealed.splitn(3, ':');
        let (Some(PREFIX), Some(id), Some(body)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(SealError::Invalid);
        };
        let key = self
            .keys
            .iter()
            .find(|(k, _)| k == id)
            .map(|(_, key)| key)
            .ok_or_else(|| SealError::UnknownKey(crate::text::excerpt(id, 40)))?;
        let bytes = STANDARD.decode(body).map_err(|_| SealError::Invalid)?;
        if bytes.len() < NONCE_LEN {
            return Err(SealError::Invalid);
        }
        let (nonce, data) = bytes.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| SealError::Invalid)?;
        let mut data = data.to_vec();
        let plain = key.open_in_place(nonce, Aad::from(context), &mut data).map_err(|_| SealError::Invalid)?;
        Ok(plain.to_vec())
    }

    /// The id of the key that sealed `sealed` (`None`: not a sealed value).
    pub fn sealed_with(sealed: &str) -> Option<&str> {
        let mut parts = sealed.splitn(3, ':');
        (parts.next() == Some(PREFIX)).then(|| parts.next()).flatten()
    }

    /// `sealed` opened and sealed again with the first key when another sealed it (`None`:
    /// the first key sealed it already): step 3 of a rotation.
    pub fn reseal(&self, context: &[u8], sealed: &str) -> Result<Option<String>, SealError> {
        if KeyRing::sealed_with(sealed) == self.ids().first().copied() {
            return Ok(None);
        }
        let plain = self.open(context, sealed)?;
        self.seal(context, &plain).map(Some)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn ring(ids: &[&str]) -> (KeyRing, String) {
        let text: String = ids.iter().map(|id| KeyRing::new_key_line(id).unwrap() + "\n").collect();
        (KeyRing::parse(&text).unwrap(), text)
    }

    #[test]
    fn a_value_opens_only_for_its_context_and_never_shows_as_plain_text() {
        let (r, _) = ring(&["k1"]);
        let token = b"gho_alices_token_value";
        let sealed = r.seal(b"token\0idp\0alice\0github", token).unwrap();
        assert!(sealed.starts_with("sb1:k1:") && !sealed.contains("alices"), "{sealed}");
        assert_eq!(r.open(b"token\0idp\0alice\0github", &sealed).unwrap(), token);
        // Bob's row, another server: it does not open.
        assert_eq!(r.open(b"token\0idp\0bob\0github", &sealed), Err(SealError::Invalid));
        // Two seals of one value differ (a fresh nonce each).
        assert_ne!(r.seal(b"c", token).unwrap(), r.seal(b"c", token).unwrap());
        // Altered anywhere: refused.
        let mut altered = sealed.clone().into_bytes();
        let at = altered.len() - 5;
        altered[at] = if altered[at] == b'A' { b'B' } else { b'A' };
        assert_eq!(r.open(b"token\0idp\0alice\0github", &String::from_utf8(altered).unwrap()), Err(SealError::Invalid));
        assert_eq!(r.open(b"c", "plain text"), Err(SealError::Invalid));
        assert!(!format!("{r:?}").contains(&r.seal(b"", b"").unwrap()[8..]), "Debug shows ids only");
    }

    #[test]
    fn keys_rotate_without_losing_a_value() {
        let (old, old_text) = ring(&["2026-01"]);
        let sealed = old.seal(b"ctx", b"secret").unwrap();
        // Step 1: the new key is added after the old one; step 2: moved first.
        let new_line = KeyRing::new_key_line("2026-07").unwrap();
        let both = KeyRing::parse(&format!("{new_line}\n{old_text}")).unwrap();
        assert_eq!(both.ids(), ["2026-07", "2026-01"]);
        assert_eq!(both.open(b"ctx", &sealed).unwrap(), b"secret");
        // Step 3: sealed again with the new key; once only.
        let again = both.reseal(b"ctx", &sealed).unwrap().unwrap();
        assert_eq!(KeyRing::sealed_with(&again), Some("2026-07"));
        assert_eq!(both.reseal(b"ctx", &again).unwrap(), None);
        // Step 4: the old key gone, the value still opens; the old seal does not.
        let new_only = KeyRing::parse(&new_line).unwrap();
        assert_eq!(new_only.open(b"ctx", &again).unwrap(), b"secret");
        assert_eq!(new_only.open(b"ctx", &sealed), Err(SealError::UnknownKey("2026-01".into())));
    }

    #[test]
    fn a_bad_key_ring_is_named_by_line_and_never_echoed() {
        let err = |t: &str| KeyRing::parse(t).unwrap_err();
        assert_eq!(err("# only a comment\n\n"), SealError::NoKey);
        let secretish = "k1:c2hvcnQ=";
        let e = err(&format!("# keys\n{secretish}\n"));
        assert_eq!(e, SealError::BadKeyRing { line: 2, message: "a key is 32 bytes (44 characters of base64)".into() });
        assert!(!e.to_string().contains("c2hvcnQ"));
        assert!(matches!(err("no colon here"), SealError::BadKeyRing { line: 1, .. }));
        assert!(matches!(err("bad id!:AAAA"), SealError::BadKeyRing { line: 1, .. }));
        let line = KeyRing::new_key_line("k1").unwrap();
        assert!(matches!(err(&format!("{line}\n{line}")), SealError::BadKeyRing { line: 2, .. }));
    }
}
