//! The client against misbehaving local servers, and the wait rules.

use super::wait::*;
use super::*;
use reqwest::header::HeaderValue;

#[test]
fn open_hands_an_error_status_back_at_once_with_its_body_unread() {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let mut served = 0;
        // One connection is expected; a second (a retry) would be counted.
        listener.set_nonblocking(false).unwrap();
        let (stream, _) = listener.accept().unwrap();
        served += 1;
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap() > 2 {
            line.clear();
        }
        let mut out = stream;
        out.write_all(b"HTTP/1.1 429 Too Many Requests\r\nretry-after: 7\r\ncontent-length: 4\r\nconnection: close\r\n\r\nslow").unwrap();
        listener.set_nonblocking(true).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        served + usize::from(listener.accept().is_ok())
    });
    let http = Http::with(ClientSettings::default(), RetryPolicy::services()).unwrap();
    let url = format!("http://{addr}/v1/messages");
    let mut resp = http
        .open("relaying", &url, |c| c.post(&url).body("{}"))
        .expect("an error status is an answer, not an error");
    assert_eq!(resp.status().as_u16(), 429);
    assert_eq!(retry_after(resp.headers()), Some(Duration::from_secs(7)));
    let mut body = String::new();
    resp.read_to_string(&mut body).unwrap();
    assert_eq!(body, "slow");
    assert_eq!(
        server.join().unwrap(),
        1,
        "statuses are not retried by open"
    );
}

/// A loopback server that reads each connection's request head and hands the connection and
/// its number (0 first) to `answer`; returns its address and how many requests it read.
fn serve(
    answer: impl Fn(std::net::TcpStream, usize) + Send + 'static,
) -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    use std::io::{BufRead, BufReader};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let served = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = served.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 2 {
                line.clear();
            }
            answer(stream, n);
        }
    });
    (addr, served)
}

/// A server answering every connection with `head` then, for a chunked head, 64 KiB chunks
/// until the client hangs up; returns its address and the bytes it managed to send.
fn endless_server(
    head: &'static str,
) -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicU64>,
) {
    use std::io::Write;
    use std::sync::atomic::Ordering;
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counter = sent.clone();
    let (addr, _) = serve(move |mut out, _| {
        let counter = counter.clone();
        std::thread::spawn(move || {
            if out.write_all(head.as_bytes()).is_err() || !head.contains("chunked") {
                return;
            }
            let chunk = format!("10000\r\n{}\r\n", "x".repeat(0x10000));
            while out.write_all(chunk.as_bytes()).is_ok() {
                counter.fetch_add(0x10000, Ordering::Relaxed);
            }
        });
    });
    (addr, sent)
}

#[test]
fn an_endless_body_ends_at_the_cap_with_a_typed_error() {
    let (addr, sent) = endless_server(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n",
    );
    let http = Http::with(ClientSettings::default(), RetryPolicy::services())
        .unwrap()
        .with_body_cap(1024 * 1024);
    let url = format!("http://{addr}/api");
    let e = http
        .send("listing things", &url, |c| c.get(&url))
        .unwrap_err();
    assert!(
        matches!(
            e,
            NetError::TooLarge {
                cap: 1048576,
                declared: None,
                status: 200,
                ..
            }
        ),
        "{e:?}"
    );
    let text = e.to_string();
    assert!(
        text.contains("listing things") && text.contains("larger than the 1 MiB"),
        "{text}"
    );
    std::thread::sleep(Duration::from_millis(200));
    let sent = sent.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        sent < 16 * 1024 * 1024,
        "the client read on: {sent} bytes sent"
    );
}

