"""Dask over TLS as shipped (tests/infra/dask_cluster.py): a TLS run gives the bytes of a local
run, through `vase rate --scheduler tls://...` and through the flows' client; a plain-TCP client,
a client without a certificate and a client of another CA are refused; every process listens on
loopback only."""

from __future__ import annotations

import asyncio
import socket
import ssl
import subprocess
from pathlib import Path

import dask
import pytest
from distributed.comm import connect, listen
from distributed.security import Security

from infra.credentials import ROLES, write_tls

from pipeline.stats import CORE_STATISTICS, reduce_store
from pipeline.store import Store
from tests.conftest import SAMPLES
from tests.infra.dask_cluster import client_security
from tests.infra.processes import BIN, LOOPBACK, listening_addresses

pytestmark = pytest.mark.slow


def test_the_cluster_speaks_tls_and_computes_for_a_client_of_its_ca(dask_tls):
    assert dask_tls.address.startswith("tls://127.0.0.1:")
    with dask_tls.client() as client:
        workers = client.scheduler_info()["workers"]
        assert len(workers) == 2 and all(address.startswith("tls://127.0.0.1:") for address in workers)
        assert client.submit(sum, [1, 2, 3]).result() == 6


def vase_rate(out: Path, env: dict[str, str], *scheduler: str) -> None:
    done = subprocess.run([str(BIN / "vase"), "rate", str(SAMPLES / "llmfao"), "--kind", "battles", "-m", "copeland", "-m", "borda",
                           "-m", "m-elo:bootstrap=20", "--out", str(out), *scheduler], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


def test_vase_rate_over_tls_gives_the_bytes_of_a_local_run(dask_tls, tmp_path):
    before = dask_tls.transitions()
    vase_rate(tmp_path / "tls" / "out", dask_tls.env, "--scheduler", dask_tls.address)
    assert dask_tls.transitions() > before  # the reduction and the bootstrap did run on the TLS cluster
    local_env = {k: v for k, v in dask_tls.env.items() if k != "DASK_CONFIG"}
    vase_rate(tmp_path / "local" / "out", local_env)
    for name in ("ratings.parquet", "ratings.json", "leaderboard.md"):
        assert (tmp_path / "tls" / "out" / name).read_bytes() == (tmp_path / "local" / "out" / name).read_bytes(), name


def flat(config: dict, prefix: str = ""):
    for key, value in config.items():
        if isinstance(value, dict) and value:
            yield from flat(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def shipped_configuration(dask_tls) -> dict:
    """What DASK_CONFIG=<credentials>/dask gives a process, as `dask.config.set` arguments."""
    return dict(flat(dask.config.collect(paths=[str(dask_tls.ours / "dask")], env={})))


def test_the_flows_client_connects_with_the_shipped_configuration(dask_tls, tmp_path):
    """pipeline.runtime.dask_client takes a tls:// address and finds its certificates in the Dask
    configuration alone, as a Prefect worker with DASK_CONFIG does."""
    from pipeline.runtime import dask_client

    store = Store(tmp_path / "store")
    store.ingest([SAMPLES / "f1" / "races_2021_2023.csv"], "games")
    local = reduce_store(store, "games", CORE_STATISTICS)
    with dask.config.set(shipped_configuration(dask_tls)), dask_client(dask_tls.address) as client:
        assert client.scheduler.address == dask_tls.address
        remote = reduce_store(store, "games", CORE_STATISTICS, client=client, target_rows=100)
    assert remote.pairwise.dense().wins.tobytes() == local.pairwise.dense().wins.tobytes()
    assert remote.histogram.ballots == local.histogram.ballots


def connect_as(address: str, security: Security, timeout: float = 5) -> None:
    """Dask's own connection and handshake with the scheduler, as a client with `security`, given up
    after `timeout` seconds (a refusal may be a handshake that never completes).
    (Not a `Client`: one that fails in its constructor is closed by the garbage collector, which
    can deadlock the event-loop thread of the next Client of this process.)"""

    async def handshake() -> None:
        comm = await connect(address, timeout=timeout, **security.get_connection_args("client"))
        await comm.close()

    asyncio.run(handshake())


def test_a_client_of_the_cluster_ca_is_accepted(dask_tls):
    """The refusals below can fail: the same connection with our client certificate succeeds."""
    connect_as(dask_tls.address, client_security(dask_tls.ours / "tls"), timeout=60)  # a loaded machine may be slow


def test_the_shipped_configuration_refuses_plain_tcp_addresses(dask_tls):
    with dask.config.set(shipped_configuration(dask_tls)), pytest.raises(RuntimeError, match="encryption required"):
        connect_as(dask_tls.address.replace("tls://", "tcp://"), Security())


@pytest.mark.parametrize("refused", ["plain tcp", "certificate of another CA", "trusting another CA"])
def test_dask_clients_without_a_certificate_of_the_cluster_ca_are_refused(dask_tls, refused):
    tls, theirs = dask_tls.ours / "tls", dask_tls.theirs / "tls"
    address, security = dask_tls.address, {
        "certificate of another CA": client_security(theirs, ca=tls / "ca.pem"),  # trusts the server, presents a stranger
        "trusting another CA": client_security(theirs),
    }.get(refused, Security(require_encryption=False))
    if refused == "plain tcp":
        address = address.replace("tls://", "tcp://")
    with pytest.raises(OSError):  # CommClosedError, or a timeout of the handshake
        connect_as(address, security)


def tls_probe(address: str, context: ssl.SSLContext) -> bytes:
    """A TLS handshake with the scheduler, then the first byte it sends: with TLS 1.3 the server's
    verdict on the client's certificate arrives after the client's side of the handshake."""
    host, port = address.removeprefix("tls://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as raw, context.wrap_socket(raw) as connection:
        return connection.recv(1)


@pytest.mark.parametrize("presented", ["no certificate", "certificate of another CA"])
def test_a_tls_connection_without_a_certificate_of_the_cluster_ca_is_refused(dask_tls, presented):
    context = ssl.create_default_context(cafile=dask_tls.ours / "tls" / "ca.pem")
    context.check_hostname = False  # Dask authenticates peers by their CA, not by host names
    if presented != "no certificate":
        theirs = dask_tls.theirs / "tls"
        context.load_cert_chain(theirs / "client.pem", theirs / "client-key.pem")
    with pytest.raises(ssl.SSLError, match="CERTIFICATE_REQUIRED|UNKNOWN_CA|certificate"):
        tls_probe(dask_tls.address, context)


def test_a_tls_connection_with_the_cluster_client_certificate_is_accepted(dask_tls):
    """The probe above can pass: the same handshake with our client certificate gets no alert."""
    context = ssl.create_default_context(cafile=dask_tls.ours / "tls" / "ca.pem")
    context.check_hostname = False
    context.load_cert_chain(dask_tls.ours / "tls" / "client.pem", dask_tls.ours / "tls" / "client-key.pem")
    assert tls_probe(dask_tls.address, context)  # accepted: the scheduler opens Dask's own handshake


def test_a_client_offering_at_most_tls_1_2_is_refused(dask_tls):
    """TLS 1.3 minimum (infra/dask/tls.yaml): the cluster's own client certificate over TLS 1.2 gets no handshake."""
    context = ssl.create_default_context(cafile=dask_tls.ours / "tls" / "ca.pem")
    context.check_hostname = False
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(dask_tls.ours / "tls" / "client.pem", dask_tls.ours / "tls" / "client-key.pem")
    with pytest.raises(ssl.SSLError, match="PROTOCOL_VERSION|UNSUPPORTED_PROTOCOL|protocol version"):
        tls_probe(dask_tls.address, context)


def test_the_scheduler_and_workers_listen_on_loopback_only(dask_tls):
    for pid in dask_tls.pids:
        addresses = listening_addresses(pid)
        assert addresses and {host for host, _ in addresses} <= LOOPBACK, addresses


def role_security(tls: Path, serving_as: str) -> Security:
    """Every role's certificate from `tls`, but the listening end presents `serving_as`'s."""
    roles = {f"tls_{role}_{part}": str(tls / f"{role}{suffix}") for role in ROLES for part, suffix in (("cert", ".pem"), ("key", "-key.pem"))}
    return Security(tls_ca_file=str(tls / "ca.pem"), require_encryption=True, **roles | {
        "tls_scheduler_cert": str(tls / f"{serving_as}.pem"), "tls_scheduler_key": str(tls / f"{serving_as}-key.pem")})


def serve_and_connect(tls: Path, serving_as: str, connecting_as: str) -> str:
    """A Dask listener on loopback presenting `serving_as`'s certificate, and a connection to it as `connecting_as`:
    what the listener said, or the connection's error."""

    async def exchange() -> str:
        async def greet(comm) -> None:
            await comm.write("hello")
            await comm.close()

        security = role_security(tls, serving_as)
        listener = listen("tls://127.0.0.1:0", greet, **security.get_listen_args("scheduler"))
        await listener.start()
        try:
            comm = await connect(listener.contact_address, timeout=30, **security.get_connection_args(connecting_as))
            said = await comm.read()
            await comm.close()
            return said
        except OSError as exc:
            return f"refused: {exc}"
        finally:
            listener.stop()

    return asyncio.run(exchange())


def test_a_client_key_cannot_serve_as_a_scheduler_or_a_worker(tmp_path):
    """Dask certificates per role (infra/credentials.py, ROLE_USAGES): the client's certificate is good for the
    connecting end only, so a worker or a client refuses a "scheduler" (or "worker") that presents it; the
    scheduler's and a worker's serve, and the client's connects."""
    write_tls(tmp_path)
    tls = tmp_path / "tls"
    for serving_as in ("scheduler", "worker"):
        for connecting_as in ("worker", "client"):
            assert serve_and_connect(tls, serving_as, connecting_as) == "hello", (serving_as, connecting_as)
    for connecting_as in ("worker", "client"):
        refused = serve_and_connect(tls, "client", connecting_as)
        assert refused.startswith("refused: TLS certificate does not match"), (connecting_as, refused)
