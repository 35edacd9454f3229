//! Providers and servers a user points the page at, in one table: each one's base
//! URL, kind of API and way of sending the key, what it allows a page in a
//! browser to do (CORS), and what to set on it. Choosing one fills the plan's
//! endpoint fields; the key is never sent anywhere but the endpoint's own origin
//! (the page asks before a remembered key goes to another).
//!
//! Each fact's source is in a comment beside it. Where a provider documents
//! nothing about browsers, the table says so rather than guess: a request the
//! browser blocks is then named by the run (`network`, with the probe that tells
//! CORS from an unreachable host).

use crate::{error::Words, plan::AuthStyle, stream::EndpointKind};

/// One preset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Provider {
    /// The page's hook value (`provider`'s option).
    pub id: &'static str,
    /// The name the chooser shows.
    pub name: &'static str,
    /// The base URL it fills in.
    pub base_url: &'static str,
    /// The API it speaks.
    pub endpoint: EndpointKind,
    /// How it takes the key.
    pub auth: AuthStyle,
    /// Runs on the user's own machine or cluster (the server's settings are theirs).
    pub self_hosted: bool,
    /// What it allows a page in a browser, and what to set where the user can.
    pub browser: Words,
}

const fn w(en: &'static str, zh: &'static str) -> Words {
    Words { en, zh }
}

