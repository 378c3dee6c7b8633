//! References on given tokens line up with generation: on an answer hspi's own engine generated
//! greedily, the teacher-forced reference of the same format ranks the answer's token first at
//! every position, with the logprob generation gave it (to rounding: one causal pass against a
//! fresh context per token); an answer printed as chat endpoints print it (no ids) is scored on
//! the tokens it printed. Needs SmolLM2's and Gemma-3-270M's cached weights (`.ci/setup`).

use hspi_collect::backend::candle_cpu::{QuantizedLm, ServedLm};
use hspi_collect::serve::log_softmax;
use hspi_collect::teacher_forced::{ForcedReferences, Residency};
use hspi_collect::zoo::chat_template::Message;
use hspi_collect::zoo::codec::Codec;
use hspi_collect::zoo::smollm2;
use hspi_datasets::{GenerationParams, NumericFormat, Outputs, ProbeInput, Record, TokenStep};

const ANSWER: usize = 8;

/// A greedy answer of `next` (logits after a context) to `prompt` as a chat endpoint's record.
fn greedy(
    codec: &Codec,
    prompt: &[u32],
    mut next: impl FnMut(&[u32]) -> Vec<f32>,
) -> (Record, Vec<f32>) {
    let mut context = prompt.to_vec();
    let (mut steps, mut values) = (Vec::new(), Vec::new());
    for _ in 0..ANSWER {
        let lp = log_softmax(&next(&context));
        let id = hspi_datasets::top_label(&lp).unwrap() as u32;
        values.push(lp[id as usize]);
        let bytes = codec.token_bytes(id);
        steps.push(TokenStep {
            token: String::from_utf8_lossy(&bytes).into_owned(),
            id: Some(id),
            bytes: Some(bytes),
            logprob: None,
            top: Vec::new(),
        });
        context.push(id);
    }
    (chat_record(String::new(), steps), values)
}

/// An answer of `text` in `steps` as a chat endpoint's record.
fn chat_record(text: String, steps: Vec<TokenStep>) -> Record {
    Record {
        probe_id: "p".into(),
        target: "http://127.0.0.1:1/v1/chat/completions#smollm2".into(),
        platform: None,
        outputs: Outputs::Completion {
            text,
            steps,
            finish_reason: None,
        },
        timing_us: 0,
        usage: None,
        served: None,
        asked_as: None,
    }
}

#[test]
fn teacher_forced_references_rank_a_greedy_answer_first_at_every_position() {
    let path = smollm2::weights_path(None)
        .expect("SmolLM2's weights are not cached: run .ci/setup (hspi fetch smollm2)");
    let text = "Then the river came upon the great city of gold and silver";
    let input = ProbeInput::Prompt {
        text: text.into(),
        params: GenerationParams {
            max_tokens: ANSWER as u32,
            temperature: 0.0,
            top_logprobs: 5,
            seed: None,
        },
    };
    let codec = Codec::from_gguf(&path).unwrap();
    let prompt = codec
        .chat_ids(&[Message {
            role: "user".into(),
            content: text.into(),
        }])
        .unwrap();
    let weights = hspi_collect::zoo::decoder_weights::load(&path).unwrap();
    let bf16 = ServedLm::new(&weights, NumericFormat::Bf16).unwrap();
    let mut q8 = QuantizedLm::load(&path, "q8_0".parse().unwrap()).unwrap();
    let answers = [
        (
            NumericFormat::Bf16,
            greedy(&codec, &prompt, |c| bf16.next_token_logits(c).unwrap()),
        ),
        (
            "q8_0".parse().unwrap(),
            greedy(&codec, &prompt, |c| q8.next_token_logits(c).unwrap()),
        ),
    ];
    for (format, (answer, generated)) in answers {
        let mut engines = ForcedReferences::open(
            "smollm2",
            &path,
            &[format],
            Vec::new(),
            None,
            Residency::Resident,
        )
        .unwrap();
        let (refs, cost) = engines.score(&input, &answer, 5).unwrap();
        assert_eq!((refs.len(), cost.positions), (1, ANSWER));
        let Outputs::Completion { steps, .. } = &refs[0].outputs else {
            panic!("a completion")
        };
        let Outputs::Completion { steps: asked, .. } = &answer.outputs else {
            panic!("a completion")
        };
        for (i, (step, own)) in steps.iter().zip(asked).enumerate() {
            assert_eq!(step.id, own.id, "{format} position {i}: the answer's token");
            assert_eq!(
                step.top[0].id, own.id,
                "{format} position {i}: ranked first"
            );
            let value = step.logprob.as_ref().unwrap().value();
            assert!(
                (value - generated[i]).abs() < 0.05,
                "{format} position {i}: logprob {value} against {} when generated",
                generated[i]
            );
        }
    }
}

