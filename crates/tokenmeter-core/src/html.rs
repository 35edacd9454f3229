//! The run as one self-contained HTML file people keep and send: the headline,
//! the charts (inline SVG, the same drawing as the page's), the table, the
//! verdict, the notes, the errors with their hints, and the plan (which never
//! holds the key), in one language. No script and nothing fetched: it opens from
//! disk, offline, in any browser, and prints. Each chart is there twice, wide and
//! drawn for a phone; the stylesheet shows the one that fits the screen.

use std::fmt::Write;

use crate::{
    chart::{self, escape, Look},
    columns::article_table,
    error::Lang,
    headline::{Headline, HeadlineLevel},
    report::{RunDocument, RunStatus},
};

/// The report's own layout (the charts bring theirs: [`chart::STYLE`]).
const STYLE: &str = "
:root { --ink:#1b1f24; --muted:#5b6470; --line:#dfe3e8; --panel:#fff; --ok:#1a7f4b; --warn:#a15c00; --bad:#b42318; --bad-soft:#fdecea; }
body { margin: 0 auto; max-width: 1100px; padding: 24px; color: var(--ink); background: #f5f6f8;
  font: 14px/1.5 system-ui, -apple-system, 'Segoe UI', Roboto, 'PingFang SC', 'Microsoft YaHei', sans-serif; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 10px; }
.meta { color: var(--muted); margin: 0 0 18px; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 10px; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 10px 12px; }
.card span { display: block; } .card .label { color: var(--muted); font-size: 12px; }
.card .value { font-size: 22px; font-weight: 650; font-variant-numeric: tabular-nums; }
figure { margin: 0 0 14px; padding: 10px 12px 4px; background: var(--panel); border: 1px solid var(--line); border-radius: 10px; }
.table { overflow-x: auto; background: var(--panel); border: 1px solid var(--line); border-radius: 10px; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { padding: 6px 10px; border-bottom: 1px solid var(--line); text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
th { font-weight: 600; color: var(--muted); font-size: 12px; }
.verdict { background: var(--panel); border: 1px solid var(--line); border-left: 4px solid var(--ok); border-radius: 10px; padding: 10px 14px; }
.errors li { margin-bottom: 8px; } .errors .hint { color: var(--muted); }
pre { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 12px; overflow-x: auto; font-size: 12px; }
footer { color: var(--muted); font-size: 12px; margin-top: 28px; }
figure.narrow { display: none; }
@media (max-width: 640px) {
  body { padding: 10px; } figure { padding: 8px 6px 2px; }
  figure.wide { display: none; } figure.narrow { display: block; }
}
@media print { body { background: #fff; } figure, .table, .verdict { break-inside: avoid; }
  figure.wide { display: block; } figure.narrow { display: none; } }
";

/// A chart in both drawings, wide and narrow (for a phone: the stylesheet shows it
/// below 640 px). The narrow copy's hooks carry a `narrow-` prefix
/// (`narrow-chart-latency`, `narrow-chart-point`), so a script that counts a
/// chart's points counts each once.
fn write_chart(out: &mut String, lang: Lang, draw: impl Fn(Look) -> Option<String>) {
    let Some(wide) = draw(lang.into()) else {
        return;
    };
    let _ = write!(out, "<figure class=\"wide\">{wide}</figure>");
    if let Some(narrow) = draw(Look { lang, narrow: true }) {
        let narrow = narrow.replace(" data-testid=\"", " data-testid=\"narrow-");
        let _ = write!(out, "<figure class=\"narrow\">{narrow}</figure>");
    }
}

/// `en` or `zh` (see [`Lang::pick`]).
fn say(lang: Lang, en: &'static str, zh: &'static str) -> &'static str {
    lang.pick(en, zh)
}

fn ms(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite())
        .map_or_else(|| "–".into(), |v| format!("{v:.0}"))
}

impl RunDocument {
    /// The report, in `lang`.
    // Long: the HTML report's sections in their order.
    pub fn html(&self, lang: Lang) -> String {
        let mut out = String::with_capacity(64 * 1024);
        let status = match (self.status, lang) {
            (RunStatus::Done, _) => say(lang, "done", "已完成"),
            (RunStatus::Cancelled, _) => say(lang, "cancelled", "已取消"),
        };
        let title = format!("tokenmeter · {} · {}", self.plan.model, self.started_at);
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"{}\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{}</title><style>{STYLE}{}</style></head><body>",
            say(lang, "en", "zh-CN"),
            escape(&title),
            chart::STYLE
        );
        let _ = write!(
            out,
            "<h1>{} {}</h1><p class=\"meta\">{} <code>{}</code> · max_tokens {} · {} {} · {}{}</p>",
            say(lang, "tokenmeter run:", "tokenmeter 运行："),
            escape(&self.plan.model),
            say(lang, "Endpoint", "接口"),
            escape(&self.plan.endpoint_url()),
            self.plan.max_tokens,
            say(lang, "started", "开始于"),
            escape(&self.started_at),
            status,
            self.environment
                .browser()
                .map(|b| format!(
                    " · {} {}",
                    say(lang, "measured in", "测量浏览器"),
                    escape(&b.label())
                ))
                .unwrap_or_default()
        );
        self.html_headline(&mut out, lang);
        write_chart(&mut out, lang, |look| chart::latency(self, look));
        write_chart(&mut out, lang, |look| chart::throughput(self, look));
        write_chart(&mut out, lang, |look| chart::over_time(self, look));
        write_chart(&mut out, lang, |look| chart::server(self, look));
        write_chart(&mut out, lang, |look| chart::cdf(self, look));
        write_chart(&mut out, lang, |look| chart::ttft_by_input(self, look));
        if let Some(level) = Headline::of(self).map(|h| h.concurrency) {
            write_chart(&mut out, lang, |look| chart::timeline(self, level, look));
        }
        self.html_table(&mut out, lang);
        self.html_turns(&mut out, lang);
        let _ = write!(
            out,
            "<h2>{}</h2><div class=\"verdict\" data-testid=\"verdict\"><p>{}</p></div>",
            say(lang, "Verdict", "结论"),
            escape(&self.verdict.text(lang))
        );
        let findings = crate::diagnosis::diagnose(self);
        if !findings.is_empty() {
            let _ = write!(
                out,
                "<h2>{}</h2><ul data-testid=\"diagnosis\">",
                say(lang, "Where the bottleneck is", "瓶颈在哪里")
            );
            for finding in findings {
                let _ = write!(
                    out,
                    "<li data-cause=\"{}\">{}</li>",
                    finding.cause().name(),
                    escape(&finding.text(lang))
                );
            }
            out.push_str("</ul>");
        }
        let notes = self.environment.notes_in(lang);
        if !notes.is_empty() {
            let _ = write!(
                out,
                "<h2>{}</h2><ul>",
                say(lang, "What else shaped the figures", "影响测量的其他因素")
            );
            for note in notes {
                let _ = write!(out, "<li>{}</li>", escape(&note));
            }
            out.push_str("</ul>");
        }
        for (testid, said) in self.environment.path_lines() {
            let _ = write!(
                out,
                "<p class=\"muted\" data-testid=\"{testid}\">{}</p>",
                escape(said.text(lang))
            );
        }
        self.html_ab(&mut out, lang);
        self.html_errors(&mut out, lang);
        let plan = crate::json::pretty(
            &serde_json::to_string(&self.plan).expect("a plan always serialises"),
        );
        let _ = writeln!(
            out,
            "<h2>{}</h2><pre>{}</pre><footer>{} {} · {} {}</footer></body></html>",
            say(lang, "Plan (without the key)", "测试计划（不含 Key）"),
            escape(&plan),
            escape(&self.tool.name),
            escape(&self.tool.version),
            say(lang, "run document schema", "运行文档版本"),
            self.schema
        );
        out
    }

    fn html_headline(&self, out: &mut String, lang: Lang) {
        let Some(headline) = Headline::of(self) else {
            return;
        };
        let c = headline.concurrency;
        let at = match (headline.which, lang) {
            (HeadlineLevel::Safe, Lang::En) => format!("At concurrency {c}, the safe level:"),
            (HeadlineLevel::Safe, Lang::Zh) => format!("在安全并发 {c} 下："),
            (HeadlineLevel::Last, Lang::En) => {
                format!("At concurrency {c}, the last level (no level was safe):")
            }
            (HeadlineLevel::Last, Lang::Zh) => format!("在最后一档并发 {c} 下（没有安全的并发）："),
        };
        let level = |c: Option<u32>| c.map_or_else(|| "–".into(), |c| c.to_string());
        let cards = [
            (
                "TTFT p50 / p95",
                format!(
                    "{} / {} ms",
                    ms(headline.ttft_p50_ms),
                    ms(headline.ttft_p95_ms)
                ),
            ),
            (
                "TPOT p50",
                headline
                    .tpot_p50_ms
                    .filter(|v| v.is_finite())
                    .map_or_else(|| "–".into(), |v| format!("{v:.1} ms")),
            ),
            (
                say(lang, "output tokens/s", "输出 token/秒"),
                format!("{:.0}", headline.output_tps),
            ),
            (
                say(lang, "errors", "错误率"),
                format!("{:.1} %", headline.error_rate * 100.0),
            ),
            (say(lang, "knee", "拐点"), level(headline.knee)),
            (
                say(lang, "safe concurrency", "安全并发"),
                level(headline.safe_concurrency),
            ),
        ];
        let _ = write!(
            out,
            "<p class=\"meta\">{}</p><div class=\"cards\" data-testid=\"headline\">",
            escape(&at)
        );
        for (label, value) in cards {
            let _ = write!(
                out,
                "<div class=\"card\"><span class=\"label\">{}</span><span class=\"value\">{}</span></div>",
                escape(label),
                escape(&value)
            );
        }
        out.push_str("</div>");
    }

    fn html_table(&self, out: &mut String, lang: Lang) {
        let (header, rows) = article_table(&self.levels, lang);
        let _ = write!(
            out,
            "<h2>{}</h2><div class=\"table\"><table data-testid=\"results-table\"><thead><tr>",
            say(lang, "By level", "各档结果")
        );
        for cell in header {
            let _ = write!(out, "<th>{}</th>", escape(cell));
        }
        out.push_str("</tr></thead><tbody>");
        for row in rows {
            out.push_str("<tr>");
            for cell in &row {
                let _ = write!(out, "<td>{}</td>", escape(cell));
            }
            out.push_str("</tr>");
        }
        out.push_str("</tbody></table></div>");
    }

    /// An A/B run's targets side by side: in words, over each other, per level.
    /// A run of conversations, turn by turn (see [`crate::render::turns_table`]).
    fn html_turns(&self, out: &mut String, lang: Lang) {
        let Some(rows) = crate::render::turns_table(self) else {
            return;
        };
        let _ = write!(
            out,
            "<h2>{}</h2><table data-testid=\"turns-table\"><thead><tr>",
            say(lang, "By turn of the conversations", "按对话轮次")
        );
        for header in crate::render::TURN_HEADERS {
            let _ = write!(out, "<th>{}</th>", escape(header.text(lang)));
        }
        out.push_str("</tr></thead><tbody>");
        for (_, _, cells) in rows {
            out.push_str("<tr>");
            for cell in cells {
                let _ = write!(out, "<td>{}</td>", escape(&cell));
            }
            out.push_str("</tr>");
        }
        out.push_str("</tbody></table><ul>");
        for said in self.levels.iter().filter_map(crate::render::sessions_said) {
            let _ = write!(out, "<li>{}</li>", escape(said.text(lang)));
        }
        out.push_str("</ul>");
    }

    fn html_ab(&self, out: &mut String, lang: Lang) {
        if self.ab.is_empty() {
            return;
        }
        let _ = write!(
            out,
            "<h2>{}</h2><ul data-testid=\"ab-said\">",
            say(lang, "A/B: the targets side by side", "A/B：目标并排对比")
        );
        for line in crate::ab::said(self, lang) {
            let _ = write!(out, "<li>{}</li>", escape(&line));
        }
        out.push_str("</ul>");
        write_chart(out, lang, |look| chart::ab(self, look));
        let n_targets = self.ab.len() + 1;
        let _ = write!(
            out,
            "<div class=\"table\"><table data-testid=\"ab-table\"><thead><tr><th>{}</th>",
            say(lang, "concurrency", "并发")
        );
        for i in 0..n_targets {
            let name = escape(&crate::ab::target_name(self, i));
            let _ = write!(
                out,
                "<th>{name}: TTFT p95 ms</th><th>{name}: TPOT p50 ms</th><th>{name}: tok/s</th>"
            );
        }
        let _ = write!(
            out,
            "<th>{}</th></tr></thead><tbody>",
            say(lang, "better", "更快")
        );
        for row in crate::ab::rows(self) {
            let _ = write!(
                out,
                "<tr data-concurrency=\"{}\"><td>{}</td>",
                row.concurrency, row.concurrency
            );
            for target in &row.targets {
                match target {
                    Some(t) => {
                        let _ = write!(
                            out,
                            "<td>{}</td><td>{}</td><td>{:.1}</td>",
                            ms(t.ttft_p95_ms),
                            ms(t.tpot_p50_ms),
                            t.output_tps
                        );
                    }
                    None => out.push_str("<td>–</td><td>–</td><td>–</td>"),
                }
            }
            let better = match row.better {
                Some(i) => format!("{} +{:.0}%", crate::ab::target_name(self, i), row.lead_pct),
                None => say(lang, "tie", "持平").to_owned(),
            };
            let _ = write!(out, "<td>{}</td></tr>", escape(&better));
        }
        out.push_str("</tbody></table></div>");
    }

    fn html_errors(&self, out: &mut String, lang: Lang) {
        if self.total.fails_by_kind.is_empty() {
            return;
        }
        let _ = write!(
            out,
            "<h2>{}</h2><ul class=\"errors\">",
            say(lang, "Why requests failed", "失败原因")
        );
        for (kind, n) in &self.total.fails_by_kind {
            // The first request of this kind says what the server said.
            let detail = self
                .records
                .iter()
                .filter_map(|r| r.error.as_ref())
                .find(|e| e.kind == *kind)
                .map(|e| format!(" <code>{}</code>", escape(&e.detail)))
                .unwrap_or_default();
            let _ = write!(
                out,
                "<li><strong>{}</strong> ×{n}{detail}<br><span class=\"hint\">{}</span></li>",
                escape(kind.title(lang)),
                escape(kind.hint(lang))
            );
        }
        out.push_str("</ul>");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{plan::Plan, report::Environment};

    fn document() -> RunDocument {
        let mut plan = Plan::default_for_simulator("http://127.0.0.1:8000/v1");
        plan.model = "<script>alert(1)</script>".into();
        RunDocument::build(
            "r".into(),
            "2026-12-03T10:00:00Z".into(),
            RunStatus::Done,
            plan,
            Environment::default(),
            crate::chart::tests_support::ladder_records(),
        )
    }

    #[test]
    fn one_file_with_everything_and_no_script() {
        let doc = document();
        let html = doc.html(Lang::En);
        assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"));
        assert!(
            !html.contains("<script"),
            "server and user text is escaped; the report runs nothing"
        );
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(html.contains(r#"data-testid="chart-latency""#));
        assert!(html.contains(r#"data-testid="chart-throughput""#));
        for chart in ["chart-over-time", "chart-cdf", "chart-timeline"] {
            assert!(
                html.contains(&format!(r#"data-testid="{chart}""#)),
                "{chart}"
            );
        }
        assert!(html.contains(r#"data-testid="headline""#));
        assert!(
            html.contains("svg.chart .pt-value"),
            "the charts' stylesheet is inline"
        );
        assert!(
            !html.contains("<link") && !html.contains(" src="),
            "nothing fetched"
        );
        assert!(html.contains("<th>TTFT p95</th>"));
        assert!(html.contains("Server error (5xx)") && html.contains("HTTP 503"));
        assert!(html.contains(&escape(&doc.verdict.text(Lang::En))));
    }

    #[test]
    fn every_chart_is_there_for_a_phone_too_with_its_hooks_apart() {
        let doc = document();
        let html = doc.html(Lang::En);
        let count = |needle: &str| html.matches(needle).count();
        for chart in [
            "chart-latency",
            "chart-throughput",
            "chart-over-time",
            "chart-cdf",
            "chart-timeline",
        ] {
            assert_eq!(count(&format!(r#"data-testid="{chart}""#)), 1, "{chart}");
            assert_eq!(
                count(&format!(r#"data-testid="narrow-{chart}""#)),
                1,
                "{chart}"
            );
        }
        let points = count(r#"data-testid="chart-point""#);
        assert_eq!(
            points,
            count(r#"data-testid="narrow-chart-point""#),
            "the same points in both drawings"
        );
        let wide_points = chart::latency(&doc, Lang::En.into())
            .unwrap()
            .matches(r#"data-testid="chart-point""#)
            .count()
            + chart::throughput(&doc, Lang::En.into())
                .unwrap()
                .matches(r#"data-testid="chart-point""#)
                .count();
        assert_eq!(points, wide_points, "counted once under the stable hook");
        assert_eq!(count(r#"<figure class="narrow"><svg"#), 5);
        assert!(html.contains(r#"class="chart narrow""#));
    }

    #[test]
    fn what_the_server_reported_is_charted_and_said() {
        use crate::server_metrics::{Server, ServerMetrics, ServerSample, Unreadable};
        let mut doc = document();
        let first_us = doc.records.iter().map(|r| r.wanted_us).min().unwrap();
        doc.environment.server_metrics = Some(ServerMetrics {
            url: "http://127.0.0.1:8000/metrics".into(),
            server: Some(Server::Vllm),
            every_ms: 500,
            unreadable: None,
            skipped_at_us: Vec::new(),
            samples: (0..4)
                .map(|i| ServerSample {
                    at_us: first_us + i * 1_000_000,
                    running: Some(i as f64),
                    ..ServerSample::default()
                })
                .collect(),
        });
        let html = doc.html(Lang::En);
        assert!(html.contains(r#"data-testid="chart-server""#));
        assert!(html.contains(r#"data-testid="server-metrics">Server metrics (vLLM"#));
        let metrics = doc.environment.server_metrics.as_mut().unwrap();
        metrics.samples.clear();
        metrics.unreadable = Some(Unreadable::NoResponse);
        let html = doc.html(Lang::Zh);
        assert!(!html.contains(r#"data-testid="chart-server""#));
        assert!(
            html.contains("未读取服务端指标"),
            "why, in the report's language"
        );
    }

    #[test]
    fn in_chinese() {
        let html = document().html(Lang::Zh);
        assert!(html.contains("<html lang=\"zh-CN\">"));
        assert!(html.contains("<th>并发</th>"));
        assert!(html.contains("失败原因"));
        assert!(html.contains("TTFT：首 token 时延"));
    }
}
