# Helpers shared by the benchmark scripts (sourced, not run).

# Ports, kbtd's start and bounded waits: lib/daemon.sh (start_kbtd, wait_until, kernel_port, with_port_retry).
source "$(dirname "${BASH_SOURCE[0]}")/daemon.sh"
# process_ticks PID...: user + system clock ticks (1/CLK_TCK s) of those processes, all their threads, summed
# (fields 14 and 15 of /proc/PID/stat, counted after the name, which may hold spaces); a gone process counts 0.
process_ticks() {
  local p
  for p in "$@"; do awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$p/stat" 2>/dev/null; done | awk '{s += $1} END {print s + 0}'
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# wrk prints latencies as 812.00us, 1.93ms or 1.02s: in ms.
to_ms() { awk '{v=$1; if (v ~ /us$/) {sub(/us$/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms$/,"",v)} else if (v ~ /s$/) {sub(/s$/,"",v); v*=1000}; printf "%.3f\n", v}'; }

# make_pair DIR NAME ec|rsa: a throwaway CA (DIR/NAME-ca.pem) and a server certificate for
# 127.0.0.1 it signed (DIR/NAME.pem with DIR/NAME.key): EC on P-256, or RSA with 2048 bits.
make_pair() {
  local dir=$1 name=$2 keyopts
  if [ "$3" = rsa ]; then keyopts=(-newkey rsa:2048); else keyopts=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1); fi
  openssl req -x509 -nodes -days 2 -subj "/CN=kbtd bench CA $name" "${keyopts[@]}" \
    -keyout "$dir/$name-ca.key" -out "$dir/$name-ca.pem" 2>/dev/null
  openssl req -nodes -subj "/CN=127.0.0.1" "${keyopts[@]}" -keyout "$dir/$name.key" -out "$dir/$name.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1\n' > "$dir/$name-ext.cnf"
  openssl x509 -req -in "$dir/$name.csr" -CA "$dir/$name-ca.pem" -CAkey "$dir/$name-ca.key" -CAcreateserial -days 2 \
    -extfile "$dir/$name-ext.cnf" -out "$dir/$name.pem" 2>/dev/null
}
