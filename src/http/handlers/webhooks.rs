//! Webhooks managed through the signed handshake (docs/design.md §18): any
//! active admin creates, reads, deletes and redelivers; a pool_admin sees
//! only the webhooks it created (another's is `not found`). A body's form is
//! checked before any nonce is spent; the target's host is resolved only
//! once the caller is known, so a stranger cannot make the service resolve
//! names.

use std::time::Duration;

use actix_web::{HttpRequest, HttpResponse, web};
use rand::RngCore;

use crate::actors::db_writer::write;
use crate::actors::webhooks::targets::{Unreachable, resolve};
use crate::domain::auth_message::{
    CREATE_WEBHOOK_ACTION, READ_WEBHOOKS_ACTION, delete_webhook_action, redeliver_webhook_action,
};
use crate::domain::enums::Role;
use crate::domain::limits::clamp_limit;
use crate::domain::pubkey::is_pubkey;
use crate::domain::wad::WAD;
use crate::domain::webhooks::crossing::line_allowed;
use crate::domain::webhooks::signature::Secret;
use crate::domain::webhooks::targets::{Target, target};
use crate::error::{ApiError, ApiResult};
use crate::http::body::{JsonBody, ParseBody};
use crate::http::extract::Params;
use crate::http::signed::{Credentials, Need, authorize, credentials};
use crate::http::state::AppState;
use crate::store::webhooks::{self, CreateWebhook, Created, DeleteWebhook, Redeliver};
use crate::wire::error::ErrorBody;
use crate::wire::formats::{NonceText, PubkeyText, WalletSignature, WebhookIdText};
use crate::wire::webhooks::{
    AcceptedResponse, CreateWebhookRequest, CreatedWebhook, DeleteWebhookRequest,
    DeliveriesResponse, RedeliverRequest, Webhook, WebhooksResponse,
};

/// Owners one webhook may follow.
pub const MAX_OWNERS: usize = 10_000;
/// Pools one webhook may filter on.
pub const MAX_POOLS: usize = 1_000;
const MAX_DESCRIPTION_CHARS: usize = 256;
/// How long a target's name may take to resolve at creation.
const RESOLVE_WITHIN: Duration = Duration::from_secs(3);
/// A create's body holds up to 10,000 owners (about 460 KB).
pub const CREATE_BODY_BYTES: usize = 640 * 1024;

/// A create as the handler needs it: every field checked but the target's
/// resolution.
pub struct CreateCall<'a> {
    pub creds: Credentials<'a>,
    pub target: Target,
    pub below_wad: u128,
    pub owners: Option<Vec<String>>,
    pub pools: Option<Vec<String>>,
    pub description: Option<&'a str>,
}

impl ParseBody for CreateWebhookRequest {
    type Call<'a> = CreateCall<'a>;

    /// Missing credentials or url first, then each field's form, `invalid`
    /// naming it; all before any nonce is spent.
    fn parse(body: &JsonBody) -> ApiResult<Self::Call<'_>> {
        let creds = credentials(body).map_err(|_| ApiError::InvalidField("actor"))?;
        let url = body.str("url").map_err(|_| ApiError::InvalidField("url"))?;
        let (Some(creds), Some(url)) = (creds, url) else {
            return Err(ApiError::MissingFields);
        };
        if !is_pubkey(creds.actor) {
            return Err(ApiError::InvalidField("actor"));
        }
        // The form here; the addresses once the caller is known.
        let target = target(url, true).map_err(|_| ApiError::InvalidField("url"))?;
        let below_wad = match body.str("below_wad") {
            Ok(None) => WAD,
            Ok(Some(text)) => text
                .parse::<u128>()
                .ok()
                .filter(|w| line_allowed(*w) && !text.starts_with('+'))
                .ok_or(ApiError::InvalidField("below_wad"))?,
            Err(_) => return Err(ApiError::InvalidField("below_wad")),
        };
        let owners = wallets(body, "owners", MAX_OWNERS)?;
        let pools = wallets(body, "pools", MAX_POOLS)?;
        let description = match body.str("description") {
            Ok(d) if d.is_none_or(|d| d.chars().count() <= MAX_DESCRIPTION_CHARS) => d,
            _ => return Err(ApiError::InvalidField("description")),
        };
        Ok(CreateCall {
            creds,
            target,
            below_wad,
            owners,
            pools,
            description,
        })
    }
}

