//! A run document as text for people and spreadsheets: the levels CSV (its
//! columns from [`crate::columns`]), one CSV row per request, and the Markdown
//! report (the article's table, the verdict, the errors, an A/B run's targets).

use std::fmt::Write as _;

use crate::{
    ab,
    columns::{self, csv_number},
    error::{Lang, Said, Words},
    report::{RunDocument, RunStatus},
    said,
    summary::Summary,
};

/// One row per level: the columns that have a CSV name, in the table's order.
pub fn levels_csv(document: &RunDocument) -> String {
    let (header, rows) = columns::csv_table(&document.levels);
    let mut out = String::new();
    push_csv_row(&mut out, &header);
    for row in &rows {
        push_csv_row(&mut out, row);
    }
    out
}

/// The headers of [`turns_table`], in both languages.
pub const TURN_HEADERS: [Words; 8] = [
    Words {
        en: "concurrency",
        zh: "并发",
    },
    Words {
        en: "turn",
        zh: "轮次",
    },
    Words {
        en: "n_ok",
        zh: "成功",
    },
    Words {
        en: "n_fail",
        zh: "失败",
    },
    Words {
        en: "TTFT p50",
        zh: "TTFT p50",
    },
    Words {
        en: "TTFT p95",
        zh: "TTFT p95",
    },
    Words {
        en: "input tokens",
        zh: "输入 token",
    },
    Words {
        en: "cached input",
        zh: "缓存命中输入",
    },
];

/// A run of conversations by level and turn: one row each, `(concurrency, turn,
/// cells)` with the cells of [`TURN_HEADERS`] (times in ms); `None` for a run of
/// single requests.
pub fn turns_table(document: &RunDocument) -> Option<Vec<(u32, u32, Vec<String>)>> {
    let ms = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |v| format!("{v:.1}"));
    let rows: Vec<(u32, u32, Vec<String>)> = document
        .levels
        .iter()
        .flat_map(|level| {
            let concurrency = level.concurrency.unwrap_or_default();
            level.turns.iter().map(move |t| {
                let cells = vec![
                    concurrency.to_string(),
                    t.turn.to_string(),
                    t.n_ok.to_string(),
                    t.n_fail.to_string(),
                    ms(t.ttft_p50_ms),
                    ms(t.ttft_p95_ms),
                    t.input_tokens_mean
                        .map_or_else(|| "–".to_owned(), |v| format!("{v:.0}")),
                    t.cached_input_pct
                        .map_or_else(|| "–".to_owned(), |v| format!("{v:.0}%")),
                ];
                (concurrency, t.turn, cells)
            })
        })
        .collect();
    (!rows.is_empty()).then_some(rows)
}

/// A level's conversations as wholes, in a line: how many, how many whole, and how
/// long a whole one took (think time included). `None` for single requests.
pub fn sessions_said(level: &Summary) -> Option<Said> {
    let s = level.sessions?;
    let c = level.concurrency.unwrap_or_default();
    let (n, whole) = (s.n_sessions, s.n_whole);
    Some(match s.duration_ms {
        Some(d) => {
            let (p50, p95) = (d.p50 / 1e3, d.p95 / 1e3);
            said!(
                "concurrency {c}: {n} conversations, {whole} whole; a whole one took {p50:.1} s at p50 and {p95:.1} s at p95, think time included",
                "并发 {c}：{n} 段对话，{whole} 段完整；一段完整对话用时 p50 {p50:.1} 秒、p95 {p95:.1} 秒（含思考时间）",
            )
        }
        None => said!(
            "concurrency {c}: {n} conversations, none whole (a failed turn ends its conversation)",
            "并发 {c}：{n} 段对话，没有一段完整（某一轮失败会结束整段对话）",
        ),
    })
}

