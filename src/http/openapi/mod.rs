//! GET /api/openapi.json: the OpenAPI 3 document, generated from the handlers'
//! annotations and the response types, so it cannot drift from the code.

use actix_web::HttpResponse;
use utoipa::OpenApi;
use utoipa::openapi::path::Operation;
use utoipa::openapi::schema::Ref;
use utoipa::openapi::{ContentBuilder, ResponseBuilder};

use super::handlers::{
    addresses, admin, auth, health, history, liquidations, pools, positions, risk, transactions,
    webhooks,
};
use crate::wire::error::ErrorBody;
use crate::wire::formats::{CursorText, TimeParam};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Lendex",
        description = "Live index of a Solana lending program: pools, positions, health factors, admin allowlist."
    ),
    paths(
        auth::issue_nonce,
        admin::me,
        admin::list_admins,
        admin::add_admin,
        admin::revoke_admin,
        admin::audit,
        pools::list_pools,
        pools::init_pool,
        pools::pool_on_chain,
        pools::pool_status,
        pools::unregistered_pools,
        pools::sync_pool,
        positions::list_positions,
        positions::sync_position,
        positions::unhealthy,
        positions::unhealthy_stream,
        positions::detail,
        addresses::lookup,
        liquidations::liquidations,
        liquidations::at_risk,
        risk::shock,
        risk::curve,
        transactions::list_transactions,
        transactions::record_transaction,
        health::health,
        history::owner_history,
        history::events,
        history::prices,
        history::market,
        webhooks::create,
        webhooks::list,
        webhooks::deliveries,
        webhooks::delete,
        webhooks::redeliver,
    ),
    // Formats used by parameters alone are not collected from the paths.
    components(schemas(ErrorBody, TimeParam, CursorText))
)]
pub struct ApiDoc;

/// The document with `info.version` set to the crate version and the answers
/// every operation shares.
pub fn document() -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    doc.info.version = env!("CARGO_PKG_VERSION").to_string();
    for item in doc.paths.paths.values_mut() {
        for op in [&mut item.get, &mut item.post, &mut item.delete]
            .into_iter()
            .flatten()
        {
            add_shared_errors(op);
        }
    }
    doc
}

/// Errors any operation of its kind can answer, written once here rather than
/// on every path (an operation's own description of a status wins).
fn add_shared_errors(op: &mut Operation) {
    let has_body = op.request_body.is_some();
    let has_params = op.parameters.as_ref().is_some_and(|p| !p.is_empty());
    if has_body || has_params {
        error(op, "400", "invalid: a malformed parameter or field");
    }
    if has_body {
        error(
            op,
            "408",
            "request timeout: the body did not arrive in time",
        );
        error(op, "413", "payload too large: a body over 64 KiB");
    }
    error(op, "500", "internal error");
    error(op, "503", "database unavailable");
}

fn error(op: &mut Operation, status: &str, description: &str) {
    op.responses
        .responses
        .entry(status.to_string())
        .or_insert_with(|| {
            ResponseBuilder::new()
                .description(description)
                .content(
                    "application/json",
                    ContentBuilder::new()
                        .schema(Some(Ref::from_schema_name("ErrorBody")))
                        .build(),
                )
                .build()
                .into()
        });
}

pub async fn openapi_json() -> HttpResponse {
    HttpResponse::Ok().json(document())
}

/// The document as `lendex openapi` prints it and clients/openapi.json holds
/// it: pretty JSON, keys in the order utoipa writes them, so a diff of two
/// versions reads.
pub fn document_json() -> String {
    serde_json::to_string_pretty(&document()).expect("the document is JSON")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The clients are generated from clients/openapi.json: it must be the
    /// document the service serves (regenerate with `lendex openapi`).
    #[test]
    fn the_clients_document_is_the_served_one() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/clients/openapi.json");
        let committed = std::fs::read_to_string(path).expect("clients/openapi.json");
        assert!(
            committed == format!("{}\n", document_json()),
            "clients/openapi.json is not the served document: run \
             `cargo run -- openapi > clients/openapi.json` and \
             `npm run generate` in clients/typescript"
        );
    }

    /// What openapi-spec-validator and the schemathesis run (scripts/api-fuzz)
    /// rely on, checked without Python: every response is described, every
    /// operation documents the shared errors, pubkeys carry their pattern.
    #[test]
    fn every_operation_is_fully_described() {
        let doc = serde_json::to_value(document()).unwrap();
        let mut operations = 0;
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                operations += 1;
                let responses = op["responses"].as_object().unwrap();
                for (status, response) in responses {
                    assert!(
                        response["description"]
                            .as_str()
                            .is_some_and(|d| !d.is_empty()),
                        "{method} {path} {status} has no description"
                    );
                }
                for status in ["500", "503"] {
                    assert!(
                        responses.contains_key(status),
                        "{method} {path} lacks {status}"
                    );
                }
            }
        }
        assert_eq!(operations, 34);
        // Every reference resolves (openapi-spec-validator refuses the document otherwise).
        fn refs(v: &serde_json::Value, out: &mut Vec<String>) {
            match v {
                serde_json::Value::Object(map) => {
                    for (k, v) in map {
                        match (k.as_str(), v.as_str()) {
                            ("$ref", Some(r)) => out.push(r.to_string()),
                            _ => refs(v, out),
                        }
                    }
                }
                serde_json::Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
                _ => {}
            }
        }
        let mut all = Vec::new();
        refs(&doc, &mut all);
        for r in all {
            let name = r.trim_start_matches("#/components/schemas/");
            assert!(
                doc["components"]["schemas"].get(name).is_some(),
                "{r} does not exist"
            );
        }
        let pubkey = &doc["components"]["schemas"]["Pubkey"];
        assert_eq!(pubkey["pattern"], crate::wire::formats::PUBKEY_PATTERN);
        let role = &doc["components"]["schemas"]["Role"]["enum"];
        assert_eq!(role, &serde_json::json!(["super_admin", "pool_admin"]));
        // Every closed set of strings is an enum in the document.
        let schemas = &doc["components"]["schemas"];
        for (schema, field, values) in [
            (
                "HealthResponse",
                "status",
                vec!["ok", "degraded", "draining"],
            ),
            ("SyncCheck", "role", vec!["leader", "follower"]),
            (
                "AddressResponse",
                "kind",
                vec!["pool", "position", "wallet", "unknown"],
            ),
            (
                "LaneCheck",
                "lane",
                vec!["index", "admin", "tx_log", "auth"],
            ),
        ] {
            let property = &schemas[schema]["properties"][field];
            let named = property["$ref"]
                .as_str()
                .and_then(|r| r.rsplit('/').next())
                .map(|name| &schemas[name]);
            let listed = named.unwrap_or(property)["enum"].clone();
            assert_eq!(listed, serde_json::json!(values), "{schema}.{field}");
        }
    }
}
