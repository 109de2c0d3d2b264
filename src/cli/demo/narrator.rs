//! The demo's voice: prints each step as it goes (human mode), records it (JSON mode), and
//! paces the steps for a person watching `wit ui` (`wit demo --ui`).

use std::time::Duration;

use serde_json::{json, Value};

use crate::cli::output;

/// Prints and records the story.
pub struct Narrator {
    json_mode: bool,
    pace: Duration,
    number: usize,
    /// Every step so far, as JSON.
    pub steps: Vec<Value>,
}

impl Narrator {
    /// A narrator pausing `pace` before each step after the first.
    pub fn new(json_mode: bool, pace: Duration) -> Self {
        Self {
            json_mode,
            pace,
            number: 0,
            steps: Vec::new(),
        }
    }

    /// Prints `text` (human mode only).
    pub fn say(&self, text: &str) {
        if !self.json_mode {
            output::out_text(text);
        }
    }

    /// Starts the next numbered step.
    pub fn title(&mut self, title: &str) {
        if self.number > 0 && !self.pace.is_zero() {
            std::thread::sleep(self.pace);
        }
        self.number += 1;
        self.say(&format!("\n{}. {title}", self.number));
        self.steps
            .push(json!({"step": self.number, "title": title}));
    }

    /// A command and what it printed, shown indented and recorded under the current step.
    pub fn shown(&mut self, command: &str, text: &str, record: Value) {
        let text = text.trim_end();
        let mut lines = vec![format!("$ {command}")];
        lines.extend(text.lines().map(str::to_owned));
        self.say(
            &lines
                .iter()
                .map(|line| format!("   | {line}"))
                .collect::<Vec<_>>()
                .join("\n"),
        );
        if let Some(Value::Object(step)) = self.steps.last_mut() {
            let entry = json!({"command": command, "output": text, "facts": record});
            match step.get_mut("commands") {
                Some(Value::Array(commands)) => commands.push(entry),
                _ => {
                    step.insert("commands".into(), json!([entry]));
                }
            }
        }
    }

    /// A line of explanation under the current step.
    pub fn explain(&self, text: &str) {
        self.say(&format!("   {text}"));
    }
}
