// Preloaded by `killtest cases --report` (NODE_OPTIONS=--require .../write-stacks.cjs) in a Node.js case's
// report run only: before each asynchronous file write (fs.writeFile, fs.promises.writeFile, and so
// fs-extra's and Crawlee's), one JSON line {pid, path, stack} is appended to $KILLTEST_WRITE_STACKS, at once.
//
// Why: an asynchronous write happens on libuv's worker thread, which holds no JavaScript frame, so the
// stack killtest reads at the held system call (V8's perf map, harness/campaigns/locate.py) cannot name
// the framework's line. The call that queued the write can: its stack, async frames included, taken when
// the framework called writeFile. The report matches it to the write the kill landed on by the file's path.
'use strict';
const fs = require('node:fs');

const sink = process.env.KILLTEST_WRITE_STACKS;

function note(path) {
    try {
        const frames = new Error().stack.split('\n').slice(3).map((line) => line.trim());
        fs.appendFileSync(sink, JSON.stringify({ pid: process.pid, path: String(path), stack: frames }) + '\n');
    } catch {
        // A report without this line still has the rest: never fail the program's own write.
    }
}

if (sink) {
    const promised = fs.promises.writeFile;
    fs.promises.writeFile = function writeFile(path, ...rest) {
        note(path);
        return promised.call(this, path, ...rest);
    };
    const called = fs.writeFile;
    fs.writeFile = function writeFile(path, ...rest) {
        note(path);
        return called.call(this, path, ...rest);
    };
}
