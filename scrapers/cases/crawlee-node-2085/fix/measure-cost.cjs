// The cost of a dataset write: Dataset.pushData of N items (default 1000), one at a time, on the default
// file-system storage of the crawlee found on NODE_PATH (as published, or with a patch applied): wall and CPU time
// an item (process.cpuUsage, which counts libuv's threads). No server, no kill.
//   NODE_PATH=<node_modules> node measure-cost.cjs 2000
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-push-'));
process.env.CRAWLEE_STORAGE_DIR = dir;
const { Dataset } = require('crawlee');
(async () => {
    const n = Number(process.argv[2] || 1000);
    const dataset = await Dataset.open();
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) await dataset.pushData({ sku: `SKU-${i}`, price: `${i}.99`, name: `Product ${i}` });
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    const c = process.cpuUsage(c0);
    const cpu = (c.user + c.system) / 1000;
    const files = fs.readdirSync(path.join(dir, 'datasets', 'default')).filter((f) => /^\d+\.json$/.test(f)).length;
    console.log(`${n} items in ${ms.toFixed(0)} ms (${(ms / n).toFixed(3)} ms an item), CPU ${cpu.toFixed(0)} ms (${(cpu / n).toFixed(3)} ms an item), ${files} item files`);
    fs.rmSync(dir, { recursive: true, force: true });
})();
