//! On-chain account layouts of the lending program v0.1 (docs/design.md §2), decoded
//! with borsh after the 8-byte Anchor discriminator. Trailing bytes after the
//! last field are ignored (accounts are often allocated larger).

use borsh::{BorshDeserialize, BorshSerialize};

use super::pubkey::Pubkey;

/// sha256("account:LendingPool")[..8]
pub const POOL_DISCRIMINATOR: [u8; 8] = [0xd0, 0x28, 0xf2, 0x52, 0xba, 0x12, 0x4b, 0x24];
/// sha256("account:UserPosition")[..8]
pub const POSITION_DISCRIMINATOR: [u8; 8] = [0xfb, 0xf8, 0xd1, 0xf5, 0x53, 0xea, 0x11, 0x1b];

/// Byte offset of `UserPosition.pool` in the account data (after discriminator and owner).
pub const POSITION_POOL_OFFSET: usize = 8 + 32;
/// Size the program allocates for a UserPosition (discriminator + fields).
pub const POSITION_ACCOUNT_SIZE: usize = 8 + 32 + 32 + 8 + 8 + 16 + 16 + 8 + 1;

pub const SPL_TOKEN_PROGRAM: &str = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
pub const SPL_TOKEN_2022_PROGRAM: &str = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb";
/// Size of the base SPL mint layout (Token-2022 mints with extensions are larger).
pub const MINT_BASE_SIZE: usize = 82;
const MINT_DECIMALS_OFFSET: usize = 44;
const MINT_INITIALIZED_OFFSET: usize = 45;

#[derive(Debug, Clone, Default, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub struct LendingPool {
    pub authority: Pubkey,
    pub token_mint: Pubkey,
    pub vault: Pubkey,
    pub pool_bump: u8,
    pub authority_bump: u8,
    pub vault_bump: u8,
    pub paused: bool,
    pub total_deposits: u64,
    pub total_borrows: u64,
    pub accumulated_fees: u64,
    pub total_deposit_shares: u64,
    pub deposit_index_wad: u128,
    pub borrow_index_wad: u128,
    pub last_update_ts: i64,
    pub ltv_wad: u128,
    pub liquidation_threshold_wad: u128,
    pub liquidation_bonus_wad: u128,
    pub protocol_liq_fee_wad: u128,
    pub reserve_factor_wad: u128,
    pub close_factor_wad: u128,
    pub base_rate_wad: u128,
    pub optimal_util_wad: u128,
    pub slope1_wad: u128,
    pub slope2_wad: u128,
    pub flash_fee_bps: u16,
    pub pyth_price_feed: Option<Pubkey>,
    pub oracle_price: Option<i64>,
    pub oracle_conf: Option<u64>,
    pub oracle_expo: Option<i32>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub struct UserPosition {
    pub owner: Pubkey,
    pub pool: Pubkey,
    pub deposit_shares: u64,
    pub borrow_principal: u64,
    pub deposit_idx_snap: u128,
    pub borrow_idx_snap: u128,
    pub original_deposit: u64,
    pub bump: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// Too short, or the first 8 bytes are not the expected discriminator.
    WrongDiscriminator,
    /// The fields do not parse (truncated, or a bool/Option tag out of range).
    Malformed,
}

fn decode_after<T: BorshDeserialize>(
    data: &[u8],
    discriminator: &[u8; 8],
) -> Result<T, DecodeError> {
    if data.len() < 8 || &data[..8] != discriminator {
        return Err(DecodeError::WrongDiscriminator);
    }
    let mut rest = &data[8..];
    // `deserialize` (unlike `try_from_slice`) leaves trailing bytes unread, as intended.
    T::deserialize(&mut rest).map_err(|_| DecodeError::Malformed)
}

pub fn decode_pool(data: &[u8]) -> Result<LendingPool, DecodeError> {
    decode_after(data, &POOL_DISCRIMINATOR)
}