/// Every preset, in the order the page offers them.
pub const PROVIDERS: &[Provider] = &[
    Provider {
        id: "simulator",
        name: "tokenmeter-sim",
        base_url: "http://127.0.0.1:8000/v1",
        endpoint: EndpointKind::Chat,
        auth: AuthStyle::Bearer,
        self_hosted: true,
        // crates/tokenmeter-sim/src/server/routes.rs: CORS on every answer.
        browser: w(
            "Allows every origin. Start it with cargo run -p tokenmeter-sim (cargo xtask serve does).",
            "允许所有来源。cargo xtask serve 会同时启动它。",
        ),
    },
    Provider {
        id: "openai",
        name: "OpenAI",
        base_url: "https://api.openai.com/v1",
        endpoint: EndpointKind::Chat,
        auth: AuthStyle::Bearer,
        self_hosted: false,
        // OpenAI's API answers CORS requests from any origin (its JavaScript SDK runs
        // in browsers with `dangerouslyAllowBrowser`).
        browser: w(
            "Allows calls from a browser. The key is then in this page's memory: use a project key with limits for load tests.",
            "允许浏览器直接调用。Key 会留在本页内存中：压测请使用带额度限制的项目 Key。",
        ),
    },
    Provider {
        id: "openai-responses",
        name: "OpenAI (Responses API)",
        base_url: "https://api.openai.com/v1",
        endpoint: EndpointKind::Responses,
        auth: AuthStyle::Bearer,
        self_hosted: false,
        browser: w(
            "Allows calls from a browser; the Responses API streams its own events (response.output_text.delta). Use a project key with limits.",
            "允许浏览器直接调用；Responses API 以自己的事件流式返回（response.output_text.delta）。请使用带额度限制的项目 Key。",
        ),
    },
    Provider {
        id: "anthropic",
        name: "Anthropic",
        base_url: "https://api.anthropic.com/v1",
        endpoint: EndpointKind::Anthropic,
        auth: AuthStyle::XApiKey,
        self_hosted: false,
        // docs.anthropic.com: browser calls need the
        // `anthropic-dangerous-direct-browser-access: true` header (sent by the
        // anthropic kind, see `Plan::request_headers`).
        browser: w(
            "Allows calls from a browser with the header anthropic-dangerous-direct-browser-access: true, which tokenmeter sends on this kind (with anthropic-version). The key goes as x-api-key.",
            "带上 anthropic-dangerous-direct-browser-access: true 请求头即允许浏览器调用，tokenmeter 在此接口类型下会发送它（以及 anthropic-version）。Key 以 x-api-key 发送。",
        ),
    },
    Provider {
        id: "openrouter",
        name: "OpenRouter",
        base_url: "https://openrouter.ai/api/v1",
        endpoint: EndpointKind::Chat,
        auth: AuthStyle::Bearer,
        self_hosted: false,
        // openrouter.ai/docs: browser use is supported; users report preflights
        // failing on custom request headers.
        browser: w(
            "Allows calls from a browser; extra headers of your own may be refused by its CORS preflight: leave them out if requests get no response.",
            "允许浏览器调用；自定义的附加请求头可能被其 CORS 预检拒绝：若请求没有响应，请去掉附加请求头。",
        ),
    },
    Provider {
        id: "together",
        name: "Together AI",
        base_url: "https://api.together.xyz/v1",
        endpoint: EndpointKind::Chat,
        auth: AuthStyle::Bearer,
        self_hosted: false,
        browser: w(
            "Allows calls from a browser.",
            "允许浏览器调用。",
        ),
    },
    Provider {
        id: "fireworks",
        name: "Fireworks AI",
        base_url: "https://api.fireworks.ai/inference/v1",
        endpoint: EndpointKind::Chat,
        auth: AuthStyle::Bearer,
        self_hosted: false,
        // Its preflight allows only Authorization and Content-Type.
        browser: w(
            "Allows calls from a browser with only the Authorization and Content-Type headers: add no extra headers.",
            "允许浏览器调用，但只允许 Authorization 和 Content-Type 两个请求头：请不要添加附加请求头。",
        ),
    },
    Provider {
        id: "groq",
        name: "Groq",
        base_url: "https://api.groq.com/openai/v1",
        endpoint: EndpointKind::Chat,
        auth: AuthStyle::Bearer,
        self_hosted: false,
        // Users' reports differ; its documentation says nothing of browsers.
        browser: w(
            "Browser calls are not documented and users' reports differ: if requests get no response, the browser was refused; run the same plan on Locust instead.",
            "官方文档未说明是否允许浏览器调用，用户反馈不一：若请求没有响应，说明被浏览器拦截，请改用 Locust 运行同一计划。",
        ),
    },
    Provider {
        id: "deepseek",
        name: "DeepSeek",
        base_url: "https://api.deepseek.com/v1",
        endpoint: EndpointKind::Chat,
        auth: AuthStyle::Bearer,
        self_hosted: false,
        // api-docs.deepseek.com: OpenAI-compatible at https://api.deepseek.com(/v1);
        // reasoning models stream `reasoning_content`. Nothing on browsers.
        browser: w(
            "Browser calls are not documented and users' reports differ: if requests get no response, the browser was refused; run the same plan on Locust instead. Its reasoning models stream reasoning_content, which tokenmeter counts apart.",
            "官方文档未说明是否允许浏览器调用，用户反馈不一：若请求没有响应，说明被浏览器拦截，请改用 Locust 运行同一计划。其推理模型会流式返回 reasoning_content，tokenmeter 会单独计数。",
        ),
    },
    Provider {
        id: "vllm",
        name: "vLLM",
        base_url: "http://localhost:8000/v1",
        endpoint: EndpointKind::Chat,
        auth: AuthStyle::Bearer,
        self_hosted: true,
        // docs.vllm.ai, `vllm serve --help`: --allowed-origins defaults to ["*"];
        // /metrics on the same port.
        browser: w(
            "Allows every origin by default (--allowed-origins), /metrics included; the key is --api-key's. Automatic prefix caching is on: keep each request its own prompt.",
            "默认允许所有来源（--allowed-origins），/metrics 也是；Key 即 --api-key 的值。自动前缀缓存默认开启：请保持每个请求各自的提示词。",
        ),
    },
    Provider {
        id: "sglang",
        name: "SGLang",
        base_url: "http://localhost:30000/v1",
        endpoint: EndpointKind::Chat,
        auth: AuthStyle::Bearer,
        self_hosted: true,
        // sglang/srt/entrypoints/http_server.py: CORS middleware allowing every
        // origin; metrics only with --enable-metrics.
        browser: w(
            "Allows every origin; start it with --enable-metrics for /metrics. RadixAttention caches prompts: keep each request its own prompt.",
            "允许所有来源；启动时加 --enable-metrics 才有 /metrics。RadixAttention 会缓存提示词：请保持每个请求各自的提示词。",
        ),
    },
    Provider {
        id: "tgi",
        name: "Text Generation Inference",
        base_url: "http://localhost:8080/v1",
        endpoint: EndpointKind::Chat,
        auth: AuthStyle::Bearer,
        self_hosted: true,
        // text-generation-launcher --help: --cors-allow-origin, empty by default.
        browser: w(
            "Refuses other origins unless started with --cors-allow-origin set to this page's origin. Its default port 8080 is also trunk serve's: move one of them.",
            "除非启动时用 --cors-allow-origin 指定本页的来源，否则拒绝其他来源。它的默认端口 8080 与 trunk serve 相同：请改用其他端口。",
        ),
    },
    Provider {
        id: "llamacpp",
        name: "llama.cpp (llama-server)",
        base_url: "http://localhost:8080/v1",
        endpoint: EndpointKind::Chat,
        auth: AuthStyle::Bearer,
        self_hosted: true,
        // tools/server/README.md: CORS allowed for every origin; --metrics enables
        // /metrics; cache_prompt on by default.
        browser: w(
            "Allows every origin; start it with --metrics for /metrics. It caches prompts (cache_prompt) and reports its own timings. Its default port 8080 is also trunk serve's: move one of them.",
            "允许所有来源；启动时加 --metrics 才有 /metrics。它会缓存提示词（cache_prompt）并报告自己的耗时。它的默认端口 8080 与 trunk serve 相同：请改用其他端口。",
        ),
    },
    Provider {
        id: "ollama",
        name: "Ollama",
        base_url: "http://localhost:11434/v1",
        endpoint: EndpointKind::Chat,
        auth: AuthStyle::Bearer,
        self_hosted: true,
        // docs/faq.md ("How can I allow additional web origins"): localhost,
        // 127.0.0.1 and 0.0.0.0 on any port by default; OLLAMA_ORIGINS for others.
        browser: w(
            "Allows pages served from localhost or 127.0.0.1 by default; for a page hosted elsewhere set OLLAMA_ORIGINS to its origin and restart Ollama. No key is needed.",
            "默认只允许来自 localhost 或 127.0.0.1 的页面；页面托管在其他地方时，把 OLLAMA_ORIGINS 设为它的来源并重启 Ollama。无需 Key。",
        ),
    },
    Provider {
        id: "lmstudio",
        name: "LM Studio",
        base_url: "http://localhost:1234/v1",
        endpoint: EndpointKind::Chat,
        auth: AuthStyle::Bearer,
        self_hosted: true,
        // lmstudio.ai/docs: CORS off by default (`lms server start --cors`, or the
        // Developer tab's switch).
        browser: w(
            "Refuses other origins until CORS is on: lms server start --cors, or the switch in its Developer tab. No key is needed.",
            "在开启 CORS 之前会拒绝其他来源：使用 lms server start --cors，或在 Developer 页打开开关。无需 Key。",
        ),
    },
];

