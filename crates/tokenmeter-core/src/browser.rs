//! What browsers do to requests, as far as the figures need to know: the one place
//! that states the browser's rules, shared by the summaries, the run conditions,
//! the verdict and the page's warnings.

/// Browsers open at most this many HTTP/1.1 connections to one host; more
/// concurrent requests wait inside the browser.
pub const HTTP1_CONNECTIONS_PER_HOST: u32 = 6;

/// Resource Timing's `nextHopProtocol` for HTTP/1.1.
pub const HTTP1: &str = "http/1.1";

/// Browser wait on an open connection, with no browser queue in front, from which a
/// request counts as a slow send (a CORS preflight costs a round trip). Handing a
/// request from a worker to the browser's network stack alone takes a few ms on a
/// busy machine, hence the margin.
pub const SLOW_SEND_US: u64 = 10_000;

/// Whether the browser holds some of `concurrency` requests in flight back in its
/// own queue when it speaks `protocol` (`nextHopProtocol`) to the host.
pub fn queues(concurrency: u32, protocol: &str) -> bool {
    protocol == HTTP1 && concurrency > HTTP1_CONNECTIONS_PER_HOST
}

/// Whether a base URL makes every browser speak HTTP/1.1: plain `http://` (browsers
/// speak HTTP/2 only over TLS).
pub fn is_plain_http(base_url: &str) -> bool {
    base_url
        .trim()
        .get(..7)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"))
}

/// Whether `concurrency` requests to `base_url` will wait in the browser's queue,
/// as far as can be told before any request (from the URL alone).
pub fn will_queue(base_url: &str, concurrency: u32) -> bool {
    is_plain_http(base_url) && queues(concurrency, HTTP1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http1_above_six_queues() {
        assert!(!queues(6, HTTP1));
        assert!(queues(7, HTTP1));
        assert!(!queues(256, "h2"));
        assert!(!queues(7, "h3"));
    }

    #[test]
    fn plain_http_is_told_from_the_url() {
        assert!(will_queue(" HTTP://127.0.0.1:8000/v1", 8));
        assert!(!will_queue("http://127.0.0.1:8000/v1", 6));
        assert!(!will_queue("https://api.example.com/v1", 64));
        assert!(!is_plain_http("http:/x"));
    }
}
