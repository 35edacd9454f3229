//! tokenmeter's page and engine: a Leptos (CSR) app compiled to WebAssembly, and
//! the engine that the same module runs in a Web Worker ([`engine::host`]).
//!
//! The page presents; it never measures. Sending and timing requests belongs to the
//! engine, in a Web Worker, so rendering can never delay a timestamp, and every
//! figure is computed by `tokenmeter-core`. See ARCHITECTURE.md.

/// A function whose code a split build (`--features split`, which only
/// `cargo xtask` turns on: xtask/src/split.rs) moves into a WebAssembly module of
/// its own, `split_<module>.wasm`, fetched and instantiated on its first call, so
/// that the first visit does not download it. The function is `async` in every
/// build, and says [`PieceMissing`] when that module cannot be fetched (a host
/// that lacks some of the build's files, a network that failed: the next call
/// tries again). Its arguments and result cross between modules by value: no
/// generics, no `impl Trait`, no panics across.
///
/// `split_off! { name, preload fetch_name: ... }` also defines `async fn fetch_name()`,
/// which fetches the module without calling anything, so that a later call finds it
/// there and completes at once.
macro_rules! split_off {
    ($module:ident $(, preload $preload:ident)?: $(#[$attr:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
        split_off! { $module $(, preload $preload)?: $(#[$attr])* $vis fn $name($($arg: $ty),*) -> () $body }
    };
    ($module:ident $(, preload $preload:ident)?: $(#[$attr:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty $body:block) => {
        #[cfg(feature = "split")]
        $(#[$attr])*
        #[::leptos::wasm_split::wasm_split($module, wasm_split_path = ::leptos::wasm_split, fallible $(, preload($preload))?)]
        $vis fn $name($($arg: $ty),*) -> Result<$ret, $crate::PieceMissing> {
            // A function of its own, so that the body's `return`s give a `$ret`.
            fn body($($arg: $ty),*) -> $ret $body
            Ok(body($($arg),*))
        }

        #[cfg(not(feature = "split"))]
        $(#[$attr])*
        $vis async fn $name($($arg: $ty),*) -> Result<$ret, $crate::PieceMissing> {
            fn body($($arg: $ty),*) -> $ret $body
            Ok(body($($arg),*))
        }

        $(
            #[cfg(not(feature = "split"))]
            $vis async fn $preload() -> Result<(), ::leptos::wasm_split::SplitLoaderError> {
                Ok(())
            }
        )?
    };
}

/// A piece of a split build (see `split_off!`) that could not be fetched or
/// instantiated.
#[derive(Debug)]
pub struct PieceMissing;

#[cfg(feature = "split")]
impl From<leptos::wasm_split::SplitLoaderError> for PieceMissing {
    fn from(_: leptos::wasm_split::SplitLoaderError) -> Self {
        PieceMissing
    }
}

impl PieceMissing {
    /// What happened and what to do, in both languages.
    pub fn said(&self) -> tokenmeter_core::schema::Said {
        tokenmeter_core::schema::Said {
            en: "the page could not fetch part of its code (a file in the build's tokenmeter-*-split/ folder): publish every file of the build's dist/ folder beside the page, then reload".into(),
            zh: "页面无法获取它的一部分代码（构建产物 tokenmeter-*-split/ 文件夹中的文件）：请把构建的 dist/ 文件夹中的所有文件与页面放在一起发布，然后重新加载".into(),
        }
    }
}

impl std::fmt::Display for PieceMissing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.said().en)
    }
}

mod app;
mod config;
pub mod engine;
mod files;
mod glossary;
mod history;
mod in_progress;
mod language;
pub mod models;
mod pieces;
pub mod protocol;
mod results;
pub mod run;
mod screen;
mod store;
mod widgets;
mod worker;

pub use app::App;

/// This origin's local storage, or `None` where the browser gives none (private
/// modes, storage turned off): what is kept there is kept on a best-effort basis.
fn local_storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

/// Lets the browser run what waits (input, paint, other tasks) before going on:
/// long work on the page thread (a large run's export) is cut into slices with
/// this between them, so that no task of ours holds the page for 50 ms.
async fn yield_to_browser() {
    gloo_timers::future::sleep(std::time::Duration::ZERO).await;
}

/// `TypeError: Failed to fetch` and the like, from whatever was thrown.
pub fn describe_js_error(error: &wasm_bindgen::JsValue) -> String {
    use wasm_bindgen::JsCast;
    if let Some(error) = error.dyn_ref::<js_sys::Error>() {
        format!(
            "{}: {}",
            String::from(error.name()),
            String::from(error.message())
        )
    } else if let Some(text) = error.as_string() {
        text
    } else {
        format!("{error:?}")
    }
}

/// The page's default target: the simulator that `cargo xtask serve` starts beside it.
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:8000/v1";
