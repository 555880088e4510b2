-- Lendex schema: the tables of docs/design.md §16, with the cluster column (§4)
-- (pool decimals and indexes, the cluster of every chain-derived row, and the
-- slot each such row was read at). u64/u128 quantities are exact NUMERIC domains so nothing
-- is rounded; enums are CHECK constraints so the schema itself refuses bad rows.

-- Unsigned on-chain integers, exact: the domain refuses anything out of range,
-- whoever writes the row (this service, an external indexer, a bot).
CREATE DOMAIN u64 AS numeric(20,0) CHECK (VALUE BETWEEN 0 AND 18446744073709551615);
CREATE DOMAIN u128 AS numeric(39,0) CHECK (VALUE BETWEEN 0 AND 340282366920938463463374607431768211455);

CREATE TABLE IF NOT EXISTS pools (
    cluster                   text        NOT NULL CHECK (cluster IN ('mainnet', 'devnet', 'localnet')),
    pool_address              text        NOT NULL,
    token_mint                text        NOT NULL,
    symbol                    text,
    authority                 text        NOT NULL,
    vault                     text        NOT NULL,
    pool_bump                 smallint    NOT NULL CHECK (pool_bump BETWEEN 0 AND 255),
    authority_bump            smallint    NOT NULL CHECK (authority_bump BETWEEN 0 AND 255),
    vault_bump                smallint    NOT NULL CHECK (vault_bump BETWEEN 0 AND 255),
    -- Token decimals, read from the mint at registration. No default on purpose:
    -- a defaulted 9 misprices USD values and hides underwater accounts.
    decimals                  smallint    NOT NULL CHECK (decimals BETWEEN 0 AND 255),
    paused                    boolean     NOT NULL,
    total_deposits            u64 NOT NULL,
    total_borrows             u64 NOT NULL,
    accumulated_fees          u64 NOT NULL,
    total_deposit_shares      u64 NOT NULL,
    deposit_index_wad         u128 NOT NULL,
    borrow_index_wad          u128 NOT NULL,
    last_update_ts            bigint      NOT NULL,
    ltv_wad                   u128 NOT NULL,
    liquidation_threshold_wad u128 NOT NULL,
    liquidation_bonus_wad     u128 NOT NULL,
    protocol_liq_fee_wad      u128 NOT NULL,
    reserve_factor_wad        u128 NOT NULL,
    close_factor_wad          u128 NOT NULL,
    base_rate_wad             u128 NOT NULL,
    optimal_util_wad          u128 NOT NULL,
    slope1_wad                u128 NOT NULL,
    slope2_wad                u128 NOT NULL,
    flash_fee_bps             integer     NOT NULL CHECK (flash_fee_bps BETWEEN 0 AND 65535),
    oracle_price              bigint,
    oracle_conf               u64,
    oracle_expo               integer,
    pyth_price_feed           text,
    created_by                text        NOT NULL,
    init_signature            text        NOT NULL,
    -- Context slot of the chain read this row holds: an older read never overwrites it.
    slot                      bigint      NOT NULL CHECK (slot >= 0),
    -- When the service last saw oracle_price change (the account has no publish time).
    oracle_observed_at        timestamptz,
    last_synced_at            timestamptz NOT NULL DEFAULT now(),
    created_at                timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster, pool_address)
);
CREATE INDEX IF NOT EXISTS pools_cluster_created_idx ON pools (cluster, created_at, pool_address);

CREATE TABLE IF NOT EXISTS positions (
    cluster           text          NOT NULL,
    position_address  text          NOT NULL,
    pool_address      text          NOT NULL,
    owner             text          NOT NULL,
    deposit_shares    u64 NOT NULL,
    borrow_principal  u64 NOT NULL,
    deposit_idx_snap  u128 NOT NULL,
    borrow_idx_snap   u128 NOT NULL,
    original_deposit  u64 NOT NULL DEFAULT 0,
    -- Account-level health factor of the owner (the same on each of the owner's rows).
    -- u128 max means "no debt"; the health-factor cache keeps it current.
    health_factor_wad u128          NOT NULL DEFAULT 340282366920938463463374607431768211455,
    slot              bigint        NOT NULL DEFAULT 0 CHECK (slot >= 0),
    last_synced_at    timestamptz   NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster, position_address),
    FOREIGN KEY (cluster, pool_address) REFERENCES pools (cluster, pool_address) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS positions_owner_idx ON positions (cluster, owner, last_synced_at DESC);
CREATE INDEX IF NOT EXISTS positions_pool_idx ON positions (cluster, pool_address);
CREATE INDEX IF NOT EXISTS positions_hf_idx ON positions (cluster, health_factor_wad);

CREATE TABLE IF NOT EXISTS tx_log (
    id            bigserial     PRIMARY KEY,
    cluster       text          NOT NULL CHECK (cluster IN ('mainnet', 'devnet', 'localnet')),
    signature     text          NOT NULL UNIQUE,
    pool_address  text,
    wallet        text          NOT NULL,
    action        text          NOT NULL CHECK (action IN (
                      'deposit', 'withdraw', 'borrow', 'repay', 'liquidate', 'flash', 'init',
                      'update_pool', 'pause', 'resume', 'collect_fees', 'update_oracle')),
    amount        u64,
    status        text          NOT NULL CHECK (status IN ('pending', 'confirmed', 'failed')),
    error_msg     text,
    created_at    timestamptz   NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS tx_log_cluster_idx ON tx_log (cluster, id DESC);
CREATE INDEX IF NOT EXISTS tx_log_wallet_idx ON tx_log (cluster, wallet, id DESC);
CREATE INDEX IF NOT EXISTS tx_log_pool_idx ON tx_log (cluster, pool_address, id DESC);

CREATE TABLE IF NOT EXISTS pool_admins (
    pubkey      text        PRIMARY KEY,
    role        text        NOT NULL CHECK (role IN ('super_admin', 'pool_admin')),
    label       text,
    added_by    text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);
CREATE INDEX IF NOT EXISTS pool_admins_active_idx ON pool_admins (created_at) WHERE revoked_at IS NULL;

CREATE TABLE IF NOT EXISTS audit_log (
    id          bigserial   PRIMARY KEY,
    actor       text        NOT NULL,
    action      text        NOT NULL,
    target      text        NOT NULL,
    details     jsonb       NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(details) = 'object'),
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS audit_log_actor_idx ON audit_log (actor, id DESC);
CREATE INDEX IF NOT EXISTS audit_log_action_idx ON audit_log (action, id DESC);

CREATE TABLE IF NOT EXISTS auth_nonces (
    pubkey      text        NOT NULL,
    nonce       text        NOT NULL CHECK (nonce ~ '^[0-9a-f]{32}$'),
    -- The action the nonce was issued for; it is spent only on that action.
    action      text        NOT NULL,
    expires_at  timestamptz NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (pubkey, nonce)
);
CREATE INDEX IF NOT EXISTS auth_nonces_expiry_idx ON auth_nonces (expires_at);
CREATE INDEX IF NOT EXISTS auth_nonces_wallet_idx ON auth_nonces (pubkey, created_at);
