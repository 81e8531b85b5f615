// Preloaded with `node --require` (no killtest, no strace): SIGKILL the process in the window a kill -9 must hit
// to leave a request file empty. @crawlee/memory-storage writes a request's file with fs.writeFile (open with
// O_TRUNC, then write: background-handler/fs-utils.js, lockAndWrite); when RequestQueueClient.listAndLockHead
// records a *product* request's lock in its file, this lets the open truncate the file as writeFile's own open
// would, then sends SIGKILL to its own process before a byte is written. The window is microseconds wide, so a
// timed kill -9 from a shell seldom lands in it; this lands it every time. Only the first start preloads it.
'use strict';
const fs = require('node:fs');

const original = fs.writeFile;
fs.writeFile = function writeFile(path, data, ...rest) {
    const stack = new Error().stack;
    // The file written is the request's own, or (with the candidate patch, ../atomic-lock-and-write.*.patch)
    // the temporary file renamed over it: whichever the framework opens, that open is the one killed after.
    if (typeof path === 'string' && typeof data === 'string' && data.includes('/product/')
        && stack.includes('listAndLockHead')) {
        fs.closeSync(fs.openSync(path, 'w')); // O_TRUNC, as writeFile's open
        process.stderr.write(`kill-at-lock-write: SIGKILL after truncating ${path}\n`);
        process.kill(process.pid, 'SIGKILL');
    }
    return original.call(this, path, data, ...rest);
};
