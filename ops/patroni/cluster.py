"""A three-node PostgreSQL 15 cluster under Patroni, on loopback ports, for the failover tests
and for trying Sabot's high availability on one machine (docs/operations.md, "Failover").

    python3 ops/patroni/cluster.py up      # etcd, three Patroni nodes, HAProxy; waits for them
    python3 ops/patroni/cluster.py status  # the members, their roles and lag
    python3 ops/patroni/cluster.py down    # stops everything, removes the cluster's folder

``make ha-up`` and ``make ha-down`` call it (as root: the Debian packages ``patroni``,
``etcd-server`` and ``haproxy`` are installed when missing; PostgreSQL and Patroni run as the
``postgres`` user, which initdb and Patroni require). Standard library only.

What it sets (and why):
- etcd 3.4 through Patroni's ``etcd3:`` section (Debian's etcd serves the v3 API only);
- ``synchronous_mode: true`` and ``synchronous_mode_strict: true``: a commit is acknowledged only
  once a synchronous standby has it, and Patroni promotes only a synchronous standby, so no
  acknowledged command is lost by a failover (in asynchronous mode Patroni may promote a standby
  that missed commits: the acknowledged events, and a signed checkpoint over them, would be gone);
  strict: with no standby left the primary stops acknowledging writes rather than go on alone;
- ``maximum_lag_on_failover: 0`` besides, ``ttl: 20``, ``loop_wait: 1``, ``retry_timeout: 3``
  (a failover in a few seconds on loopback);
- HAProxy on ``127.0.0.1:5480`` sends connections to the member whose Patroni REST API answers
  200 on ``/primary``: the store URL names that one address
  (``postgresql://sabot_server@127.0.0.1:5480/sabot``), and a libpq multi-host URL over the three
  members with ``target_session_attrs=read-write`` works as well;
- the roles of docs/postgres.md (``sabot_owner`` owns the store, ``sabot_server`` may only read
  and insert), and a database ``sabot`` owned by ``sabot_owner``; trust authentication on
  loopback only (a test cluster: a site uses scram-sha-256 and TLS, docs/postgres.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

BASE = Path(os.environ.get("SABOT_HA_DIR", "/var/tmp/sabot-ha"))
BIN = Path(os.environ.get("SABOT_PG_BIN", "/usr/lib/postgresql/15/bin"))
ETCD_CLIENT, ETCD_PEER = 23790, 23800
PROXY = int(os.environ.get("SABOT_HA_PROXY_PORT", "5480"))
NODES = {f"node{i}": (5480 + i, 8080 + i) for i in (1, 2, 3)}  # PostgreSQL, Patroni REST
PACKAGES = {"patroni": "patroni", "etcd": "etcd-server", "haproxy": "haproxy"}
USER = "postgres"
PRIMARY = ("primary", "master")  # Patroni 3.0 (Debian 12) still says "master"

PATRONI = """scope: sabot
namespace: /sabot/
name: {name}
log:
  dir: {base}/{name}
  level: WARNING
restapi:
  listen: 127.0.0.1:{rest}
  connect_address: 127.0.0.1:{rest}
etcd3:
  hosts: 127.0.0.1:{etcd}
bootstrap:
  dcs:
    ttl: 20
    loop_wait: 1
    retry_timeout: 3
    maximum_lag_on_failover: 0
    synchronous_mode: true
    synchronous_mode_strict: true
    synchronous_node_count: 1
    postgresql:
      use_pg_rewind: true
      parameters:
        max_connections: 200
        wal_level: replica
        hot_standby: "on"
        max_wal_senders: 10
        max_replication_slots: 10
        wal_log_hints: "on"
        synchronous_commit: "on"
  initdb:
  - encoding: UTF8
  - data-checksums
  pg_hba:
  - local all all trust
  - host replication replicator 127.0.0.1/32 trust
  - host all all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:{port}
  connect_address: 127.0.0.1:{port}
  data_dir: {base}/{name}/data
  bin_dir: {bin}
  pgpass: {base}/{name}/pgpass
  authentication:
    replication:
      username: replicator
      password: replicator
    superuser:
      username: postgres
      password: postgres
  parameters:
    unix_socket_directories: {base}/{name}
