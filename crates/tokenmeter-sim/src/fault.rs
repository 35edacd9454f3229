//! Faults a request can be given, by `--fault KIND` for every request or by the
//! `x-tokenmeter-fault: KIND[,KIND...]` header for one, so one run can mix them.

use std::{fmt, time::Duration};

/// The wait between the two writes of each piece of a `split-writes` stream.
pub const SPLIT_WRITE_PAUSE: Duration = Duration::from_millis(1);

/// One fault kind. The names are a stable interface (README, tests, the page's specs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fault {
    /// 401 with an OpenAI-style error body.
    Unauthorized,
    /// 404: unknown model.
    NotFound,
    /// 429 with `Retry-After`.
    RateLimited,
    /// 500 with a JSON error body.
    ServerError,
    /// 502 with an HTML page, as a gateway sends it.
    HtmlBadGateway,
    /// No headers until the hang time passes.
    Hang,
    /// The connection is cut half-way through the stream.
    Cut,
    /// An `{"error": ...}` event half-way through a 200 stream, then the end.
    ErrorEvent,
    /// A well-formed stream without a single token.
    Empty,
    /// One event half-way through is not valid JSON.
    BadJson,
    /// The first token's event carries 1.5 MiB of text.
    HugeEvent,
    /// Every event is written in pieces split inside multi-byte characters.
    SplitUtf8,
    /// `: keep-alive` comment lines between events.
    Comments,
    /// CRLF line ends.
    Crlf,
    /// Four tokens per event.
    MultiToken,
    /// The first quarter of the tokens is `reasoning_content`.
    Reasoning,
    /// 400 whose error message echoes every request header, key included, as
    /// debugging gateways do.
    EchoHeaders,
    /// The whole stream, `[DONE]` included, then the body held open for the hang
    /// time (as some proxies do).
    DoneHold,
    /// The first quarter of the tokens is reasoning that is generated and counted
    /// in `usage` (`reasoning_tokens`) but never streamed.
    HiddenReasoning,
    /// Every write (each event, comment and `[DONE]`) in two, the second
    /// [`SPLIT_WRITE_PAUSE`] after the first, cut inside a multi-byte character
    /// where there is one, else in the middle: the end of one event and the start
    /// of the next reach the client in one read, as TCP segments and proxies cut them.
    SplitWrites,
    /// After `[DONE]`, in the same write, more: a comment, a second usage chunk, a
    /// token, a second `[DONE]`, broken JSON and stray line ends (as proxies that
    /// concatenate or repeat do). Nothing after the stream's end is part of the answer.
    AfterDone,
    /// A gateway that holds the whole answer and releases it at the end.
    BufferAll,
    /// A gateway that releases the stream each time 4 KiB are held (nginx's
    /// `proxy_buffering on`).
    Buffer4k,
    /// A gateway that releases what it holds 250 ms after the first byte.
    Buffer250ms,
    /// `content-encoding: gzip`, the compressor emitting only when its 8 KiB
    /// buffer fills (nginx's `gzip on` with `text/event-stream` in `gzip_types`).
    Gzip,
    /// Invalid UTF-8 (a lone `0xFF`) inside the middle token's text.
    BadUtf8,
    /// Hostile: a 2 MiB response header block, more than any client reads.
    EndlessHeaders,
    /// Hostile: a 200 stream whose first line never ends (a gigabyte of `x`).
    HugeLine,
    /// Hostile: a million events without a token before the answer.
    MillionEvents,
    /// Hostile: a 200 stream of `: keep-alive` comments, one every 100 ms, and
    /// never a token, until the hang time passes.
    KeepAliveForever,
    /// Hostile: `content-encoding: gzip` whose body inflates to `data: ` and 4 GiB
    /// of zeros (some 160 times its size).
    GzipBomb,
    /// Hostile: a 200 with a web server's welcome page (`text/html`).
    Html200,
    /// Hostile: a 503 whose HTML page goes on for a gigabyte.
    EndlessError,
    /// Hostile: an answer that ignores `max_tokens`: a token every 2 ms until the
    /// hang time passes.
    Endless,
    /// The answer is a tool call: the function's name in the first answer token's
    /// event, its arguments in the rest (each API's tool-call events; the finish
    /// reason says so).
    ToolCall,
}

