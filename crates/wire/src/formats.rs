//! The text formats of the API, as named schemas of the OpenAPI document: wire
//! fields say `#[schema(value_type = Pubkey)]` and the document gets one
//! `components.schemas.Pubkey` with its pattern, instead of a bare string. The
//! patterns are what the handlers accept (domain::pubkey, domain::enums,
//! domain::auth_message); the Rust values stay plain strings.

use std::borrow::Cow;

use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::{PartialSchema, ToSchema};

use lendex_domain::enums::{ROLES, TX_ACTIONS, TX_STATUSES};

/// Base58 of 32 bytes: 32 to 44 characters of the bitcoin alphabet.
pub const PUBKEY_PATTERN: &str = "^[1-9A-HJ-NP-Za-km-z]{32,44}$";

/// The custom formats of the document: a pattern bounds the characters and
/// the length, the format says the text must decode to exactly 32 (64)
/// bytes, which no regular expression of useful size can.
pub const PUBKEY_FORMAT: &str = "solana-pubkey";
pub const SIGNATURE_FORMAT: &str = "solana-signature";

fn custom(format: &str) -> Option<utoipa::openapi::SchemaFormat> {
    Some(utoipa::openapi::SchemaFormat::Custom(format.to_string()))
}

fn text(description: &str) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(description))
}

/// Declares a marker type whose schema is a named string format.
macro_rules! text_schema {
    ($marker:ident, $name:literal, $build:expr) => {
        #[doc = concat!("The `", $name, "` string format of the OpenAPI document.")]
        pub struct $marker;
        impl PartialSchema for $marker {
            fn schema() -> RefOr<Schema> {
                let build: ObjectBuilder = $build;
                RefOr::T(Schema::Object(build.build()))
            }
        }
        impl ToSchema for $marker {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed($name)
            }
        }
    };
}

text_schema!(
    PubkeyText,
    "Pubkey",
    text("Base58 public key: 32 to 44 characters that decode to exactly 32 bytes.")
        .pattern(Some(PUBKEY_PATTERN))
        .format(custom(PUBKEY_FORMAT))
);
text_schema!(
    U64Text,
    "U64",
    text("Unsigned 64-bit integer as a decimal string.").pattern(Some("^[0-9]{1,20}$"))
);
text_schema!(
    U128Text,
    "U128",
    text("Unsigned 128-bit integer as a decimal string.").pattern(Some("^[0-9]{1,39}$"))
);
text_schema!(
    WadText,
    "Wad",
    text("Fixed-point u128 as a decimal string; 1000000000000000000 is 1.0.")
        .pattern(Some("^[0-9]{1,39}$"))
);
text_schema!(
    I64Text,
    "I64",
    text("Signed 64-bit integer as a decimal string.").pattern(Some("^-?[0-9]{1,19}$"))
);
text_schema!(
    NonceText,
    "Nonce",
    text("32 lowercase hexadecimal characters, issued by POST /api/auth/nonce.")
        .pattern(Some("^[0-9a-f]{32}$"))
);
text_schema!(
    WalletSignature,
    "WalletSignature",
    text("Base58 ed25519 signature of the nonce's message: 64 to 88 characters that decode to exactly 64 bytes.")
        .pattern(Some("^[1-9A-HJ-NP-Za-km-z]{64,88}$"))
        .format(custom(SIGNATURE_FORMAT))
);
text_schema!(
    TxSignature,
    "TxSignature",
    text("Chain transaction signature: 1 to 128 printable ASCII characters.")
        .pattern(Some("^[!-~]{1,128}$"))
);
text_schema!(
    ActionText,
    "AuthAction",
    text("The operation a nonce is for, e.g. `add_admin:<pubkey>:<role>`: 1 to 256 printable ASCII characters.")
        .pattern(Some("^[ -~]{1,256}$"))
);
text_schema!(
    RoleName,
    "Role",
    text("Admin role.").enum_values(Some(ROLES.iter().copied()))
);
text_schema!(
    TxActionName,
    "TxAction",
    text("What a logged transaction did.").enum_values(Some(TX_ACTIONS.iter().copied()))
);
text_schema!(
    DecimalText,
    "Decimal",
    text("Unsigned integer of any size as a decimal string (exact sums may pass u128).")
        .pattern(Some("^[0-9]+$"))
);
text_schema!(
    DirectionName,
    "LiquidationDirection",
    text("below: liquidatable while the price is below the liquidation price; above: while it is above.")
        .enum_values(Some(["below", "above"]))
);
text_schema!(
    TxStatusName,
    "TxStatus",
    text("Status of a logged transaction.").enum_values(Some(TX_STATUSES.iter().copied()))
);

