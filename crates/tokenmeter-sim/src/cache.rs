//! The prompt (prefix) cache, as the servers our users run keep one (vLLM's
//! automatic prefix caching, SGLang's RadixAttention, llama.cpp's `cache_prompt`):
//! a prompt is cut into blocks of [`BLOCK_TOKENS`] tokens, each block named by a
//! hash of the whole prompt up to its end (so a block matches only behind the same
//! prefix), and a request reuses the leading blocks an earlier request computed;
//! only the rest costs prefill. Least recently used blocks are evicted beyond the
//! capacity.
//!
//! Tokens are the simulator's estimate (see [`crate::text::estimate_tokens`]):
//! a CJK character is one, four other characters are one, so the token count of
//! any prefix is the estimate of that prefix.

use std::{
    collections::{BTreeMap, HashMap},
    hash::{DefaultHasher, Hasher},
    sync::Mutex,
};

/// Tokens per block (vLLM's default block size).
pub const BLOCK_TOKENS: u64 = 16;

/// The cache: blocks by their prefix hash, with when each was last used.
pub struct PromptCache {
    capacity_blocks: usize,
    state: Mutex<Lru>,
}

#[derive(Default)]
struct Lru {
    /// Block hash → the tick it was last used at.
    used_at: HashMap<u64, u64>,
    /// Tick → block hash: the oldest first, for eviction.
    by_age: BTreeMap<u64, u64>,
    tick: u64,
}

impl Lru {
    fn touch(&mut self, block: u64) {
        self.tick += 1;
        if let Some(old) = self.used_at.insert(block, self.tick) {
            self.by_age.remove(&old);
        }
        self.by_age.insert(self.tick, block);
    }
}

impl PromptCache {
    /// A cache holding up to `capacity_tokens` tokens (whole blocks); 0 keeps
    /// nothing (the cache is off).
    pub fn new(capacity_tokens: u64) -> PromptCache {
        PromptCache {
            capacity_blocks: (capacity_tokens / BLOCK_TOKENS) as usize,
            state: Mutex::new(Lru::default()),
        }
    }

    /// The prompt's tokens found in the cache (its leading blocks computed
    /// before), then its blocks kept, as the server keeps a prompt it computed.
    pub fn lookup_and_keep(&self, prompt: &str) -> u64 {
        if self.capacity_blocks == 0 {
            return 0;
        }
        let blocks = block_hashes(prompt);
        let mut state = self.state.lock().expect("cache lock");
        let n_found = blocks
            .iter()
            .take_while(|b| state.used_at.contains_key(b))
            .count();
        for &block in &blocks {
            state.touch(block);
        }
        while state.used_at.len() > self.capacity_blocks {
            let Some((_, oldest)) = state.by_age.pop_first() else {
                break;
            };
            state.used_at.remove(&oldest);
        }
        n_found as u64 * BLOCK_TOKENS
    }
}

/// The hash of every whole block of `prompt`: that of the text from its start to
/// the block's end.
fn block_hashes(prompt: &str) -> Vec<u64> {
    let mut hasher = DefaultHasher::new();
    let (mut cjk, mut other) = (0u64, 0u64);
    let mut blocks = Vec::new();
    let mut buf = [0u8; 4];
    for c in prompt.chars() {
        hasher.write(c.encode_utf8(&mut buf).as_bytes());
        if (c as u32) >= 0x2E80 {
            cjk += 1;
        } else {
            other += 1;
        }
        // The estimate of the prefix so far, as `estimate_tokens` counts it.
        let tokens = cjk + other.div_ceil(4);
        if tokens == (blocks.len() as u64 + 1) * BLOCK_TOKENS {
            blocks.push(hasher.finish());
        }
    }
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::estimate_tokens;

    #[test]
    fn a_prompt_seen_before_is_found_by_its_whole_blocks() {
        let cache = PromptCache::new(1 << 20);
        let prompt = "大模型推理分为两个阶段。".repeat(10); // 120 tokens: 7 whole blocks
        assert_eq!(estimate_tokens(&prompt), 120);
        assert_eq!(cache.lookup_and_keep(&prompt), 0, "first: computed");
        assert_eq!(
            cache.lookup_and_keep(&prompt),
            112,
            "then: every whole block"
        );
        // The same text behind a different first token shares no block.
        assert_eq!(cache.lookup_and_keep(&format!("x{prompt}")), 0);
        // A longer prompt behind the same prefix reuses the prefix's blocks.
        assert_eq!(cache.lookup_and_keep(&format!("{prompt}更多的内容")), 112);
    }

    #[test]
    fn least_recently_used_blocks_go_first_and_zero_is_off() {
        let cache = PromptCache::new(32); // two blocks
        let a = "a".repeat(128); // 32 tokens: two blocks
        let b = "b".repeat(128);
        cache.lookup_and_keep(&a);
        cache.lookup_and_keep(&b); // evicts a's
        assert_eq!(cache.lookup_and_keep(&a), 0);
        assert_eq!(cache.lookup_and_keep(&a), 32);
        let off = PromptCache::new(0);
        off.lookup_and_keep(&a);
        assert_eq!(off.lookup_and_keep(&a), 0);
    }

    #[test]
    fn block_ends_follow_the_token_estimate_across_scripts() {
        let prompt = format!("{}{}", "ab".repeat(30), "预填充".repeat(20));
        assert_eq!(
            block_hashes(&prompt).len() as u64,
            estimate_tokens(&prompt) / BLOCK_TOKENS
        );
    }
}
