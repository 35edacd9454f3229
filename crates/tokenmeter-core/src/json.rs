//! Indenting compact JSON text, byte for byte as `serde_json::to_string_pretty`
//! writes it (two spaces, `": "`, empty arrays and objects as `[]` and `{}`).
//!
//! Why not `to_string_pretty`: it monomorphises every `Serialize` impl a second
//! time, for its pretty formatter, and the run document's are large; in the page's
//! WebAssembly that second copy is bigger than this whole module. Serialising
//! compactly and indenting the text afterwards costs one linear pass over it.

/// `compact` (JSON as `serde_json::to_string` writes it: no whitespace outside
/// strings) indented.
pub(crate) fn pretty(compact: &str) -> String {
    Indenter::default().push(compact)
}

/// [`pretty`] fed a part at a time: the parts of one compact text, cut anywhere
/// between characters, come out indented exactly as the whole would. The state
/// carried from part to part is the depth, whether a string is open (and a
/// backslash pending), and a bracket just opened, which stays `[]` or `{}` only if
/// the next byte closes it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Indenter {
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// The closing byte of a bracket whose next byte is not yet seen.
    opened: Option<u8>,
}

impl Indenter {
    /// `compact`, the next part of the text, indented. (A bracket opened at the
    /// very end of a part is written once the next part shows whether it closes
    /// at once; a whole text never ends with one.)
    pub(crate) fn push(&mut self, compact: &str) -> String {
        let mut out = Vec::with_capacity(compact.len() + compact.len() / 2);
        for &b in compact.as_bytes() {
            self.byte(b, &mut out);
        }
        String::from_utf8(out).expect("only ASCII bytes were added to UTF-8 text")
    }

    fn newline(out: &mut Vec<u8>, depth: usize) {
        out.push(b'\n');
        out.extend(std::iter::repeat_n(b' ', 2 * depth));
    }

    fn byte(&mut self, b: u8, out: &mut Vec<u8>) {
        if let Some(close) = self.opened.take() {
            if b == close {
                out.push(b);
                return;
            }
            self.depth += 1;
            Self::newline(out, self.depth);
        }
        if self.in_string {
            // Multi-byte UTF-8 sequences never contain ASCII bytes: copied as they are.
            out.push(b);
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                out.push(b);
            }
            b'{' | b'[' => {
                out.push(b);
                self.opened = Some(if b == b'{' { b'}' } else { b']' });
            }
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                Self::newline(out, self.depth);
                out.push(b);
            }
            b',' => {
                out.push(b);
                Self::newline(out, self.depth);
            }
            b':' => out.extend_from_slice(b": "),
            _ => out.push(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn same_as_serde(value: &serde_json::Value) {
        let compact = serde_json::to_string(value).unwrap();
        assert_eq!(
            pretty(&compact),
            serde_json::to_string_pretty(value).unwrap()
        );
    }

    #[test]
    fn parts_cut_anywhere_indent_as_the_whole() {
        let value = json!({
            "records": [{"a": [], "b": {}}, {"t": "x\\\"y,{[", "n": [1, 2]}],
            "empty": [], "text": "你好，世界",
        });
        let compact = serde_json::to_string(&value).unwrap();
        let whole = pretty(&compact);
        let chars: Vec<(usize, char)> = compact.char_indices().collect();
        for cut_a in 0..chars.len() {
            for cut_b in [cut_a, (cut_a + 7).min(chars.len())] {
                let at = |i: usize| chars.get(i).map_or(compact.len(), |c| c.0);
                let (a, b) = (at(cut_a), at(cut_b));
                let mut indenter = Indenter::default();
                let out: String = [&compact[..a], &compact[a..b], &compact[b..]]
                    .into_iter()
                    .map(|part| indenter.push(part))
                    .collect();
                assert_eq!(out, whole, "cut at {a} and {b}");
            }
        }
    }

    #[test]
    fn indents_as_serde_json_does() {
        same_as_serde(&json!({}));
        same_as_serde(&json!([]));
        same_as_serde(&json!(3.5));
        same_as_serde(&json!("plain"));
        same_as_serde(&json!({
            "empty_list": [], "empty_map": {}, "nested": [[], [{}], [1, [2, {"a": null}]]],
            "n": -1.25e-7, "yes": true, "text": "你好，世界 🌏",
            "tricky": "a \"quoted\" {brace}, [bracket]: colon\\ and \\\"escape\\\\\" \n\t\u{1}",
        }));
    }
}
