//! hspi's token ids of prompts against llama-server's (`/tokenize`, `/apply-template`).

use hspi_collect::zoo::chat_template::Message;
use hspi_collect::zoo::codec::Codec;

fn post(url: &str, body: serde_json::Value) -> serde_json::Value {
    super::post_json(url, &body)
}

/// llama-server's ids of `content` as a prompt (its beginning-of-sequence token added where the
/// model adds one, control tokens parsed).
pub fn served_ids(base: &str, content: &str) -> Vec<u32> {
    let r = post(
        &format!("{base}/tokenize"),
        serde_json::json!({"content": content, "add_special": true, "parse_special": true}),
    );
    r["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_u64().unwrap() as u32)
        .collect()
}

/// Texts hspi's prompts and the edges of every pre-tokenizer are made of: spaces, tabs and
/// newline runs, digits of every length, contractions in both cases, emoji, accents, CJK, a
/// byte-token lookalike and control tokens written as text.
pub const EDGES: [&str; 8] = [
    "Hello there,  friend\n\nok\t<start_of_turn>x",
    "  leading spaces, trailing  ",
    "numbers 3.14159 and 2026-11-26 and 1234567, emoji 🦙🚀, accents café naïve, 日本語のテキスト",
    "<0x41> is text, <end_of_turn> and <|im_end|> are not\n\n\n\n",
    "tabs\t\t\tand\r\nwindows lines",
    "I'VE SEEN IT, you'll see, they'd've DON'T",
    "x    y\n \n  z!!!??...---",
    "Ünïcödé ΑΒΓ абв 한국어 مرحبا",
];

/// The prompts among `texts` whose ids hspi reads otherwise than the llama-server at `base`,
/// raw and through the chat template the server renders.
pub fn differing(codec: &Codec, base: &str, texts: &[String]) -> Vec<String> {
    let mut differ = Vec::new();
    for text in texts {
        if codec.text_ids(text).unwrap() != served_ids(base, text) {
            differ.push(text.clone());
        }
        let messages = [Message {
            role: "user".into(),
            content: text.clone(),
        }];
        let rendered = post(
            &format!("{base}/apply-template"),
            serde_json::json!({ "messages": messages }),
        );
        let theirs = served_ids(base, rendered["prompt"].as_str().unwrap());
        if codec.chat_ids(&messages).unwrap() != theirs {
            differ.push(format!("chat: {text}"));
        }
    }
    differ
}

/// The prompt texts of a probe set.
pub fn prompt_texts(set: &hspi_datasets::ProbeSet) -> Vec<String> {
    set.probes
        .iter()
        .filter_map(|p| match &p.input {
            hspi_datasets::ProbeInput::Prompt { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}