pub fn decode_position(data: &[u8]) -> Result<UserPosition, DecodeError> {
    decode_after(data, &POSITION_DISCRIMINATOR)
}

/// Why an account read is not the account the index expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccountCheck {
    /// No account at that address.
    Absent,
    /// Not owned by the lending program, not of the expected type, or its own
    /// fields do not match what was asked for.
    Invalid,
}

/// A LendingPool of `program`: present, owned by the program, and decodable.
/// (Pool init, pool sync, position sync and the background refresh all use it.)
pub fn check_pool(
    program: &Pubkey,
    account: Option<(&Pubkey, &[u8])>,
) -> Result<LendingPool, AccountCheck> {
    let (owner, data) = account.ok_or(AccountCheck::Absent)?;
    if owner != program {
        return Err(AccountCheck::Invalid);
    }
    decode_pool(data).map_err(|_| AccountCheck::Invalid)
}

/// A UserPosition of `program` whose own owner and pool fields are the ones
/// asked for (`owner` is None when any owner is acceptable, as in a pool scan).
pub fn check_position(
    program: &Pubkey,
    account: Option<(&Pubkey, &[u8])>,
    pool: &Pubkey,
    owner: Option<&Pubkey>,
) -> Result<UserPosition, AccountCheck> {
    let (program_owner, data) = account.ok_or(AccountCheck::Absent)?;
    if program_owner != program {
        return Err(AccountCheck::Invalid);
    }
    let position = decode_position(data).map_err(|_| AccountCheck::Invalid)?;
    if position.pool != *pool || owner.is_some_and(|o| position.owner != *o) {
        return Err(AccountCheck::Invalid);
    }
    Ok(position)
}

fn encode_with<T: BorshSerialize>(value: &T, discriminator: &[u8; 8]) -> Vec<u8> {
    let mut out = discriminator.to_vec();
    value
        .serialize(&mut out)
        .expect("writing to a Vec cannot fail");
    out
}

/// Account bytes as the program writes them (used by the demo seeder and tests).
pub fn encode_pool(pool: &LendingPool) -> Vec<u8> {
    encode_with(pool, &POOL_DISCRIMINATOR)
}

pub fn encode_position(position: &UserPosition) -> Vec<u8> {
    encode_with(position, &POSITION_DISCRIMINATOR)
}

/// Decimals of an SPL mint owned by the Token or Token-2022 program; `None` when
/// the account is not an initialised mint of either.
pub fn mint_decimals(owner: &Pubkey, data: &[u8]) -> Option<u8> {
    let owner = owner.to_string();
    if owner != SPL_TOKEN_PROGRAM && owner != SPL_TOKEN_2022_PROGRAM {
        return None;
    }
    if data.len() < MINT_BASE_SIZE || data[MINT_INITIALIZED_OFFSET] != 1 {
        return None;
    }
    Some(data[MINT_DECIMALS_OFFSET])
}

/// A minimal initialised mint account with `decimals` (for the demo seeder and tests).
pub fn encode_mint(decimals: u8, supply: u64) -> Vec<u8> {
    let mut data = vec![0u8; MINT_BASE_SIZE];
    // mint_authority: COption None (4 bytes 0) + 32 bytes, left zero.
    data[36..44].copy_from_slice(&supply.to_le_bytes());
    data[MINT_DECIMALS_OFFSET] = decimals;
    data[MINT_INITIALIZED_OFFSET] = 1;
    data
}

// ---- program-derived addresses ---------------------------------------------------

pub fn pool_address(program: &Pubkey, token_mint: &Pubkey) -> (Pubkey, u8) {
    Pubkey::find_program_address(&[b"pool", token_mint.as_ref()], program)
}

pub fn vault_address(program: &Pubkey, pool: &Pubkey) -> (Pubkey, u8) {
    Pubkey::find_program_address(&[b"vault", pool.as_ref()], program)
}

