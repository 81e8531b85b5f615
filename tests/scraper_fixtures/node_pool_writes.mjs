// A crawler that keeps its storage as Crawlee's @crawlee/memory-storage does: a request-queue file per page and
// a dataset file per record, written with fs.promises, so on libuv's thread pool (four threads unless told).
// Its mistake, for explore to find: writeFile truncates a record's file before writing it, and a start that sees
// the file (empty, after a kill in between) takes the record for stored.
//   node node_pool_writes.mjs --base URL --out STORAGE_DIR
import { mkdir, readdir, writeFile } from "node:fs/promises";
import path from "node:path";

const argv = process.argv.slice(2);
const base = argv[argv.indexOf("--base") + 1], out = argv[argv.indexOf("--out") + 1];
const queue = path.join(out, "request_queues"), dataset = path.join(out, "datasets");
await mkdir(queue, { recursive: true });
await mkdir(dataset, { recursive: true });
const stored = new Set(await readdir(dataset));
const queued = (page) => path.join(queue, page.replace(/\//g, "_") + ".json");
let listing = "/list/0";
while (listing) {
  const html = await (await fetch(base + listing)).text();
  const products = [...html.matchAll(/href="(\/product\/\d+)"/g)].map((m) => m[1]);
  await Promise.all(products.map((p) => writeFile(queued(p), JSON.stringify({ url: p, handled: false }))));
  for (const p of products) {
    const page = await (await fetch(base + p)).text();
    const sku = page.match(/class="sku">([^<]+)/)[1];
    if (stored.has(sku + ".json")) continue;
    const record = { sku, price: page.match(/class="price">([^<]+)/)[1], name: page.match(/class="name">([^<]+)/)[1] };
    await Promise.all([writeFile(path.join(dataset, sku + ".json"), JSON.stringify(record)),
                       writeFile(queued(p), JSON.stringify({ url: p, handled: true }))]);
  }
  const next = html.match(/class="next" href="([^"]+)"/);
  listing = next ? next[1] : null;
}
