//! The admin allowlist and the audit log (docs/design.md §4.2 to 4.6).

use crate::wire::formats::{NonceText, PubkeyText, TimeParam, WalletSignature};
use actix_web::{HttpRequest, HttpResponse, web};
use chrono::{DateTime, Utc};

use crate::actors::db_writer::write;
use crate::config::Cluster;
use crate::domain::auth_message::{READ_AUDIT_ACTION, add_admin_action, revoke_admin_action};
use crate::domain::enums::Role;
use crate::domain::limits::clamp_limit;
use crate::domain::pubkey::{Pubkey, parse_pubkey};
use crate::error::{ApiError, ApiResult};
use crate::http::body::{JsonBody, ParseBody};
use crate::http::extract::Params;
use crate::http::history_params::parse_time;
use crate::http::signed::{Credentials, Need, active_role, authorize, credentials};
use crate::http::state::AppState;
use crate::store::reads::admins::{self, AuditFilter};
use crate::store::writes::{AddAdmin, RevokeAdmin};
use crate::wire::admin::{
    AddAdminRequest, AllowlistResponse, AuditResponse, MeResponse, OkResponse, RevokeAdminRequest,
};
use crate::wire::error::ErrorBody;

/// Longest admin label accepted.
const MAX_LABEL_CHARS: usize = 256;

/// The credentials and the target wallet of an allowlist call: both required
/// (docs/design.md §4.4 and 4.5 check them first, before anything else about the body).
fn signed_target(body: &JsonBody) -> ApiResult<(Credentials<'_>, &str)> {
    let creds = credentials(body)?;
    let pubkey = body.str("pubkey")?;
    match (creds, pubkey) {
        (Some(creds), Some(pubkey)) => Ok((creds, pubkey)),
        _ => Err(ApiError::MissingFields),
    }
}

/// An add-admin call as the handler needs it.
pub struct AddAdminCall<'a> {
    pub creds: Credentials<'a>,
    pub pubkey: Pubkey,
    pub role: Role,
    pub label: Option<&'a str>,
}

impl ParseBody for AddAdminRequest {
    type Call<'a> = AddAdminCall<'a>;

    /// docs/design.md §4.4's errors, in its order: missing fields, then the role, then
    /// anything malformed (`invalid`), all before any nonce is spent.
    fn parse(body: &JsonBody) -> ApiResult<Self::Call<'_>> {
        let (creds, pubkey) = signed_target(body)?;
        let role = match body.str("role") {
            Ok(Some(role)) => Role::parse(role).ok_or(ApiError::InvalidRole)?,
            _ => return Err(ApiError::InvalidRole),
        };
        let label = body.str("label")?;
        if label.is_some_and(|l| l.chars().count() > MAX_LABEL_CHARS) {
            return Err(ApiError::Invalid);
        }
        let (Ok(pubkey), Ok(_)) = (parse_pubkey(pubkey), parse_pubkey(creds.actor)) else {
            return Err(ApiError::Invalid);
        };
        Ok(AddAdminCall {
            creds,
            pubkey,
            role,
            label,
        })
    }
}

/// A revoke-admin call as the handler needs it.
pub struct RevokeAdminCall<'a> {
    pub creds: Credentials<'a>,
    pub pubkey: Pubkey,
}

impl ParseBody for RevokeAdminRequest {
    type Call<'a> = RevokeAdminCall<'a>;

    /// docs/design.md §4.5's errors, in its order, before any nonce is spent.
    fn parse(body: &JsonBody) -> ApiResult<Self::Call<'_>> {
        let (creds, pubkey) = signed_target(body)?;
        let (Ok(key), Ok(_)) = (parse_pubkey(pubkey), parse_pubkey(creds.actor)) else {
            return Err(ApiError::Invalid);
        };
        if creds.actor == pubkey {
            return Err(ApiError::CannotRevokeYourself);
        }
        Ok(RevokeAdminCall { creds, pubkey: key })
    }
}

#[utoipa::path(get, path = "/api/admin/me", tag = "admin",
    params(("pubkey" = PubkeyText, Query, description = "wallet")),
    responses((status = 200, body = MeResponse, description = "the wallet's active role, or null"),
        (status = 400, body = ErrorBody, description = "missing fields | invalid")))]
