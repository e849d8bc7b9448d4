"""The Patroni cluster's configuration keeps what the failover test proved it must
(docs/operations.md, "Failover of PostgreSQL"; ``make ha-test`` runs it by hand, not here: it
needs root and minutes): synchronous replication that Patroni never relaxes, no promotion of a
lagging standby, etcd's v3 API, HAProxy sending connections to the member Patroni calls primary
only, and the make targets that bring it up, test it, bench it and take it down whatever
happened. The rendered files are parsed, not grepped: a key under the wrong section fails."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "ops" / "patroni"))
import cluster

ROOT = Path(__file__).resolve().parents[2]


def _patroni(name: str = "node1") -> dict[str, Any]:
    port, rest = cluster.NODES[name]
    text = cluster.PATRONI.format(name=name, base="/var/tmp/x", rest=rest,
                                  etcd=cluster.ETCD_CLIENT, port=port, bin=cluster.BIN)
    loaded: dict[str, Any] = yaml.safe_load(text)
    return loaded


def test_replication_is_synchronous_and_strict_and_no_lagging_standby_is_promoted() -> None:
    dcs = _patroni()["bootstrap"]["dcs"]
    assert dcs["synchronous_mode"] is True
    assert dcs["synchronous_mode_strict"] is True
    assert dcs["synchronous_node_count"] == 1
    assert dcs["maximum_lag_on_failover"] == 0
    assert dcs["postgresql"]["parameters"]["synchronous_commit"] == "on"
    assert dcs["ttl"] == 20 and dcs["loop_wait"] == 1 and dcs["retry_timeout"] == 3


def test_every_node_on_loopback_ports_of_its_own_with_etcd_v3() -> None:
    seen: set[int] = set()
    for name in cluster.NODES:
        config = _patroni(name)
        assert "etcd3" in config and "etcd" not in config  # Debian's etcd 3.4 serves v3 only
        assert config["etcd3"]["hosts"] == f"127.0.0.1:{cluster.ETCD_CLIENT}"
        for address in (config["restapi"]["listen"], config["postgresql"]["listen"]):
            host, port = address.rsplit(":", 1)
            assert host == "127.0.0.1"
            seen.add(int(port))
        assert config["tags"]["nofailover"] is False and config["tags"]["nosync"] is False
    assert len(seen) == 2 * len(cluster.NODES)
    assert 5432 not in seen and cluster.PROXY not in seen  # never the machine's own cluster


def test_haproxy_sends_connections_to_the_primary_only() -> None:
    servers = "\n".join(f"  server {n} 127.0.0.1:{p} check port {r}"
                        for n, (p, r) in cluster.NODES.items())
    text = cluster.HAPROXY.format(proxy=cluster.PROXY, servers=servers)
    assert f"bind 127.0.0.1:{cluster.PROXY}" in text
    assert "option httpchk GET /primary" in text
    assert "http-check expect status 200" in text
    assert "on-marked-down shutdown-sessions" in text  # a demoted primary's sessions are cut
    assert text.count("check port 808") == len(cluster.NODES)


def test_the_make_targets_take_the_cluster_down_whatever_happened() -> None:
    makefile = (ROOT / "Makefile").read_text()
    for target in ("ha-up", "ha-down", "ha-test", "bench-ha"):
        assert re.search(rf"^{target}:", makefile, re.M), target
    for target, runs in (("ha-test", "ops/patroni/failover.py"), ("bench-ha", "-m bench.ha")):
        recipe = makefile.split(f"\n{target}:", 1)[1].split("\n\n", 1)[0]
        assert runs in recipe
        assert "rc=$$?; python3 ops/patroni/cluster.py down; exit $$rc" in recipe
