//! What browsers do to requests, as far as the figures need to know: the one place
//! that states the browsers' rules, shared by the summaries, the run conditions,
//! the verdict and the page's warnings.
//!
//! The engines differ, and every difference here was measured on the engines' own
//! builds (`cargo xtask bench accuracy` prints them; the README has the table):
//!
//! | | Chromium | Firefox | WebKitGTK |
//! |---|---|---|---|
//! | requests per host over HTTP/1.1 | 6 | 6 | 6 |
//! | requests per host over HTTP/2 | unlimited | unlimited | 6 |
//! | Resource Timing's `requestStart` after the browser's queue | yes | no | not reliably |
//! | a CORS preflight shows as browser wait, and only then | yes | no: 10 ms waits without one | no: never shows |
//!
//! (WebKitGTK's `requestStart` showed its HTTP/1.1 queue in some runs and not in
//! others, and never its HTTP/2 one, so its split is not trusted where it queues.)

use serde::{Deserialize, Serialize};

/// Browsers open at most this many HTTP/1.1 connections to one host; more
/// concurrent requests wait inside the browser.
pub const HTTP1_CONNECTIONS_PER_HOST: u32 = 6;

/// Resource Timing's `nextHopProtocol` for HTTP/1.1.
pub const HTTP1: &str = "http/1.1";

/// Browser wait on an open connection, with no browser queue in front, from which a
/// request counts as a slow send (a CORS preflight costs a round trip). Handing a
/// request from a worker to the browser's network stack alone takes a few ms on a
/// busy machine, hence the margin.
pub(crate) const SLOW_SEND_US: u64 = 10_000;

/// Requests in flight up to which a slow send says something about the server
/// (a preflight) rather than about the browser: above it, a burst of sends queues
/// behind itself inside the browser for 10 ms and more (measured: Firefox at 16
/// HTTP/2 streams, Chromium at 64), with every preflight cached.
pub(crate) const QUIET_IN_FLIGHT: u32 = 4;

/// The browser engine that measured a run, as its user agent tells.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// Blink: Chrome, Chromium, Edge, Opera, Brave.
    Chromium,
    /// Gecko.
    Firefox,
    /// WebKit on Linux (GNOME Web, MiniBrowser, WPE), whose network stack is libsoup.
    WebKitGtk,
    /// WebKit on Apple's systems.
    Safari,
    /// Anything else: treated as Chromium, the most common.
    #[default]
    Unknown,
}

impl Engine {
    /// The engine behind a user agent string.
    pub fn from_user_agent(user_agent: &str) -> Engine {
        let has = |s: &str| user_agent.contains(s);
        if has("Firefox/") && has("Gecko/") {
            Engine::Firefox
        } else if has("Chrome/") || has("Chromium/") || has("HeadlessChrome/") {
            Engine::Chromium
        } else if has("AppleWebKit/") && (has("Macintosh") || has("iPhone") || has("iPad")) {
            Engine::Safari
        } else if has("AppleWebKit/") {
            Engine::WebKitGtk
        } else {
            Engine::Unknown
        }
    }

    /// How many requests to one host the engine has in flight over `protocol`
    /// (`nextHopProtocol`); `None` for no limit below the server's own.
    pub fn connections_per_host(self, protocol: &str) -> Option<u32> {
        match (self, protocol) {
            (_, HTTP1) => Some(HTTP1_CONNECTIONS_PER_HOST),
            // Measured: libsoup holds HTTP/2 requests to six per host as well.
            (Engine::WebKitGtk, _) => Some(HTTP1_CONNECTIONS_PER_HOST),
            _ => None,
        }
    }

    /// Whether Resource Timing's `requestStart` comes after the time a request
    /// waited in the engine's own queue over `protocol`, so that browser wait and
    /// TTFT after send split TTFT correctly where requests queue. Measured: Firefox
    /// stamps `requestStart` before its connection queue; WebKitGTK did so over
    /// HTTP/2 always and over HTTP/1.1 in some runs.
    pub fn shows_queue(self, protocol: &str) -> bool {
        match (self, protocol) {
            (Engine::Firefox | Engine::WebKitGtk, _) => false,
            // Chromium's is measured; Safari's and the rest follow the standard.
            _ => true,
        }
    }
}

impl Engine {
    /// Whether a CORS preflight shows in Resource Timing as browser wait on an open
    /// connection, and nothing else does at a few requests in flight: what the
    /// uncached-preflight note needs. Measured with a preflight answered after
    /// 100 ms: Chromium shows each preflight and waits under 5 ms otherwise;
    /// Firefox shows them but also waits 10–12 ms without one (its timer is 1 ms);
    /// WebKitGTK never shows them and waits up to 34 ms without one.
    pub fn shows_preflights(self) -> bool {
        matches!(self, Engine::Chromium | Engine::Unknown)
    }
}

/// Whether the engine holds some of `concurrency` requests in flight back in its
/// own queue when it speaks `protocol` (`nextHopProtocol`) to the host.
pub(crate) fn queues(engine: Engine, concurrency: u32, protocol: &str) -> bool {
    engine
        .connections_per_host(protocol)
        .is_some_and(|n| concurrency > n)
}

/// Of the protocols a level's requests went over (`nextHopProtocol` → requests), the
/// one over which `engine` held some of `concurrency` requests back.
pub(crate) fn queued_protocol(
    engine: Engine,
    concurrency: u32,
    protocols: &crate::vecmap::VecMap<String, u64>,
) -> Option<&str> {
    protocols
        .keys()
        .find(|protocol| queues(engine, concurrency, protocol))
        .map(String::as_str)
}

