//! `host/openapi.yaml` describes exactly the router's routes: one POST per
//! verb (from `VERBS`) and the extra GET routes, both ways; every verb
//! names its request and reply schemas, and they exist. (The e2e test
//! `http::the_http_api_serves_the_protocol_to_token_holders_only` asks the
//! running server for the file.)

use std::collections::BTreeSet;

use serde_norway::Value;

use super::api::OPENAPI;
use super::api_routes;
use crate::api::VERBS;

fn doc() -> Value {
    serde_norway::from_str(OPENAPI).expect("openapi.yaml parses")
}

#[test]
fn the_files_paths_are_the_routers_both_ways() {
    let doc = doc();
    assert_eq!(doc["openapi"].as_str(), Some("3.1.0"));
    let paths = doc["paths"].as_mapping().expect("paths");
    let mut in_file = BTreeSet::new();
    for (path, ops) in paths {
        let path = path.as_str().expect("path").to_string();
        for (method, _) in ops.as_mapping().expect("operations") {
            let m = method.as_str().expect("method").to_ascii_uppercase();
            in_file.insert((m, path.clone()));
        }
    }
    let routed: BTreeSet<(String, String)> = api_routes()
        .into_iter()
        .map(|(m, p)| (m.to_string(), p))
        .collect();
    let missing: Vec<_> = routed.difference(&in_file).collect();
    let extra: Vec<_> = in_file.difference(&routed).collect();
    assert!(
        missing.is_empty(),
        "routes the file does not describe: {missing:?}"
    );
    assert!(
        extra.is_empty(),
        "paths in the file that no route serves: {extra:?}"
    );
}

#[test]
fn every_verb_names_its_request_and_reply_schemas() {
    let doc = doc();
    let schemas = doc["components"]["schemas"].as_mapping().expect("schemas");
    let named = VERBS.iter().map(|v| (v, v.name, false));
    let earlier = VERBS.iter().filter_map(|v| v.was.map(|w| (v, w, true)));
    for (v, path, was) in named.chain(earlier) {
        let op = &doc["paths"][format!("/api/v2/{path}").as_str()]["post"];
        assert_eq!(
            op["deprecated"].as_bool().unwrap_or(false),
            was,
            "{path}: a renamed verb's earlier name, and only that, is deprecated"
        );
        let req = op["requestBody"]["content"]["application/json"]["schema"]["$ref"].as_str();
        let rep = op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].as_str();
        assert_eq!(
            req,
            Some(format!("#/components/schemas/{}", v.request).as_str()),
            "{path}"
        );
        assert_eq!(
            rep,
            Some(format!("#/components/schemas/{}Reply", v.request).as_str()),
            "{path}"
        );
        for name in [v.request.to_string(), format!("{}Reply", v.request)] {
            assert!(
                schemas.contains_key(name.as_str()),
                "schema {name} is missing"
            );
        }
    }
    for scheme in ["bearer", "cookie", "proxy"] {
        assert!(
            doc["components"]["securitySchemes"][scheme].is_mapping(),
            "{scheme}"
        );
    }
}
