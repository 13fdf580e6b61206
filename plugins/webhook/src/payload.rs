//! The request body: an event in schema `nightjar.event.v1`.

use std::collections::BTreeMap;

use nightjar_sdk::Event;
use serde::Serialize;

/// The schema's name, the body's `schema` value
/// (`plugins/webhook/schema/nightjar.event.v1.json`).
pub const SCHEMA: &str = "nightjar.event.v1";

/// `nightjar.event.v1`, in the documented key order.
#[derive(Serialize)]
struct Payload<'a> {
    schema: &'static str,
    id: i64,
    key: &'a str,
    kind: &'a str,
    at: i64,
    severity: &'static str,
    task: Option<i64>,
    run: Option<i64>,
    project: Option<&'a str>,
    title: &'a str,
    text: &'a str,
    fields: BTreeMap<&'a str, &'a str>,
}

/// The JSON body for `event`.
pub fn body(event: &Event) -> Vec<u8> {
    let mut fields = BTreeMap::new();
    for f in &event.fields {
        fields.entry(f.name.as_str()).or_insert(f.value.as_str());
    }
    let payload = Payload {
        schema: SCHEMA,
        id: event.id,
        key: &event.key,
        kind: &event.kind,
        at: event.at,
        severity: event.severity.as_str(),
        task: event.task,
        run: event.run,
        project: event.project.as_deref(),
        title: &event.title,
        text: &event.text,
        fields,
    };
    // Strings, integers and a string map: serialising cannot fail.
    serde_json::to_vec(&payload).unwrap_or_default()
}
