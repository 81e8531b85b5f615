// A Puppeteer scraper of the shop, as a new user writes one: Puppeteer's default launch (the browser
// started detached, driven over a WebSocket), Debian's Chromium. It resumes from its own output:
// products already in the JSON-lines file are not fetched again; the listing pages are, every start.
//
//   node scraper.cjs --base http://127.0.0.1:8000 --out records.jsonl
const fs = require("node:fs");
const puppeteer = require("puppeteer");

const args = {};
process.argv.slice(2).forEach((word, i, all) => { if (word.startsWith("--")) args[word.slice(2)] = all[i + 1]; });
if (!args.base || !args.out) {
  console.error("usage: node scraper.cjs --base URL --out FILE");
  process.exit(2);
}

const stored = new Set();
if (fs.existsSync(args.out)) {
  for (const line of fs.readFileSync(args.out, "utf8").split("\n")) {
    try { stored.add(JSON.parse(line).path); } catch { /* a line torn by a kill */ }
  }
}

(async () => {
  // --no-sandbox: Chromium refuses to run as root with its sandbox (CI runs as root).
  const browser = await puppeteer.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
                                           args: ["--no-sandbox"] });
  const page = await browser.newPage();
  let listing = "/list/0";
  while (listing) {
    await page.goto(args.base + listing);
    const products = await page.$$eval("li a", (links) => links.map((a) => a.getAttribute("href")));
    const next = await page.$$eval("a.next", (links) => links.map((a) => a.getAttribute("href")));
    for (const path of products) {
      if (stored.has(path)) continue;
      await page.goto(args.base + path);
      const text = (selector) => page.$eval(selector, (element) => element.textContent);
      const record = { path, sku: await text(".sku"), price: await text(".price"), name: await text(".name"),
                       scraped_at: Date.now() / 1000 };
      fs.appendFileSync(args.out, JSON.stringify(record) + "\n");
      stored.add(path);
    }
    listing = next[0];
  }
  await browser.close();
})().catch((error) => { console.error(error); process.exit(1); });