impl Fault {
    pub const ALL: [Fault; 35] = [
        Fault::Unauthorized,
        Fault::NotFound,
        Fault::RateLimited,
        Fault::ServerError,
        Fault::HtmlBadGateway,
        Fault::Hang,
        Fault::Cut,
        Fault::ErrorEvent,
        Fault::Empty,
        Fault::BadJson,
        Fault::HugeEvent,
        Fault::SplitUtf8,
        Fault::Comments,
        Fault::Crlf,
        Fault::MultiToken,
        Fault::Reasoning,
        Fault::EchoHeaders,
        Fault::DoneHold,
        Fault::HiddenReasoning,
        Fault::SplitWrites,
        Fault::AfterDone,
        Fault::BufferAll,
        Fault::Buffer4k,
        Fault::Buffer250ms,
        Fault::Gzip,
        Fault::BadUtf8,
        Fault::EndlessHeaders,
        Fault::HugeLine,
        Fault::MillionEvents,
        Fault::KeepAliveForever,
        Fault::GzipBomb,
        Fault::Html200,
        Fault::EndlessError,
        Fault::Endless,
        Fault::ToolCall,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Fault::Unauthorized => "401",
            Fault::NotFound => "404",
            Fault::RateLimited => "429",
            Fault::ServerError => "500",
            Fault::HtmlBadGateway => "html-502",
            Fault::Hang => "hang",
            Fault::Cut => "cut",
            Fault::ErrorEvent => "error-event",
            Fault::Empty => "empty",
            Fault::BadJson => "bad-json",
            Fault::HugeEvent => "huge-event",
            Fault::SplitUtf8 => "split-utf8",
            Fault::Comments => "comments",
            Fault::Crlf => "crlf",
            Fault::MultiToken => "multi-token",
            Fault::Reasoning => "reasoning",
            Fault::EchoHeaders => "echo-headers",
            Fault::DoneHold => "done-hold",
            Fault::HiddenReasoning => "hidden-reasoning",
            Fault::SplitWrites => "split-writes",
            Fault::AfterDone => "after-done",
            Fault::BufferAll => "buffer-all",
            Fault::Buffer4k => "buffer-4k",
            Fault::Buffer250ms => "buffer-250ms",
            Fault::Gzip => "gzip",
            Fault::BadUtf8 => "bad-utf8",
            Fault::EndlessHeaders => "endless-headers",
            Fault::HugeLine => "huge-line",
            Fault::MillionEvents => "million-events",
            Fault::KeepAliveForever => "keep-alive-forever",
            Fault::GzipBomb => "gzip-bomb",
            Fault::Html200 => "html-200",
            Fault::EndlessError => "endless-error",
            Fault::Endless => "endless",
            Fault::ToolCall => "tool-call",
        }
    }

    /// A hostile server's answer, replacing the whole response (see
    /// `server::hostile`).
    pub fn is_hostile(self) -> bool {
        matches!(
            self,
            Fault::EndlessHeaders
                | Fault::HugeLine
                | Fault::MillionEvents
                | Fault::KeepAliveForever
                | Fault::GzipBomb
                | Fault::Html200
                | Fault::EndlessError
                | Fault::Endless
        )
    }

    pub fn parse(name: &str) -> Result<Fault, String> {
        let name = name.trim();
        Fault::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                let all: Vec<&str> = Fault::ALL.iter().map(|f| f.name()).collect();
                format!("unknown fault `{name}`; the kinds are {}", all.join(", "))
            })
    }

    /// Parses a comma-separated list (the header's form).
    pub fn parse_list(list: &str) -> Result<Vec<Fault>, String> {
        list.split(',')
            .filter(|s| !s.trim().is_empty())
            .map(Fault::parse)
            .collect()
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The set of faults of one request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Faults(pub Vec<Fault>);

impl Faults {
    pub fn has(&self, fault: Fault) -> bool {
        self.0.contains(&fault)
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.0.iter().map(|f| f.name()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for fault in Fault::ALL {
            assert_eq!(Fault::parse(fault.name()), Ok(fault));
        }
        assert_eq!(
            Fault::parse_list("crlf, reasoning,").unwrap(),
            [Fault::Crlf, Fault::Reasoning]
        );
        assert!(Fault::parse("502").unwrap_err().contains("html-502"));
    }
}
