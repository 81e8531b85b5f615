// Preloaded with `node --require` (no killtest, no strace): SIGKILL the process in the window a kill -9 must hit
// to leave a dataset item file empty. @crawlee/memory-storage writes each item's file once, with fs.writeFile
// (open with O_TRUNC, then write: background-handler/fs-utils.js, lockAndWrite, called by fs/dataset/fs.js);
// at the first write of a product's item this lets the open create (or truncate) the file as writeFile's own
// open would, then sends SIGKILL to its own process before a byte is written. The window is microseconds wide,
// so a timed kill -9 from a shell seldom lands in it; this lands it every time. Only the first start preloads it.
'use strict';
const fs = require('node:fs');

// The file written is the item's own, or (with a candidate patch, ../dataset-item-atomic.*.patch or the
// locking case's) the temporary file renamed over it: whichever the framework opens, that open is killed after.
function killAtFirstItem(path, data) {
    if (typeof path === 'string' && typeof data === 'string' && data.includes('"sku"')
        && (path.includes('/datasets/') || path.includes('/.crawlee-tmp/'))) {
        fs.closeSync(fs.openSync(path, 'w')); // O_CREAT | O_TRUNC, as writeFile's open
        process.stderr.write(`kill-at-item-write: SIGKILL after opening ${path}\n`);
        process.kill(process.pid, 'SIGKILL');
    }
}
for (const [owner, name] of [[fs, 'writeFile'], [fs.promises, 'writeFile']]) {
    const original = owner[name];
    owner[name] = function writeFile(path, data, ...rest) {
        killAtFirstItem(path, data);
        return original.call(this, path, data, ...rest);
    };
}