tags:
  nofailover: false
  noloadbalance: false
  clonefrom: false
  nosync: false
"""

HAPROXY = """global
  maxconn 400
defaults
  mode tcp
  timeout connect 2s
  timeout client 30m
  timeout server 30m
  timeout check 1s
listen primary
  bind 127.0.0.1:{proxy}
  option httpchk GET /primary
  http-check expect status 200
  default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions
{servers}
"""

ROLES_SQL = """
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'sabot_owner') THEN
    CREATE ROLE sabot_owner LOGIN; END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'sabot_server') THEN
    CREATE ROLE sabot_server LOGIN; END IF;
END $$;
SELECT 'CREATE DATABASE sabot OWNER sabot_owner'
 WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'sabot')\\gexec
"""


def say(text: str) -> None:
    print(f"ha: {text}", flush=True)


def install() -> None:
    missing = [pkg for cmd, pkg in PACKAGES.items() if shutil.which(cmd) is None]
    if not missing:
        return
    if os.geteuid() != 0:
        sys.exit(f"ha: missing {', '.join(missing)}: apt-get install {' '.join(missing)} (as root)")
    say(f"installing {', '.join(missing)} (Debian packages)")
    # another apt-get may hold dpkg's lock (a fresh machine installing its other packages)
    subprocess.run(["apt-get", "install", "-y", "-qq", "-o", "DPkg::Lock::Timeout=600",
                    *missing], check=True,
                   env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
                   stdout=subprocess.DEVNULL)


def as_postgres(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    """``argv`` as the postgres user (initdb and Patroni refuse root), in its own session."""
    prefix = ["runuser", "-u", USER, "--"] if os.geteuid() == 0 else []
    out = log.open("ab")
    return subprocess.Popen([*prefix, *argv], stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True, cwd=BASE)


def up() -> None:
    install()
    if (BASE / "pids.json").exists():
        sys.exit(f"ha: a cluster is up already ({BASE}); `make ha-down` first")
    BASE.mkdir(parents=True, exist_ok=True)
    shutil.chown(BASE, USER, USER)
    pids: dict[str, int] = {}
    etcd_dir = BASE / "etcd"
    etcd_dir.mkdir(exist_ok=True)
    shutil.chown(etcd_dir, USER, USER)
    pids["etcd"] = as_postgres([
        "etcd", "--name", "sabot-etcd", "--data-dir", str(etcd_dir / "data"),
        "--listen-client-urls", f"http://127.0.0.1:{ETCD_CLIENT}",
        "--advertise-client-urls", f"http://127.0.0.1:{ETCD_CLIENT}",
        "--listen-peer-urls", f"http://127.0.0.1:{ETCD_PEER}",
        "--initial-advertise-peer-urls", f"http://127.0.0.1:{ETCD_PEER}",
        "--initial-cluster", f"sabot-etcd=http://127.0.0.1:{ETCD_PEER}",
        "--enable-v2=false"], etcd_dir / "etcd.log").pid
    _save(pids)
    _wait(lambda: _http(f"http://127.0.0.1:{ETCD_CLIENT}/health") is not None, 30, "etcd")
    for name, (port, rest) in NODES.items():
        home = BASE / name
        home.mkdir(exist_ok=True)
        shutil.chown(home, USER, USER)
        config = home / "patroni.yml"
        config.write_text(PATRONI.format(name=name, base=BASE, rest=rest, etcd=ETCD_CLIENT,
                                         port=port, bin=BIN))
        shutil.chown(config, USER, USER)
        config.chmod(0o600)
        pids[name] = as_postgres(["patroni", str(config)], home / "patroni.out").pid
        _save(pids)
        if name == "node1":  # the first bootstraps the cluster; the others clone it
            _wait(lambda: _role(NODES["node1"][1]) in PRIMARY, 90, "the primary")
    _wait(lambda: sum(_role(rest) in ("replica", "sync_standby") for _, rest in NODES.values())
          == 2, 120, "two standbys")
    lines = "\n".join(f"  server {n} 127.0.0.1:{p} check port {r}"
                      for n, (p, r) in NODES.items())
    (BASE / "haproxy.cfg").write_text(HAPROXY.format(proxy=PROXY, servers=lines))
    pids["haproxy"] = subprocess.Popen(
        ["haproxy", "-f", str(BASE / "haproxy.cfg"), "-db"],
        stdout=(BASE / "haproxy.log").open("ab"), stderr=subprocess.STDOUT,
        start_new_session=True).pid
    _save(pids)
    _wait(lambda: _psql(PROXY, "SELECT 1") == "1", 30, "HAProxy to the primary")
    _psql(PROXY, ROLES_SQL)
    _wait(_synchronous, 60, "a synchronous standby")
    say(f"up: store URL postgresql://sabot_owner@127.0.0.1:{PROXY}/sabot (owner), "
        f"postgresql://sabot_server@127.0.0.1:{PROXY}/sabot (server); members "
        + ", ".join(f"{n} 127.0.0.1:{p}" for n, (p, _) in NODES.items()))


def _synchronous() -> bool:
    return _psql(PROXY, "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'") \
        == "1"


def status() -> None:
    for name, (port, rest) in NODES.items():
        found = _http(f"http://127.0.0.1:{rest}/patroni")
        state = json.loads(found) if found else {}
        print(f"{name} 127.0.0.1:{port} {state.get('role', 'down')} "
              f"{state.get('state', '')} {'sync' if _is_sync(name) else ''}".rstrip())


def _is_sync(name: str) -> bool:
    found = _http(f"http://127.0.0.1:{NODES['node1'][1]}/cluster") or \
        _http(f"http://127.0.0.1:{NODES['node2'][1]}/cluster") or "{}"
    members = json.loads(found).get("members", [])
    return any(m.get("name") == name and m.get("role") == "sync_standby" for m in members)


def down() -> None:
    pids = _load()
    for name in ("haproxy", *reversed(NODES), "etcd"):
        pid = pids.get(name)
        if pid:
            _stop(pid)
    for name in NODES:  # a postmaster Patroni left behind (it stops it on SIGTERM)
        pidfile = BASE / name / "data" / "postmaster.pid"
        if pidfile.exists():
            _stop(int(pidfile.read_text().split()[0]))
    shutil.rmtree(BASE, ignore_errors=True)
    say("down: nothing left running")


def _stop(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(100):
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def _role(rest: int) -> str | None:
    found = _http(f"http://127.0.0.1:{rest}/patroni")
    return str(json.loads(found).get("role")) if found else None


def _http(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return answer.read().decode()
    except (OSError, ValueError):
        return None


def _psql(port: int, sql: str) -> str | None:
    done = subprocess.run([str(BIN / "psql"), "-h", "127.0.0.1", "-p", str(port), "-U",
                           "postgres", "-d", "postgres", "-XAtq", "-v", "ON_ERROR_STOP=1"],
                          input=sql, capture_output=True, text=True, timeout=20, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def _wait(test: object, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if test():  # type: ignore[operator]
            return
        time.sleep(0.5)
    sys.exit(f"ha: {what} not ready after {seconds:.0f} s (logs in {BASE})")


def _save(pids: dict[str, int]) -> None:
    (BASE / "pids.json").write_text(json.dumps(pids))


def _load() -> dict[str, int]:
    try:
        return {k: int(v) for k, v in json.loads((BASE / "pids.json").read_text()).items()}
    except (OSError, ValueError):
        return {}


if __name__ == "__main__":
    verbs = {"up": up, "down": down, "status": status}
    if len(sys.argv) != 2 or sys.argv[1] not in verbs:
        sys.exit(f"usage: {sys.argv[0]} up|status|down")
    verbs[sys.argv[1]]()