pub fn authority_address(program: &Pubkey, pool: &Pubkey) -> (Pubkey, u8) {
    Pubkey::find_program_address(&[b"authority", pool.as_ref()], program)
}

pub fn position_address(program: &Pubkey, pool: &Pubkey, owner: &Pubkey) -> (Pubkey, u8) {
    Pubkey::find_program_address(&[b"position", pool.as_ref(), owner.as_ref()], program)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use sha2::{Digest, Sha256};

    fn key() -> impl Strategy<Value = Pubkey> {
        any::<[u8; 32]>().prop_map(Pubkey::new_from_array)
    }

    prop_compose! {
        fn any_pool()(
            keys in (key(), key(), key(), proptest::option::of(key())),
            bumps in any::<(u8, u8, u8, bool)>(),
            totals in any::<(u64, u64, u64, u64)>(),
            idx in any::<(u128, u128, i64)>(),
            r1 in any::<(u128, u128, u128, u128, u128)>(),
            r2 in any::<(u128, u128, u128, u128, u128)>(),
            tail in any::<(u16, Option<i64>, Option<u64>, Option<i32>)>(),
        ) -> LendingPool {
            LendingPool {
                authority: keys.0, token_mint: keys.1, vault: keys.2,
                pool_bump: bumps.0, authority_bump: bumps.1, vault_bump: bumps.2, paused: bumps.3,
                total_deposits: totals.0, total_borrows: totals.1, accumulated_fees: totals.2,
                total_deposit_shares: totals.3,
                deposit_index_wad: idx.0, borrow_index_wad: idx.1, last_update_ts: idx.2,
                ltv_wad: r1.0, liquidation_threshold_wad: r1.1, liquidation_bonus_wad: r1.2,
                protocol_liq_fee_wad: r1.3, reserve_factor_wad: r1.4,
                close_factor_wad: r2.0, base_rate_wad: r2.1, optimal_util_wad: r2.2,
                slope1_wad: r2.3, slope2_wad: r2.4,
                flash_fee_bps: tail.0, pyth_price_feed: keys.3,
                oracle_price: tail.1, oracle_conf: tail.2, oracle_expo: tail.3,
            }
        }
    }

    prop_compose! {
        fn any_position()(owner in key(), pool in key(), n in any::<(u64, u64, u128, u128, u64, u8)>()) -> UserPosition {
            UserPosition {
                owner, pool, deposit_shares: n.0, borrow_principal: n.1,
                deposit_idx_snap: n.2, borrow_idx_snap: n.3, original_deposit: n.4, bump: n.5,
            }
        }
    }

    #[test]
    fn discriminators_are_anchor_hashes() {
        let d =
            |name: &str| -> [u8; 8] { Sha256::digest(name.as_bytes())[..8].try_into().unwrap() };
        assert_eq!(POOL_DISCRIMINATOR, d("account:LendingPool"));
        assert_eq!(POSITION_DISCRIMINATOR, d("account:UserPosition"));
    }

    proptest! {
        #[test]
        fn pool_round_trips(pool in any_pool(), trailing in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut data = encode_pool(&pool);
            data.extend_from_slice(&trailing);
            prop_assert_eq!(decode_pool(&data), Ok(pool));
        }

        #[test]
        fn position_round_trips(pos in any_position(), trailing in proptest::collection::vec(any::<u8>(), 0..64)) {
            let data = encode_position(&pos);
            prop_assert_eq!(data.len(), POSITION_ACCOUNT_SIZE);
            prop_assert_eq!(&data[POSITION_POOL_OFFSET..POSITION_POOL_OFFSET + 32], pos.pool.as_ref());
            let mut data = data;
            data.extend_from_slice(&trailing);
            prop_assert_eq!(decode_position(&data), Ok(pos));
        }

        #[test]
        fn truncated_accounts_never_decode(pool in any_pool(), cut in 0usize..200) {
            let data = encode_pool(&pool);
            let cut = cut.min(data.len() - 1);
            prop_assert!(decode_pool(&data[..cut]).is_err());
        }

        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..400)) {
            let _ = decode_pool(&data);
            let _ = decode_position(&data);
        }

        #[test]
        fn mint_decimals_read_at_offset_44(decimals in any::<u8>(), supply in any::<u64>()) {
            let token = SPL_TOKEN_PROGRAM.parse::<Pubkey>().unwrap();
            let token22 = SPL_TOKEN_2022_PROGRAM.parse::<Pubkey>().unwrap();
            let mut data = encode_mint(decimals, supply);
            prop_assert_eq!(mint_decimals(&token, &data), Some(decimals));
            data.extend_from_slice(&[0u8; 90]); // Token-2022 extensions
            prop_assert_eq!(mint_decimals(&token22, &data), Some(decimals));
        }
    }

    #[test]
    fn wrong_accounts_are_refused() {
        let pos = encode_position(&UserPosition {
            owner: Pubkey::new_unique(),
            pool: Pubkey::new_unique(),
            deposit_shares: 1,
            borrow_principal: 0,
            deposit_idx_snap: 1,
            borrow_idx_snap: 1,
            original_deposit: 1,
            bump: 255,
        });
        assert_eq!(decode_pool(&pos), Err(DecodeError::WrongDiscriminator));
        assert_eq!(
            decode_position(&pos[..7]),
            Err(DecodeError::WrongDiscriminator)
        );
        // A bool byte of 2 is not a bool.
        let mut pool = encode_pool(&LendingPool {
            authority: Pubkey::new_unique(),
            token_mint: Pubkey::new_unique(),
            vault: Pubkey::new_unique(),
            pool_bump: 1,
            authority_bump: 2,
            vault_bump: 3,
            paused: false,
            total_deposits: 0,
            total_borrows: 0,
            accumulated_fees: 0,
            total_deposit_shares: 0,
            deposit_index_wad: 1,
            borrow_index_wad: 1,
            last_update_ts: 0,
            ltv_wad: 0,
            liquidation_threshold_wad: 0,
            liquidation_bonus_wad: 0,
            protocol_liq_fee_wad: 0,
            reserve_factor_wad: 0,
            close_factor_wad: 0,
            base_rate_wad: 0,
            optimal_util_wad: 0,
            slope1_wad: 0,
            slope2_wad: 0,
            flash_fee_bps: 0,
            pyth_price_feed: None,
            oracle_price: None,
            oracle_conf: None,
            oracle_expo: None,
        });
        pool[8 + 96 + 3] = 2;
        assert_eq!(decode_pool(&pool), Err(DecodeError::Malformed));
        let system = Pubkey::default();
        assert_eq!(
            mint_decimals(&system, &encode_mint(6, 0)),
            None,
            "wrong owner"
        );
        let token = SPL_TOKEN_PROGRAM.parse::<Pubkey>().unwrap();
        let mut uninit = encode_mint(6, 0);
        uninit[45] = 0;
        assert_eq!(mint_decimals(&token, &uninit), None, "not initialised");
        assert_eq!(mint_decimals(&token, &[0u8; 40]), None, "too short");
    }

    #[test]
    fn pdas_are_deterministic_and_distinct() {
        let program = Pubkey::new_unique();
        let mint = Pubkey::new_unique();
        let (pool, bump) = pool_address(&program, &mint);
        assert_eq!(pool_address(&program, &mint), (pool, bump));
        assert_eq!(
            Pubkey::create_program_address(&[b"pool", mint.as_ref(), &[bump]], &program).unwrap(),
            pool
        );
        let owner = Pubkey::new_unique();
        let all = [
            pool,
            vault_address(&program, &pool).0,
            authority_address(&program, &pool).0,
            position_address(&program, &pool, &owner).0,
        ];
        for i in 0..all.len() {
            for j in i + 1..all.len() {
                assert_ne!(all[i], all[j]);
            }
        }
    }
}
