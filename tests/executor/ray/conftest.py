"""One Ray cluster for all cluster tests: a head and two worker nodes on this machine.

Nodes are small (1 CPU, 100 MB object store each) and the cluster is shared by every test of
this folder (session scope; the ``ray`` xdist group keeps them on one pytest worker), so the
cluster starts once. Tests that remove or kill nodes leave it to :meth:`TestCluster.ensure`
to bring it back to two workers for the next test. At the end, every process of the cluster
(and of its node agents' sandboxes) must be gone.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install assay[ray])")

import _ray_backends  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

# Workers import the test backends by value: the tests folder is not on their path.
ray.cloudpickle.register_pickle_by_value(_ray_backends)

NODE = {"num_cpus": 1, "object_store_memory": 100 << 20}
# Fast failure detection: a node whose raylet dies is declared dead in ~1.5 s, not 15 s.
HEAD = {
    **NODE,
    "_system_config": {
        "health_check_initial_delay_ms": 0,
        "health_check_period_ms": 500,
        "health_check_failure_threshold": 3,
    },
}


class TestCluster:
    __test__ = False

    def __init__(self) -> None:
        self.cluster = Cluster(initialize_head=True, head_node_args=HEAD)
        self.workers: list[Any] = []
        self.ensure()
        ray.init(address=self.cluster.address, log_to_driver=False)

    def ensure(self, workers: int = 2) -> None:
        """Bring the cluster back to ``workers`` worker nodes."""
        self.workers = [w for w in self.workers if w.remaining_processes_alive()]
        while len(self.workers) < workers:
            self.workers.append(self.cluster.add_node(**NODE))
        self.cluster.wait_for_nodes()

    def add(self) -> Any:
        """One more worker node (a test may remove it without touching the usual two)."""
        node = self.cluster.add_node(**NODE)
        self.workers.append(node)
        self.cluster.wait_for_nodes()
        return node

    def remove(self, node: Any) -> None:
        self.cluster.remove_node(node, allow_graceful=False)
        self.workers.remove(node)

    def pids(self) -> list[int]:
        out = []
        for node in [self.cluster.head_node, *self.cluster.worker_nodes]:
            for infos in node.all_processes.values():
                out += [i.process.pid for i in infos]
        return out

    def shutdown(self) -> None:
        pids = self.pids()
        ray.shutdown()
        self.cluster.shutdown()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.1)
        left = [p for p in pids if _alive(p)]
        assert not left, f"cluster processes left after shutdown: {left}"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except OSError:
        return False


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[TestCluster]:
    c = TestCluster()
    try:
        yield c
    finally:
        c.shutdown()


@pytest.fixture
def cluster(ray_cluster: TestCluster) -> TestCluster:
    ray_cluster.ensure()
    return ray_cluster
