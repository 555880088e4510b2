//! The canonical text a wallet signs (docs/design.md §5.2) and the action strings of 5.4.

/// First line of every signed message (docs/design.md §5.2).
pub const MESSAGE_HEADER: &str = "Service admin auth";

/// The exact three-line message: header, action, nonce, joined by a line feed.
pub fn canonical_message(action: &str, nonce: &str) -> String {
    format!("{MESSAGE_HEADER}\nAction: {action}\nNonce: {nonce}")
}

pub fn add_admin_action(pubkey: &str, role: &str) -> String {
    format!("add_admin:{pubkey}:{role}")
}

pub fn revoke_admin_action(pubkey: &str) -> String {
    format!("revoke_admin:{pubkey}")
}

pub fn init_pool_action(token_mint: &str) -> String {
    format!("init_pool:{token_mint}")
}

/// Webhooks' actions (docs/design.md §18): a create and a read are signed
/// as they are; a delete and a redelivery name what they act on, so a
/// signature for one webhook cannot be spent on another.
pub const CREATE_WEBHOOK_ACTION: &str = "create_webhook";
pub const READ_WEBHOOKS_ACTION: &str = "read_webhooks";

pub fn delete_webhook_action(id: &str) -> String {
    format!("delete_webhook:{id}")
}

pub fn redeliver_webhook_action(id: &str, delivery_id: &str) -> String {
    format!("redeliver_webhook:{id}:{delivery_id}")
}

/// The action signed for a mainnet audit read (docs/design.md §4).
pub const READ_AUDIT_ACTION: &str = "read_audit";

/// An action must be 1..=256 printable ASCII characters: a line break could forge
/// the message's lines (docs/design.md §4, nonce hygiene).
pub fn is_valid_action(action: &str) -> bool {
    (1..=256).contains(&action.len()) && action.bytes().all(|b| (0x20..=0x7e).contains(&b))
}

/// A nonce is 32 lowercase hexadecimal characters.
pub fn is_valid_nonce(nonce: &str) -> bool {
    nonce.len() == 32
        && nonce
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn message_is_three_lines_joined_by_line_feed() {
        assert_eq!(
            canonical_message("add_admin:X:pool_admin", "00ff"),
            "Service admin auth\nAction: add_admin:X:pool_admin\nNonce: 00ff"
        );
    }

    #[test]
    fn action_rules() {
        assert!(is_valid_action("revoke_admin:abc"));
        assert!(!is_valid_action(""));
        assert!(!is_valid_action("a\nNonce: 1"));
        assert!(!is_valid_action("tab\there"));
        assert!(!is_valid_action("é"));
        assert!(is_valid_action(&"a".repeat(256)));
        assert!(!is_valid_action(&"a".repeat(257)));
    }

    proptest! {
        // Whatever action passes validation, the message keeps exactly three lines,
        // so no action can smuggle in a second Nonce or Action line.
        #[test]
        fn valid_actions_never_add_lines(action in "\\PC{0,300}", nonce in "[0-9a-f]{32}") {
            if is_valid_action(&action) {
                prop_assert_eq!(canonical_message(&action, &nonce).lines().count(), 3);
            }
        }
    }
}