#[test]
fn requantised_formats_kept_on_disk_give_the_same_logits_bit_for_bit() {
    use hspi_collect::backend::candle_cpu::GgufAllPositions;
    let path = smollm2::weights_path(None)
        .expect("SmolLM2's weights are not cached: run .ci/setup (hspi fetch smollm2)");
    let codec = Codec::from_gguf(&path).unwrap();
    let tokens = codec
        .text_ids("The river came upon the great city of gold")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    for format in ["q8_0", "q4_0"] {
        let format: NumericFormat = format.parse().unwrap();
        let kept = dir.path().join(format!("{format}.gguf"));
        let logits = |kept: Option<&std::path::Path>| {
            let mut lm = GgufAllPositions::load(&path, format, kept).unwrap();
            let rows = lm.logits_from(&tokens, 4).unwrap();
            rows.iter()
                .map(|r| r.iter().map(|v| v.to_bits()).collect::<Vec<u32>>())
                .collect::<Vec<_>>()
        };
        let in_memory = logits(None);
        // Written by the first load, read by the second.
        assert_eq!(logits(Some(&kept)), in_memory, "{format}: written");
        assert!(kept.exists(), "{format}: kept");
        assert_eq!(logits(Some(&kept)), in_memory, "{format}: read back");
        // A kept file cut short is made again, never read.
        let len = std::fs::metadata(&kept).unwrap().len();
        let f = std::fs::OpenOptions::new().write(true).open(&kept).unwrap();
        f.set_len(len / 2).unwrap();
        assert_eq!(logits(Some(&kept)), in_memory, "{format}: cut short");
        assert_eq!(
            std::fs::metadata(&kept).unwrap().len(),
            len,
            "{format}: made again"
        );
    }
}

/// Formats made per answer from the files their first load kept score every answer exactly as
/// formats held between answers: a market format (the served path's kept layers), a float and
/// a quantised llama.cpp format, over a raw answer and two chat answers (which share the
/// template's system turn: a held engine computes each context whole all the same).
#[test]
fn formats_made_per_answer_score_as_formats_held() {
    let path = smollm2::weights_path(None)
        .expect("SmolLM2's weights are not cached: run .ci/setup (hspi fetch smollm2)");
    let codec = Codec::from_gguf(&path).unwrap();
    let formats: Vec<NumericFormat> = ["int8-w8a8", "f16", "q4_0"]
        .iter()
        .map(|f| f.parse().unwrap())
        .collect();
    let mut q4 = QuantizedLm::load(&path, "q4_0".parse().unwrap()).unwrap();
    let answers: Vec<(ProbeInput, Record)> = [
        ("The river came upon", false),
        ("Tell me about the sea", true),
        ("Tell me about the sky", true),
    ]
    .iter()
    .map(|(text, chat)| {
        let input = ProbeInput::Prompt {
            text: (*text).into(),
            params: GenerationParams {
                max_tokens: ANSWER as u32,
                temperature: 0.0,
                top_logprobs: 5,
                seed: None,
            },
        };
        let prompt = match chat {
            true => codec.chat_ids(&[Message {
                role: "user".into(),
                content: (*text).into(),
            }]),
            false => codec.text_ids(text),
        }
        .unwrap();
        let (mut answer, _) = greedy(&codec, &prompt, |c| q4.next_token_logits(c).unwrap());
        answer.asked_as = Some(match chat {
            true => hspi_datasets::AskedAs::ChatTemplate,
            false => hspi_datasets::AskedAs::RawPrompt,
        });
        (input, answer)
    })
    .collect();
    let scores = |residency: Residency| {
        let mut engines =
            ForcedReferences::open("smollm2", &path, &formats, Vec::new(), None, residency)
                .unwrap();
        assert_eq!(engines.residency(), residency);
        answers
            .iter()
            .map(|(input, answer)| {
                let (refs, _) = engines.score(input, answer, 5).unwrap();
                serde_json::to_string(&refs.iter().map(|r| &r.outputs).collect::<Vec<_>>()).unwrap()
            })
            .collect::<Vec<String>>()
    };
    assert_eq!(scores(Residency::PerAnswer), scores(Residency::Resident));
}

