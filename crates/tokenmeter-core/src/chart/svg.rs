//! A few lines of SVG writing: numbers rounded to what a screen can show, text
//! escaped. The charts build their markup with these and nothing else.

use std::fmt::Write;

/// `text` safe inside an element or a double-quoted attribute.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A coordinate, to a tenth of a unit (the charts' units are CSS pixels at 100%).
pub(super) fn px(v: f64) -> String {
    // `+ 0.0` turns −0 into 0.
    let v = (v * 10.0).round() / 10.0 + 0.0;
    if v == v.trunc() {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Markup under construction.
#[derive(Default)]
pub(super) struct Svg {
    out: String,
}

impl Svg {
    pub(super) fn raw(&mut self, markup: &str) -> &mut Self {
        self.out.push_str(markup);
        self
    }

    pub(super) fn line(
        &mut self,
        class: &str,
        (x1, y1): (f64, f64),
        (x2, y2): (f64, f64),
    ) -> &mut Self {
        let _ = write!(
            self.out,
            r#"<line class="{class}" x1="{}" y1="{}" x2="{}" y2="{}"/>"#,
            px(x1),
            px(y1),
            px(x2),
            px(y2)
        );
        self
    }

    /// Text anchored at (`x`, `y`); `anchor` is `start`, `middle` or `end`.
    pub(super) fn text(
        &mut self,
        class: &str,
        (x, y): (f64, f64),
        anchor: &str,
        text: &str,
    ) -> &mut Self {
        let _ = write!(
            self.out,
            r#"<text class="{class}" x="{}" y="{}" text-anchor="{anchor}">{}</text>"#,
            px(x),
            px(y),
            escape(text)
        );
        self
    }

    /// A polyline through `points` (skipped when there are fewer than two).
    pub(super) fn polyline(&mut self, class: &str, points: &[(f64, f64)]) -> &mut Self {
        if points.len() < 2 {
            return self;
        }
        let coords: Vec<String> = points
            .iter()
            .map(|&(x, y)| format!("{},{}", px(x), px(y)))
            .collect();
        let _ = write!(
            self.out,
            r#"<polyline class="{class}" points="{}"/>"#,
            coords.join(" ")
        );
        self
    }

    pub(super) fn finish(self) -> String {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_numbers_rounded() {
        assert_eq!(
            escape(r#"<a & "b">'"#),
            "&lt;a &amp; &quot;b&quot;&gt;&#39;"
        );
        assert_eq!(px(12.04), "12");
        assert_eq!(px(12.06), "12.1");
        assert_eq!(px(-0.0), "0");
        let mut svg = Svg::default();
        svg.text("t", (1.0, 2.0), "end", "TTFT <p95>")
            .polyline("l", &[(0.0, 0.0)]);
        assert_eq!(
            svg.finish(),
            r#"<text class="t" x="1" y="2" text-anchor="end">TTFT &lt;p95&gt;</text>"#
        );
    }
}
