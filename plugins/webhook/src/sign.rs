//! Standard Webhooks signatures.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use nightjar_sdk::DeliveryError;
use sha2::Sha256;

/// The `webhook-signature` value: `v1,` and the base64 HMAC-SHA256, keyed
/// with `key`, of `{id}.{timestamp}.{body}`.
pub fn signature(
    key: &[u8],
    id: &str,
    timestamp: &str,
    body: &[u8],
) -> Result<String, DeliveryError> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key)
        .map_err(|e| DeliveryError::permanent(format!("signing key: {e}")))?;
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    Ok(format!(
        "v1,{}",
        STANDARD.encode(mac.finalize().into_bytes())
    ))
}
