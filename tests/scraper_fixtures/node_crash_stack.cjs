// A Node.js scraper for tests/test_check_findings.py that crashes the way Crawlee's crawlers do
// (crawlee-node-2085): its queue file does not parse, and `main().catch(err => { console.error(err);
// process.exit(1) })` prints the error and its stack, so stderr ends inside the stack, with no
// `Node.js vNN` line after it. The first start fetches /list/0 and waits to be killed; every later
// start (or, with --at-once, the first) reads an empty queue file and crashes. With --props the error
// carries properties, as Node.js' system errors do (`errno`, `code`, `syscall`, `path`), so
// `console.error(err)` ends its stack with ` {`, one line per property and a closing `}`.
//
//   node node_crash_stack.cjs BASE_URL WORK_DIR [--at-once] [--props]
const fs = require("fs");
const path = require("path");

const [base, workDir, ...modes] = process.argv.slice(2);
const queue = path.join(workDir, "queue.json");

async function readQueue() {
  return JSON.parse(fs.readFileSync(queue, "utf-8"));  // "" -> SyntaxError: Unexpected end of JSON input
}

async function main() {
  if (modes.includes("--at-once")) fs.writeFileSync(queue, "");
  if (fs.existsSync(queue)) await readQueue();
  fs.writeFileSync(queue, "");  // left empty, as a kill between open(O_TRUNC) and write leaves it
  await fetch(base + "/list/0");
  await new Promise((resolve) => setTimeout(resolve, 60000));
}

main().catch((err) => {
  if (modes.includes("--props")) Object.assign(err, {errno: -22, code: "E_QUEUE", syscall: "read", path: queue});
  console.error(err);
  process.exit(1);
});
