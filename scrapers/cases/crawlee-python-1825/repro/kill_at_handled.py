"""Run the case's crawler.py with one change (no killtest, no strace): the first product request SIGKILLs the
process on entering the file-system request queue's mark_request_as_handled, after 1 s: longer than the
queue's state persist interval (CRAWLEE_PERSIST_STATE_INTERVAL_MILLIS=200), so the state on disk names that
request (and any other in flight) in `in_progress_requests`, as it does for any request whose handling outlasts
one persist interval. Nothing else is patched.

    python kill_at_handled.py BASE_URL
"""

import asyncio
import os
import runpy
import signal
import sys

from crawlee.storage_clients._file_system._request_queue_client import FileSystemRequestQueueClient

original = FileSystemRequestQueueClient.mark_request_as_handled


async def mark_request_as_handled(self, request):  # type: ignore[no-untyped-def]
    if "/product/" in request.url:
        await asyncio.sleep(1)
        print(f"kill_at_handled: SIGKILL in mark_request_as_handled({request.url})", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    return await original(self, request)


FileSystemRequestQueueClient.mark_request_as_handled = mark_request_as_handled  # type: ignore[method-assign]
sys.argv = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crawler.py"), *sys.argv[1:]]
runpy.run_path(sys.argv[0], run_name="__main__")
