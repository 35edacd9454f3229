//! The page's Content-Security-Policy, applied to a built `dist/`: Trunk writes the
//! wasm loader as an inline `<script type="module">`, which a policy without
//! `'unsafe-inline'` would block, so it moves into a file of its own (named by its
//! content's hash, like Trunk's files), and the policy goes in as a `<meta>` tag.
//!
//! The policy lets the page call any endpoint (`connect-src *`: the endpoint is the
//! user's choice) and run WebAssembly, and nothing else: no inline script, no
//! script or style from elsewhere, no plugins, no forms.

use std::{fs, path::Path};

use crate::util::Result;

/// The policy, as the README states it for static hosts that send it as a header.
pub const POLICY: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data:; connect-src *; worker-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'";

const INLINE_MODULE: &str = "<script type=\"module\">";

/// Moves the inline loader of `dist/index.html` into `boot-<hash>.js` and adds the
/// policy. Fails if the page has any other inline script (it would not run).
pub fn apply(dist: &Path) -> Result<()> {
    let index = dist.join("index.html");
    let html = fs::read_to_string(&index)?;
    if html.contains("http-equiv=\"Content-Security-Policy\"") {
        return Ok(());
    }
    let start = html
        .find(INLINE_MODULE)
        .ok_or("index.html has no inline module script: did Trunk's output change?")?;
    let body_start = start + INLINE_MODULE.len();
    let end = body_start
        + html[body_start..]
            .find("</script>")
            .ok_or("an inline script without its end")?;
    let script = &html[body_start..end];
    let name = format!("boot-{:016x}.js", fnv1a(script.as_bytes()));
    fs::write(dist.join(&name), script.trim())?;
    let mut hardened = String::with_capacity(html.len() + POLICY.len() + 200);
    hardened.push_str(&html[..start]);
    hardened.push_str(&format!(
        "<script type=\"module\" src=\"./{name}\"></script>"
    ));
    hardened.push_str(&html[end + "</script>".len()..]);
    if hardened.contains("<script>") || hardened.contains(INLINE_MODULE) {
        return Err("index.html has another inline script, which the policy would block".into());
    }
    let charset = "<meta charset=\"utf-8\" />";
    let at = hardened
        .find(charset)
        .ok_or("index.html has no <meta charset>")?
        + charset.len();
    hardened.insert_str(
        at,
        &format!("\n    <meta http-equiv=\"Content-Security-Policy\" content=\"{POLICY}\" />"),
    );
    fs::write(index, hardened)?;
    Ok(())
}

/// A stable content hash for the file name (not for security).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loader_moves_out_and_the_policy_goes_in() {
        let dir = std::env::temp_dir().join(format!("tokenmeter-csp-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let html = "<html><head>\n<meta charset=\"utf-8\" />\n<script type=\"module\">\nimport init from './a.js';\nawait init();\n</script>\n<link rel=\"modulepreload\" href=\"./a.js\"></head><body></body></html>";
        fs::write(dir.join("index.html"), html).unwrap();
        apply(&dir).unwrap();
        let out = fs::read_to_string(dir.join("index.html")).unwrap();
        assert!(out.contains(&format!("content=\"{POLICY}\"")));
        assert!(!out.contains("import init"));
        let boot = fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with("boot-"))
            .unwrap();
        assert!(out.contains(&format!("src=\"./{}\"", boot.file_name().to_string_lossy())));
        assert_eq!(
            fs::read_to_string(boot.path()).unwrap(),
            "import init from './a.js';\nawait init();"
        );
        // Twice is once.
        apply(&dir).unwrap();
        assert_eq!(fs::read_to_string(dir.join("index.html")).unwrap(), out);
        fs::remove_dir_all(&dir).unwrap();
    }
}
