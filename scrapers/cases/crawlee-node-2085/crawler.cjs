// A plain Crawlee (Node.js) CheerioCrawler of the shop, the way Crawlee's docs write one, on its
// default file-system storage (@crawlee/memory-storage persisting to CRAWLEE_STORAGE_DIR).
// CommonJS, so NODE_PATH finds the pinned crawlee of the case's env.
//
//   CRAWLEE_STORAGE_DIR=storage CRAWLEE_PURGE_ON_START=false node crawler.cjs http://127.0.0.1:8000
const fs = require('node:fs');
const { CheerioCrawler, Dataset } = require('crawlee');

// With CRAWLER_LOG set (`killtest cases --report` sets it), what Crawlee writes to stdout and stderr is
// also appended to that file, synchronously, so a SIGKILL loses none of it: the report quotes the
// framework's own log lines. killtest keeps no start's output after a run.
if (process.env.CRAWLER_LOG) {
    // One line opens each start's output: the report tells starts apart, and leaves out killtest's recording.
    fs.appendFileSync(process.env.CRAWLER_LOG,
        `--- crawler started: pid ${process.pid}, storage ${process.env.CRAWLEE_STORAGE_DIR || ''}\n`);
    for (const stream of [process.stdout, process.stderr]) {
        const write = stream.write.bind(stream);
        stream.write = (chunk, ...rest) => {
            fs.appendFileSync(process.env.CRAWLER_LOG, chunk);
            return write(chunk, ...rest);
        };
    }
}

// Crawlee names each request's file after a hash of its uniqueKey (by default the URL, port included).
// killtest aims a store-write point on a recording made against a shop on another port, so the key is
// the path alone (uniqueKey is Crawlee's documented way to say when two requests are the same): the
// same request gets the same file name in the recording and in the start the point kills.
function byPath(request) {
    request.uniqueKey = new URL(request.url).pathname;
    return request;
}

async function main(base) {
    const crawler = new CheerioCrawler({
        // A small, fixed concurrency: the same order of work on every start (killtest's write
        // points count writes, so a steadier order gives steadier points).
        maxConcurrency: 2,
        async requestHandler({ request, $, enqueueLinks }) {
            if (request.label === 'product') {
                await Dataset.pushData({
                    sku: $('.sku').text(), price: $('.price').text(), name: $('.name').text(),
                    scraped_at: Date.now() / 1000,
                });
                return;
            }
            await enqueueLinks({ selector: 'ul a', label: 'product', transformRequestFunction: byPath });
            await enqueueLinks({ selector: 'a.next', transformRequestFunction: byPath });
        },
    });
    await crawler.run([byPath({ url: base.replace(/\/$/, '') + '/list/0' })]);
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