/// The served path's kept layers read back as the very model, and a file cut short or of
/// another format is not read.
#[test]
fn served_formats_kept_on_disk_read_back_exactly() {
    let path = smollm2::weights_path(None)
        .expect("SmolLM2's weights are not cached: run .ci/setup (hspi fetch smollm2)");
    let weights = hspi_collect::zoo::decoder_weights::load(&path).unwrap();
    let tables = hspi_collect::backend::candle_cpu::ServedTables::new(&weights);
    let format: NumericFormat = "fp8-w8a8".parse().unwrap();
    let lm = ServedLm::with_tables(&weights, format, tables.clone()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kept = dir.path().join("fp8.served");
    lm.write_kept(&kept).unwrap();
    let tokens: Vec<u32> = (0..24).map(|i| 100 + 37 * i).collect();
    let bits = |lm: &ServedLm| {
        lm.logits_from(&tokens, 20)
            .unwrap()
            .iter()
            .map(|r| r.iter().map(|v| v.to_bits()).collect::<Vec<u32>>())
            .collect::<Vec<_>>()
    };
    let read = ServedLm::read_kept(&kept, &weights.config, format, tables.clone()).unwrap();
    assert_eq!(bits(&read), bits(&lm));
    let other: NumericFormat = "fp8-w8a16".parse().unwrap();
    assert!(ServedLm::read_kept(&kept, &weights.config, other, tables.clone()).is_none());
    let len = std::fs::metadata(&kept).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&kept).unwrap();
    f.set_len(len - 2).unwrap();
    assert!(ServedLm::read_kept(&kept, &weights.config, format, tables).is_none());
}

/// A chat answer as chat endpoints print it (each token's text and bytes, no ids) is scored on
/// the tokens it printed, not on its text read again: SmolLM2's " great" generated as " gre" and
/// "at" stays two positions, each evidence.
#[test]
fn an_answer_printed_without_ids_is_scored_on_the_tokens_it_printed() {
    let path = smollm2::weights_path(None)
        .expect("SmolLM2's weights are not cached: run .ci/setup (hspi fetch smollm2)");
    let codec = Codec::from_gguf(&path).unwrap();
    let pieces = [" the", " gre", "at", " city"];
    let ids: Vec<u32> = pieces
        .iter()
        .map(|p| {
            let ids = codec.text_ids(p).unwrap();
            assert_eq!(ids.len(), 1, "{p:?} is one of SmolLM2's tokens");
            ids[0]
        })
        .collect();
    assert_eq!(
        codec.text_ids(&pieces.concat()).unwrap().len(),
        3,
        "read again, the text merges \" gre\" and \"at\""
    );
    let steps = pieces
        .iter()
        .map(|p| TokenStep {
            token: p.to_string(),
            id: None,
            bytes: Some(p.as_bytes().to_vec()),
            logprob: None,
            top: Vec::new(),
        })
        .collect();
    let answer = chat_record(pieces.concat(), steps);
    let input = ProbeInput::Prompt {
        text: "Name a city".into(),
        params: GenerationParams {
            max_tokens: 4,
            temperature: 0.0,
            top_logprobs: 5,
            seed: None,
        },
    };
    let engines = ForcedReferences::open(
        "smollm2",
        &path,
        &[NumericFormat::Bf16],
        Vec::new(),
        None,
        Residency::Resident,
    )
    .unwrap();
    let (context, prompt) = engines.context_ids(&input, &answer).unwrap();
    assert_eq!(context[prompt..], ids[..]);
}

/// Where a piece and a byte token print the same byte (Gemma's "\n" and `<0x0A>`), a printed
/// step is the piece, as the engine's tokenizer reads it; a run of newlines printed one at a
/// time stays one position each (Gemma's vocabulary also holds the run as one token).
#[test]
fn a_printed_newline_is_gemmas_newline_piece() {
    let cache = std::env::var_os("HSPI_CACHE")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/hspi")
        });
    let path = cache.join("gemma3-270m/gemma-3-270m-q4_k_m.gguf");
    assert!(
        path.exists(),
        "{} is missing: run .ci/setup (hspi fetch gemma3-270m)",
        path.display()
    );
    let codec = Codec::from_gguf(&path).unwrap();
    let read = codec.text_ids("\n").unwrap();
    let newline = *read.last().unwrap();
    let byte_token = (0..1024)
        .find(|id| *id != newline && codec.token_bytes(*id) == b"\n")
        .expect("Gemma's vocabulary holds a byte token printing a newline too");
    assert_eq!(
        codec.token_printing(b"\n"),
        Some(newline),
        "not {byte_token}"
    );
    assert_eq!(
        codec.text_ids("\n\n\n\n").unwrap().len(),
        read.len(),
        "a run of four newlines is one token"
    );
}
