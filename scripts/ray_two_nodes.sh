#!/usr/bin/env bash
# A Ray cluster of two nodes on one machine: a head and a second raylet joining it through its
# address, each with its own temp dir and ports, as docs/verl.md's cluster commands do across
# machines. Prints `ray status` and where two 1-CPU tasks ran, then stops both.
#
# Each `ray start --block` runs in its own process group and is stopped by that group, so only
# this script's Ray processes go (`ray stop --force` would stop every Ray process on the machine,
# other users' included).
# Usage: bash scripts/ray_two_nodes.sh [WORK_DIR]     (default /tmp/g2po-ray-two-nodes)
set -u
RAY=${RAY:-ray}
PYTHON=${PYTHON:-python}
WORK=${1:-/tmp/g2po-ray-two-nodes}
PORT=${PORT:-46379}
mkdir -p "$WORK"
# Ray 2.60's `ray start --head` turns on token authentication; every node and every driver
# needs the cluster's token (on machines: copy the head's ~/.ray/auth_token to each, or set
# RAY_AUTH_TOKEN) and RAY_AUTH_MODE=token. This cluster gets a token of its own.
export RAY_AUTH_MODE=token
RAY_AUTH_TOKEN=${RAY_AUTH_TOKEN:-$("$PYTHON" -c 'import secrets; print(secrets.token_hex(32))')}
export RAY_AUTH_TOKEN
common=(--block --num-cpus 1 --num-gpus 0 --object-store-memory 100000000 --disable-usage-stats)

stop() {
    for name in worker head; do
        [ -f "$WORK/$name.pid" ] && kill -TERM -- -"$(cat "$WORK/$name.pid")" 2>/dev/null
    done
    sleep 10
    for name in worker head; do
        [ -f "$WORK/$name.pid" ] && kill -KILL -- -"$(cat "$WORK/$name.pid")" 2>/dev/null
    done
    echo "Ray processes of $WORK left: $(pgrep -fc -- "--temp-dir $WORK" || true)"
}
trap stop EXIT

started() {  # wait up to 3 minutes for `ray start` to report its node
    for _ in $(seq 90); do
        grep -q "Ray runtime started" "$1" && return 0
        kill -0 "$2" 2>/dev/null || break
        sleep 2
    done
    echo "$1: the node did not start:"; tail -5 "$1"; return 1
}

setsid "$RAY" start --head --port "$PORT" --temp-dir "$WORK/head" --include-dashboard false \
    --node-manager-port $((PORT + 1)) --object-manager-port $((PORT + 2)) \
    --ray-client-server-port $((PORT + 3)) --dashboard-agent-listen-port $((PORT + 4)) \
    --dashboard-agent-grpc-port $((PORT + 5)) --metrics-export-port $((PORT + 6)) \
    --runtime-env-agent-port $((PORT + 7)) \
    --min-worker-port $((PORT + 21)) --max-worker-port $((PORT + 70)) "${common[@]}" \
    > "$WORK/head.log" 2>&1 &
echo $! > "$WORK/head.pid"
started "$WORK/head.log" "$(cat "$WORK/head.pid")" || exit 1
IP=$(hostname -I | awk '{print $1}')
export RAY_ADDRESS="$IP:$PORT"

setsid "$RAY" start --address "$RAY_ADDRESS" --temp-dir "$WORK/worker" \
    --node-manager-port $((PORT + 101)) --object-manager-port $((PORT + 102)) \
    --dashboard-agent-listen-port $((PORT + 104)) --dashboard-agent-grpc-port $((PORT + 105)) \
    --metrics-export-port $((PORT + 106)) --runtime-env-agent-port $((PORT + 107)) \
    --min-worker-port $((PORT + 121)) --max-worker-port $((PORT + 170)) "${common[@]}" \
    > "$WORK/worker.log" 2>&1 &
echo $! > "$WORK/worker.pid"
started "$WORK/worker.log" "$(cat "$WORK/worker.pid")" || exit 1

"$RAY" status
"$PYTHON" - <<'PY'
import ray

ray.init()  # RAY_ADDRESS: join the running cluster
alive = [n for n in ray.nodes() if n["Alive"]]
print(f"nodes alive: {len(alive)}, CPUs: {ray.cluster_resources().get('CPU')}")


@ray.remote(num_cpus=1)
def node() -> str:
    import time

    time.sleep(2)
    return ray.get_runtime_context().get_node_id()


print("distinct nodes used by two 1-CPU tasks:", len(set(ray.get([node.remote(), node.remote()]))))
PY
