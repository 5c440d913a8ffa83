"""The Ray driver of `pkc tune --ray ADDRESS` (shipped inside pkc).

pkc writes one JSON request on this script's standard input:

    {"address": "HOST:PORT" | "auto", "pkc": "/path/to/pkc",
     "libtpu": "/path/to/libtpu.so" | null, "env": {"TPU_...": "..."},
     "batches_per_cpu": N, "jobs": [{"id": 0, "target": "v5e", "module": "..."}]}

and reads JSON lines back on its standard output, as they happen:

    {"type": "cluster", "nodes": 3, "cpus": 2.0}
    {"type": "result", "id": 0, "code_bytes": ..., "memory": {...},
     "node": "...", "worker": 1234}                 (or "refused": "...")
    {"type": "done", "nodes": [...], "workers": [...]}
    {"type": "error", "kind": "no-ray" | "connect" | "task", "message": "..."}

Each Ray task runs `pkc tune-worker` on the node it lands on, with one
batch of jobs on its standard input: libtpu compiles them there, exactly as
`pkc tune` compiles them locally. Every node needs pkc at the same path
(or a shared file system) and libtpu where pkc looks for it.
"""

import json
import logging
import os
import sys


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def compile_batch(pkc, libtpu, env, jobs):
    """One Ray task: compile a batch of StableHLO modules with libtpu."""
    import socket
    import subprocess

    import ray

    where = {
        "node": ray.get_runtime_context().get_node_id(),
        "worker": os.getpid(),
        "host": socket.gethostname(),
    }
    if not (os.path.isfile(pkc) and os.access(pkc, os.X_OK)):
        return dict(where, error=f"no executable pkc at {pkc} on host {where['host']}")
    args = [pkc, "tune-worker"] + (["--libtpu", libtpu] if libtpu else [])
    p = subprocess.run(
        args,
        input=json.dumps({"jobs": jobs}),
        capture_output=True,
        text=True,
        env=dict(os.environ, **env),
    )
    results, errors = [], []
    for line in p.stdout.splitlines():
        if line.strip():
            r = json.loads(line)
            (errors if "error" in r else results).append(r)
    if errors or len(results) != len(jobs):
        why = errors[0]["error"] if errors else p.stderr.strip()[-2000:]
        return dict(where, error=f"pkc tune-worker on {where['host']} exited {p.returncode}: {why}")
    return dict(where, results=results)


def main():
    req = json.load(sys.stdin)
    # This script lives in a temporary directory, which may hold Ray's own
    # `ray/` session folder: it must not shadow the package.
    sys.path = sys.path[1:]
    try:
        import ray

        ray.init  # noqa: B018 - a namespace package has no `init`
    except Exception as e:  # noqa: BLE001 - any import failure means no Ray
        emit({"type": "error", "kind": "no-ray", "message": f"{type(e).__name__}: {e}"})
        return
    address = req["address"]
    if address != "auto" and ":" in address:
        # Ray retries an unreachable head for a long time; a closed port is
        # known at once.
        import socket
        host, _, port = address.rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=10).close()
        except (OSError, ValueError) as e:
            emit({"type": "error", "kind": "connect", "message": f"no Ray head answers there ({e})"})
            return
    try:
        ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
    except Exception as e:  # noqa: BLE001 - Ray raises several kinds here
        emit({"type": "error", "kind": "connect", "message": f"{type(e).__name__}: {e}"})
        return
    try:
        run(ray, req)
    finally:
        ray.shutdown()


def run(ray, req):
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    cpus = ray.cluster_resources().get("CPU", 0.0)
    emit({"type": "cluster", "nodes": len(nodes), "cpus": cpus})
    if cpus < 1:
        emit({"type": "error", "kind": "connect",
              "message": f"the cluster at {req['address']} has no CPU to run tasks on"})
        return
    jobs = req["jobs"]
    n = max(1, min(len(jobs), int(req.get("batches_per_cpu", 1) * cpus)))
    batches = [jobs[i::n] for i in range(n)]
    task = ray.remote(num_cpus=1)(compile_batch)
    pending = [task.remote(req["pkc"], req.get("libtpu"), req.get("env") or {}, b)
               for b in batches if b]
    used_nodes, used_workers = set(), set()
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        try:
            r = ray.get(done[0])
        except Exception as e:  # noqa: BLE001 - a task that died
            r = {"error": f"{type(e).__name__}: {e}"}
        if "error" in r:
            for p in pending:
                ray.cancel(p, force=True)
            emit({"type": "error", "kind": "task", "message": r["error"]})
            return
        used_nodes.add(r["node"])
        used_workers.add(r["worker"])
        for res in r["results"]:
            emit(dict(res, type="result", node=r["node"], worker=r["worker"]))
    emit({"type": "done", "nodes": sorted(used_nodes), "workers": sorted(used_workers)})


if __name__ == "__main__":
    main()
