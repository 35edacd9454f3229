//! The entry point of both threads: the page and the engine worker run this one
//! module (see `engine::host`). On the page, mount the app; in the worker, listen.

use wasm_bindgen::JsCast;

fn main() {
    console_error_panic_hook::set_once();
    if js_sys::global().is_instance_of::<web_sys::Window>() {
        leptos::mount::mount_to_body(tokenmeter::App);
    } else {
        wasm_bindgen_futures::spawn_local(async {
            if let Err(missing) = tokenmeter::engine::host::listen().await {
                // Thrown, so that the page hears it as the worker's error and says it.
                wasm_bindgen::throw_str(&format!("the engine could not start: {missing}"));
            }
        });
    }
}