pub async fn me(state: web::Data<AppState>, params: Params) -> ApiResult<HttpResponse> {
    let pubkey = params.pubkey("pubkey")?.ok_or(ApiError::MissingFields)?;
    let role = active_role(&state, &pubkey).await?;
    Ok(HttpResponse::Ok().json(MeResponse { role }))
}

#[utoipa::path(get, path = "/api/admin/allowlist", tag = "admin",
    responses((status = 200, body = AllowlistResponse, description = "active admins")))]
pub async fn list_admins(state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let admins = admins::active(&state.store).await?;
    Ok(HttpResponse::Ok().json(AllowlistResponse { admins }))
}

#[utoipa::path(post, path = "/api/admin/allowlist", tag = "admin", request_body = AddAdminRequest,
    responses((status = 200, body = OkResponse, description = "committed, with its audit entry"),
        (status = 400, body = ErrorBody, description = "bad json | missing fields | invalid role | invalid"),
        (status = 401, body = ErrorBody, description = "bad signature | nonce invalid or expired | not authorized | super_admin required")))]
pub async fn add_admin(state: web::Data<AppState>, body: JsonBody) -> ApiResult<HttpResponse> {
    let AddAdminCall {
        creds,
        pubkey,
        role,
        label,
    } = AddAdminRequest::parse(&body)?;
    authorize(
        &state,
        &creds,
        &add_admin_action(&pubkey.to_string(), role.as_str()),
        Need::SuperAdmin,
    )
    .await?;
    let cmd = AddAdmin {
        pubkey: pubkey.to_string(),
        role,
        label: label.map(str::to_string),
        actor: creds.actor.to_string(),
    };
    write(&state.writer, cmd).await?;
    Ok(HttpResponse::Ok().json(OkResponse { ok: true }))
}

#[utoipa::path(delete, path = "/api/admin/allowlist", tag = "admin", request_body = RevokeAdminRequest,
    responses((status = 200, body = OkResponse, description = "committed, with its audit entry"),
        (status = 400, body = ErrorBody, description = "bad json | missing fields | cannot revoke yourself | invalid"),
        (status = 401, body = ErrorBody, description = "bad signature | nonce invalid or expired | not authorized | super_admin required"),
        (status = 404, body = ErrorBody, description = "not found: no active entry for pubkey")))]
pub async fn revoke_admin(state: web::Data<AppState>, body: JsonBody) -> ApiResult<HttpResponse> {
    let RevokeAdminCall { creds, pubkey } = RevokeAdminRequest::parse(&body)?;
    authorize(
        &state,
        &creds,
        &revoke_admin_action(&pubkey.to_string()),
        Need::SuperAdmin,
    )
    .await?;
    let cmd = RevokeAdmin {
        pubkey: pubkey.to_string(),
        actor: creds.actor.to_string(),
    };
    if !write(&state.writer, cmd).await? {
        return Err(ApiError::NotFound);
    }
    Ok(HttpResponse::Ok().json(OkResponse { ok: true }))
}

#[utoipa::path(get, path = "/api/admin/audit", tag = "admin",
    params(
        ("actor" = Option<String>, Query, description = "exact actor filter"),
        ("action" = Option<String>, Query, description = "exact action filter"),
        ("limit" = Option<i64>, Query, description = "default 50, at most 200"),
        ("before" = Option<i64>, Query, description = "only entries with a smaller id (the next page: the last id of this one)"),
        ("from" = Option<TimeParam>, Query, description = "only entries created at or after this time"),
        ("to" = Option<TimeParam>, Query, description = "only entries created before this time"),
        ("x-actor" = Option<PubkeyText>, Header, description = "mainnet only: signer pubkey"),
        ("x-nonce" = Option<NonceText>, Header, description = "mainnet only: nonce issued for `read_audit`"),
        ("x-signature" = Option<WalletSignature>, Header, description = "mainnet only: signature of the read_audit message")),
    responses((status = 200, body = AuditResponse, description = "audit entries, newest first"),
        (status = 400, body = ErrorBody, description = "invalid (a malformed before, from or to)"),
        (status = 403, body = ErrorBody, description = "forbidden (mainnet, without a valid signed nonce)")))]