/// A list of wallets: absent or null is none (every one); otherwise 1 to
/// `max` base58 keys, kept sorted and once each.
fn wallets(body: &JsonBody, field: &'static str, max: usize) -> ApiResult<Option<Vec<String>>> {
    let invalid = ApiError::InvalidField(field);
    let Some(list) = body.strings(field).map_err(|_| invalid.clone())? else {
        return Ok(None);
    };
    if list.is_empty() || list.len() > max || !list.iter().all(|k| is_pubkey(k)) {
        return Err(invalid);
    }
    let mut list: Vec<String> = list.into_iter().map(str::to_string).collect();
    list.sort_unstable();
    list.dedup();
    Ok(Some(list))
}

/// The credentials of a signed body with no other field.
fn signed(body: &JsonBody) -> ApiResult<Credentials<'_>> {
    credentials(body)?.ok_or(ApiError::MissingFields)
}

/// The credentials of a signed read, carried in headers.
fn signed_headers(req: &HttpRequest) -> ApiResult<Credentials<'_>> {
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    match (header("x-actor"), header("x-nonce"), header("x-signature")) {
        (Some(actor), Some(nonce), Some(signature)) => Ok(Credentials {
            actor,
            nonce,
            signature,
        }),
        _ => Err(ApiError::MissingFields),
    }
}

/// The creator a role is held to: a pool_admin to itself.
fn creator(role: Role, actor: &str) -> Option<String> {
    (role == Role::PoolAdmin).then(|| actor.to_string())
}

/// A path's webhook id; any other text names no webhook.
fn webhook_id(id: &str) -> ApiResult<&str> {
    let well_formed = id.len() == 27
        && id.starts_with("wh_")
        && id[3..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    well_formed.then_some(id).ok_or(ApiError::NotFound)
}

/// `msg_` and 32 lowercase hex digits, as every delivery id is.
fn is_delivery_id(id: &str) -> bool {
    id.len() == 36 && id.starts_with("msg_") && is_lower_hex(&id[4..])
}

fn is_lower_hex(text: &str) -> bool {
    text.bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    bytes
}

#[utoipa::path(post, path = "/api/webhooks", tag = "webhooks", request_body = CreateWebhookRequest,
    responses((status = 201, body = CreatedWebhook, description = "committed, with its audit entry; the secret is shown here only"),
        (status = 400, body = ErrorBody, description = "bad json | missing fields | invalid (its `field` names the one at fault; `webhooks.max` when full)"),
        (status = 401, body = ErrorBody, description = "bad signature | nonce invalid or expired | not authorized"),
        (status = 413, body = ErrorBody, description = "payload too large (over 640 KiB)")))]
pub async fn create(state: web::Data<AppState>, body: JsonBody) -> ApiResult<HttpResponse> {
    let call = CreateWebhookRequest::parse(&body)?;
    authorize(&state, &call.creds, CREATE_WEBHOOK_ACTION, Need::AnyAdmin).await?;
    let allow_private = state.config.webhooks.allow_private_targets;
    match resolve(&call.target, allow_private, RESOLVE_WITHIN).await {
        Ok(_) => {}
        Err(Unreachable::Refused(_) | Unreachable::Unresolved(_)) => {
            return Err(ApiError::InvalidField("url"));
        }
    }
    let secret = Secret::new(random_bytes::<32>()).text();
    let cmd = CreateWebhook {
        cluster: state.cluster.as_str(),
        id: random_bytes::<12>()
            .iter()
            .fold(String::from("wh_"), |mut id, b| {
                id.push_str(&format!("{b:02x}"));
                id
            }),
        url: call.target.url.to_string(),
        below_wad: call.below_wad,
        owners: call.owners,
        pools: call.pools,
        description: call.description.map(str::to_string),
        secret: secret.clone(),
        actor: call.creds.actor.to_string(),
        max: state.config.webhooks.max,
    };
    match write(&state.writer, cmd).await? {
        Created::Webhook(webhook) => Ok(HttpResponse::Created().json(CreatedWebhook {
            webhook: *webhook,
            secret,
        })),
        Created::Full => Err(ApiError::InvalidField("webhooks.max")),
    }
}

