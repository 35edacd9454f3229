//! Files in and out of the page: a text offered as a download, and the text (or
//! the bytes) of a file the user chose.

use wasm_bindgen::{prelude::Closure, JsCast};

/// Offers `text` as a file.
pub fn download(name: &str, mime: &str, text: &str) {
    download_parts(
        name,
        mime,
        &js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(text)),
    );
}

/// Offers the JavaScript strings `parts`, one after another, as a file (a large
/// file made a slice at a time is never one string).
pub fn download_parts(name: &str, mime: &str, parts: &js_sys::Array) {
    let options = web_sys::BlobPropertyBag::new();
    options.set_type(mime);
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(parts, &options) else {
        return;
    };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else {
        return;
    };
    let Ok(anchor) = leptos::prelude::document().create_element("a") else {
        return;
    };
    let anchor: web_sys::HtmlAnchorElement = anchor.unchecked_into();
    anchor.set_href(&url);
    anchor.set_download(name);
    anchor.click();
    let _ = web_sys::Url::revoke_object_url(&url);
}

/// The file chosen in the file input an event came from, if any.
fn chosen(event: &leptos::ev::Event) -> Option<web_sys::File> {
    event
        .target()
        .and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok())?
        .files()?
        .get(0)
}

/// Reads the file chosen in a file input and hands its text to `apply`.
pub fn read_file(event: leptos::ev::Event, apply: impl Fn(String) + 'static) {
    let (Some(file), Ok(reader)) = (chosen(&event), web_sys::FileReader::new()) else {
        return;
    };
    let on_load = Closure::once({
        let reader = reader.clone();
        move || {
            if let Some(text) = reader.result().ok().and_then(|r| r.as_string()) {
                apply(text);
            }
        }
    });
    reader.set_onload(Some(on_load.as_ref().unchecked_ref()));
    // The closure must outlive this call; it runs once, when the file is read.
    on_load.forget();
    let _ = reader.read_as_text(&file);
}

/// Reads the file chosen in a file input and hands its name and bytes to `apply`
/// (for files whose bytes matter: a prompt file is identified by its hash).
pub fn read_file_bytes(event: leptos::ev::Event, apply: impl Fn(String, Vec<u8>) + 'static) {
    let (Some(file), Ok(reader)) = (chosen(&event), web_sys::FileReader::new()) else {
        return;
    };
    let name = file.name();
    let on_load = Closure::once({
        let reader = reader.clone();
        move || {
            if let Ok(buffer) = reader.result() {
                apply(name, js_sys::Uint8Array::new(&buffer).to_vec());
            }
        }
    });
    reader.set_onload(Some(on_load.as_ref().unchecked_ref()));
    // The closure must outlive this call; it runs once, when the file is read.
    on_load.forget();
    let _ = reader.read_as_array_buffer(&file);
}
