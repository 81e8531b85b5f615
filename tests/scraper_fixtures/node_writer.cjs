// A Node.js scraper for tests/test_node_locate.py: CommonJS, no packages, and no resume (each start
// scrapes the whole catalog again, so a kill after a record duplicates it). Its records are written by
// a named function, synchronously (fs.appendFileSync) or, with --async, from libuv's worker thread.
//
//   node node_writer.cjs BASE_URL OUT_FILE [--async]
const fs = require("fs");

const [base, out, mode] = process.argv.slice(2);
const field = (html, name) => (html.match(new RegExp(`class="${name}">([^<]+)<`)) || [])[1];

async function page(path) {
  const response = await fetch(base + path);
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  return response.text();
}

async function saveRecord(record) {
  const line = JSON.stringify(record) + "\n";
  if (mode === "--async") await fs.promises.appendFile(out, line);
  else fs.appendFileSync(out, line);
}

async function crawl() {
  let listing = "/list/0";
  while (listing) {
    const html = await page(listing);
    for (const [, path] of html.matchAll(/href="(\/product\/\d+)"/g)) {
      const product = await page(path);
      await saveRecord({ sku: field(product, "sku"), price: field(product, "price"), name: field(product, "name") });
    }
    listing = (html.match(/href="(\/list\/\d+)"/) || [])[1];
  }
}

crawl().catch((error) => { console.error(error.message); process.exit(1); });
