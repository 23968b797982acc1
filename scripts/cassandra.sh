#!/usr/bin/env bash
# A local Apache Cassandra for shamap's Cassandra node store: one node, or a
# cluster of up to three on 127.0.0.1, 127.0.0.2 and 127.0.0.3.
#
#   scripts/cassandra.sh start  [--nodes N]   # fetch (once), configure, start, wait for CQL
#   scripts/cassandra.sh stop   [--nodes N]   # stop the nodes by their recorded PIDs, and wait
#   scripts/cassandra.sh status [--nodes N]   # one line per node: running / accepting CQL / stopped
#   scripts/cassandra.sh kill NODE            # SIGKILL node NODE (1..3): for fault tests
#   scripts/cassandra.sh wipe                 # stop everything and delete the nodes' data
#
# `start` is idempotent: nodes already running are left alone, stopped ones
# (e.g. after `kill`) are started again on their data. Everything lives
# under $SHAMAP_CASSANDRA_HOME (default ~/.cache/shamap-cassandra):
#   lib/          cassandra-all and its dependencies, fetched with Maven
#   m2/           Maven's local repository for that fetch
#   nodeI/        node I's config, data, commit log, log file and PID
#                 (under $SHAMAP_CASSANDRA_STATE instead when set: a cluster
#                 of its own, e.g. for the fault run, sharing lib/)
# A JDK (17) and Maven are installed with apt-get when missing (as root).
# Environment: SHAMAP_CASSANDRA_VERSION (default 5.0.4),
# SHAMAP_CASSANDRA_HEAP (default 768M), SHAMAP_CASSANDRA_WAIT (seconds to
# wait for a node, default 240).
set -euo pipefail

HOME_DIR=${SHAMAP_CASSANDRA_HOME:-${HOME:-/root}/.cache/shamap-cassandra}
STATE_DIR=${SHAMAP_CASSANDRA_STATE:-$HOME_DIR}
VERSION=${SHAMAP_CASSANDRA_VERSION:-5.0.4}
HEAP=${SHAMAP_CASSANDRA_HEAP:-768M}
WAIT=${SHAMAP_CASSANDRA_WAIT:-240}
PORT=9042

die() { echo "cassandra.sh: $*" >&2; exit 1; }
say() { echo "cassandra.sh: $*"; }

usage() {
  sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# ---- arguments -------------------------------------------------------------
[ $# -ge 1 ] || usage
cmd=$1
shift
nodes=1
victim=
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) [ $# -ge 2 ] || die "--nodes needs a number (1, 2 or 3)"; nodes=$2; shift 2 ;;
    --nodes=*) nodes=${1#--nodes=}; shift ;;
    [1-3]) victim=$1; shift ;;
    *) die "unknown argument '$1' (usage: $0 start|stop|status [--nodes N] | kill NODE | wipe)" ;;
  esac
done
case "$nodes" in 1|2|3) ;; *) die "--nodes must be 1, 2 or 3 (got '$nodes')" ;; esac

node_dir() { echo "$STATE_DIR/node$1"; }
node_addr() { echo "127.0.0.$1"; }
pid_of() { cat "$(node_dir "$1")/pid" 2>/dev/null || true; }

# True when node $1's recorded PID is a live Cassandra of that node (not a
# reused PID of some other process).
alive() {
  local pid
  pid=$(pid_of "$1")
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] &&
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "-Dshamap.cassandra.node=$1 "
}

# True when node $1 accepts connections on the CQL port.
accepts_cql() {
  (exec 3<>"/dev/tcp/$(node_addr "$1")/$PORT") 2>/dev/null
}

# ---- tools -----------------------------------------------------------------
apt_install() {
  command -v apt-get >/dev/null 2>&1 ||
    die "$1 is missing and there is no apt-get to install it: install $2 and retry"
  [ "$(id -u)" = 0 ] || die "$1 is missing; installing it needs root (apt-get install $2)"
  say "installing $2 with apt-get"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null; }; then
    die "cannot install $2 with apt-get: install $1 by hand and retry"
  fi
}

need_java() {
  if ! command -v java >/dev/null 2>&1; then
    apt_install java openjdk-17-jre-headless
  fi
  command -v java >/dev/null 2>&1 || die "java not found and could not be installed (need OpenJDK 11 or 17)"
  local v
  v=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
  case "$v" in
    11|17) ;;
    *) die "java $v found; Cassandra $VERSION runs on Java 11 or 17 (apt-get install openjdk-17-jre-headless)" ;;
  esac
}

need_maven() {
  command -v mvn >/dev/null 2>&1 || apt_install mvn maven
  command -v mvn >/dev/null 2>&1 || die "mvn not found and could not be installed"
}