/// Whether a base URL makes every browser speak HTTP/1.1: plain `http://` (browsers
/// speak HTTP/2 only over TLS).
pub fn is_plain_http(base_url: &str) -> bool {
    base_url
        .trim()
        .get(..7)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"))
}

/// Whether `concurrency` requests to `base_url` will wait in the engine's queue, as
/// far as can be told before any request (from the URL alone: https:// is assumed
/// to be HTTP/2, which most servers behind TLS speak).
pub fn will_queue(engine: Engine, base_url: &str, concurrency: u32) -> bool {
    let protocol = if is_plain_http(base_url) { HTTP1 } else { "h2" };
    queues(engine, concurrency, protocol)
}

/// A browser as a person names it, from its user agent: `Firefox 153.0`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Browser {
    pub engine: Engine,
    /// `Chrome`, `Edge`, `Firefox`, `Safari`, `WebKitGTK`, or the user agent's first word.
    pub name: String,
    pub version: Option<String>,
}

impl Browser {
    pub fn from_user_agent(user_agent: &str) -> Browser {
        let engine = Engine::from_user_agent(user_agent);
        // The version after `token/`, up to the next space.
        let after = |token: &str| {
            user_agent.split(token).nth(1).map(|rest| {
                rest.split([' ', ';', ')'])
                    .next()
                    .unwrap_or_default()
                    .to_owned()
            })
        };
        let (name, version) = match engine {
            Engine::Firefox => ("Firefox", after("Firefox/")),
            Engine::Chromium if user_agent.contains("Edg/") => ("Edge", after("Edg/")),
            Engine::Chromium if user_agent.contains("HeadlessChrome/") => {
                ("Chromium (headless)", after("HeadlessChrome/"))
            }
            Engine::Chromium => ("Chrome", after("Chrome/")),
            Engine::Safari => ("Safari", after("Version/")),
            Engine::WebKitGtk => ("WebKitGTK", after("AppleWebKit/")),
            Engine::Unknown => ("an unknown browser", None),
        };
        Browser {
            engine,
            name: name.to_owned(),
            version: version.filter(|v| !v.is_empty()),
        }
    }

    /// `Firefox 153.0 (Gecko)`.
    pub fn label(&self) -> String {
        let engine = match self.engine {
            Engine::Chromium => " (Blink)",
            Engine::Firefox => " (Gecko)",
            Engine::WebKitGtk | Engine::Safari => " (WebKit)",
            Engine::Unknown => "",
        };
        match &self.version {
            Some(version) => format!("{} {version}{engine}", self.name),
            None => format!("{}{engine}", self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHROMIUM: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/156.0.0.0 Safari/537.36";
    const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:153.0) Gecko/20100101 Firefox/153.0";
    const WEBKITGTK: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/60.5 Safari/605.1.15";
    const SAFARI: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15";
    const EDGE: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.2903.86";

    #[test]
    fn engines_are_told_from_their_user_agents() {
        let label = |ua| Browser::from_user_agent(ua).label();
        assert_eq!(label(CHROMIUM), "Chromium (headless) 156.0.0.0 (Blink)");
        assert_eq!(label(FIREFOX), "Firefox 153.0 (Gecko)");
        assert_eq!(label(WEBKITGTK), "WebKitGTK 605.1.15 (WebKit)");
        assert_eq!(label(SAFARI), "Safari 18.1 (WebKit)");
        assert_eq!(label(EDGE), "Edge 131.0.2903.86 (Blink)");
        assert_eq!(label("curl/8"), "an unknown browser");
        assert_eq!(Engine::from_user_agent(""), Engine::Unknown);
    }

    #[test]
    fn who_queues_where() {
        use Engine::*;
        for engine in [Chromium, Firefox, WebKitGtk, Safari, Unknown] {
            assert!(!queues(engine, 6, HTTP1));
            assert!(queues(engine, 7, HTTP1), "{engine:?}");
        }
        assert!(!queues(Chromium, 256, "h2"));
        assert!(!queues(Firefox, 256, "h2"));
        assert!(
            queues(WebKitGtk, 7, "h2"),
            "libsoup holds HTTP/2 to six too"
        );
        assert!(!queues(Safari, 64, "h3"));
    }

    #[test]
    fn where_resource_timing_shows_the_queue() {
        assert!(Engine::Chromium.shows_queue(HTTP1));
        assert!(Engine::Unknown.shows_queue("h2"));
        assert!(!Engine::Firefox.shows_queue(HTTP1));
        assert!(!Engine::WebKitGtk.shows_queue(HTTP1));
        assert!(!Engine::WebKitGtk.shows_queue("h2"));
    }

    #[test]
    fn only_chromium_is_trusted_with_preflights() {
        assert!(Engine::Chromium.shows_preflights());
        assert!(!Engine::Firefox.shows_preflights());
        assert!(!Engine::WebKitGtk.shows_preflights());
        assert!(
            !Engine::Safari.shows_preflights(),
            "not measured: not trusted"
        );
    }

    #[test]
    fn plain_http_is_told_from_the_url() {
        assert!(will_queue(Engine::Chromium, " HTTP://127.0.0.1:8000/v1", 8));
        assert!(!will_queue(Engine::Chromium, "http://127.0.0.1:8000/v1", 6));
        assert!(!will_queue(
            Engine::Firefox,
            "https://api.example.com/v1",
            64
        ));
        assert!(will_queue(
            Engine::WebKitGtk,
            "https://api.example.com/v1",
            8
        ));
        assert!(!is_plain_http("http:/x"));
    }
}
