# SPDX-License-Identifier: MIT
"""pyprofd test target: an asyncio program with named tasks (async-aware stacks).

The event loop runs in the main thread. Scenarios (--scenario):

server (default)
    main -> gather(worker-1, worker-2); worker-N creates the task cruncher-N
    and awaits it; cruncher-N computes in slices (crunch() -> spin()) and
    yields to the loop between slices with asyncio.sleep(0). The task
    "stuck" awaits a future that is never set. A plain thread named
    "plain-sleeper" (no event loop) sleeps in nap() -> doze().

        main        main()          awaits gather(...)      line MAIN_AWAIT
        worker-N    worker()        awaits cruncher-N       line WORKER_AWAIT
        cruncher-N  cruncher()      calls crunch()          line CRUNCHER_CALL
        stuck       wait_forever()  awaits the future       line STUCK_AWAIT

taskgroup
    main opens an asyncio.TaskGroup and creates tg-child-1 and tg-child-2 in
    it, which compute like the crunchers (tg_child() -> crunch()).

churn
    main creates batches of 20 short tasks (short-N: short_job() computes a
    little and returns) and gathers them, forever: tasks are created and
    finished thousands of times a second.

Prints "pyprofd-target: ready" once the loop runs, then runs until
SIGTERM/SIGINT or until --duration SECONDS has elapsed.
"""

import argparse
import asyncio
import os
import signal
import threading
import time

SLICE = 0.004  # seconds of computing between two yields to the loop


def spin(deadline):
    x = 0
    while time.monotonic() < deadline:
        x += 1
    return x


def crunch():
    return spin(time.monotonic() + SLICE)


async def cruncher():
    while True:
        crunch()  # CRUNCHER_CALL
        await asyncio.sleep(0)  # CRUNCHER_YIELD


async def worker(i):
    child = asyncio.create_task(cruncher(), name=f"cruncher-{i}")
    await child  # WORKER_AWAIT


async def wait_forever():
    fut = asyncio.get_running_loop().create_future()
    await fut  # STUCK_AWAIT


async def tg_child():
    while True:
        crunch()  # TG_CHILD_CALL
        await asyncio.sleep(0)


def tiny():
    return spin(time.monotonic() + 0.00005)


async def short_job():
    tiny()  # SHORT_CALL
    await asyncio.sleep(0)
    tiny()


def doze():
    time.sleep(0.01)  # DOZE_CALL


def nap():
    while True:
        doze()  # NAP_CALL


async def scenario_server():
    stuck = asyncio.create_task(wait_forever(), name="stuck")
    workers = [asyncio.create_task(worker(i), name=f"worker-{i}") for i in (1, 2)]
    print("pyprofd-target: ready", flush=True)
    await asyncio.gather(*workers)  # MAIN_AWAIT
    stuck.cancel()


async def scenario_taskgroup():
    async with asyncio.TaskGroup() as tg:  # TG_MAIN
        for i in (1, 2):
            tg.create_task(tg_child(), name=f"tg-child-{i}")
        print("pyprofd-target: ready", flush=True)


async def scenario_churn():
    print("pyprofd-target: ready", flush=True)
    n = 0
    while True:
        batch = []
        for _ in range(20):
            n += 1
            batch.append(asyncio.create_task(short_job(), name=f"short-{n}"))
        await asyncio.gather(*batch)  # CHURN_AWAIT


SCENARIOS = {"server": scenario_server, "taskgroup": scenario_taskgroup, "churn": scenario_churn}


async def main(scenario, duration):
    asyncio.current_task().set_name("main")
    if duration is not None:
        asyncio.get_running_loop().call_later(duration, os._exit, 0)
    await SCENARIOS[scenario]()  # MAIN_RUN


def _exit_now(signum, frame):
    # Also as PID 1 of a PID namespace, where SIGTERM is otherwise ignored.
    os._exit(0)


parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="server")
parser.add_argument("--duration", type=float, default=None,
                    help="exit after this many seconds (default: run until killed)")
args = parser.parse_args()
signal.signal(signal.SIGTERM, _exit_now)
signal.signal(signal.SIGINT, _exit_now)
if args.scenario == "server":
    threading.Thread(target=nap, name="plain-sleeper", daemon=True).start()
asyncio.run(main(args.scenario, args.duration))
