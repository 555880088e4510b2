"""The package against a real `lendex serve` with a market (run by
tests/api/clients.rs): every public route's answer through the sync client,
the errors as the spec's bodies, a signed call, a stranger's and a forged one,
a feed that cannot resume surfacing `reset`, and the asyncio client's reads.
Prints "ok <n> checks" or fails with the first difference.

    LENDEX_URL=... KEYPAIR=<super-admin keypair file> python tests/integration.py
"""

import asyncio
import os
import time

from lendex_client import AsyncClient, Client, KeypairSigner, LendexError, RefusedError, keypair_file

client = Client(os.environ.get("LENDEX_URL", "http://127.0.0.1:8080"))
root = keypair_file(os.environ["KEYPAIR"])
checks = 0


def check(what, ok):
    global checks
    assert ok, what
    checks += 1


def refused(call, status, error, field=None):
    try:
        call()
    except LendexError as e:
        return (e.status, e.error) == (status, error) and field in (None, e.field)
    return False


health = client.health()
check("health", health["status"] in ("ok", "degraded"))
pools = client.pools()["pools"]
check("pools", len(pools) >= 2)
pool = pools[0]["pool_address"]
check("pool status", len(client.pool_status()["pools"]) == len(pools))
check("pool prices", client.pool_prices(pool)["pool"] == pool)
check("unregistered", isinstance(client.unregistered_pools()["pools"], list))
under = client.unhealthy(limit=10)["positions"]
check("unhealthy", len(under) >= 1)
owner = under[0]["owner"]
check("positions", len(client.positions(owner)["positions"]) >= 1)
check("detail", len(client.detail(owner)["positions"]) >= 1)
held = client.positions(owner)["positions"][0]
found = client.address(held["position_address"])
check("address of a position", (found["kind"], found["owner"], found["pool_address"]) == ("position", owner, held["pool_address"]))
check("address of a pool", client.address(pool)["kind"] == "pool")
check("address of a wallet", client.address(owner)["kind"] == "wallet")
check("owner history", isinstance(client.owner_history(owner)["points"], list))
quotes = client.liquidations(limit=5)["liquidations"]
check("liquidations", len(quotes) >= 1 and int(quotes[0]["repay_amount"]) > 0)
check("at risk", isinstance(client.at_risk()["accounts"], list))
check("history events", isinstance(client.history_events()["events"], list))
check("history market", isinstance(client.history_market()["points"], list))
check("shock", client.risk_shock([(pool, -3300)])["shock"][0]["pool"] == pool)
check("curve", len(client.risk_curve(pool, steps=4)["points"]) == 5)
check("me", client.me(root.public_key)["role"] == "super_admin")
check("allowlist", len(client.allowlist()["admins"]) >= 1)
check("audit", isinstance(client.audit(limit=5)["entries"], list))
signature = f"py-client-{time.time_ns()}"
check("record", client.record_transaction({"signature": signature, "wallet": owner, "action": "deposit", "amount": "5"})["ok"])
check("transactions", any(t["signature"] == signature for t in client.transactions(wallet=owner)["transactions"]))
check("sync pool", client.sync_pool(pool)["pool_address"] == pool)

check("invalid", refused(lambda: client.positions("x"), 400, "invalid"))
check("bad shock", refused(lambda: client.risk_shock(f"{pool}:999999"), 400, "invalid"))
check("processed on a confirmed server", refused(lambda: client.liquidations(commitment="processed"), 400, "invalid"))
check("unknown pool", refused(lambda: client.pool_prices("11111111111111111111111111111111"), 404, "not found"))

wallet = KeypairSigner.generate().public_key
check("add admin", client.add_admin(root, wallet, "pool_admin", "py") == {"ok": True})
check("me after", client.me(wallet)["role"] == "pool_admin")
check("stranger", refused(lambda: client.revoke_admin(KeypairSigner.generate(), wallet), 401, "not authorized"))
issued = client.nonce(root.public_key, f"revoke_admin:{wallet}")
forged = {"actor": root.public_key, "nonce": issued["nonce"], "signature": "1" * 64, "pubkey": wallet}
check("forged", refused(lambda: client.request("DELETE", "/api/admin/allowlist", body=forged), 401, "bad signature"))


class Liar:
    public_key = root.public_key

    def sign_message(self, message):
        return bytes(64)


try:
    client.revoke_admin(Liar(), wallet)
    check("a wallet signing something else", False)
except RefusedError:
    check("a wallet signing something else", True)
check("revoke", client.revoke_admin(root, wallet) == {"ok": True})

created = client.create_webhook(root, "https://93.184.215.14/py", below_wad="1050000000000000000", owners=[owner])
check("webhook created", created["secret"].startswith("whsec_"))
check("webhooks", any(w["id"] == created["id"] and "secret" not in w for w in client.webhooks(root)["webhooks"]))
check("webhook deliveries", client.webhook_deliveries(root, created["id"], limit=5) == {"deliveries": []})
check("webhook deleted", client.delete_webhook(root, created["id"])["id"] == created["id"])
check("bad webhook", refused(lambda: client.create_webhook(root, "ftp://example.com"), 400, "invalid", "url"))

feed = client.unhealthy_stream(last_event_id="1.1")
seen = []
for event in feed:
    seen.append(event.event)
    if event.event == "candidate_start":
        feed.stop()
check("reset", seen[:2] == ["reset", "candidate_start"])


async def asynchronous():
    async with AsyncClient(os.environ.get("LENDEX_URL", "http://127.0.0.1:8080")) as aio:
        check("async liquidations", len((await aio.liquidations(limit=5))["liquidations"]) >= 1)
        polled = await aio.poll_once("liquidations", {"limit": 5})
        again = await aio.poll_once("liquidations", {"limit": 5}, etag=polled.etag)
        check("async 304", polled.changed and not again.changed)
        check("async signed", await aio.add_admin(root, wallet, "pool_admin") == {"ok": True})
        async for event in aio.unhealthy_stream():
            check("async stream", event.event == "candidate_start")
            break


asyncio.run(asynchronous())
print(f"ok {checks} checks")
