# Shared by the Benchmarks scripts (source it): kbtd on a port the kernel gives it, bounded
# waits, and ports for the tools that cannot bind port 0 (nginx, PostgreSQL). One copy of each.

# wait_until SECONDS COMMAND...: runs COMMAND until it succeeds; 1 after SECONDS. Every wait here is bounded.
wait_until() {
  local seconds="$1"; shift
  local deadline=$(( $(date +%s) + seconds ))
  until "$@"; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.05
  done
}

# wait_for_line FILE PATTERN SECONDS PID: 0 once FILE has a line matching PATTERN (tail -F follows
# it as it is written); 1 after SECONDS, or once process PID has exited without writing it.
wait_for_line() {
  local file="$1" pattern="$2" seconds="$3" pid="$4"
  timeout "$seconds" grep -q -m1 -- "$pattern" <(tail -n +1 -F --pid="$pid" "$file" 2>/dev/null)
}

# start_kbtd BINARY LOG ARGS...: runs `BINARY serve --listen 127.0.0.1:0 ARGS...` (ARGS that hold
# --listen options of their own replace it), its output in LOG (a file of its own), and returns once it logs
# "kbtd ready" (KBTD_BENCH_READY_SECONDS, default 120; then its log is printed and it fails).
# Sets pid, and port: the first TCP port it reports ("listening on 127.0.0.1:N"); ports: all of them.
start_kbtd() {
  local binary="$1" log="$2"; shift 2
  : >"$log"
  local listen=(--listen 127.0.0.1:0) arg
  for arg in "$@"; do [ "$arg" = --listen ] && listen=(); done
  "$binary" serve "${listen[@]}" "$@" --log-level notice >>"$log" 2>&1 &
  pid=$!
  if ! wait_for_line "$log" "kbtd ready" "${KBTD_BENCH_READY_SECONDS:-120}" "$pid"; then
    echo "kbtd not ready within ${KBTD_BENCH_READY_SECONDS:-120} s (or it exited):" >&2
    cat "$log" >&2
    return 1
  fi
  ports=$(grep -o 'listening on 127\.0\.0\.1:[0-9]*' "$log" | cut -d: -f2 | tr '\n' ' ')
  port=${ports%% *}
}

# kernel_port: a loopback port the kernel chose for port 0, released for a tool that cannot bind
# port 0 itself (nginx, PostgreSQL). Another process may take it before the tool binds it: start
# such a tool with `with_port_retry`, which tries the whole start again with a fresh port.
kernel_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# with_port_retry COMMAND...: runs COMMAND (which calls kernel_port for its ports) up to 5 times
# while it returns 98 (EADDRINUSE: "address already in use" in the tool's log).
with_port_retry() {
  local attempt status
  for attempt in 1 2 3 4 5; do
    "$@" && return 0
    status=$?
    [ "$status" -eq 98 ] || return "$status"
    echo "(a port was taken before the tool bound it: starting again, attempt $((attempt + 1)))" >&2
  done
  return 1
}

# start_nginx WORK ROOT: nginx (2 workers) serving WORK/ROOT/height.json for every path on a
# kernel port; sets nginx_port and nginx_pid. Returns 98 when its port was taken (use with_port_retry).
start_nginx() {
  local work="$1" root="$2"
  nginx_port=$(kernel_port)
  rm -f "$work/nginx.pid"
  cat > "$work/nginx.conf" <<NGINX
worker_processes 2;
daemon off;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 1024; }
http {
  access_log off;
  default_type application/json;
  server { listen 127.0.0.1:$nginx_port; root $root; location / { try_files /height.json =404; } }
}
NGINX
  : >"$work/nginx-error.log"
  nginx -c "$work/nginx.conf" -p "$work" &
  nginx_pid=$!
  # nginx writes its pid file once it listens; bounded.
  if ! wait_until 30 test -s "$work/nginx.pid"; then
    kill "$nginx_pid" 2>/dev/null || true
    grep -qi "address already in use" "$work/nginx-error.log" && return 98
    echo "nginx did not start:" >&2; cat "$work/nginx-error.log" >&2
    return 1
  fi
  if ! kill -0 "$nginx_pid" 2>/dev/null; then
    grep -qi "address already in use" "$work/nginx-error.log" && return 98
    return 1
  fi
}
