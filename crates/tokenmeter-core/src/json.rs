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
    let bytes = compact.as_bytes();
    let mut out = Vec::with_capacity(bytes.len() + bytes.len() / 2);
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let newline = |out: &mut Vec<u8>, depth: usize| {
        out.push(b'\n');
        out.extend(std::iter::repeat_n(b' ', 2 * depth));
    };
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        i += 1;
        if in_string {
            // Multi-byte UTF-8 sequences never contain ASCII bytes: copied as they are.
            out.push(b);
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                out.push(b);
            }
            b'{' | b'[' => {
                out.push(b);
                let close = if b == b'{' { b'}' } else { b']' };
                if bytes.get(i) == Some(&close) {
                    out.push(close);
                    i += 1;
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(b);
            }
            b',' => {
                out.push(b);
                newline(&mut out, depth);
            }
            b':' => out.extend_from_slice(b": "),
            _ => out.push(b),
        }
    }
    String::from_utf8(out).expect("only ASCII bytes were added to UTF-8 text")
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
