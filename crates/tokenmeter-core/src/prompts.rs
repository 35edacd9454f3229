//! The user's own prompts, from a file opened in the page (never uploaded):
//! JSON lines of `{"prompt": …}` or `{"messages": […]}` (OpenAI chat), a ShareGPT
//! JSON array (`conversations` of `from`/`value`: the first human turn, after any
//! system turn, and the later human turns for a plan of conversations), or text
//! with one prompt per line. A bad file is refused with the
//! line (or the conversation) and why, in both languages, and nothing of it is
//! kept. The plan keeps what identifies the file ([`PromptFile`]: name, size,
//! count, SHA-256) and how requests draw from it ([`Order`]); the prompts travel to
//! the engine beside the plan ([`Prompts`]), never in a link or a run document.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::{error::Said, said};

/// The largest prompt file read: the page holds it in memory twice (the page's
/// and the engine's copy).
pub(crate) const MAX_FILE_BYTES: usize = 64 << 20;
/// The most prompts a file may hold.
pub(crate) const MAX_PROMPTS: usize = 200_000;

/// How a file's prompts were written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// One JSON object per line: `{"prompt": "…"}` or `{"messages": […]}`.
    Jsonl,
    /// A JSON array of ShareGPT conversations (or of the objects JSON lines hold).
    Sharegpt,
    /// One prompt per line of text.
    Text,
}

/// Which prompt a request sends: the file's in order (request `n` sends prompt
/// `n mod count`), or one drawn at random per request from the run's seed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Request `n` sends prompt `n mod count`.
    #[default]
    InOrder,
    /// Each request draws one from the run's seed.
    Random,
}

/// What identifies a prompt file: a plan keeps this, and a plan opened from a link
/// says which file it needs, and checks it when one is given.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptFile {
    /// The file's name.
    pub name: String,
    /// Its size, bytes.
    pub size_bytes: u64,
    /// How many prompts it holds.
    pub count: u32,
    /// SHA-256 of the file's bytes, lowercase hex (`sha256sum` prints the same).
    pub sha256: String,
    /// How it was read.
    pub format: Format,
    /// How requests draw from it.
    #[serde(default)]
    pub order: Order,
}

impl PromptFile {
    /// The file in a few words: its name, prompts, size and the start of its hash.
    pub fn said(&self) -> Said {
        let PromptFile { name, count, .. } = self;
        let kib = self.size_bytes.div_ceil(1024);
        let sha = &self.sha256[..self.sha256.len().min(12)];
        said!(
            "{name}: {count} prompts, {kib} KiB, sha256 {sha}…",
            "{name}：{count} 个提示词，{kib} KiB，sha256 {sha}…"
        )
    }
}

/// A plan of prompts from `file` whose prompts are not here (a plan from a link,
/// an import, or a page reloaded: a file's prompts live in the page's memory only).
pub fn missing(file: &PromptFile) -> Said {
    let (en, zh) = {
        let said = file.said();
        (said.en, said.zh)
    };
    said!(
        "this plan sends the prompts of a file ({en}): choose that file under Prompts; the page keeps a file's prompts in memory only",
        "这个计划发送一个文件中的提示词（{zh}）：请在“各请求的提示词”下选择该文件；页面只在内存中保存文件的提示词"
    )
}

/// One prompt: a text, or the messages of an OpenAI chat (each an object with a
/// string `role` and a `content`, sent as written), or a ShareGPT conversation of
/// more than one human turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Prompt {
    Text(String),
    Messages(Vec<Value>),
    /// A conversation's first turn (its system turns and first human turn, as
    /// messages) and the human turns after it, in order. A single request sends
    /// the first turn; a plan of conversations sends the later ones turn by turn,
    /// after the model's own answers (the file's answers are not sent: a server
    /// answers as it does, and the next turn goes on from that).
    Conversation {
        first: Vec<Value>,
        later: Vec<String>,
    },
}

impl Prompt {
    /// The prompt as one text (a completions endpoint's `prompt`): a chat's
    /// message contents, a blank line apart.
    pub fn text(&self) -> String {
        match self {
            Prompt::Text(text) => text.clone(),
            Prompt::Messages(messages)
            | Prompt::Conversation {
                first: messages, ..
            } => messages
                .iter()
                .map(|m| content_text(m.get("content").unwrap_or(&Value::Null)))
                .collect::<Vec<_>>()
                .join("\n\n"),
        }
    }

    /// The prompt as chat messages: a text is the user's one message.
    pub fn messages(&self) -> Vec<Value> {
        match self {
            Prompt::Text(text) => vec![serde_json::json!({"role": "user", "content": text})],
            Prompt::Messages(messages)
            | Prompt::Conversation {
                first: messages, ..
            } => messages.clone(),
        }
    }

