#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

#[test]
fn the_compiled_in_tables_decode() {
    let model = model().expect("the model's tables decode");
    assert_eq!(model.tokens, 32_000);
    assert_eq!(model.merges.len(), 61_249, "{model:?}");
}

/// The tokenizer gives what Hugging Face's gives for the same tokenizer definition, on every
/// tool name and description of the recorded catalog and on harder texts (accents, emoji, CJK,
/// control characters, a 150-letter word): `tests/search/tokenized.json`, written by
/// `scripts/search-model` with `tokenizers` itself.
#[test]
fn tokens_are_hugging_face_s() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/search/tokenized.json");
    let fixture: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let model = model().unwrap();
    let texts = fixture["texts"].as_array().unwrap();
    assert!(texts.len() > 600);
    let mut wrong = Vec::new();
    for t in texts {
        let text = t["text"].as_str().unwrap();
        let want: Vec<u32> = serde_json::from_value(t["ids"].clone()).unwrap();
        let mut got = Vec::new();
        for word in text.split_whitespace() {
            model.word(word, &mut got);
        }
        if got != want {
            wrong.push(format!("{text:?}: got {got:?}, want {want:?}"));
        }
    }
    assert!(wrong.is_empty(), "{} of {} texts differ:\n{}", wrong.len(), texts.len(), wrong.join("\n"));
}

#[test]
fn texts_of_one_meaning_are_closer_than_others() {
    let mut e = Embedder::new(model().unwrap());
    // No word in common with either, and 0.35 against 0.12 (as WordLlama's own code gives).
    let query = e.embed(["capture an image of the web page"]);
    let memory = e.embed(["add observations", "Add new observations to existing entities in the knowledge graph"]);
    let screenshot = e.embed(["take screenshot", "Take a screenshot of the current page"]);
    let (near, far) = (dot(&query, &screenshot), dot(&query, &memory));
    assert!((near - 0.352).abs() < 0.01 && (far - 0.123).abs() < 0.01, "{near} vs {far}");
    // Unit length, and a text with no token is the zero vector (matches nothing).
    assert!((dot(&memory, &memory) - 1.0).abs() < 1e-4);
    assert_eq!(e.embed(["", "  "]), [0.0; DIMS]);
    // Packed, the cosine moves by less than 0.01.
    let packed = Packed::new(&screenshot);
    assert!((packed.dot(&query) - near).abs() < 0.01, "{} vs {near}", packed.dot(&query));
    assert_eq!(Packed::new(&[0.0; DIMS]).dot(&query), 0.0);
}