#[test]
fn a_declared_length_over_the_cap_is_refused_before_reading() {
    let (addr, _) = endless_server("HTTP/1.1 200 OK\r\ncontent-length: 99999999999\r\n\r\n");
    let http = Http::with(ClientSettings::default(), RetryPolicy::services()).unwrap();
    let url = format!("http://{addr}/zip");
    let started = Instant::now();
    let e = http.send("downloading", &url, |c| c.get(&url)).unwrap_err();
    assert!(
        matches!(
            e,
            NetError::TooLarge {
                cap: JSON_BODY_CAP,
                declared: Some(99999999999),
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("(it declares 95367.4 MiB)"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(10), "not retried");
}

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.insert(*k, HeaderValue::from_str(v).unwrap());
    }
    h
}

#[test]
fn retry_after_reads_seconds_fractions_and_milliseconds() {
    let wait = |pairs| retry_after(&headers(pairs));
    assert_eq!(wait(&[("retry-after", "7")]), Some(Duration::from_secs(7)));
    assert_eq!(wait(&[("retry-after", " 0 ")]), Some(Duration::ZERO));
    assert_eq!(
        wait(&[("retry-after", "1.5")]),
        Some(Duration::from_millis(1500))
    );
    assert_eq!(
        wait(&[("retry-after", "2"), ("retry-after-ms", "250")]),
        Some(Duration::from_millis(250)),
        "the finer header wins"
    );
    assert_eq!(
        wait(&[("retry-after", "2"), ("retry-after-ms", "soon")]),
        Some(Duration::from_secs(2)),
        "a garbled retry-after-ms falls back to Retry-After"
    );
    assert_eq!(retry_after(&HeaderMap::new()), None);
}

#[test]
fn retry_after_reads_http_dates() {
    assert_eq!(
        retry_after(&headers(&[(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:00 GMT"
        )])),
        Some(Duration::ZERO),
        "a past date means now"
    );
    let soon = (chrono::Utc::now() + chrono::Duration::seconds(30)).to_rfc2822();
    let wait = retry_after(&headers(&[("retry-after", &soon)])).unwrap();
    assert!(
        wait > Duration::from_secs(25) && wait <= Duration::from_secs(30),
        "{wait:?}"
    );
}

#[test]
fn retry_after_refuses_garbage() {
    for garbage in ["soon", "-3", "NaN", "inf", "", "1e", "Wed, 99 Foo 2015"] {
        assert_eq!(
            retry_after(&headers(&[("retry-after", garbage)])),
            None,
            "{garbage:?}"
        );
    }
    assert_eq!(
        retry_after(&headers(&[("retry-after-ms", "-1")])),
        None,
        "a negative retry-after-ms with no Retry-After"
    );
}

#[test]
fn retry_after_caps_huge_values_instead_of_overflowing() {
    for huge in [
        "86401",
        "1e300",
        "99999999999999999999999",
        "18446744073709551615",
    ] {
        assert_eq!(
            retry_after(&headers(&[("retry-after", huge)])),
            Some(RETRY_AFTER_CEILING),
            "{huge}"
        );
    }
    assert_eq!(
        retry_after(&headers(&[("retry-after-ms", "1e300")])),
        Some(RETRY_AFTER_CEILING)
    );
    assert_eq!(
        retry_after(&headers(&[(
            "retry-after",
            "Fri, 31 Dec 9999 23:59:59 GMT"
        )])),
        Some(RETRY_AFTER_CEILING)
    );
}

#[test]
fn backoff_doubles_within_jitter_and_is_capped() {
    let base = Duration::from_millis(100);
    for retry in 1..=4u32 {
        let full = base * (1 << (retry - 1));
        let d = backoff(base, retry);
        assert!(d >= full / 2 && d <= full, "retry {retry}: {d:?}");
    }
    assert!(backoff(Duration::from_secs(10), 30) <= MAX_BACKOFF);
}

#[test]
fn hosts_never_carry_paths_or_signatures() {
    assert_eq!(
        host_of("https://blob.example.net/c/a.zip?sig=SECRET&se=1"),
        "https://blob.example.net"
    );
    assert_eq!(host_of("http://127.0.0.1:8080/x"), "http://127.0.0.1:8080");
    assert_eq!(
        error_detail(br#"{"message":"Bad credentials"}"#),
        "Bad credentials"
    );
    assert_eq!(error_detail(br#"{"code":"internal","msg":"boom"}"#), "boom");
}

/// A server answering its n-th connection with `answers[n]` (the last one repeated), each with
/// `connection: close`; returns its address and how many requests it served.
fn scripted_server(
    answers: Vec<&'static str>,
) -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    use std::io::Write;
    serve(move |mut out, n| {
        let _ = out.write_all(answers[n.min(answers.len() - 1)].as_bytes());
    })
}

fn quick_services() -> Http {
    let policy = RetryPolicy {
        base_delay: Duration::from_millis(10),
        ..RetryPolicy::services()
    };
    Http::with(ClientSettings::default(), policy).unwrap()
}

/// An HTTP/1.1 answer with `connection: close` and a correct `content-length`.
fn answer(status: &str, headers: &str, body: &str) -> &'static str {
    Box::leak(
        format!(
            "HTTP/1.1 {status}\r\n{headers}content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_boxed_str(),
    )
}

const OK: &str = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}";

#[test]
fn a_secondary_rate_limit_is_waited_out_and_a_refusal_is_not_retried() {
    let secondary = answer("403 Forbidden", "retry-after: 1\r\n", "");
    let (addr, served) = scripted_server(vec![secondary, OK]);
    let url = format!("http://{addr}/repos/o/r/issues/comments/1");
    let started = Instant::now();
    let reply = quick_services()
        .send("editing comment 1", &url, |c| c.patch(&url))
        .expect("retried after the asked second");
    assert_eq!(reply.status, 200);
    assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 2);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "waited as asked"
    );

    let message = answer(
        "403 Forbidden",
        "",
        r#"{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}"#,
    );
    let (addr, served) = scripted_server(vec![message, OK]);
    let url = format!("http://{addr}/graphql");
    quick_services()
        .send("reading the identity", &url, |c| c.post(&url))
        .expect("the documented message alone is a rate limit");
    assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 2);

    let refusal = answer(
        "403 Forbidden",
        "x-ratelimit-remaining: 4999\r\n",
        r#"{"message":"Resource not accessible by integration"}"#,
    );
    let (addr, served) = scripted_server(vec![refusal, OK]);
    let url = format!("http://{addr}/repos/o/r/pulls");
    let e = quick_services()
        .send("opening a pull request", &url, |c| c.post(&url))
        .unwrap_err();
    assert!(matches!(e, NetError::Status { status: 403, .. }), "{e:?}");
    assert_eq!(
        served.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "not retried"
    );
}

