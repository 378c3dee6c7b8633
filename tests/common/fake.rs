//! A scripted HTTP endpoint on 127.0.0.1 for fault tests: each request gets the next behaviour of
//! the script (the last one repeats). Bounded: it serves at most `limit` requests, then stops.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Clone, Debug)]
pub enum Behaviour {
    Reply {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Wait, then answer 200 with `body` (the client has usually given up by then).
    Slow(Duration, String),
    /// Close the connection without answering.
    Reset,
    /// Answer 401 with the request's Authorization header in the body (a careless server).
    EchoAuth,
}

pub fn ok(body: String) -> Behaviour {
    Behaviour::Reply {
        status: 200,
        headers: vec![],
        body,
    }
}

pub fn status(status: u16, headers: &[(&str, &str)], body: &str) -> Behaviour {
    Behaviour::Reply {
        status,
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        body: body.into(),
    }
}

/// A valid chat answer with logprobs whose values depend on the prompt.
pub fn chat_answer(model: &str, seed: u32) -> String {
    let lp = -((seed % 97) as f32) / 7.0 - 0.25;
    format!(
        r#"{{"id":"c{seed}","model":"{model}","choices":[{{"index":0,"message":{{"role":"assistant","content":"ab"}},"logprobs":{{"content":[{{"id":1,"token":"a","bytes":[97],"logprob":{},"top_logprobs":[{{"id":1,"token":"a","logprob":{}}}]}}]}},"finish_reason":"length"}}],"usage":{{"prompt_tokens":5,"completion_tokens":1}}}}"#,
        lp as f64, lp as f64
    )
}

pub struct FakeEndpoint {
    pub url: String,
    pub requests: Arc<Mutex<Vec<String>>>,
}

fn read_request(stream: &mut TcpStream) -> Option<String> {
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            let len = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                })
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                let n = stream.read(&mut chunk).ok()?;
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            return Some(String::from_utf8_lossy(&buf).to_string());
        }
    }
}

fn respond(stream: &mut TcpStream, status: u16, headers: &[(String, String)], body: &str) {
    let mut text = format!("HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
    for (k, v) in headers {
        text.push_str(&format!("{k}: {v}\r\n"));
    }
    text.push_str("\r\n");
    text.push_str(body);
    let _ = stream.write_all(text.as_bytes());
}

impl FakeEndpoint {
    pub fn start(script: Vec<Behaviour>, limit: usize) -> FakeEndpoint {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!(
            "http://{}/v1/chat/completions",
            listener.local_addr().unwrap()
        );
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        std::thread::spawn(move || {
            for (n, stream) in listener.incoming().take(limit).enumerate() {
                let Ok(mut stream) = stream else { continue };
                let Some(req) = read_request(&mut stream) else {
                    continue;
                };
                seen.lock().unwrap().push(req.clone());
                match script.get(n).or(script.last()).cloned().unwrap() {
                    Behaviour::Reply {
                        status,
                        headers,
                        body,
                    } => respond(&mut stream, status, &headers, &body),
                    Behaviour::Slow(d, body) => {
                        std::thread::sleep(d);
                        respond(&mut stream, 200, &[], &body)
                    }
                    Behaviour::Reset => drop(stream),
                    Behaviour::EchoAuth => {
                        let auth = req
                            .lines()
                            .find(|l| l.to_ascii_lowercase().starts_with("authorization:"))
                            .unwrap_or("")
                            .to_string();
                        respond(
                            &mut stream,
                            401,
                            &[],
                            &format!("{{\"error\":{{\"message\":\"bad key: {auth}\"}}}}"),
                        )
                    }
                }
            }
        });
        FakeEndpoint { url, requests }
    }

    pub fn count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}
