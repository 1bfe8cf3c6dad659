"""A bounded flood of unauthenticated HTTPS requests at the operator, from a process of its own:
`python httpflood.py PORT CONNECTIONS`. Connections are kept alive, as a scraper's would be, so
the load is the server's answering, not TLS handshakes. On SIGTERM it prints
{"status code": count, ...} as JSON and exits."""

from __future__ import annotations

import asyncio
import collections
import json
import signal
import sys

import aiohttp


async def flood(port: int, connections: int) -> None:
    counts: collections.Counter[int] = collections.Counter()
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    connector = aiohttp.TCPConnector(ssl=False, limit=connections)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def worker() -> None:
            while not stop.is_set():
                try:
                    async with session.get(f"https://127.0.0.1:{port}/metrics") as resp:
                        await resp.read()
                        counts[resp.status] += 1
                except aiohttp.ClientError:
                    counts[0] += 1

        workers = [asyncio.create_task(worker()) for _ in range(connections)]
        await stop.wait()
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    print(json.dumps(counts), flush=True)


if __name__ == "__main__":
    asyncio.run(flood(int(sys.argv[1]), int(sys.argv[2])))