    /// The user's messages after the first turn (a ShareGPT conversation's later
    /// human turns; none for any other prompt).
    pub fn later_turns(&self) -> &[String] {
        match self {
            Prompt::Conversation { later, .. } => later,
            Prompt::Text(_) | Prompt::Messages(_) => &[],
        }
    }

    /// How many turns the prompt has: its first, and each later one.
    pub fn n_turns(&self) -> u32 {
        1 + self.later_turns().len().min(u32::MAX as usize - 1) as u32
    }
}

/// A content's text: a string, or the `text` of each part of an array.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A file's prompts and what identifies it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Prompts {
    /// What identifies the file.
    pub file: PromptFile,
    /// Its prompts, in the file's order.
    pub prompts: Vec<Prompt>,
}

impl Prompts {
    /// The prompt request `request_id` sends in a run with `seed`, drawn in
    /// `order` (the plan's).
    pub fn for_request(&self, order: Order, seed: u64, request_id: u64) -> &Prompt {
        let n = self.prompts.len().max(1) as u64;
        let i = match order {
            Order::InOrder => request_id % n,
            Order::Random => {
                mix(seed ^ 0x7072_6f6d_7074 ^ request_id.wrapping_mul(0x9E37_79B9_7F4A_7C15)) % n
            }
        };
        &self.prompts[i as usize]
    }
}

