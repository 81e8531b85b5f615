// A Puppeteer spider for the bookshop at books.test, kill-tested against a recording of it
// (examples/recorded-site/puppeteer.toml). A browser reads no HTTPS_PROXY or SSL_CERT_FILE: killtest gives
// Chromium's own flags in KILLTEST_BROWSER_ARGS (the proxy, trust of the proxy's CA by its key's hash,
// no background traffic), and the spider passes them to its launch. It resumes from its own output.
//
//   node puppeteer_spider.cjs --start http://books.test/ --out books.jsonl
const fs = require("node:fs");
const puppeteer = require("puppeteer");

const args = {};
process.argv.slice(2).forEach((word, i, all) => { if (word.startsWith("--")) args[word.slice(2)] = all[i + 1]; });
const seen = new Set();
if (fs.existsSync(args.out)) {
  for (const line of fs.readFileSync(args.out, "utf8").split("\n")) {
    try { seen.add(JSON.parse(line).url); } catch { /* a line torn by a kill */ }
  }
}
const hrefs = (page, selector) => page.$$eval(selector, (links) => links.map((a) => a.href));

(async () => {
  const flags = (process.env.KILLTEST_BROWSER_ARGS || "").split(" ").filter(Boolean);
  const browser = await puppeteer.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
                                           args: ["--no-sandbox", ...flags] });
  const page = await browser.newPage();
  await page.goto(args.start);
  let catalogue = (await hrefs(page, "a")).find((href) => href.includes("catalogue"));
  while (catalogue) {
    await page.goto(catalogue);
    const books = await hrefs(page, "a.book");
    const next = await hrefs(page, "a.next");
    for (const url of books) {
      if (seen.has(url)) continue;
      await page.goto(url);
      const text = (selector) => page.$eval(selector, (element) => element.textContent);
      const record = { url, upc: await text(".upc"), price: await text(".price"), title: await text(".title"),
                       scraped_at: Date.now() / 1000 };
      fs.appendFileSync(args.out, JSON.stringify(record) + "\n");
      seen.add(url);
    }
    catalogue = next[0];
  }
  await browser.close();
})().catch((error) => { console.error(error); process.exit(1); });