# Fetches cassandra-all $VERSION and its runtime dependencies into lib/.
fetch() {
  local lib=$HOME_DIR/lib
  if [ -f "$lib/.complete-$VERSION" ]; then
    return
  fi
  need_maven
  mkdir -p "$HOME_DIR/fetch"
  cat >"$HOME_DIR/fetch/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>shamap</groupId>
  <artifactId>cassandra-runtime</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.cassandra</groupId>
      <artifactId>cassandra-all</artifactId>
      <version>$VERSION</version>
    </dependency>
  </dependencies>
</project>
EOF
  say "fetching cassandra-all $VERSION and its dependencies with Maven (once; about 70 MB)"
  rm -rf "$lib"
  if ! mvn -B -q -f "$HOME_DIR/fetch/pom.xml" -Dmaven.repo.local="$HOME_DIR/m2" \
      dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$lib" \
      >"$HOME_DIR/fetch/mvn.log" 2>&1; then
    tail -20 "$HOME_DIR/fetch/mvn.log" >&2
    die "Maven could not fetch cassandra-all $VERSION (log: $HOME_DIR/fetch/mvn.log)"
  fi
  ls "$lib"/cassandra-all-*.jar >/dev/null 2>&1 || die "Maven ran but cassandra-all is not in $lib"
  touch "$lib/.complete-$VERSION"
}

# ---- configuration ---------------------------------------------------------
write_config() {
  local i=$1 dir addr
  dir=$(node_dir "$i")
  addr=$(node_addr "$i")
  mkdir -p "$dir/data" "$dir/commitlog" "$dir/saved_caches" "$dir/hints" "$dir/cdc_raw" "$dir/logs"
  cat >"$dir/cassandra.yaml" <<EOF
# Written by scripts/cassandra.sh: node $i of a local test cluster.
cluster_name: shamap-local
num_tokens: 4
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
auto_bootstrap: false
endpoint_snitch: SimpleSnitch
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "127.0.0.1:7000"
listen_address: $addr
rpc_address: $addr
storage_port: 7000
native_transport_port: $PORT
start_native_transport: true
data_file_directories:
  - $dir/data
commitlog_directory: $dir/commitlog
saved_caches_directory: $dir/saved_caches
hints_directory: $dir/hints
cdc_raw_directory: $dir/cdc_raw
commitlog_sync: periodic
commitlog_sync_period: 10000ms
commitlog_segment_size: 32MiB
disk_failure_policy: stop
commit_failure_policy: stop
authenticator: AllowAllAuthenticator
authorizer: AllowAllAuthorizer
read_request_timeout: 10000ms
write_request_timeout: 10000ms
range_request_timeout: 20000ms
request_timeout: 20000ms
concurrent_reads: 16
concurrent_writes: 16
memtable_heap_space: 128MiB
memtable_offheap_space: 128MiB
batch_size_fail_threshold: 640KiB
EOF
  cat >"$dir/logback.xml" <<EOF
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>$dir/logs/system.log</file>
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
EOF
}

# Java 17 needs these to let Cassandra reach JDK internals (as in its
# conf/jvm17-server.options).
JDK17_OPTS=(
  --add-exports java.base/jdk.internal.misc=ALL-UNNAMED
  --add-exports java.base/jdk.internal.ref=ALL-UNNAMED
  --add-exports java.base/sun.nio.ch=ALL-UNNAMED
  --add-exports java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED
  --add-exports java.rmi/sun.rmi.registry=ALL-UNNAMED
  --add-exports java.rmi/sun.rmi.server=ALL-UNNAMED
  --add-exports java.sql/java.sql=ALL-UNNAMED
  --add-exports java.base/java.lang.ref=ALL-UNNAMED
  --add-exports jdk.unsupported/sun.misc=ALL-UNNAMED
  --add-opens java.base/java.lang.module=ALL-UNNAMED
  --add-opens java.base/jdk.internal.loader=ALL-UNNAMED
  --add-opens java.base/jdk.internal.ref=ALL-UNNAMED
  --add-opens java.base/jdk.internal.reflect=ALL-UNNAMED
  --add-opens java.base/jdk.internal.math=ALL-UNNAMED
  --add-opens java.base/jdk.internal.module=ALL-UNNAMED
  --add-opens java.base/jdk.internal.util.jar=ALL-UNNAMED
  --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED
  --add-opens java.base/sun.nio.ch=ALL-UNNAMED
  --add-opens java.base/java.io=ALL-UNNAMED
  --add-opens java.base/java.nio=ALL-UNNAMED
  --add-opens java.base/java.util.concurrent=ALL-UNNAMED
  --add-opens java.base/java.util=ALL-UNNAMED
  --add-opens java.base/java.util.concurrent.atomic=ALL-UNNAMED
  --add-opens java.base/java.lang=ALL-UNNAMED
  --add-opens java.base/java.math=ALL-UNNAMED
  --add-opens java.base/java.lang.reflect=ALL-UNNAMED
  --add-opens java.base/java.net=ALL-UNNAMED
)