#[utoipa::path(get, path = "/api/webhooks", tag = "webhooks",
    params(
        ("x-actor" = PubkeyText, Header, description = "signer pubkey"),
        ("x-nonce" = NonceText, Header, description = "nonce issued for `read_webhooks`"),
        ("x-signature" = WalletSignature, Header, description = "signature of the read_webhooks message")),
    responses((status = 200, body = WebhooksResponse, description = "the webhooks the signer may see, oldest first"),
        (status = 400, body = ErrorBody, description = "missing fields | invalid"),
        (status = 401, body = ErrorBody, description = "bad signature | nonce invalid or expired | not authorized")))]
pub async fn list(req: HttpRequest, state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let creds = signed_headers(&req)?;
    let role = authorize(&state, &creds, READ_WEBHOOKS_ACTION, Need::AnyAdmin).await?;
    let mine = creator(role, creds.actor);
    let webhooks = webhooks::list(&state.store, state.cluster.as_str(), mine.as_deref()).await?;
    Ok(HttpResponse::Ok().json(WebhooksResponse { webhooks }))
}

#[utoipa::path(get, path = "/api/webhooks/{id}/deliveries", tag = "webhooks",
    params(
        ("id" = WebhookIdText, Path, description = "the webhook"),
        ("limit" = Option<i64>, Query, description = "default 50, at most 200"),
        ("x-actor" = PubkeyText, Header, description = "signer pubkey"),
        ("x-nonce" = NonceText, Header, description = "nonce issued for `read_webhooks`"),
        ("x-signature" = WalletSignature, Header, description = "signature of the read_webhooks message")),
    responses((status = 200, body = DeliveriesResponse, description = "its deliveries, newest first"),
        (status = 400, body = ErrorBody, description = "missing fields | invalid"),
        (status = 401, body = ErrorBody, description = "bad signature | nonce invalid or expired | not authorized"),
        (status = 404, body = ErrorBody, description = "not found (no such webhook, or another admin's)")))]
pub async fn deliveries(
    req: HttpRequest,
    state: web::Data<AppState>,
    id: web::Path<String>,
    params: Params,
) -> ApiResult<HttpResponse> {
    let creds = signed_headers(&req)?;
    let id = webhook_id(&id)?;
    let limit = clamp_limit(params.get("limit").as_deref());
    let role = authorize(&state, &creds, READ_WEBHOOKS_ACTION, Need::AnyAdmin).await?;
    let mine = creator(role, creds.actor);
    let cluster = state.cluster.as_str();
    let deliveries = webhooks::deliveries(&state.store, cluster, id, mine.as_deref(), limit)
        .await?
        .ok_or(ApiError::NotFound)?;
    Ok(HttpResponse::Ok().json(DeliveriesResponse { deliveries }))
}

#[utoipa::path(delete, path = "/api/webhooks/{id}", tag = "webhooks", request_body = DeleteWebhookRequest,
    params(("id" = WebhookIdText, Path, description = "the webhook")),
    responses((status = 200, body = Webhook, description = "deleted with its deliveries, as it was; audited"),
        (status = 400, body = ErrorBody, description = "bad json | missing fields | invalid"),
        (status = 401, body = ErrorBody, description = "bad signature | nonce invalid or expired | not authorized"),
        (status = 404, body = ErrorBody, description = "not found (no such webhook, or another admin's)")))]
pub async fn delete(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: JsonBody,
) -> ApiResult<HttpResponse> {
    let creds = signed(&body)?;
    let id = webhook_id(&id)?;
    let role = authorize(&state, &creds, &delete_webhook_action(id), Need::AnyAdmin).await?;
    let cmd = DeleteWebhook {
        cluster: state.cluster.as_str(),
        id: id.to_string(),
        actor: creds.actor.to_string(),
        creator: creator(role, creds.actor),
    };
    let deleted = write(&state.writer, cmd).await?.ok_or(ApiError::NotFound)?;
    Ok(HttpResponse::Ok().json(deleted))
}

#[utoipa::path(post, path = "/api/webhooks/{id}/redeliver", tag = "webhooks", request_body = RedeliverRequest,
    params(("id" = WebhookIdText, Path, description = "the webhook")),
    responses((status = 202, body = AcceptedResponse, description = "queued again after those already queued, with the same webhook-id; audited"),
        (status = 400, body = ErrorBody, description = "bad json | missing fields | invalid"),
        (status = 401, body = ErrorBody, description = "bad signature | nonce invalid or expired | not authorized"),
        (status = 404, body = ErrorBody, description = "not found (no such delivery of a webhook the signer may see)")))]