/// One row per request.
pub fn requests_csv(document: &RunDocument) -> String {
    let mut out = String::from(
        "id,concurrency,warmup,status,error_kind,error_detail,queue_ms,ttft_ms,ttfat_ms,tpot_ms,e2e_ms,n_out,token_source,token_mismatch,n_token_events,decode_tps,finish_reason\n",
    );
    for r in &document.records {
        let us_ms = |us: Option<u64>| us.map(|t| csv_number(t as f64 / 1e3)).unwrap_or_default();
        let row = [
            r.id.to_string(),
            r.concurrency.to_string(),
            r.warmup.to_string(),
            r.status.map(|s| s.to_string()).unwrap_or_default(),
            r.error
                .as_ref()
                .map(|e| e.kind.name().to_owned())
                .unwrap_or_default(),
            r.error
                .as_ref()
                .map(|e| e.detail.clone())
                .unwrap_or_default(),
            us_ms(Some(r.queue_us())),
            us_ms(r.ttft_us()),
            us_ms(r.ttfat_us()),
            r.tpot_us().map(|t| csv_number(t / 1e3)).unwrap_or_default(),
            us_ms(Some(r.e2e_us())),
            r.n_out.map(|n| n.to_string()).unwrap_or_default(),
            format!("{:?}", r.token_source).to_lowercase(),
            r.token_mismatch.map(|m| m.to_string()).unwrap_or_default(),
            r.n_token_events.to_string(),
            r.decode_tps().map(csv_number).unwrap_or_default(),
            r.finish_reason.clone().unwrap_or_default(),
        ];
        push_csv_row(&mut out, &row);
    }
    out
}

/// A report for people: the article's table and more, the verdict, the errors.
pub fn markdown(document: &RunDocument, lang: Lang) -> String {
    let zh = lang == Lang::Zh;
    let mut out = String::new();
    let status = match (document.status, zh) {
        (RunStatus::Done, false) => "done",
        (RunStatus::Cancelled, false) => "cancelled",
        (RunStatus::Done, true) => "已完成",
        (RunStatus::Cancelled, true) => "已取消",
    };
    let _ = writeln!(out, "# tokenmeter: {} ({})\n", document.plan.model, status);
    let _ = writeln!(
        out,
        "{} `{}` · max_tokens {} · {} {}\n",
        if zh { "接口" } else { "Endpoint" },
        document.plan.endpoint_url(),
        document.plan.max_tokens,
        if zh { "开始于" } else { "started" },
        document.started_at
    );
    let (header, rows) = columns::article_table(&document.levels, lang);
    let _ = writeln!(
        out,
        "| {} |\n|{}",
        header.join(" | "),
        "---|".repeat(header.len())
    );
    for row in rows {
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
    let _ = writeln!(
        out,
        "\n## {}\n\n{}\n",
        if zh { "结论" } else { "Verdict" },
        document.verdict.text(lang)
    );
    if !document.total.fails_by_kind.is_empty() {
        let _ = writeln!(out, "## {}\n", if zh { "错误" } else { "Errors" });
        for (kind, n) in &document.total.fails_by_kind {
            let _ = writeln!(out, "- **{}** ×{n}: {}", kind.title(lang), kind.hint(lang));
        }
    }
    // An A/B run: the targets side by side, then each other target's report.
    if !document.ab.is_empty() {
        let _ = writeln!(out, "## {}\n", if zh { "A/B 对比" } else { "A/B" });
        for line in ab::said(document, lang) {
            let _ = writeln!(out, "- {line}");
        }
        for (i, other) in document.ab.iter().enumerate() {
            let _ = writeln!(
                out,
                "\n---\n\n{} {}\n",
                if zh { "目标" } else { "Target" },
                ab::target_name(document, i + 1)
            );
            out.push_str(&markdown(other, lang));
        }
    }
    out
}

/// A cell a spreadsheet would run as a formula (server text such as an error detail
/// may start with `=`, `+`, `-`, `@`): prefixed with `'`, OWASP's advice. Numbers
/// (`-3`) stay numbers.
fn defused(field: &str) -> std::borrow::Cow<'_, str> {
    let risky = field.starts_with(['=', '+', '-', '@', '\t', '\r']);
    if risky && field.parse::<f64>().is_err() {
        format!("'{field}").into()
    } else {
        field.into()
    }
}

fn push_csv_row(out: &mut String, fields: &[impl AsRef<str>]) {
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let field = defused(field.as_ref());
        if field.contains([',', '"', '\n', '\r']) {
            out.push('"');
            out.push_str(&field.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(&field);
        }
    }
    out.push('\n');
}
