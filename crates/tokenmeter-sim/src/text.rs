//! What the simulator "generates": text cut into tokens, mostly Chinese (our users
//! stream Chinese, and a CJK character is three UTF-8 bytes that a careless client
//! splits), with English terms in between. Also the prompt-length estimate.

/// The answer corpus: one token per CJK character or punctuation mark, one per
/// English word (with its leading space).
const ANSWER: &str = "大模型推理分为两个阶段。预填充（prefill）阶段一次性处理整个 prompt，计算所有输入 token 的 KV cache，它是计算密集型的，决定了首字延迟 TTFT。解码（decode）阶段每一步只生成一个 token，需要反复读取权重和 KV cache，它是显存带宽密集型的，决定了 TPOT。并发升高时，连续批处理（continuous batching）把更多序列放进同一个 batch，总吞吐上升，但每个请求的解码变慢，直到吞吐出现拐点。";

/// The reasoning corpus, for the `reasoning` fault.
const REASONING: &str =
    "用户想了解 prefill 和 decode 的区别。先说计算特点，再说对延迟指标的影响，最后联系并发。";

/// Splits a corpus into tokens.
fn tokens_of(corpus: &'static str) -> Vec<&'static str> {
    let mut tokens = Vec::new();
    let mut rest = corpus;
    while let Some(c) = rest.chars().next() {
        let len = if c.is_ascii_alphanumeric() || c == ' ' {
            // An English word, with the spaces before it.
            let word_start = rest.find(|ch: char| ch != ' ').unwrap_or(rest.len());
            let word_len = rest[word_start..]
                .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '-' || ch == '_'))
                .unwrap_or(rest.len() - word_start);
            (word_start + word_len).max(c.len_utf8())
        } else {
            c.len_utf8()
        };
        tokens.push(&rest[..len]);
        rest = &rest[len..];
    }
    tokens
}

/// Token texts, cycling through a corpus from a request-dependent offset.
pub struct TokenText {
    tokens: Vec<&'static str>,
    offset: usize,
}

impl TokenText {
    pub fn answer(seed: u64) -> TokenText {
        let tokens = tokens_of(ANSWER);
        let offset = (seed as usize).wrapping_mul(7) % tokens.len();
        TokenText { tokens, offset }
    }

    pub fn reasoning() -> TokenText {
        TokenText {
            tokens: tokens_of(REASONING),
            offset: 0,
        }
    }

    /// The text of token `index`.
    pub fn token(&self, index: u64) -> &'static str {
        self.tokens[(self.offset + index as usize) % self.tokens.len()]
    }
}

/// Estimates the prompt's token count without a tokenizer: one token per CJK
/// character, one per four other characters (the usual English rule of thumb).
pub fn estimate_tokens(text: &str) -> u64 {
    let (mut cjk, mut other) = (0u64, 0u64);
    for c in text.chars() {
        if (c as u32) >= 0x2E80 {
            cjk += 1;
        } else {
            other += 1;
        }
    }
    cjk + other.div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_cover_the_corpus_exactly() {
        assert_eq!(tokens_of(ANSWER).concat(), ANSWER);
        assert_eq!(tokens_of(REASONING).concat(), REASONING);
        let t = tokens_of("阶段 KV cache，它");
        assert_eq!(t, ["阶", "段", " KV", " cache", "，", "它"]);
    }

    #[test]
    fn estimates() {
        assert_eq!(estimate_tokens("请用300字介绍"), 5 + 1);
        assert_eq!(estimate_tokens("hello world!"), 3);
        assert_eq!(estimate_tokens(""), 0);
    }
}
