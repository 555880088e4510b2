// Receives Lendex's webhooks: each delivery verified with the
// `standardwebhooks` package against the secret shown when the webhook was
// created, a repeat (the same webhook-id) skipped, and each event printed as
// a line. Answers fast: Lendex waits for the answer, not for your work.
//
//   WEBHOOK_SECRET=whsec_... PORT=8787 node webhook-receiver.mjs
import { createServer } from "node:http";
import { Webhook } from "standardwebhooks";

const hook = new Webhook(process.env.WEBHOOK_SECRET);
const port = Number(process.env.PORT ?? 8787);
const seen = new Set(); // webhook-ids handled (keep them in your database in production)
const MAX_BODY = 4 * 1024 * 1024;

const server = createServer((req, res) => {
  const chunks = [];
  let size = 0;
  req.on("data", (chunk) => {
    size += chunk.length;
    if (size > MAX_BODY) req.destroy();
    else chunks.push(chunk);
  });
  req.on("end", () => {
    // The exact bytes received, before any parsing.
    const body = Buffer.concat(chunks).toString("utf8");
    let delivery;
    try {
      delivery = hook.verify(body, req.headers);
    } catch (e) {
      console.log(`refused: ${e.message}`);
      res.writeHead(401).end();
      return;
    }
    const id = req.headers["webhook-id"];
    if (seen.has(id)) {
      console.log(`duplicate ${id}`);
      res.writeHead(200).end();
      return;
    }
    seen.add(id);
    for (const e of delivery.events) {
      console.log(
        `${e.type} ${e.owner} ${e.account_health_factor_wad} below ${e.below_wad} change ${e.change_id}`,
      );
    }
    res.writeHead(204).end();
  });
});
server.listen(port, "127.0.0.1", () => console.log(`listening on ${port}`));
