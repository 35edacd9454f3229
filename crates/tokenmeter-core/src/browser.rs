//! What browsers do to requests, as far as the figures need to know: constants that
//! the summaries, the notes and the page's warnings share.

/// Browsers open at most this many HTTP/1.1 connections to one host; more
/// concurrent requests wait inside the browser.
pub const HTTP1_CONNECTIONS_PER_HOST: u32 = 6;

/// Browser wait on an open connection, with no browser queue in front, from which a
/// request counts as a slow send (a CORS preflight costs a round trip). Handing a
/// request from a worker to the browser's network stack alone takes a few ms on a
/// busy machine, hence the margin.
pub const SLOW_SEND_US: u64 = 10_000;
