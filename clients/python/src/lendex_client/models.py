"""The answers a bot reads most, as TypedDicts: written once from the
service's document (clients/openapi.json) and held equal to it, field for
field, by tests/test_models.py. Numbers the service writes as decimal strings
(u64, u128, WAD) stay strings: int(text) is exact, float is not."""

from typing import Any, List, Optional, TypedDict


class Pool(TypedDict, total=False):
    """docs/design.md §16.1, as GET /api/pools returns it (the `decimals` column is internal)."""
    accumulated_fees: str
    authority: str
    authority_bump: int
    base_rate_wad: str
    close_factor_wad: str
    created_at: str
    created_by: str
    flash_fee_bps: int
    init_signature: str
    last_synced_at: str
    liquidation_bonus_wad: str
    liquidation_threshold_wad: str
    ltv_wad: str
    optimal_util_wad: str
    oracle_conf: Optional[str]
    oracle_expo: Optional[int]
    oracle_price: Optional[str]
    paused: bool
    pool_address: str
    pool_bump: int
    protocol_liq_fee_wad: str
    pyth_price_feed: Optional[str]
    reserve_factor_wad: str
    slope1_wad: str
    slope2_wad: str
    symbol: Optional[str]
    token_mint: str
    total_borrows: str
    total_deposits: str
    vault: str
    vault_bump: int


class PoolsResponse(TypedDict):
    pools: List["Pool"]


class _UnhealthyRowFields(TypedDict):
    """docs/design.md §16.4, plus oracle freshness for liquidators."""
    account_health_factor_wad: str
    borrow_principal: str
    deposit_shares: str
    health_factor_wad: str
    oracle_stale: bool
    owner: str
    pool_address: str
    position_address: str


class UnhealthyRow(_UnhealthyRowFields, total=False):
    """docs/design.md §16.4, plus oracle freshness for liquidators; with
    `oracle=feed`, the owner's pools to crank (docs/design.md §17)."""
    crank: List[str]


class UnhealthyResponse(TypedDict):
    """The body of GET /api/positions/unhealthy."""
    positions: List["UnhealthyRow"]


class _LiquidationQuoteFields(TypedDict):
    """One quote: the owner's most profitable (debt pool, collateral pool) pair."""
    account_health_factor_conf_wad: str
    account_health_factor_wad: str
    collateral_pool: str
    collateral_position: str
    commitment: str
    debt_pool: str
    debt_position: str
    oracle: str
    oracle_stale: bool
    owner: str
    profit_value_wad: str
    protocol_fee_value_wad: str
    repay_amount: str
    repay_value_wad: str
    seize_amount: str
    seize_value_wad: str
    slot: int


class LiquidationQuote(_LiquidationQuoteFields, total=False):
    """One quote: the owner's most profitable (debt pool, collateral pool)
    pair; with `oracle=feed`, the owner's pools to crank in the same
    transaction, before Liquidate (docs/design.md §17)."""
    crank: List[str]


class LiquidationsResponse(TypedDict):
    liquidations: List["LiquidationQuote"]


class AtRiskAccount(TypedDict, total=False):
    """An owner close to liquidation: 1 WAD <= health factor < `below`."""
    account_health_factor_conf_wad: str
    account_health_factor_wad: str
    nearest_liquidation: Optional[Any]
    owner: str


class AtRiskResponse(TypedDict):
    accounts: List["AtRiskAccount"]


class Position(TypedDict):
    """docs/design.md §16.2."""
    borrow_idx_snap: str
    borrow_principal: str
    deposit_idx_snap: str
    deposit_shares: str
    health_factor_wad: str
    last_synced_at: str
    owner: str
    pool_address: str
    position_address: str


class PositionsResponse(TypedDict):
    positions: List["Position"]


class PositionDetail(TypedDict, total=False):
    """docs/design.md §16.3."""
    borrow_apy: float
    borrow_debt: str
    borrow_principal: str
    borrow_txs: List[Any]
    deposit_shares: str
    deposit_tokens: str
    health_factor_wad: str
    interest: str
    liquidation_price: Optional[Any]
    original_deposit: str
    pool_address: str
    principal: str
    supply_apy: float
    symbol: str


class DetailResponse(TypedDict):
    positions: List["PositionDetail"]


class NonceResponse(TypedDict):
    expiresAt: str
    message: str
    nonce: str


class Admin(TypedDict, total=False):
    """docs/design.md §16.6."""
    added_by: str
    created_at: str
    label: Optional[str]
    pubkey: str
    revoked_at: Optional[str]
    role: str


class AllowlistResponse(TypedDict):
    admins: List["Admin"]


class OkResponse(TypedDict):
    ok: bool


class _ErrorBodyFields(TypedDict):
    error: str


class ErrorBody(_ErrorBodyFields, total=False):
    """`field` names the field at fault of an `invalid` (a webhook's body)."""
    field: str


class Candidate(TypedDict, total=False):
    """The `data` of every candidate event of the feed (the stream is not in the
    document: it describes JSON answers)."""
    owner: str
    account_health_factor_wad: str
    positions: List[UnhealthyRow]
    liquidation: Optional[LiquidationQuote]
    crank: List[str]
    slot: int
    commitment: str
    oracle: str
    published_at_ms: int
    rolled_back: bool
