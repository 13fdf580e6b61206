//! `[mail]`: the host's SMTP settings, which every notifier's mail goes
//! through. Plugins never see them: they name recipients and content, the
//! host sends as `from`, with its credentials (references to the
//! environment or a file only its owner may read, never the value).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use super::humantime_serde_compat;

/// How the connection to the SMTP server is protected.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MailTls {
    /// Plain connection upgraded with STARTTLS, which the server must
    /// offer (port 587).
    #[default]
    Starttls,
    /// TLS from the first byte (port 465).
    Tls,
    /// No TLS: only to a server on loopback (a local relay).
    None,
}

/// `[mail]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MailConfig {
    /// The SMTP server's host name or address.
    pub server: String,
    /// Its port (default: 587 for starttls, 465 for tls, 25 for none).
    #[serde(default)]
    pub port: Option<u16>,
    /// `starttls`, `tls` or `none`.
    #[serde(default)]
    pub tls: MailTls,
    /// The sender, `Name <address>` or an address.
    pub from: String,
    /// The login name, if the server asks for one.
    #[serde(default)]
    pub user: Option<String>,
    /// The password: `env:NAME` or `file:/path` (mode 0600), never the value.
    #[serde(default)]
    pub password: Option<String>,
    /// PEM certificates trusted besides the system's (a lab's own CA).
    #[serde(default)]
    pub ca: Option<PathBuf>,
    /// Deadline of the whole conversation with the server (and of each
    /// step); a delivery's `notify.timeout`, when less is left of it, ends
    /// it sooner.
    #[serde(with = "humantime_serde_compat", default = "default_timeout")]
    pub timeout: Duration,
}

fn default_timeout() -> Duration {
    Duration::from_secs(20)
}

impl MailConfig {
    /// The port, said or the TLS mode's usual one.
    pub fn port(&self) -> u16 {
        self.port.unwrap_or(match self.tls {
            MailTls::Starttls => 587,
            MailTls::Tls => 465,
            MailTls::None => 25,
        })
    }

    /// Checks the values, naming the key at fault.
    pub fn validate(&self) -> Result<()> {
        let server = self.server.trim();
        if server.is_empty()
            || server.contains(['/', ' ', '@', '[', ']'])
            || server.chars().any(char::is_control)
        {
            bail!(
                "key `mail.server`: `{}` is not a host name or address; write e.g. `smtp.lab.example.edu`",
                self.server.escape_debug()
            );
        }
        if server.contains(':') && server.parse::<std::net::Ipv6Addr>().is_err() {
            bail!(
                "key `mail.server`: `{server}` has a port; write the host alone and the port in `mail.port` (an IPv6 address goes without brackets: `::1`)"
            );
        }
        if self.port == Some(0) {
            bail!("key `mail.port`: 1-65535");
        }
        if self.tls == MailTls::None && !crate::plugins::notifier::allow::loopback_name(server) {
            bail!(
                "key `mail.tls`: `none` sends the password and every message in the clear, so it is only for a relay on loopback (127.0.0.1, ::1, localhost); `{server}` is not: use `starttls` or `tls`"
            );
        }
        if let Err(e) = self.from.parse::<lettre::message::Mailbox>() {
            bail!(
                "key `mail.from`: `{}` is not an address ({e}); write `nightjar <nightjar@lab.example.edu>`",
                self.from
            );
        }
        if let Some(p) = &self.password {
            if !(p.starts_with("env:") || p.starts_with("file:")) {
                bail!(
                    "key `mail.password`: write `env:NAME` or `file:/path` (a file only its owner may read), never the password itself"
                );
            }
            if self.user.is_none() {
                bail!("key `mail.password` needs `mail.user`, the login it belongs to");
            }
        }
        if self.timeout.is_zero() {
            bail!("key `mail.timeout`: more than 0 (e.g. \"20s\")");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<MailConfig> {
        let c: MailConfig = toml::from_str(text)?;
        c.validate()?;
        Ok(c)
    }

    #[test]
    fn the_port_follows_the_tls_mode_unless_said() {
        let c = parse("server = \"smtp.x.org\"\nfrom = \"a@x.org\"").unwrap();
        assert_eq!((c.tls, c.port()), (MailTls::Starttls, 587));
        let c = parse("server = \"smtp.x.org\"\nfrom = \"a@x.org\"\ntls = \"tls\"").unwrap();
        assert_eq!(c.port(), 465);
        let c = parse("server = \"127.0.0.1\"\nport = 2525\nfrom = \"a@x.org\"\ntls = \"none\"")
            .unwrap();
        assert_eq!(c.port(), 2525);
        let c = parse("server = \"::1\"\nfrom = \"a@x.org\"\ntls = \"none\"").unwrap();
        assert_eq!(c.port(), 25, "an IPv6 loopback relay");
    }

    #[test]
    fn plaintext_is_refused_to_a_server_off_loopback() {
        let e = parse("server = \"smtp.x.org\"\nfrom = \"a@x.org\"\ntls = \"none\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("mail.tls") && e.contains("loopback"), "{e}");
    }

    #[test]
    fn a_password_written_in_the_config_is_refused_naming_the_key() {
        let e = parse(
            "server = \"smtp.x.org\"\nfrom = \"a@x.org\"\nuser = \"u\"\npassword = \"hunter22\"",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("mail.password") && !e.contains("hunter22"),
            "{e}"
        );
    }

    #[test]
    fn a_bad_sender_or_server_is_named() {
        let e = parse("server = \"smtp.x.org\"\nfrom = \"not an address\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("mail.from"), "{e}");
        let e = parse("server = \"smtp://x\"\nfrom = \"a@x.org\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("mail.server"), "{e}");
        for server in ["smtp.x.org:587", "[::1]", "smtp.x.org\\n25"] {
            let e = parse(&format!("server = \"{server}\"\nfrom = \"a@x.org\""))
                .unwrap_err()
                .to_string();
            assert!(e.contains("mail.server"), "{server}: {e}");
        }
        let e = parse("server = \"x\"\nfrom = \"a@x.org\"\nsmtp = 1")
            .unwrap_err()
            .to_string();
        assert!(e.contains("smtp"), "{e}");
    }
}