pub async fn audit(
    req: HttpRequest,
    state: web::Data<AppState>,
    params: Params,
) -> ApiResult<HttpResponse> {
    if state.cluster == Cluster::Mainnet {
        check_audit_credentials(&req, &state).await?;
    }
    let limit = clamp_limit(params.get("limit").as_deref());
    let before = match params.get("before") {
        None => i64::MAX,
        Some(v) => v
            .parse::<i64>()
            .ok()
            .filter(|id| *id > 0)
            .ok_or(ApiError::Invalid)?,
    };
    let time = |key: &str| -> ApiResult<Option<DateTime<Utc>>> {
        params
            .get(key)
            .map(|v| {
                parse_time(&v).map(|us| DateTime::from_timestamp_micros(us).unwrap_or_default())
            })
            .transpose()
    };
    // Unbounded, within what PostgreSQL's timestamps hold.
    let from = time("from")?.unwrap_or(DateTime::<Utc>::UNIX_EPOCH);
    let to =
        time("to")?.unwrap_or(DateTime::from_timestamp(253_402_300_799, 0).unwrap_or_default());
    let (actor, action) = (params.get("actor"), params.get("action"));
    let filter = AuditFilter {
        limit,
        before,
        from,
        to,
        actor: actor.as_deref(),
        action: action.as_deref(),
    };
    let entries = admins::audit(&state.store, filter).await?;
    Ok(HttpResponse::Ok().json(AuditResponse { entries }))
}

/// Mainnet audit reads are signed (`read_audit`) by an active admin of either role,
/// carried in headers; every credential failure is 403 forbidden (docs/design.md §4).
async fn check_audit_credentials(req: &HttpRequest, state: &AppState) -> ApiResult<()> {
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    let (Some(actor), Some(nonce), Some(signature)) =
        (header("x-actor"), header("x-nonce"), header("x-signature"))
    else {
        return Err(ApiError::Forbidden);
    };
    let creds = Credentials {
        actor,
        nonce,
        signature,
    };
    match authorize(state, &creds, READ_AUDIT_ACTION, Need::AnyAdmin).await {
        Ok(_) => Ok(()),
        Err(e @ (ApiError::DatabaseUnavailable(_) | ApiError::Internal(_))) => Err(e),
        Err(_) => Err(ApiError::Forbidden),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "11111111111111111111111111111111";
    const B: &str = "So11111111111111111111111111111111111111112";

    fn add(json: &str) -> ApiResult<(Pubkey, String, Option<String>)> {
        let body = JsonBody::parse(json.as_bytes()).unwrap();
        AddAdminRequest::parse(&body).map(|c| {
            (
                c.pubkey,
                c.role.as_str().into(),
                c.label.map(str::to_string),
            )
        })
    }

    #[test]
    fn add_admin_errors_in_the_spec_order() {
        let creds = format!(r#""actor":"{A}","nonce":"n","signature":"s""#);
        let ok = add(&format!(
            r#"{{{creds},"pubkey":"{B}","role":"pool_admin","label":"x"}}"#
        ))
        .unwrap();
        assert_eq!(
            (ok.0.to_string(), ok.1, ok.2),
            (B.to_string(), "pool_admin".into(), Some("x".into()))
        );
        // Missing fields before a bad role; a bad role before a bad pubkey.
        assert!(matches!(
            add(&format!(r#"{{{creds},"role":"root"}}"#)),
            Err(ApiError::MissingFields)
        ));
        assert!(matches!(
            add(&format!(r#"{{{creds},"pubkey":"bad","role":"root"}}"#)),
            Err(ApiError::InvalidRole)
        ));
        assert!(matches!(
            add(&format!(
                r#"{{{creds},"pubkey":"bad","role":"pool_admin"}}"#
            )),
            Err(ApiError::Invalid)
        ));
        let long = "x".repeat(MAX_LABEL_CHARS + 1);
        assert!(matches!(
            add(&format!(
                r#"{{{creds},"pubkey":"{B}","role":"pool_admin","label":"{long}"}}"#
            )),
            Err(ApiError::Invalid)
        ));
    }

    #[test]
    fn revoking_yourself_is_refused_before_any_signature_check() {
        let body = JsonBody::parse(
            format!(r#"{{"actor":"{A}","nonce":"n","signature":"s","pubkey":"{A}"}}"#).as_bytes(),
        )
        .unwrap();
        assert!(matches!(
            RevokeAdminRequest::parse(&body),
            Err(ApiError::CannotRevokeYourself)
        ));
        let body =
            JsonBody::parse(br#"{"actor":"bad","nonce":"n","signature":"s","pubkey":"bad"}"#)
                .unwrap();
        assert!(matches!(
            RevokeAdminRequest::parse(&body),
            Err(ApiError::Invalid)
        ));
    }
}