/// SplitMix64's finaliser: a well-spread 64-bit value from any input.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Reads the file `name` of `bytes`; refuses a bad one with where and why. (Its
/// `order` is the default: the plan chooses it.)
pub fn read(name: &str, bytes: &[u8]) -> Result<Prompts, Said> {
    if bytes.len() > MAX_FILE_BYTES {
        let mib = bytes.len() >> 20;
        let max = MAX_FILE_BYTES >> 20;
        return Err(said!(
            "{name} is {mib} MiB: a prompt file may hold at most {max} MiB",
            "{name} 有 {mib} MiB：提示词文件最多 {max} MiB"
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|err| {
        let line = bytes[..err.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        said!(
            "{name}, line {line}: not UTF-8 text (save the file as UTF-8)",
            "{name} 第 {line} 行：不是 UTF-8 文本（请把文件另存为 UTF-8）"
        )
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (format, prompts) = match text.trim_start().chars().next() {
        Some('[') => (Format::Sharegpt, read_array(name, text)?),
        Some('{') => (Format::Jsonl, read_lines(name, text)?),
        _ => (
            Format::Text,
            text.lines()
                .map(|line| line.trim_end_matches('\r'))
                .filter(|line| !line.trim().is_empty())
                .map(|line| Prompt::Text(line.to_owned()))
                .collect(),
        ),
    };
    if prompts.is_empty() {
        return Err(said!(
            "{name} holds no prompt: write one per line, or JSON lines of {{\"prompt\": …}} or {{\"messages\": […]}}",
            "{name} 里没有提示词：每行写一个，或写成 {{\"prompt\": …}} 或 {{\"messages\": […]}} 的 JSON 行"
        ));
    }
    if prompts.len() > MAX_PROMPTS {
        let n = prompts.len();
        return Err(said!(
            "{name} holds {n} prompts: at most {MAX_PROMPTS} are read",
            "{name} 有 {n} 个提示词：最多读取 {MAX_PROMPTS} 个"
        ));
    }
    let sha256 = sha256_hex(bytes);
    Ok(Prompts {
        file: PromptFile {
            name: name.to_owned(),
            size_bytes: bytes.len() as u64,
            count: prompts.len() as u32,
            sha256,
            format,
            order: Order::default(),
        },
        prompts,
    })
}

/// SHA-256 of `bytes`, lowercase hex (as `sha256sum` prints it).
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// JSON lines: one object per non-blank line.
fn read_lines(name: &str, text: &str) -> Result<Vec<Prompt>, Said> {
    let mut prompts = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(line).map_err(|err| {
            said!(
                "{name}, line {line_no}: not JSON ({err})",
                "{name} 第 {line_no} 行：不是 JSON（{err}）"
            )
        })?;
        let prompt = object_prompt(&value).map_err(|why| {
            let (why_en, why_zh) = (why.en, why.zh);
            said!(
                "{name}, line {line_no}: {why_en}",
                "{name} 第 {line_no} 行：{why_zh}"
            )
        })?;
        prompts.push(prompt);
    }
    Ok(prompts)
}

/// A JSON array: ShareGPT conversations, or the objects JSON lines hold.
fn read_array(name: &str, text: &str) -> Result<Vec<Prompt>, Said> {
    let items: Vec<Value> = serde_json::from_str(text).map_err(|err| {
        let line = err.line();
        said!(
            "{name}, line {line}: not a JSON array of conversations ({err})",
            "{name} 第 {line} 行：不是由对话组成的 JSON 数组（{err}）"
        )
    })?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let n = i + 1;
            let read = match item.get("conversations") {
                Some(turns) => sharegpt_prompt(turns),
                None => object_prompt(item),
            };
            read.map_err(|why| {
                let (why_en, why_zh) = (why.en, why.zh);
                said!(
                    "{name}, conversation {n}: {why_en}",
                    "{name} 第 {n} 段对话：{why_zh}"
                )
            })
        })
        .collect()
}

/// `{"prompt": "…"}` or `{"messages": […]}`.
fn object_prompt(value: &Value) -> Result<Prompt, Said> {
    if let Some(prompt) = value.get("prompt") {
        return match prompt {
            Value::String(s) if !s.trim().is_empty() => Ok(Prompt::Text(s.clone())),
            _ => Err(said!(
                "\"prompt\" is not a text, or is empty",
                "\"prompt\" 不是文本，或为空"
            )),
        };
    }
    match value.get("messages") {
        Some(Value::Array(messages)) if !messages.is_empty() => {
            for (i, m) in messages.iter().enumerate() {
                let n = i + 1;
                let role_ok = m.get("role").and_then(Value::as_str).is_some();
                let content_ok =
                    matches!(m.get("content"), Some(Value::String(_) | Value::Array(_)));
                if !(role_ok && content_ok) {
                    return Err(said!(
                        "message {n} needs a text \"role\" and a \"content\"",
                        "第 {n} 条消息需要文本形式的 \"role\" 和 \"content\""
                    ));
                }
            }
            Ok(Prompt::Messages(messages.clone()))
        }
        Some(_) => Err(said!(
            "\"messages\" is not a list of messages",
            "\"messages\" 不是消息列表"
        )),
        None => Err(said!(
            "neither \"prompt\" nor \"messages\" is there",
            "既没有 \"prompt\" 也没有 \"messages\""
        )),
    }
}

/// A ShareGPT conversation's prompt: its system turns and first human turn, and
/// the human turns after it (the model's turns between them are left out: the
/// server's own answers take their place).
fn sharegpt_prompt(turns: &Value) -> Result<Prompt, Said> {
    let Value::Array(turns) = turns else {
        return Err(said!(
            "\"conversations\" is not a list of turns",
            "\"conversations\" 不是由轮次组成的列表"
        ));
    };
    let mut first = Vec::new();
    let mut later = Vec::new();
    let mut asked = false;
    for turn in turns {
        let from = turn.get("from").and_then(Value::as_str).unwrap_or_default();
        let Some(value) = turn.get("value").and_then(Value::as_str) else {
            continue;
        };
        let role = match from {
            "system" => "system",
            "human" | "user" => "user",
            _ => continue,
        };
        if asked {
            // A system turn after the first question is the file's own aside; a
            // blank human turn has nothing to send.
            if role == "user" && !value.trim().is_empty() {
                later.push(value.to_owned());
            }
            continue;
        }
        let mut message = Map::new();
        message.insert("role".into(), role.into());
        message.insert("content".into(), value.into());
        first.push(Value::Object(message));
        asked = role == "user";
    }
    if !asked {
        return Err(said!(
            "no human turn (\"from\": \"human\") to send",
            "没有可发送的人类轮次（\"from\": \"human\"）"
        ));
    }
    Ok(if later.is_empty() {
        Prompt::Messages(first)
    } else {
        Prompt::Conversation { first, later }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Prompts {
        read("p.txt", text.as_bytes()).unwrap()
    }

    fn refused(name: &str, bytes: &[u8]) -> Said {
        read(name, bytes).unwrap_err()
    }

    #[test]
    fn text_jsonl_and_sharegpt_are_read() {
        let text = ok("first prompt\r\n\n  \n第二个提示词\n");
        assert_eq!(text.file.format, Format::Text);
        assert_eq!(
            text.prompts,
            [
                Prompt::Text("first prompt".into()),
                Prompt::Text("第二个提示词".into())
            ]
        );
        assert_eq!(text.file.count, 2);

        let jsonl = ok("{\"prompt\": \"a\"}\n\n{\"messages\": [{\"role\": \"system\", \"content\": \"be brief\"}, {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"b\"}]}]}\n");
        assert_eq!(jsonl.file.format, Format::Jsonl);
        assert_eq!(jsonl.prompts[0], Prompt::Text("a".into()));
        assert_eq!(jsonl.prompts[1].text(), "be brief\n\nb");
        assert_eq!(
            jsonl.prompts[0].messages(),
            [serde_json::json!({"role": "user", "content": "a"})]
        );

        let sharegpt = ok(
            r#"[{"id": "x", "conversations": [{"from": "system", "value": "s"}, {"from": "human", "value": "你好"}, {"from": "gpt", "value": "hi"}, {"from": "human", "value": "later"}]},
            {"conversations": [{"from": "human", "value": "q"}]}]"#,
        );
        assert_eq!(sharegpt.file.format, Format::Sharegpt);
        assert_eq!(
            sharegpt.prompts[0],
            Prompt::Conversation {
                first: vec![
                    serde_json::json!({"role": "system", "content": "s"}),
                    serde_json::json!({"role": "user", "content": "你好"}),
                ],
                later: vec!["later".into()],
            }
        );
        // A single request sends the first turn.
        assert_eq!(sharegpt.prompts[0].text(), "s\n\n你好");
        assert_eq!(sharegpt.prompts[0].n_turns(), 2);
        assert_eq!(sharegpt.prompts[1].text(), "q");
        assert_eq!(sharegpt.prompts[1].n_turns(), 1);
        assert!(sharegpt.prompts[1].later_turns().is_empty());
    }

    #[test]
    fn the_file_is_identified_by_its_size_count_and_sha256() {
        let p = read("abc.txt", b"abc").unwrap();
        assert_eq!(p.file.size_bytes, 3);
        assert_eq!(p.file.count, 1);
        assert_eq!(p.file.order, Order::InOrder);
        // `printf abc | sha256sum`
        assert_eq!(
            p.file.sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        // A byte-order mark is no prompt text.
        assert_eq!(ok("\u{feff}x\n").prompts, [Prompt::Text("x".into())]);
    }

    #[test]
    fn bad_files_are_refused_with_their_line_and_why() {
        let cases: [(&str, &[u8], &str, &str); 8] = [
            ("a.jsonl", b"{\"prompt\": \"a\"}\n{\"prompt\": oops}\n", "a.jsonl, line 2: not JSON", "第 2 行：不是 JSON"),
            ("b.jsonl", b"{\"prompt\": \"a\"}\n\n{\"text\": \"b\"}\n", "b.jsonl, line 3: neither \"prompt\" nor \"messages\"", "第 3 行"),
            ("c.jsonl", b"{\"messages\": [{\"content\": \"x\"}]}\n", "c.jsonl, line 1: message 1 needs a text \"role\"", "第 1 条消息"),
            ("d.txt", b"\n  \n", "d.txt holds no prompt", "没有提示词"),
            ("e.json", br#"[{"conversations": [{"from": "human", "value": "q"}]}, {"conversations": [{"from": "gpt", "value": "a"}]}]"#, "e.json, conversation 2: no human turn", "第 2 段对话"),
            ("f.txt", b"ok\nnot \xff utf-8\n", "f.txt, line 2: not UTF-8", "第 2 行：不是 UTF-8"),
            ("g.json", b"[{\"conversations\": [}\n", "g.json, line 1: not a JSON array", "第 1 行"),
            ("h.jsonl", b"{\"prompt\": \"\"}\n", "h.jsonl, line 1: \"prompt\" is not a text, or is empty", "不是文本"),
        ];
        for (name, bytes, en, zh) in cases {
            let said = refused(name, bytes);
            assert!(said.en.starts_with(en), "{name}: {}", said.en);
            assert!(said.zh.contains(zh), "{name}: {}", said.zh);
        }
        let big = vec![b'x'; MAX_FILE_BYTES + 1];
        assert!(refused("big.txt", &big).en.contains("at most 64 MiB"));
    }

    #[test]
    fn requests_draw_in_order_or_at_random_from_the_seed() {
        let p = ok("a\nb\nc\n");
        let sent: Vec<String> = (0..6)
            .map(|id| p.for_request(Order::InOrder, 1, id).text())
            .collect();
        assert_eq!(sent, ["a", "b", "c", "a", "b", "c"]);
        let draw = |seed| {
            (0..300)
                .map(|id| p.for_request(Order::Random, seed, id).text())
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7), "the same seed sends the same prompts");
        assert_ne!(draw(7), draw(8));
        for prompt in ["a", "b", "c"] {
            let n = draw(7).iter().filter(|t| *t == prompt).count();
            assert!((70..=130).contains(&n), "{prompt} drawn {n} times of 300");
        }
    }
}
