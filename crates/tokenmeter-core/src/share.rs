//! A finished run as a link: its summaries, verdict, diagnosis and notes (not its
//! per-request records, never the key, never the prompts) as JSON, compressed
//! (raw DEFLATE) and written in base64url into the URL's fragment, which no
//! server ever sees: `…/#run=1.<payload>`. Opening the link reads the run back;
//! a damaged link is refused with why.
//!
//! What the link leaves out is said in the run it carries: the records (a
//! `records_not_kept` condition, as history says it), the prompt's text, and the
//! server's metric samples (each level keeps its own figures).

use std::io::Read as _;

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine as _};

use crate::{error::Said, plan::PromptSpec, report::RunDocument, said};

/// What a run's fragment starts with.
pub const FRAGMENT: &str = "run=";
/// The format of what follows it (`1.` and the payload).
const VERSION: &str = "1.";
/// The longest link tokenmeter makes: chat apps, mail and some browsers cut or
/// refuse longer ones. A run beyond it is exported as a file instead.
pub const MAX_LINK_CHARS: usize = 64 * 1024;
/// The most a link's payload may inflate to: a run without its records is tens
/// of KiB; a link that claims more is refused before it is read.
const MAX_JSON_BYTES: u64 = 8 << 20;

/// The run as a link carries it: without its records (said in its conditions),
/// its prompt's text and its server's metric samples, for it and its A/B targets.
pub fn shared(document: &RunDocument) -> RunDocument {
    let mut document = document.clone();
    document.drop_records();
    if let PromptSpec::Text(text) = &mut document.plan.prompt {
        text.clear();
    }
    if let Some(metrics) = document.environment.server_metrics.as_mut() {
        metrics.samples.clear();
        metrics.skipped_at_us.clear();
    }
    document.ab = document.ab.iter().map(shared).collect();
    document
}

/// The fragment (without `#`) of a link to `document` (see [`shared`]).
pub fn fragment(document: &RunDocument) -> String {
    let json = serde_json::to_string(&shared(document)).expect("a run document serialises");
    let deflated = miniz_oxide::deflate::compress_to_vec(json.as_bytes(), 9);
    format!("{FRAGMENT}{VERSION}{}", URL_SAFE_NO_PAD.encode(deflated))
}

/// Why a link's fragment is not a run.
fn damaged(why: &str, why_zh: &str) -> Said {
    said!(
        "this link does not hold a whole run ({why}): it was cut or changed on its way; ask for the link again, or for the run's JSON file",
        "这个链接没有包含完整的运行结果（{why_zh}）：它在传递中被截断或改动了；请重新索取链接，或索取运行结果的 JSON 文件",
    )
}

/// The run document's JSON a link's `fragment` holds (from `run=`, without `#`),
/// or why it holds none. The document itself is read as any other
/// ([`RunDocument::from_json`]).
pub fn document_json(fragment: &str) -> Result<String, Said> {
    let payload = fragment
        .strip_prefix(FRAGMENT)
        .ok_or_else(|| damaged("it is not a run's link", "它不是运行结果的链接"))?;
    let Some(payload) = payload.strip_prefix(VERSION) else {
        return Err(said!(
            "this link is in a format this tokenmeter does not read: open it with the version that made it, or ask for the run's JSON file",
            "这个链接的格式不是本版本 tokenmeter 能读取的：请用生成它的版本打开，或索取运行结果的 JSON 文件",
        ));
    };
    let deflated = URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .map_err(|_| damaged("not base64url", "不是 base64url"))?;
    // Inflated within a bound, whatever the payload claims.
    let mut json = Vec::new();
    let reader = miniz_oxide_reader(&deflated);
    reader
        .take(MAX_JSON_BYTES + 1)
        .read_to_end(&mut json)
        .map_err(|_| damaged("not compressed as tokenmeter compresses", "压缩格式不对"))?;
    if json.len() as u64 > MAX_JSON_BYTES {
        return Err(damaged("it inflates past 8 MiB", "解压后超过 8 MiB"));
    }
    String::from_utf8(json).map_err(|_| damaged("not UTF-8 text", "不是 UTF-8 文本"))
}

/// A raw DEFLATE stream as a reader, inflated a window at a time.
fn miniz_oxide_reader(deflated: &[u8]) -> impl std::io::Read + '_ {
    Inflating {
        state: Box::new(miniz_oxide::inflate::stream::InflateState::new(
            miniz_oxide::DataFormat::Raw,
        )),
        input: deflated,
        done: false,
    }
}

struct Inflating<'a> {
    state: Box<miniz_oxide::inflate::stream::InflateState>,
    input: &'a [u8],
    done: bool,
}