/// The preset with hook `id`.
pub fn provider(id: &str) -> Option<&'static Provider> {
    PROVIDERS.iter().find(|p| p.id == id)
}

/// The preset a base URL and kind of API are, if they are one's exactly (a plan
/// loaded from a link shows its provider).
pub fn matching(base_url: &str, endpoint: EndpointKind) -> Option<&'static Provider> {
    PROVIDERS
        .iter()
        .find(|p| p.base_url == base_url && p.endpoint == endpoint)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{normalize_base_url, Plan};

    #[test]
    fn every_preset_is_a_plan_that_validates_and_names_itself() {
        let mut ids = Vec::new();
        for p in PROVIDERS {
            assert!(!ids.contains(&p.id), "{} twice", p.id);
            ids.push(p.id);
            // The base URL as the form would keep it.
            assert_eq!(
                normalize_base_url(p.base_url).unwrap().0,
                p.base_url,
                "{}",
                p.id
            );
            let mut plan = Plan::default_for_simulator(p.base_url);
            plan.endpoint = p.endpoint;
            plan.auth = p.auth;
            assert!(plan.validate().is_ok(), "{}", p.id);
            assert!(
                !p.browser.en.is_empty() && !p.browser.zh.is_empty(),
                "{}",
                p.id
            );
            assert!(
                p.browser.zh.chars().any(|c| c > '\u{3000}'),
                "{}: Chinese",
                p.id
            );
            assert_eq!(provider(p.id), Some(p));
            // Self-hosted servers are on this machine; providers on https.
            assert_eq!(
                p.base_url.starts_with("https://"),
                !p.self_hosted,
                "{}",
                p.id
            );
        }
        assert_eq!(
            matching("https://api.openai.com/v1", EndpointKind::Responses)
                .unwrap()
                .id,
            "openai-responses"
        );
        assert_eq!(
            matching("https://api.openai.com/v1", EndpointKind::Chat)
                .unwrap()
                .id,
            "openai"
        );
        assert_eq!(matching("https://example.com/v1", EndpointKind::Chat), None);
        // Anthropic's kind sends the key as Anthropic reads it.
        let anthropic = provider("anthropic").unwrap();
        assert_eq!(
            (anthropic.endpoint, anthropic.auth),
            (EndpointKind::Anthropic, AuthStyle::XApiKey)
        );
    }
}
