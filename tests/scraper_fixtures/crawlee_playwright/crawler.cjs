// A Crawlee (Node.js) PlaywrightCrawler of the shop, written from Crawlee's docs ("PlaywrightCrawler",
// "Request storage", "Result storage"): the browser is Debian's Chromium (launchContext's
// executablePath: Playwright's own browser download does not work here), the requests go in the
// default request queue and the products in the default Dataset, both on Crawlee's file-system storage
// (CRAWLEE_STORAGE_DIR, kept across starts by CRAWLEE_PURGE_ON_START=false: how Crawlee resumes).
// CommonJS, so NODE_PATH finds the pinned crawlee and playwright of the env killtest built.
//
//   CRAWLEE_STORAGE_DIR=storage CRAWLEE_PURGE_ON_START=false node crawler.cjs http://127.0.0.1:8000
const { PlaywrightCrawler, Dataset, RequestQueue } = require('crawlee');

async function main(base) {
    const crawler = new PlaywrightCrawler({
        launchContext: { launchOptions: { executablePath: '/usr/bin/chromium', headless: true } },
        async requestHandler({ request, page, enqueueLinks }) {
            if (request.label === 'product') {
                await Dataset.pushData({
                    sku: (await page.textContent('.sku')).trim(),
                    price: (await page.textContent('.price')).trim(),
                    name: (await page.textContent('.name')).trim(),
                    scraped_at: Date.now() / 1000,
                });
                return;
            }
            await enqueueLinks({ selector: 'ul a', label: 'product' });
            await enqueueLinks({ selector: 'a.next' });
        },
    });
    // A short run for a test (CRAWLEE_TEST_REQUEST_LOCK_SECS): the default queue's requestLockSecs, a
    // public property of Crawlee's RequestQueue (180 s by default; prolongRequestLock adds it to the lock
    // already there, so a request in flight at a kill stays locked up to twice that). Crawlee's
    // documented route, requestHandlerTimeoutSecs with a requestQueue given to the crawler, never goes
    // below 60 s. Unset: Crawlee's defaults, as a user runs it.
    const lockSecs = Number(process.env.CRAWLEE_TEST_REQUEST_LOCK_SECS || 0);
    if (lockSecs > 0) {
        (await RequestQueue.open()).requestLockSecs = lockSecs;
    }
    await crawler.run([base.replace(/\/$/, '') + '/list/0']);
}

const base = process.argv[2];
if (!base || !/^https?:\/\//.test(base)) {
    console.error('usage: node crawler.cjs BASE_URL');
    process.exit(2);
}
main(base).catch((err) => {
    console.error(err);
    process.exit(1);
});