pub async fn redeliver(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: JsonBody,
) -> ApiResult<HttpResponse> {
    let creds = signed(&body)?;
    let delivery_id = body.str("delivery_id")?.ok_or(ApiError::MissingFields)?;
    if !is_delivery_id(delivery_id) {
        return Err(ApiError::InvalidField("delivery_id"));
    }
    let id = webhook_id(&id)?;
    let action = redeliver_webhook_action(id, delivery_id);
    let role = authorize(&state, &creds, &action, Need::AnyAdmin).await?;
    let cmd = Redeliver {
        cluster: state.cluster.as_str(),
        webhook_id: id.to_string(),
        delivery_id: delivery_id.to_string(),
        actor: creds.actor.to_string(),
        creator: creator(role, creds.actor),
    };
    if !write(&state.writer, cmd).await? {
        return Err(ApiError::NotFound);
    }
    Ok(HttpResponse::Accepted().json(AcceptedResponse { accepted: true }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "11111111111111111111111111111111";
    const B: &str = "So11111111111111111111111111111111111111112";

    fn create(fields: &str) -> ApiResult<(String, u128, Option<Vec<String>>)> {
        let json = format!(r#"{{"actor":"{A}","nonce":"n","signature":"s"{fields}}}"#);
        let body = JsonBody::parse(json.as_bytes()).unwrap();
        CreateWebhookRequest::parse(&body)
            .map(|c| (c.target.url.to_string(), c.below_wad, c.owners))
    }

    fn field(result: ApiResult<(String, u128, Option<Vec<String>>)>) -> &'static str {
        match result {
            Err(ApiError::InvalidField(f)) => f,
            other => panic!("not an invalid field: {other:?}"),
        }
    }

    #[test]
    fn a_create_is_read_with_its_defaults() {
        let (url, below, owners) = create(r#","url":"https://example.com/hook""#).unwrap();
        assert_eq!(
            (url.as_str(), below, owners),
            ("https://example.com/hook", WAD, None)
        );
        let (_, below, owners) = create(&format!(
            r#","url":"http://example.com","below_wad":"1050000000000000000","owners":["{B}","{A}","{B}"]"#
        ))
        .unwrap();
        assert_eq!(below, 1_050_000_000_000_000_000);
        assert_eq!(owners, Some(vec![A.to_string(), B.to_string()]));
    }

    #[test]
    fn each_bad_field_is_named() {
        assert!(matches!(create(""), Err(ApiError::MissingFields)));
        assert_eq!(field(create(r#","url":"ftp://example.com""#)), "url");
        assert_eq!(field(create(r#","url":7"#)), "url");
        let url = r#","url":"https://example.com""#;
        for below in [
            r#""0""#,
            r#""10000000000000000001""#,
            r#""1e18""#,
            r#""-1""#,
            "5",
            r#""+1""#,
        ] {
            assert_eq!(
                field(create(&format!(r#"{url},"below_wad":{below}"#))),
                "below_wad"
            );
        }
        assert_eq!(field(create(&format!(r#"{url},"owners":[]"#))), "owners");
        assert_eq!(field(create(&format!(r#"{url},"owners":["x"]"#))), "owners");
        assert_eq!(field(create(&format!(r#"{url},"owners":"{A}""#))), "owners");
        let many = vec![format!("\"{A}\""); MAX_OWNERS + 1].join(",");
        assert_eq!(
            field(create(&format!(r#"{url},"owners":[{many}]"#))),
            "owners"
        );
        assert_eq!(field(create(&format!(r#"{url},"pools":[1]"#))), "pools");
        let long = "x".repeat(MAX_DESCRIPTION_CHARS + 1);
        assert_eq!(
            field(create(&format!(r#"{url},"description":"{long}""#))),
            "description"
        );
        // The largest line is allowed.
        assert!(create(&format!(r#"{url},"below_wad":"10000000000000000000""#)).is_ok());
    }

    #[test]
    fn only_well_formed_ids_name_a_webhook() {
        assert!(webhook_id("wh_0123456789abcdef01234567").is_ok());
        for bad in [
            "",
            "wh_",
            "wh_0123456789ABCDEF01234567",
            "wh_0123456789abcdef0123456",
            "xx_0123456789abcdef01234567",
        ] {
            assert_eq!(webhook_id(bad), Err(ApiError::NotFound), "{bad}");
        }
    }
}