launch() {
  local i=$1 dir addr
  dir=$(node_dir "$i")
  addr=$(node_addr "$i")
  write_config "$i"
  # In a session of its own (setsid): a signal to the caller's process
  # group (Ctrl-C, a CI job being killed) does not reach the node; `stop`
  # does, by the PID recorded here.
  setsid nohup java -Dshamap.cassandra.node="$i" \
    -Xms"$HEAP" -Xmx"$HEAP" -Xss512k -XX:+UseG1GC -XX:+ExitOnOutOfMemoryError \
    -XX:-UsePerfData -Djava.net.preferIPv4Stack=true \
    -Djdk.attach.allowAttachSelf=true \
    "${JDK17_OPTS[@]}" \
    -Dcassandra.config="file://$dir/cassandra.yaml" \
    -Dlogback.configurationFile="$dir/logback.xml" \
    -Dcassandra.logdir="$dir/logs" -Dcassandra.storagedir="$dir" \
    -Dcassandra-foreground=yes \
    -Dcassandra.skip_wait_for_gossip_to_settle=0 \
    -Dcassandra.ring_delay_ms=1000 \
    -Dcassandra.superuser_setup_delay_ms=0 \
    -Dcassandra.migration_task_wait_in_seconds=1 \
    -cp "$dir:$HOME_DIR/lib/*" \
    org.apache.cassandra.service.CassandraDaemon \
    >"$dir/logs/stdout.log" 2>&1 </dev/null &
  echo $! >"$dir/pid"
  say "node $i ($addr) launched, PID $(pid_of "$i")"
}

# Waits until node $1 accepts CQL. Returns 1 (its log's tail printed, its
# logs kept in logs/exited-<time>/) if it dies first; fails if it takes
# longer than $WAIT seconds.
wait_cql() {
  local i=$1 start=$SECONDS dir kept
  dir=$(node_dir "$i")
  while ! accepts_cql "$i"; do
    if ! alive "$i"; then
      tail -25 "$dir/logs/stdout.log" "$dir/logs/system.log" 2>/dev/null >&2 || true
      kept="$dir/logs/exited-$(date +%Y%m%d-%H%M%S)"
      mkdir -p "$kept" && cp "$dir"/logs/*.log "$kept"/ 2>/dev/null || true
      say "node $i exited during startup (its logs kept in $kept)"
      return 1
    fi
    if [ $((SECONDS - start)) -ge "$WAIT" ]; then
      tail -25 "$dir/logs/system.log" 2>/dev/null >&2 || true
      die "node $i does not accept CQL on $(node_addr "$i"):$PORT after ${WAIT}s (logs: $dir/logs)"
    fi
    sleep 1
  done
  say "node $i ($(node_addr "$i"):$PORT) accepts CQL ($((SECONDS - start))s)"
}

# Stops node $1 by its PID: SIGTERM, then SIGKILL after 60 s.
stop_node() {
  local i=$1 pid n=0
  if ! alive "$i"; then
    rm -f "$(node_dir "$i")/pid"
    return
  fi
  pid=$(pid_of "$i")
  kill -TERM "$pid" 2>/dev/null || true
  while alive "$i"; do
    n=$((n + 1))
    if [ "$n" -ge 600 ]; then
      say "node $i (PID $pid) still running after 60s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    sleep 0.1
  done
  rm -f "$(node_dir "$i")/pid"
  say "node $i stopped (PID $pid)"
}

case "$cmd" in
  start)
    need_java
    fetch
    # Node 1 is the seed: it comes up first, then each other node joins.
    for i in $(seq 1 "$nodes"); do
      if alive "$i"; then
        say "node $i already running (PID $(pid_of "$i"))"
      else
        launch "$i"
      fi
      # A node restarted after a SIGKILL on a loaded machine has been seen
      # to exit while starting (once, cause not kept); it gets one more try.
      if ! wait_cql "$i"; then
        say "node $i: launching it again, once"
        launch "$i"
        wait_cql "$i" || die "node $i exited during startup twice (logs: $(node_dir "$i")/logs)"
      fi
    done
    ;;
  stop)
    # Every node that has a PID recorded, whatever --nodes says, so that
    # a plain `stop` after `start --nodes 3` stops all three.
    for i in 3 2 1; do
      stop_node "$i"
    done
    ;;
  status)
    for i in $(seq 1 "$nodes"); do
      if alive "$i"; then
        if accepts_cql "$i"; then
          echo "node $i $(node_addr "$i"):$PORT running (PID $(pid_of "$i")), accepting CQL"
        else
          echo "node $i $(node_addr "$i"):$PORT running (PID $(pid_of "$i")), not yet accepting CQL"
        fi
      else
        echo "node $i $(node_addr "$i"):$PORT stopped"
      fi
    done
    ;;
  kill)
    [ -n "$victim" ] || die "kill needs a node number (1, 2 or 3)"
    alive "$victim" || die "node $victim is not running"
    pid=$(pid_of "$victim")
    kill -KILL "$pid"
    while alive "$victim"; do sleep 0.1; done
    rm -f "$(node_dir "$victim")/pid"
    say "node $victim killed (SIGKILL, PID $pid)"
    ;;
  wipe)
    for i in 3 2 1; do
      stop_node "$i"
      rm -rf "$(node_dir "$i")"
    done
    say "node data deleted under $STATE_DIR"
    ;;
  *) usage ;;
esac
