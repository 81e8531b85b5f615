// A scraper in another language, kill-tested through a spec (design.toml beside it).
// It resumes from its own output: products already in the JSON-lines file are not fetched again,
// but the listing pages are, on every start. Node 20, no packages.
//
//   node scraper.mjs --base http://127.0.0.1:8000 --out records.jsonl
import { appendFileSync, existsSync, readFileSync } from "node:fs";

const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, word, i, all) =>
  word.startsWith("--") ? [...pairs, [word.slice(2), all[i + 1]]] : pairs, []));
if (!args.base || !args.out) {
  console.error("usage: node scraper.mjs --base URL --out FILE");
  process.exit(2);
}

const stored = new Set();
if (existsSync(args.out)) {
  for (const line of readFileSync(args.out, "utf8").split("\n")) {
    try { stored.add(JSON.parse(line).path); } catch { /* a line torn by a kill */ }
  }
}

async function page(path) {
  const response = await fetch(args.base + path);
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  return response.text();
}

const field = (html, name) => (html.match(new RegExp(`class="${name}">([^<]+)<`)) || [])[1];

let listing = "/list/0";
while (listing) {
  const html = await page(listing);
  for (const [, path] of html.matchAll(/href="(\/product\/\d+)"/g)) {
    if (stored.has(path)) continue;
    const product = await page(path);
    const record = { path, sku: field(product, "sku"), price: field(product, "price"), name: field(product, "name"),
                     scraped_at: Date.now() / 1000 };
    appendFileSync(args.out, JSON.stringify(record) + "\n");
    stored.add(path);
  }
  listing = (html.match(/href="(\/list\/\d+)"/) || [])[1];
}
