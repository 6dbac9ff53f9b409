#!/usr/bin/env bash
# Compares two builds of the daemon on the same machine by alternating
# them: A, B, A, B, … for PAIRS pairs, on each bench named, and prints the
# median (and range) of the rate and of the daemon's and the server's CPU
# per job or step. Noise on a shared machine hits both builds alike.
#
#   go build -o /tmp/a/queuety ./cmd/queuety     # at the old commit
#   go build -o /tmp/b/queuety ./cmd/queuety     # at the new one
#   scripts/bench-ab.sh /tmp/a/queuety /tmp/b/queuety 7 jobs workflows php-workflows
set -euo pipefail
if [ $# -lt 4 ]; then
  echo "usage: $0 OLD_BINARY NEW_BINARY PAIRS BENCH... (jobs, workflows, php-workflows)" >&2
  exit 2
fi
a=$1 b=$2 pairs=$3
shift 3
cd "$(dirname "$0")/.."
php="php php-bridge/bin/queuety-php-worker --bootstrap queuety/internal/phppool/testdata/app.php"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for i in $(seq "$pairs"); do
  for which in old new; do
    bin=$a
    [ "$which" = new ] && bin=$b
    for k in "$@"; do
      case $k in
        jobs) j=$("$bin" bench jobs --count 50000 --json 2>/dev/null) ;;
        workflows) j=$("$bin" bench workflows --count 5000 --json 2>/dev/null) ;;
        php-workflows) j=$("$bin" bench php-workflows --count 2000 --php-step EmptyStep --php "$php" --json 2>/dev/null) ;;
        *) echo "unknown bench $k" >&2; exit 2 ;;
      esac
      echo "$j" | python3 -c "
import json, sys
d = json.load(sys.stdin)
r = d.get('jobs_per_second') or d.get('steps_per_second')
print('$k\t$which\t%s\t%s\t%s' % (r, d['cpu']['daemon_us'], d['cpu']['server_us']))" | tee -a "$out"
    done
  done
done
python3 - "$out" "$@" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    k, w, *v = line.rstrip('\n').split('\t')
    runs[(k, w)].append([float(x) for x in v])
for k in sys.argv[2:]:
    for i, name in enumerate(['per second', 'daemon µs/unit', 'server µs/unit']):
        o = [r[i] for r in runs[(k, 'old')]]; n = [r[i] for r in runs[(k, 'new')]]
        mo, mn = statistics.median(o), statistics.median(n)
        print(f"{k} {name}: old {mo:.1f} [{min(o):.1f}-{max(o):.1f}], new {mn:.1f} [{min(n):.1f}-{max(n):.1f}], new/old {mn/mo:.3f}")
PY
