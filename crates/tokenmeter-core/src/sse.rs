//! An incremental Server-Sent Events parser, fed byte chunks as they arrive.
//!
//! It follows the WHATWG "event stream" interpretation rules:
//! - lines end with `\r\n`, `\n` or `\r`, and a chunk may end anywhere, including
//!   between the `\r` and the `\n` of one line end or inside a multi-byte UTF-8
//!   character (the line is decoded only once it is complete, so a split character
//!   is never mangled);
//! - `field: value` (one leading space of the value is dropped), a line without a
//!   colon is a field with an empty value, a line starting with `:` is a comment;
//! - several `data:` lines join with `\n`; a blank line dispatches the event; an
//!   event with no `data` is not dispatched;
//! - `event`, `id` (ignored when it contains NUL) and `retry` (digits only) fields;
//! - a leading byte order mark is dropped.
//!
//! One deliberate difference: the spec discards an event that is not followed by a
//! blank line when the stream ends. Several servers end with `data: [DONE]` and no
//! blank line, so [`SseParser::finish`] dispatches such a final event.
//!
//! Each event carries the timestamp of the chunk that completed it. Memory is
//! bounded: a line or an event's data over the configured limit is an error, not
//! unbounded growth.

use std::sync::Arc;

/// One dispatched event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, `None` for the default type (`message`).
    pub event: Option<String>,
    /// The joined `data:` lines.
    pub data: String,
    /// The last event ID seen so far (the spec carries it across events): shared,
    /// not copied, by every event after it, however long a server made it.
    pub id: Option<Arc<str>>,
    /// A `retry:` value in milliseconds, when this event set one.
    pub retry_ms: Option<u64>,
    /// When the chunk that completed this event arrived (caller's clock, µs).
    pub at_us: u64,
}

/// Limits that keep a misbehaving server from growing the parser without bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SseLimits {
    /// The longest line accepted, in bytes (without its line end).
    pub max_line_bytes: usize,
    /// The largest event data accepted, in bytes (all `data:` lines joined).
    pub max_event_bytes: usize,
}

impl Default for SseLimits {
    fn default() -> Self {
        SseLimits {
            max_line_bytes: 1 << 20,
            max_event_bytes: 1 << 20,
        }
    }
}

/// Why the parser gave up on a stream.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    #[error("a line of the event stream exceeds {limit} bytes")]
    LineTooLong { limit: usize },
    #[error("an event of the event stream exceeds {limit} bytes")]
    EventTooLarge { limit: usize },
}

/// The parser's state between chunks.
#[derive(Debug, Default)]
pub struct SseParser {
    limits: SseLimits,
    /// Bytes of the current, incomplete line.
    line: Vec<u8>,
    /// The previous chunk ended in `\r`: a `\n` starting the next one belongs to it.
    after_cr: bool,
    /// Still at the very start of the stream (where a BOM may stand).
    at_start: bool,
    event_type: Option<String>,
    data: String,
    /// At least one `data` field was seen for the pending event.
    has_data: bool,
    last_event_id: Option<Arc<str>>,
    retry_ms: Option<u64>,
    n_comment_lines: u64,
    /// Set after an error: the stream is no longer parsed.
    failed: Option<SseError>,
}

impl SseParser {
    /// A parser holding nothing, bounded by `limits`.
    pub fn new(limits: SseLimits) -> Self {
        SseParser {
            limits,
            at_start: true,
            ..SseParser::default()
        }
    }

    /// Comment lines seen so far (`: keep-alive` and the like).
    pub fn n_comment_lines(&self) -> u64 {
        self.n_comment_lines
    }

    /// Feeds one chunk that arrived at `at_us`; completed events are pushed to `out`.
    pub fn feed(
        &mut self,
        chunk: &[u8],
        at_us: u64,
        out: &mut Vec<SseEvent>,
    ) -> Result<(), SseError> {
        self.feed_lines(chunk, at_us, out, false).map(|_| ())
    }