impl std::io::Read for Inflating<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        use miniz_oxide::{inflate::stream::inflate, MZFlush, MZStatus};
        if self.done || out.is_empty() {
            return Ok(0);
        }
        let result = inflate(&mut self.state, self.input, out, MZFlush::None);
        self.input = &self.input[result.bytes_consumed..];
        match result.status {
            Ok(MZStatus::StreamEnd) => self.done = true,
            Ok(_) if result.bytes_written == 0 && self.input.is_empty() => {
                return Err(std::io::Error::other("the stream ends before its end"));
            }
            Ok(_) => {}
            Err(_) => return Err(std::io::Error::other("not a DEFLATE stream")),
        }
        Ok(result.bytes_written)
    }
}

/// The run a link's fragment holds (see [`document_json`]).
pub fn read(fragment: &str) -> Result<RunDocument, Said> {
    let json = document_json(fragment)?;
    RunDocument::from_json(&json).map_err(|error| {
        let Said { en, zh } = error.said();
        said!(
            "this link's run cannot be read: {en}",
            "这个链接中的运行结果无法读取：{zh}"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        chart::tests_support::ladder_records,
        condition::RunCondition,
        plan::Plan,
        report::{Environment, RunStatus},
    };

    fn document() -> RunDocument {
        let mut plan = Plan::default_for_simulator("http://127.0.0.1:8000/v1");
        plan.prompt = PromptSpec::Text("我们公司的内部资料：不应离开本机".into());
        RunDocument::build(
            "run-7".into(),
            "2026-12-06T10:00:00Z".into(),
            RunStatus::Done,
            plan,
            Environment::default(),
            ladder_records(),
        )
    }

    #[test]
    fn a_link_carries_the_figures_and_the_verdict_and_not_the_records_or_the_prompt() {
        let doc = document();
        let fragment = fragment(&doc);
        assert!(fragment.starts_with("run=1."));
        assert!(fragment.len() < MAX_LINK_CHARS);
        assert!(
            fragment[6..]
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "safe in a URL as it is"
        );
        let back = read(&fragment).unwrap();
        // As a JSON export of it reads back (floats are read as JSON reads them).
        let exported = RunDocument::from_json(&shared(&doc).to_json()).unwrap();
        assert_eq!(back.to_json(), exported.to_json());
        assert_eq!(back.levels.len(), doc.levels.len());
        assert_eq!(back.levels[2].ttft_ms, doc.levels[2].ttft_ms);
        assert_eq!(
            (back.verdict.knee, back.verdict.safe_concurrency),
            (doc.verdict.knee, doc.verdict.safe_concurrency)
        );
        assert_eq!(
            back.verdict.text(crate::error::Lang::Zh),
            doc.verdict.text(crate::error::Lang::Zh)
        );
        assert_eq!(back.run_id, doc.run_id);
        assert!(back.records.is_empty());
        assert!(back
            .environment
            .conditions
            .contains(&RunCondition::RecordsNotKept { n_records: 16 }));
        assert_eq!(back.plan.prompt, PromptSpec::Text(String::new()));
        assert!(
            !document_json(&fragment).unwrap().contains("内部资料"),
            "no trace of the prompt"
        );
        // What the page would show in words stays.
        assert_eq!(
            crate::diagnosis::diagnose(&back),
            crate::diagnosis::diagnose(&shared(&doc))
        );
    }

    #[test]
    fn a_damaged_link_is_refused_with_why_in_both_languages() {
        let good = fragment(&document());
        let cut = &good[..good.len() / 2];
        let mut flipped = good.clone().into_bytes();
        let middle = flipped.len() / 2;
        flipped[middle] = if flipped[middle] == b'A' { b'B' } else { b'A' };
        let flipped = String::from_utf8(flipped).unwrap();
        for (fragment, needle) in [
            ("plan=%7B%7D", "not a run's link"),
            ("run=9.AAAA", "format"),
            ("run=1.***", "not base64url"),
            (cut, "cut or changed"),
            (flipped.as_str(), "cut or changed"),
        ] {
            let why = read(fragment).unwrap_err();
            assert!(why.en.contains(needle), "{fragment:.20}: {}", why.en);
            assert!(!why.zh.is_empty());
        }
        // A payload that inflates without end is stopped at the bound.
        let zeros = vec![b' '; (MAX_JSON_BYTES + 10) as usize];
        let bomb = format!(
            "run=1.{}",
            URL_SAFE_NO_PAD.encode(miniz_oxide::deflate::compress_to_vec(&zeros, 9))
        );
        assert!(bomb.len() < 100_000);
        assert!(read(&bomb).unwrap_err().en.contains("8 MiB"));
    }
}
