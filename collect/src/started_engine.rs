//! An engine hspi starts for itself from the user's command line (`--engine 'PLATFORM=COMMAND'`):
//! vLLM on a cluster node's GPU, a llama-server, any server of an OpenAI-compatible API. The
//! command serves the model on the port `{port}` stands for; hspi picks a free loopback port,
//! starts the command in a process group of its own, waits for `/health` to answer, and stops
//! the whole group when dropped (an engine's workers included), whatever happened meanwhile.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hspi_datasets::Platform;

use crate::error::{CollectError, Result};

/// What stands for the engine's port in its command.
pub const PORT: &str = "{port}";

/// An engine to start: the platform it runs (taken on the user's word, named in what it
/// computes) and the shell command serving the model on [`PORT`]. Written `PLATFORM=COMMAND`.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineCommand {
    pub platform: Platform,
    pub command: String,
}

impl std::str::FromStr for EngineCommand {
    type Err = CollectError;

    fn from_str(s: &str) -> Result<EngineCommand> {
        let bad = |reason: String| CollectError::BadEngine {
            spec: s.to_string(),
            reason,
        };
        let (platform, command) = s
            .split_once('=')
            .ok_or_else(|| bad("it is not PLATFORM=COMMAND".into()))?;
        let platform = platform
            .trim()
            .parse()
            .map_err(|e: hspi_datasets::PlatformParseError| bad(e.to_string()))?;
        if !command.contains(PORT) {
            return Err(bad(format!(
                "the command names no {PORT}: the engine listens on the port hspi picks"
            )));
        }
        Ok(EngineCommand {
            platform,
            command: command.trim().to_string(),
        })
    }
}

impl std::fmt::Display for EngineCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={}", self.platform, self.command)
    }
}

/// A started engine; its process group is stopped when this is dropped.
pub struct StartedEngine {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    pub platform: Platform,
}

impl StartedEngine {
    /// Start `engine` and wait up to `patience` for its `/health` to answer.
    pub fn start(engine: &EngineCommand, patience: Duration) -> Result<StartedEngine> {
        let failed = |reason: String| CollectError::EngineStart {
            command: engine.command.clone(),
            reason,
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| failed(format!("no free loopback port: {e}")))?;
        let command = engine.command.replace(PORT, &port.to_string());
        let child = Command::new("sh")
            .args(["-c", &command])
            .process_group(0)
            .stdin(Stdio::null())
            .spawn()
            .map_err(|e| failed(e.to_string()))?;
        let mut started = StartedEngine {
            child,
            url: format!("http://127.0.0.1:{port}"),
            platform: engine.platform.clone(),
        };
        let client = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| failed(e.to_string()))?;
        let start = Instant::now();
        loop {
            let up = client
                .get(format!("{}/health", started.url))
                .send()
                .is_ok_and(|r| r.status().is_success());
            if up {
                return Ok(started);
            }
            if let Ok(Some(status)) = started.child.try_wait() {
                return Err(failed(format!("it exited ({status}) before answering")));
            }
            if start.elapsed() > patience {
                return Err(failed(format!(
                    "its /health did not answer within {} s",
                    patience.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

impl Drop for StartedEngine {
    fn drop(&mut self) {
        let group = self.child.id() as i32;
        // SAFETY: signals the process group the child leads (made with process_group(0)).
        unsafe { libc::kill(-group, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // SAFETY: as above; whatever of the group is left is killed.
        unsafe { libc::kill(-group, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_engine_is_a_platform_and_a_command_on_its_port() {
        let spec = "cpu-avx2/vllm-0.32.0/f32/bs1=vllm serve m --port {port} --dtype float32";
        let e: EngineCommand = spec.parse().unwrap();
        assert_eq!(e.platform.to_string(), "cpu-avx2/vllm-0.32.0/f32/bs1");
        assert_eq!(e.command, "vllm serve m --port {port} --dtype float32");
        assert_eq!(e.to_string(), spec);
        let no_port = "cpu-avx2/vllm-0.32.0/f32/bs1=vllm serve m"
            .parse::<EngineCommand>()
            .unwrap_err();
        assert!(no_port.to_string().contains("{port}"), "{no_port}");
        let no_platform = "vllm serve m --port {port}"
            .parse::<EngineCommand>()
            .unwrap_err();
        assert!(
            no_platform.to_string().contains("PLATFORM=COMMAND"),
            "{no_platform}"
        );
    }

    #[test]
    fn an_engine_that_exits_is_reported_with_its_status_and_one_that_never_answers_is_stopped() {
        let exits: EngineCommand = "cpu-x/vllm-1/f32/bs1=exit 3 # {port}".parse().unwrap();
        let e = StartedEngine::start(&exits, Duration::from_secs(10))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("exited") && e.contains("exit 3"), "{e}");
        // A command that listens nowhere: refused after the wait, its process group stopped.
        let silent: EngineCommand = "cpu-x/vllm-1/f32/bs1=sleep 300 # {port}".parse().unwrap();
        let e = StartedEngine::start(&silent, Duration::from_secs(1))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("did not answer within 1 s"), "{e}");
    }
}
