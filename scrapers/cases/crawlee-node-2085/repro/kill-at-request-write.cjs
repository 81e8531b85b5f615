// Preloaded with `node --require` (no killtest, no strace): SIGKILL the process in the window a kill -9 must hit
// to leave a request file empty. @crawlee/memory-storage writes a new request's file with writeFile (open with
// O_TRUNC, then write: lockAndWrite, node:fs's in background-handler/fs-utils.js at 3.5.7, node:fs/promises' in
// workers/worker-utils.js at 3.2.2); when RequestQueueClient.batchAddRequests writes the first *product* request's file (enqueueLinks
// adding the listing page's links), this lets the open create the file empty as writeFile's own open would, then
// sends SIGKILL to its own process before a byte is written. killtest's `w3` is the same write (the start's 3rd
// store write). Only the first start preloads it.
'use strict';
const fs = require('node:fs');

function killAtFirstProductRequest(path, data) {
    if (typeof path === 'string' && typeof data === 'string' && data.includes('/product/')
        && new Error().stack.includes('batchAddRequests')) {
        fs.closeSync(fs.openSync(path, 'w')); // O_CREAT | O_TRUNC, as writeFile's open
        process.stderr.write(`kill-at-request-write: SIGKILL after creating ${path}\n`);
        process.kill(process.pid, 'SIGKILL');
    }
}

const callback = fs.writeFile;
fs.writeFile = function writeFile(path, data, ...rest) {
    killAtFirstProductRequest(path, data);
    return callback.call(this, path, data, ...rest);
};
const promised = fs.promises.writeFile; // the same object as require('node:fs/promises')
fs.promises.writeFile = function writeFile(path, data, ...rest) {
    killAtFirstProductRequest(path, data);
    return promised.call(this, path, data, ...rest);
};
