// A crawl of the shop on a real BullMQ queue (one job per page), the way BullMQ's docs write a worker.
// One start is one worker process; it exits when no job of the crawl waits, runs or is delayed.
//
//   node worker.cjs --base URL --redis redis://127.0.0.1:PORT/0 [--store append|upsert]
//                   [--lock-ms 2000] [--stalled-ms 500] [--max-stalled 1]
//
// A product job stores the product's record, then downloads its photo (the page's <img class="photo">)
// and keeps it beside the record. --store append: the record is appended under a new id (an
// auto-increment id, as an INSERT does): not idempotent per job. --store upsert: the record is written
// under its SKU: idempotent per job. The photo is kept under the SKU either way.
const { Queue, Worker } = require('bullmq');
const IORedis = require('ioredis');

const args = { store: 'append', 'lock-ms': '2000', 'stalled-ms': '500', 'max-stalled': '1' };
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
if (!args.base || !/^redis:\/\//.test(args.redis || '') || !['append', 'upsert'].includes(args.store)) {
    console.error('usage: node worker.cjs --base URL --redis redis://HOST:PORT/DB [--store append|upsert]');
    process.exit(2);
}
const base = args.base.replace(/\/$/, '');
const QUEUE = 'crawl';

async function get(path) {
    const response = await fetch(base + path);
    if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
    return response;
}
const page = async (path) => (await get(path)).text();
const field = (html, name) => (html.match(new RegExp(`class="${name}">([^<]+)<`)) || [])[1];

async function main() {
    const client = new IORedis(args.redis, { maxRetriesPerRequest: null });
    // BullMQ 6 takes the client it is given (ioredis is its peer dependency); blocking calls get a copy.
    const connection = new IORedis(args.redis, { maxRetriesPerRequest: null });
    const queue = new Queue(QUEUE, { connection });
    // The job ID is the path: BullMQ adds a job whose ID it already holds only once.
    const add = (path) => queue.add('page', { path }, { jobId: path.replace(/\//g, '_'), removeOnComplete: false });
    await add('/list/0');

    const worker = new Worker(QUEUE, async (job) => {
        const { path } = job.data;
        const html = await page(path);
        if (path.startsWith('/list/')) {
            for (const [, link] of html.matchAll(/href="(\/product\/\d+)"/g)) await add(link);
            const next = (html.match(/href="(\/list\/\d+)"/) || [])[1];
            if (next) await add(next);
            return;
        }
        const record = { sku: field(html, 'sku'), price: field(html, 'price'), name: field(html, 'name'),
                         path, scraped_at: Date.now() / 1000 };
        const id = args.store === 'upsert' ? record.sku : String(await client.incr('record-ids'));
        await client.hset('records', id, JSON.stringify(record));
        const photo = (html.match(/class="photo" src="([^"]+)"/) || [])[1];
        if (photo) await client.hset('photos', record.sku, Buffer.from(await (await get(photo)).arrayBuffer()));
    }, {
        connection, concurrency: 1,
        // BullMQ's documented lock options, short so a run takes seconds (issue 23 point 3): a job
        // whose worker died is seen as stalled lockDuration after its last renewal (default 30 s)
        // by a stalled check every stalledInterval (default 30 s); maxStalledCount (default 1) is
        // how many stalls a job survives before it is failed.
        lockDuration: Number(args['lock-ms']), stalledInterval: Number(args['stalled-ms']),
        maxStalledCount: Number(args['max-stalled']),
    });
    worker.on('error', (err) => console.error('worker error:', err.message));
    worker.on('failed', (job, err) => console.error(`job ${job && job.id} failed: ${err.message}`));
    worker.on('stalled', (id) => console.error(`job ${id} stalled`));

    // Done when nothing waits, runs or is delayed (a job held by a killed worker stays "active"
    // until a stalled check moves it back to waiting, or to failed).
    for (;;) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'paused');
        if (Object.values(counts).every((n) => n === 0)) break;
    }
    await worker.close();
    await queue.close();
    await client.quit();
    await connection.quit();
}

main().catch((err) => {
    console.error(err);
    process.exit(1);
});