    /// Feeds `chunk` up to and including the line that dispatches the next event,
    /// and returns how many of its bytes were taken (all of them when no event
    /// completes in it). A caller that must read nothing after a given event (the
    /// stream's last word) feeds a chunk piece by piece and stops there: the rest
    /// of the chunk is never parsed, so no partial line of it is held.
    pub fn feed_to_event(
        &mut self,
        chunk: &[u8],
        at_us: u64,
        out: &mut Vec<SseEvent>,
    ) -> Result<usize, SseError> {
        self.feed_lines(chunk, at_us, out, true)
    }

    fn feed_lines(
        &mut self,
        whole: &[u8],
        at_us: u64,
        out: &mut Vec<SseEvent>,
        stop_at_event: bool,
    ) -> Result<usize, SseError> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        let mut chunk = whole;
        if self.at_start {
            chunk = self.strip_bom(chunk);
            if chunk.is_empty() {
                return Ok(whole.len());
            }
        }
        if self.after_cr {
            self.after_cr = false;
            if chunk.first() == Some(&b'\n') {
                chunk = &chunk[1..];
            }
        }
        let n_events = out.len();
        while let Some(end) = chunk.iter().position(|&b| b == b'\n' || b == b'\r') {
            let (head, rest) = chunk.split_at(end);
            if self.line.is_empty() {
                // Fast path: the whole line is inside this chunk, no copy needed.
                self.check_line_len(head.len())?;
                self.process_line_bytes(head, at_us, out)?;
            } else {
                self.check_line_len(self.line.len() + head.len())?;
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(head);
                let result = self.process_line_bytes(&line, at_us, out);
                line.clear();
                self.line = line;
                result?;
            }
            chunk = if rest[0] == b'\r' {
                match rest.get(1) {
                    Some(b'\n') => &rest[2..],
                    Some(_) => &rest[1..],
                    None => {
                        self.after_cr = true;
                        &rest[1..]
                    }
                }
            } else {
                &rest[1..]
            };
            if stop_at_event && out.len() > n_events {
                return Ok(whole.len() - chunk.len());
            }
        }
        self.check_line_len(self.line.len() + chunk.len())?;
        self.line.extend_from_slice(chunk);
        Ok(whole.len())
    }

    /// The stream ended at `at_us`: dispatches a final event that had no blank line after it.
    pub fn finish(&mut self, at_us: u64, out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.process_line_bytes(&line, at_us, out)?;
        }
        self.dispatch(at_us, out);
        Ok(())
    }

    fn strip_bom<'a>(&mut self, chunk: &'a [u8]) -> &'a [u8] {
        const BOM: &[u8] = "\u{feff}".as_bytes();
        // The BOM itself may be split across chunks: hold its bytes back until decided.
        let mut probe = std::mem::take(&mut self.line);
        let take = (BOM.len() - probe.len()).min(chunk.len());
        probe.extend_from_slice(&chunk[..take]);
        if BOM.starts_with(&probe) {
            if probe.len() == BOM.len() {
                self.at_start = false;
                return &chunk[take..];
            }
            self.line = probe;
            return &chunk[take..];
        }
        // Not a BOM: put back what was held and parse normally from here.
        probe.truncate(probe.len() - take);
        self.line = probe;
        // Bytes held back from an earlier chunk (never a line end) start the line.
        self.at_start = false;
        chunk
    }

    fn check_line_len(&mut self, len: usize) -> Result<(), SseError> {
        if len > self.limits.max_line_bytes {
            let err = SseError::LineTooLong {
                limit: self.limits.max_line_bytes,
            };
            self.failed = Some(err.clone());
            return Err(err);
        }
        Ok(())
    }

    fn process_line_bytes(
        &mut self,
        line: &[u8],
        at_us: u64,
        out: &mut Vec<SseEvent>,
    ) -> Result<(), SseError> {
        self.at_start = false;
        if line.is_empty() {
            self.dispatch(at_us, out);
            return Ok(());
        }
        if line[0] == b':' {
            self.n_comment_lines += 1;
            return Ok(());
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match name {
            b"data" => {
                let added = value.len() + usize::from(self.has_data);
                if self.data.len() + added > self.limits.max_event_bytes {
                    let err = SseError::EventTooLarge {
                        limit: self.limits.max_event_bytes,
                    };
                    self.failed = Some(err.clone());
                    return Err(err);
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.has_data = true;
            }
            b"event" => self.event_type = Some(String::from_utf8_lossy(value).into_owned()),
            b"id" if !value.contains(&0) => {
                self.last_event_id = Some(Arc::from(String::from_utf8_lossy(value)));
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                self.retry_ms = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, at_us: u64, out: &mut Vec<SseEvent>) {
        let event_type = self.event_type.take();
        let retry_ms = self.retry_ms.take();
        if !self.has_data {
            self.data.clear();
            return;
        }
        self.has_data = false;
        out.push(SseEvent {
            event: event_type.filter(|t| !t.is_empty()),
            data: std::mem::take(&mut self.data),
            id: self.last_event_id.clone(),
            retry_ms,
            at_us,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut parser = SseParser::new(SseLimits::default());
        let mut out = Vec::new();
        for (i, chunk) in chunks.iter().enumerate() {
            parser.feed(chunk, i as u64 * 10, &mut out).unwrap();
        }
        parser.finish(999, &mut out).unwrap();
        out
    }

    fn data(events: &[SseEvent]) -> Vec<&str> {
        events.iter().map(|e| e.data.as_str()).collect()
    }

    #[test]
    fn feed_to_event_stops_after_each_event_and_says_how_far_it_read() {
        let stream = b"data: a\r\n\r\n: note\ndata: b\n\ndata: [";
        let mut parser = SseParser::new(SseLimits::default());
        let mut out = Vec::new();
        let first = parser.feed_to_event(stream, 1, &mut out).unwrap();
        assert_eq!(&stream[..first], b"data: a\r\n\r\n");
        assert_eq!(data(&out), ["a"]);
        let rest = &stream[first..];
        let second = parser.feed_to_event(rest, 2, &mut out).unwrap();
        assert_eq!(&rest[..second], b": note\ndata: b\n\n");
        assert_eq!(parser.n_comment_lines(), 1);
        let tail = &rest[second..];
        assert_eq!(parser.feed_to_event(tail, 3, &mut out).unwrap(), tail.len());
        assert_eq!(data(&out), ["a", "b"], "a partial line dispatches nothing");
        // Fed piece by piece, the events are those of one feed.
        assert_eq!(data(&out), data(&parse_all(&[&stream[..]]))[..2]);
    }

    #[test]
    fn line_ends_of_every_kind() {
        let events = parse_all(&[b"data: a\n\ndata: b\r\n\r\ndata: c\r\rdata: d\n\n"]);
        assert_eq!(data(&events), ["a", "b", "c", "d"]);
    }

    #[test]
    fn crlf_split_between_chunks_is_one_line_end() {
        let events = parse_all(&[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]);
        assert_eq!(data(&events), ["a\nb"]);
    }

    #[test]
    fn multi_line_data_joins_with_newline() {
        let events = parse_all(&[b"data: first\ndata:second\ndata:  third\n\n"]);
        assert_eq!(data(&events), ["first\nsecond\n third"]);
    }

    #[test]
    fn comments_and_unknown_fields_are_skipped_and_counted() {
        let mut parser = SseParser::new(SseLimits::default());
        let mut out = Vec::new();
        parser
            .feed(
                b": keep-alive\n: OPENROUTER PROCESSING\n\nfoo: bar\ndata: x\n\n",
                5,
                &mut out,
            )
            .unwrap();
        assert_eq!(data(&out), ["x"]);
        assert_eq!(parser.n_comment_lines(), 2);
    }

    #[test]
    fn event_id_and_retry_fields() {
        let events = parse_all(&[b"event: delta\nid: 7\nretry: 1500\ndata: x\n\ndata: y\n\n"]);
        assert_eq!(events[0].event.as_deref(), Some("delta"));
        assert_eq!(events[0].id.as_deref(), Some("7"));
        assert_eq!(events[0].retry_ms, Some(1500));
        assert_eq!(
            events[1].event, None,
            "the event type resets after dispatch"
        );
        assert_eq!(
            events[1].id.as_deref(),
            Some("7"),
            "the last event id persists"
        );
        assert_eq!(events[1].retry_ms, None);
    }

    #[test]
    fn invalid_retry_and_nul_id_are_ignored() {
        let events = parse_all(&[b"retry: 1s\nid: a\0b\ndata: x\n\n"]);
        assert_eq!(events[0].retry_ms, None);
        assert_eq!(events[0].id, None);
    }

    #[test]
    fn field_without_colon_and_empty_data() {
        let events = parse_all(&[b"data\n\ndata:\ndata:\n\n"]);
        assert_eq!(data(&events), ["", "\n"]);
    }

    #[test]
    fn event_without_data_is_not_dispatched() {
        let events = parse_all(&[b"event: ping\n\nid: 3\n\n"]);
        assert!(events.is_empty());
    }

    #[test]
    fn final_event_without_blank_line_is_dispatched_on_finish() {
        let events = parse_all(&[b"data: a\n\ndata: [DONE]"]);
        assert_eq!(data(&events), ["a", "[DONE]"]);
        assert_eq!(events[1].at_us, 999, "completed by finish()");
    }

    #[test]
    fn multibyte_character_split_across_chunks() {
        let text = "data: 你好，世界\n\n".as_bytes();
        // Split inside the second byte of 你 (bytes 6..9).
        let events = parse_all(&[&text[..7], &text[7..8], &text[8..]]);
        assert_eq!(data(&events), ["你好，世界"]);
    }

    #[test]
    fn timestamp_is_that_of_the_completing_chunk() {
        let events = parse_all(&[b"data: a", b"bc\n", b"\n"]);
        assert_eq!(events[0].at_us, 20);
    }

    #[test]
    fn leading_bom_is_dropped_even_when_split() {
        let bom = "\u{feff}".as_bytes();
        let events = parse_all(&[&bom[..1], &bom[1..], b"data: x\n\n"]);
        assert_eq!(data(&events), ["x"]);
        let events = parse_all(&[b"\xEF\xBB\xBFdata: y\n\n"]);
        assert_eq!(data(&events), ["y"]);
    }

    #[test]
    fn line_limit_is_a_typed_error() {
        let mut parser = SseParser::new(SseLimits {
            max_line_bytes: 8,
            max_event_bytes: 100,
        });
        let mut out = Vec::new();
        parser.feed(b"data: 12", 0, &mut out).unwrap();
        let err = parser.feed(b"3", 1, &mut out).unwrap_err();
        assert_eq!(err, SseError::LineTooLong { limit: 8 });
        assert!(
            parser.feed(b"\n\n", 2, &mut out).is_err(),
            "the error sticks"
        );
    }

    #[test]
    fn event_limit_is_a_typed_error() {
        let mut parser = SseParser::new(SseLimits {
            max_line_bytes: 100,
            max_event_bytes: 5,
        });
        let mut out = Vec::new();
        let err = parser
            .feed(b"data: abc\ndata: def\n", 0, &mut out)
            .unwrap_err();
        assert_eq!(err, SseError::EventTooLarge { limit: 5 });
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        let events = parse_all(&[b"data: a\xFFb\n\n"]);
        assert_eq!(data(&events), ["a\u{FFFD}b"]);
    }

    #[test]
    fn a_long_event_id_is_shared_by_the_events_after_it_not_copied() {
        let mut parser = SseParser::new(SseLimits::default());
        let mut out = Vec::new();
        let id = "i".repeat(512 * 1024);
        parser
            .feed(format!("id: {id}\n").as_bytes(), 0, &mut out)
            .unwrap();
        for t in 1..=100 {
            parser.feed(b"data: x\n\n", t, &mut out).unwrap();
        }
        assert_eq!(out.len(), 100);
        let first = out[0].id.clone().unwrap();
        assert_eq!(first.len(), id.len());
        assert!(out
            .iter()
            .all(|e| e.id.as_ref().is_some_and(|i| Arc::ptr_eq(i, &first))));
    }
}