#[test]
fn a_primary_rate_limit_beyond_the_longest_wait_ends_at_once_with_its_reset() {
    let reset = unix_now() + 3600;
    let limited = answer(
        "403 Forbidden",
        &format!("x-ratelimit-remaining: 0\r\nx-ratelimit-reset: {reset}\r\n"),
        r#"{"message":"API rate limit exceeded"}"#,
    );
    let (addr, served) = scripted_server(vec![limited, OK]);
    let url = format!("http://{addr}/repos/o/r/issues/1");
    let started = Instant::now();
    let e = quick_services()
        .send("reading issue #1", &url, |c| c.get(&url))
        .unwrap_err();
    let NetError::CutShort { why, last } = &e else {
        panic!("{e:?}")
    };
    assert!(
        matches!(why, CutShort::RetryAfterTooLong(w) if w.as_secs() > 3500),
        "{why:?}"
    );
    let NetError::Status { throttle, .. } = last.as_ref() else {
        panic!("{last:?}")
    };
    assert_eq!(throttle.reset, Some(reset));
    assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(started.elapsed() < Duration::from_secs(5), "no wait");
}

#[test]
fn server_errors_and_dropped_connections_are_retried() {
    let bad_gateway = answer("502 Bad Gateway", "", "");
    // A head promising more body than is sent: the connection drops mid-answer.
    let dropped = "HTTP/1.1 200 OK\r\ncontent-length: 100\r\nconnection: close\r\n\r\n{";
    let (addr, served) = scripted_server(vec![bad_gateway, dropped, OK]);
    let url = format!("http://{addr}/repos/o/r/issues/1");
    let reply = quick_services()
        .send("reading issue #1", &url, |c| c.get(&url))
        .expect("retried");
    assert_eq!(reply.body, b"{}");
    assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 3);
}
