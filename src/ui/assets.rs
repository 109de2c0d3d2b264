//! The page, embedded in the binary: one HTML shell, one script, one style sheet; no build
//! step, no framework.

/// The page's script.
pub const SCRIPT: &str = include_str!("assets/app.js");
/// The page's style sheet.
pub const STYLE: &str = include_str!("assets/app.css");
const SHELL: &str = include_str!("assets/index.html");

/// The HTML shell with the repository's name, the action token and the person's session
/// filled in (each HTML-escaped).
pub fn page(title: &str, token: &str, person: &str) -> String {
    SHELL
        .replace("{{title}}", &escape(title))
        .replace("{{token}}", &escape(token))
        .replace("{{person}}", &escape(person))
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shell_is_filled_and_escaped() {
        let html = page("<repo>", "t0k", "ui:me");
        assert!(html.contains("&lt;repo&gt;"));
        assert!(html.contains("content=\"t0k\""));
        assert!(!html.contains("{{"));
    }
}