text_schema!(
    WebhookUrl,
    "WebhookUrl",
    text("An http or https URL with a host name, at most 2,048 bytes; its host must not resolve to a loopback, private, shared, link-local or unspecified address (unless the service allows private targets).")
        .pattern(Some(r"^https?://([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z]{2,63}(:[1-9][0-9]{0,3})?(/[!-~]*)?$"))
        .max_length(Some(2048))
);
text_schema!(
    WebhookLine,
    "WebhookLine",
    text(
        "A webhook's line, a WAD as a decimal string: above 0, at most 10000000000000000000 (10.0)."
    )
    .pattern(Some("^0*([1-9][0-9]{0,18}|10000000000000000000)$"))
);
text_schema!(
    WebhookIdText,
    "WebhookId",
    text("A webhook's id: `wh_` and 24 lowercase hexadecimal digits.")
        .pattern(Some("^wh_[0-9a-f]{24}$"))
);
text_schema!(
    DeliveryIdText,
    "DeliveryId",
    text("A delivery's id (its `webhook-id` header): `msg_` and 32 lowercase hexadecimal digits.")
        .pattern(Some("^msg_[0-9a-f]{32}$"))
);
text_schema!(
    WebhookStatusName,
    "WebhookStatus",
    text("A webhook's state.").enum_values(Some(["active", "disabled"]))
);
text_schema!(
    DeliveryStatusName,
    "DeliveryStatus",
    text("A delivery's state.").enum_values(Some(["pending", "delivered", "failed"]))
);

text_schema!(
    TimeText,
    "Time",
    text("RFC 3339 time in UTC with milliseconds, e.g. 2026-11-25T14:03:07.250Z.").format(Some(
        utoipa::openapi::SchemaFormat::KnownFormat(utoipa::openapi::KnownFormat::DateTime)
    ))
);
text_schema!(
    TimeParam,
    "TimeParam",
    text("A time: RFC 3339 (e.g. 2026-11-25T14:03:07Z) or whole Unix milliseconds.")
        .pattern(Some(
            "^([0-9]{1,15}|[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt]([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,9})?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9]))$"
        ))
);
text_schema!(
    CursorText,
    "Cursor",
    text("Opaque: the next_cursor of the previous page of the same listing.")
        .pattern(Some("^[A-Za-z0-9_-]{26}$"))
);
text_schema!(
    HistoryCauseName,
    "HistoryCause",
    text("Why a health point was recorded: the owner's positions changed, a pool's oracle price, another pool field, or a baseline or reload found a difference.")
        .enum_values(Some(["position", "price", "terms", "load"]))
);
text_schema!(
    PriceSourceName,
    "PriceSource",
    text("Whose price a price row records: the pool's own copy (`pool`), or its Pyth feed's reading where usable (`feed`).")
        .enum_values(Some(["pool", "feed"]))
);
text_schema!(
    HistoryEventKindName,
    "HistoryEventKind",
    text("What happened to an account.").enum_values(Some([
        "under",
        "recovered",
        "liquidated",
        "bad_debt"
    ]))
);
text_schema!(
    ResolutionName,
    "HistoryResolution",
    text("raw points, or buckets of one minute, five minutes, an hour or a day.")
        .enum_values(Some(["raw", "1m", "5m", "1h", "1d"]))
);

/// A time as the API writes it: RFC 3339, UTC, milliseconds.
pub fn time_text(at_us: i64) -> String {
    chrono::DateTime::from_timestamp_micros(at_us)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

#[cfg(test)]
mod tests {
    use lendex_domain::pubkey::is_pubkey;

    #[test]
    fn times_are_written_to_the_millisecond() {
        assert_eq!(super::time_text(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            super::time_text(1_764_079_387_250_999),
            "2025-11-25T14:03:07.250Z"
        );
    }

    /// Every valid pubkey matches the documented pattern (a superset check:
    /// the pattern cannot tell 32-byte from 31-byte base58).
    #[test]
    fn pubkeys_match_the_pattern() {
        let chars = |s: &str| {
            (32..=44).contains(&s.len())
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() && !matches!(b, b'0' | b'O' | b'I' | b'l'))
        };
        for bytes in [[0u8; 32], [255u8; 32], [7u8; 32]] {
            let key = bs58::encode(bytes).into_string();
            assert!(is_pubkey(&key));
            assert!(chars(&key), "{key}");
        }
    }
}
