use super::head::{self, Framing, Limits, Reject};
use super::stream::{Conn, Step};

const LIM: Limits = Limits { max_head: 16 * 1024, max_fields: 48, max_body: 16 * 1024 * 1024 };

fn check(h: &str) -> Result<(Framing, Option<String>), Reject> {
    let mut b = h.as_bytes().to_vec();
    head::check(&mut b, &LIM).map(|a| (a.framing, a.replacement.map(|r| String::from_utf8(r).unwrap())))
}

fn refused(h: &str) -> (u16, &'static str) {
    let r = check(h).expect_err(h);
    (r.status, r.reason)
}

#[test]
fn plain_heads_pass_untouched() {
    assert_eq!(check("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), Ok((Framing::Length(0), None)));
    assert_eq!(check("POST /a?b HTTP/1.1\r\nHost: x\r\nContent-Length: 005\r\n\r\n"), Ok((Framing::Length(5), None)));
    assert_eq!(check("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked \r\n\r\n"), Ok((Framing::Chunked, None)));
    assert_eq!(check("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\ncontent-length: 5\r\n\r\n"), Ok((Framing::Length(5), None)));
}

#[test]
fn legal_names_uws_cannot_parse_are_renamed_in_place() {
    let mut b = b"GET / HTTP/1.1\r\nHost: x\r\nx_api.key: 1\r\n\r\n".to_vec();
    assert!(head::check(&mut b, &LIM).is_ok());
    assert_eq!(&b[..], &b"GET / HTTP/1.1\r\nHost: x\r\n---------: 1\r\n\r\n"[..]);
}

#[test]
fn desync_risks_are_refused() {
    assert_eq!(refused("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"), (400, "framing_conflict"));
    assert_eq!(refused("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"), (400, "content_length_conflict"));
    assert_eq!(refused("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\n"), (400, "content_length"));
    assert_eq!(refused("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\n"), (400, "content_length"));
    assert_eq!(refused("GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n  folded\r\n\r\n"), (400, "obs_fold"));
    assert_eq!(refused("GET / HTTP/1.1\r\nHost: x\r\nX A: 1\r\n\r\n"), (400, "header_name"));
    assert_eq!(refused("GET / HTTP/1.1\r\nHost: x\r\nX-A : 1\r\n\r\n"), (400, "header_name"));
    assert_eq!(refused("GET / HTTP/1.1\r\nHost: x\r\n: 1\r\n\r\n"), (400, "header_name"));
    assert_eq!(refused("GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n"), (400, "header_value"));
    assert_eq!(refused("GET / HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n"), (400, "header_value"));
    assert_eq!(refused("GET / HTTP/1.1\nHost: x\n\n"), (400, "bare_lf"));
    assert_eq!(refused("GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n"), (400, "host"));
    assert_eq!(refused("GET / HTTP/1.1\r\nX-A: 1\r\n\r\n"), (400, "host"));
    assert_eq!(refused("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"), (400, "transfer_encoding"));
    assert_eq!(refused("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n"), (400, "transfer_encoding"));
    assert_eq!(refused("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"), (501, "transfer_coding"));
    assert_eq!(refused("POST / HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"), (400, "transfer_encoding_http10"));
}

#[test]
fn request_lines() {
    assert_eq!(refused("QUERY / HTTP/1.1\r\nHost: x\r\n\r\n"), (501, "method"));
    assert_eq!(refused("get / HTTP/1.1\r\nHost: x\r\n\r\n"), (501, "method"));
    assert_eq!(refused("GET  / HTTP/1.1\r\nHost: x\r\n\r\n"), (400, "request_line"));
    assert_eq!(refused("GET /a\x01 HTTP/1.1\r\nHost: x\r\n\r\n"), (400, "request_line"));
    assert_eq!(refused("GET / HTTP/2.0\r\nHost: x\r\n\r\n"), (505, "version"));
    assert_eq!(refused("GET / http/1.1\r\nHost: x\r\n\r\n"), (400, "request_line"));
    assert_eq!(refused("GET a HTTP/1.1\r\nHost: x\r\n\r\n"), (400, "request_line"));
    assert_eq!(refused("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"), (501, "target_form"));
    assert_eq!(refused("CONNECT x:443 HTTP/1.1\r\nHost: x\r\n\r\n"), (501, "target_form"));
    let mut b = b"GET / HTTP/1.2\r\nHost: x\r\n\r\n".to_vec();
    assert!(head::check(&mut b, &LIM).is_ok());
    assert_eq!(&b[..16], b"GET / HTTP/1.1\r\n");
    assert_eq!(check("GET HTTP://h:1/p?q HTTP/1.1\r\nHost: x\r\n\r\n").unwrap().1.unwrap(), "GET /p?q HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(check("GET http://h?q HTTP/1.1\r\nHost: x\r\n\r\n").unwrap().1.unwrap(), "GET /?q HTTP/1.1\r\nHost: x\r\n\r\n");
}

#[test]
fn http10_gets_a_host_and_closes() {
    assert_eq!(check("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").unwrap().1.unwrap(), "GET / HTTP/1.1\r\n----------: keep-alive\r\nconnection: close\r\nhost: \r\n\r\n");
}

#[test]
fn limits() {
    let mut many = String::from("GET / HTTP/1.1\r\nHost: x\r\n");
    for i in 0..48 {
        many.push_str(&format!("x-{i}: {i}\r\n"));
    }
    many.push_str("\r\n");
    assert_eq!(refused(&many), (431, "too_many_fields"));
    assert_eq!(refused("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 52428800\r\n\r\n"), (413, "content_length"));
    assert_eq!(refused("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999999\r\n\r\n"), (413, "content_length"));
}

/// Per read: the bytes handed on, a refusal, and whether the connection was cut.
type Outcome = (Vec<u8>, Option<(u16, &'static str)>, bool);

fn feed_all(conn: &mut Conn, parts: &[&[u8]]) -> Vec<Outcome> {
    let mut out = Vec::new();
    for p in parts {
        let held = std::mem::take(&mut conn.partial);
        let mut buf = held.clone();
        buf.extend_from_slice(p);
        let mut steps = Vec::new();
        conn.feed(&mut buf, held.len(), &LIM, 1000, &mut steps);
        let mut handed = Vec::new();
        let mut refusal = None;
        let mut cut = false;
        for s in steps {
            match s {
                Step::Forward(a, b) => handed.extend_from_slice(&buf[a..b]),
                Step::Insert(v) => handed.extend_from_slice(&v),
                Step::Refuse(r) => refusal = Some((r.status, r.reason)),
                Step::Close => cut = true,
            }
        }
        out.push((handed, refusal, cut));
    }
    out
}

#[test]
fn pipelined_requests_and_split_heads() {
    let mut c = Conn::default();
    let a = b"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhelloGET /b HTTP/1.1\r\nHo";
    let r = feed_all(&mut c, &[a, b"st: x\r\n", b"\r\n"]);
    assert_eq!(r[0].0, &a[..a.len() - b"GET /b HTTP/1.1\r\nHo".len()]);
    assert!(r[1].0.is_empty());
    assert!(c.partial.is_empty());
    assert_eq!(r[2].0, b"GET /b HTTP/1.1\r\nHost: x\r\n\r\n");
}

#[test]
fn a_bad_head_after_a_good_one_is_refused_in_order() {
    let mut c = Conn::default();
    let r = feed_all(&mut c, &[b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\nA: 1\r\n b\r\n\r\nGET /c HTTP/1.1\r\nHost: x\r\n\r\n"]);
    assert_eq!(r[0].0, b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(r[0].1, Some((400, "obs_fold")));
    assert!(c.closing());
}

#[test]
fn chunked_bodies_lose_extensions_and_trailers() {
    let mut c = Conn::default();
    let body: &[u8] = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n0\r\nx-t: 1\r\n\r\nGET /two HTTP/1.1\r\nHost: x\r\n\r\n";
    let want: &[u8] = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET /two HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_eq!(feed_all(&mut c, &[body])[0].0, want);
    // The same bytes one at a time.
    let mut c = Conn::default();
    let parts: Vec<&[u8]> = body.chunks(1).collect();
    let handed: Vec<u8> = feed_all(&mut c, &parts).into_iter().flat_map(|r| r.0).collect();
    assert_eq!(handed, want);
}

#[test]
fn broken_chunked_bodies_are_cut() {
    for bad in [&b"5\nhello\n0\n\n"[..], b"zz\r\n", b"5\r\nhelloX\r\n", b"ffffffffff\r\n"] {
        let mut c = Conn::default();
        let mut all = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        all.extend_from_slice(bad);
        let r = feed_all(&mut c, &[&all]);
        assert!(r[0].2, "{:?}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn oversized_and_held_heads() {
    let mut c = Conn::default();
    let big = format!("GET / HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n", "a".repeat(17 * 1024));
    let r = feed_all(&mut c, &[big.as_bytes()]);
    assert_eq!(r[0].1, Some((431, "head_too_large")));
    let mut c = Conn::default();
    let r = feed_all(&mut c, &[b"\r\n\r\nGET / HT"]);
    assert!(r[0].0.is_empty());
    assert!(c.waiting_head());
    assert_eq!(c.since_ms, 1000);
}

#[test]
fn a_refused_connection_discards_what_follows() {
    let mut c = Conn::default();
    let r = feed_all(&mut c, &[b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\nabc", b"more body"]);
    assert_eq!(r[0].1, Some((413, "content_length")));
    assert!(r[0].0.is_empty() && r[1].0.is_empty());
    assert_eq!(c.discarded, 12);
    assert!(c.closing());
}

#[test]
#[ignore]
fn feed_cost() {
    let body = r#"{"tenantId":"t","database":"d","collection":"c","recordId":"r1","recordPayload":{"amount":1}}"#;
    let text = format!("POST /api/v1/records HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-API-Key: dris_abcdefabcdef_abcdefabcdefabcdefabcdefabcdef\r\nContent-Type: application/json\r\nUser-Agent: bench\r\nAccept: */*\r\nContent-Length: {}\r\n\r\n{body}", body.len());
    let req = text.as_bytes();
    let mut c = Conn::default();
    let mut steps = Vec::new();
    let mut buf = req.to_vec();
    let n = 2_000_000;
    let t = std::time::Instant::now();
    for _ in 0..n {
        steps.clear();
        c.feed(&mut buf, 0, &LIM, 1, &mut steps);
        assert_eq!(steps, [Step::Forward(0, req.len())]);
    }
    eprintln!("feed: {:.0} ns per request", t.elapsed().as_nanos() as f64 / n as f64);
}
