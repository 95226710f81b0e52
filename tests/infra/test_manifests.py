"""What cannot run here (Docker, Kubernetes) is validated against the published schemas (the
Compose specification's, vendored by check-jsonschema; Kubernetes' own, shipped by
kubernetes-validate) and checked for what a review asks of it: secrets only from files, nothing
published beyond what a user must reach and that on loopback, TLS for Dask, one shared volume,
non-root read-only containers, pinned images. The deployment files themselves run for real in
test_prefect_server.py and test_prefect_postgres.py; the image's entrypoint runs here."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import latest_version

from infra.credentials import write_credentials, write_dask_config
from tests.conftest import ROOT
from tests.infra.processes import BIN

INFRA = ROOT / "infra"
KUBERNETES = latest_version()  # the newest schemas kubernetes-validate ships
PINNED = re.compile(r"^[^:@\s]+(:\d+\.\d+(\.\d+)?[\w.-]*)?(@sha256:[0-9a-f]{64})?$")  # name:1.2.3 or @digest


def load(name: str) -> dict:
    return yaml.safe_load((INFRA / name).read_text())


def interpolate(value, env: dict[str, str]):
    """Compose's variable interpolation (${NAME}, ${NAME:-default}, ${NAME:?error}) over a loaded file."""
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match) -> str:
        name, operator, word = match.group(1), match.group(2), match.group(3) or ""
        if env.get(name):
            return env[name]
        if operator == ":?":
            raise KeyError(f"{name}: {word}")
        return word if operator == ":-" else ""

    return re.sub(r"\$\{(\w+)(?:(:-|:\?)([^}]*))?\}", substitute, value)


def check_jsonschema(schema: str, path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "check-jsonschema"), "--builtin-schema", schema, str(path)],
                          capture_output=True, text=True, timeout=120)


# -- compose ---------------------------------------------------------------------------------

def test_compose_file_is_valid_against_the_compose_specification(tmp_path):
    done = check_jsonschema("vendor.compose-spec", INFRA / "compose.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    broken = load("compose.yaml")
    broken["services"]["worker"]["volumes"] = {"vase-data": "/data"}  # a mapping where a list belongs
    (tmp_path / "compose.yaml").write_text(yaml.safe_dump(broken))
    assert check_jsonschema("vendor.compose-spec", tmp_path / "compose.yaml").returncode != 0  # the check can fail


def test_compose_needs_the_secrets_folder_and_finds_every_secret_in_it(tmp_path):
    with pytest.raises(KeyError, match="VASE_SECRETS"):
        interpolate(load("compose.yaml"), {})
    write_credentials(tmp_path)
    compose = interpolate(load("compose.yaml"), {"VASE_SECRETS": str(tmp_path)})
    for name, secret in compose["secrets"].items():
        assert Path(secret["file"]).is_file() and Path(secret["file"]).name != "ca-key.pem", name


def test_compose_holds_no_secret_and_no_default_for_one():
    compose = load("compose.yaml")
    text = (INFRA / "compose.yaml").read_text()
    assert "change-me" not in text and "@postgres" not in text  # no password, none in a URL
    for name, service in compose["services"].items():
        for key, value in service.get("environment", {}).items():
            if re.search(r"PASSWORD|AUTH|SECRET|TOKEN|KEY", key):
                assert key.endswith("_FILE") and str(value).startswith("/run/secrets/"), (name, key)
    for name, secret in compose["secrets"].items():
        assert ":-" not in secret["file"], name


def test_compose_publishes_only_the_prefect_api_and_on_loopback_by_default():
    compose = interpolate(load("compose.yaml"), {"VASE_SECRETS": "/secrets"})
    published = {name: service["ports"] for name, service in compose["services"].items() if "ports" in service}
    assert published == {"prefect-server": ["127.0.0.1:4200:4200"]}
    chosen = interpolate(load("compose.yaml"), {"VASE_SECRETS": "/secrets", "VASE_PREFECT_BIND": "10.0.0.5"})
    assert chosen["services"]["prefect-server"]["ports"] == ["10.0.0.5:4200:4200"]


def test_compose_prefect_api_asks_for_basic_auth_from_a_secret_and_every_client_sends_it():
    services = load("compose.yaml")["services"]
    server = services["prefect-server"]
    assert server["environment"]["PREFECT_SERVER_API_AUTH_STRING_FILE"] == "/run/secrets/prefect-auth"
    assert "prefect-auth" in server["secrets"]
    clients = {name: service for name, service in services.items() if "PREFECT_API_URL" in service.get("environment", {})}
    assert clients  # the Prefect worker at least
    for name, service in clients.items():
        assert service["environment"]["PREFECT_API_AUTH_STRING_FILE"] == "/run/secrets/prefect-auth", name
        assert "prefect-auth" in service["secrets"], name


def test_nothing_is_published_or_bound_beyond_loopback_by_default():
    compose = interpolate(load("compose.yaml"), {"VASE_SECRETS": "/secrets"})
    for name, service in compose["services"].items():
        assert service.get("network_mode") != "host" and "expose" not in service, name
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), (name, port)
    # The local deployment's server (`make server`) and the one wrapped by infra/postgres.py.
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^server:.*\n\t.*prefect server start --host 127\.0\.0\.1 ", makefile, re.MULTILINE)
    assert "listen_addresses=127.0.0.1 " in (INFRA / "postgres.py").read_text()


def test_dask_tls_is_required_at_version_1_3_or_later_inside_and_outside_the_containers(tmp_path):
    # The README's promise: TLS 1.3 minimum. Dask reads `min-version` as the number 1.2 or 1.3.
    shipped = yaml.safe_load((INFRA / "dask" / "tls.yaml").read_text())["distributed"]["comm"]
    assert shipped["require-encryption"] is True and shipped["default-scheme"] == "tls"
    assert shipped["tls"]["min-version"] == 1.3
    copied = yaml.safe_load((write_dask_config(tmp_path, tmp_path / "tls") / "tls.yaml").read_text())["distributed"]["comm"]
    assert copied["require-encryption"] is True and copied["tls"]["min-version"] == 1.3


def test_compose_dask_speaks_tls_and_each_role_gets_only_its_own_key():
    services = load("compose.yaml")["services"]
    assert services["worker"]["environment"]["VASE_DASK_SCHEDULER"].startswith("tls://dask-scheduler:")
    assert services["dask-worker"]["command"][2].startswith("tls://dask-scheduler:")
    for name, role in [("worker", "client"), ("dask-scheduler", "scheduler"), ("dask-worker", "worker")]:
        environment = services[name]["environment"]
        assert environment["DASK_CONFIG"] == "/opt/vase/infra/dask" and (INFRA / "dask" / "tls.yaml").is_file()
        mounted = {s["target"] for s in services[name]["secrets"] if isinstance(s, dict)}
        assert mounted == {f"/etc/vase/tls/{f}" for f in ("ca.pem", f"{role}.pem", f"{role}-key.pem")}, name
    tls = yaml.safe_load((INFRA / "dask" / "tls.yaml").read_text())["distributed"]["comm"]
    assert tls["require-encryption"] is True and tls["tls"]["ca-file"] == "/etc/vase/tls/ca.pem"


def test_compose_shares_one_volume_between_the_flow_runs_and_every_dask_worker():
    compose = load("compose.yaml")
    services = compose["services"]
    for name in ("worker", "dask-worker"):
        assert "vase-data:/data" in services[name]["volumes"], name
    assert "vase-data" in compose["volumes"]
    # The image creates /data for its user (a new volume copies that ownership) and runs as that user.
    dockerfile = (INFRA / "Dockerfile").read_text()
    assert re.search(r"chown -R vase:vase /data", dockerfile) and "USER 10001" in dockerfile
    # The deployments a container runs write under /data, not under the root-owned code folder.
    header = (INFRA / "compose.yaml").read_text()
    assert "--param config=/data/logs/nightly.yaml --param out=/data/vase-nightly" in header
    git = next(d for d in load("prefect-git.yaml")["deployments"] if d["name"] == "nightly-git")
    assert git["parameters"]["out"].startswith("/data/") and git["parameters"]["config"].startswith("/data/logs/")


def test_compose_containers_run_read_only_without_privileges_from_pinned_images():
    compose = interpolate(load("compose.yaml"), {"VASE_SECRETS": "/secrets"})
    for name, service in compose["services"].items():
        assert PINNED.match(service["image"]) and not service["image"].endswith(":latest"), name
        assert "no-new-privileges:true" in service["security_opt"], name
        if "build" in service:  # the project's image
            assert service["read_only"] is True and service["cap_drop"] == ["ALL"], name
    base = re.search(r"^FROM (\S+)", (INFRA / "Dockerfile").read_text(), re.M).group(1)
    assert PINNED.match(base) and re.search(r":\d+\.\d+\.\d+", base), base


def test_dockerfile_copies_what_exists():
    for line in (INFRA / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY"):
            for source in line.split()[1:-1]:
                assert (ROOT / source).exists(), source


# -- the image's entrypoint ------------------------------------------------------------------

def entrypoint(env: dict[str, str], *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", str(INFRA / "entrypoint.sh"), *command], env={"PATH": os.environ["PATH"]} | env,
                          capture_output=True, text=True, timeout=30)


def test_entrypoint_turns_secret_files_into_variables(tmp_path):
    (tmp_path / "auth").write_text("vase:p4ss word$with`odd'chars\n")
    done = entrypoint({"PREFECT_API_AUTH_STRING_FILE": str(tmp_path / "auth"), "OTHER": "kept"}, "env")
    assert done.returncode == 0, done.stderr
    variables = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    assert variables["PREFECT_API_AUTH_STRING"] == "vase:p4ss word$with`odd'chars" and variables["OTHER"] == "kept"
    assert "PREFECT_API_AUTH_STRING_FILE" not in variables


def test_entrypoint_leaves_other_tools_file_variables_as_they_are(tmp_path):
    # SSL_CERT_FILE names a CA bundle (this machine's is 200 kB): read into a variable, it was dropped and, with
    # another bundle, made the environment too large to start any command. Planted: every *_FILE variable read.
    bundle = tmp_path / "ca-bundle.crt"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n" + "A" * 64 * 4000 + "\n-----END CERTIFICATE-----\n")
    done = entrypoint({"SSL_CERT_FILE": str(bundle), "REQUESTS_CA_BUNDLE_FILE": str(bundle)}, "env")
    assert done.returncode == 0, done.stderr
    variables = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    assert variables["SSL_CERT_FILE"] == str(bundle) and variables["REQUESTS_CA_BUNDLE_FILE"] == str(bundle)
    assert "SSL_CERT" not in variables and "REQUESTS_CA_BUNDLE" not in variables


def test_entrypoint_stops_on_a_secret_file_it_cannot_read(tmp_path):
    done = entrypoint({"PREFECT_SERVER_DATABASE_PASSWORD_FILE": str(tmp_path / "missing")}, "echo", "started")
    assert done.returncode == 1 and "started" not in done.stdout
    assert done.stderr.strip() == f"entrypoint: PREFECT_SERVER_DATABASE_PASSWORD_FILE names {tmp_path / 'missing'}, which cannot be read"


REMOTE_URL = "postgresql+asyncpg://prefect:pw@db.example.org:5432/prefect"


@pytest.mark.parametrize("database", [
    {"PREFECT_SERVER_DATABASE_HOST": "db.example.org"},
    {"PREFECT_SERVER_DATABASE_HOST": "10.0.0.5", "PREFECT_SERVER_DATABASE_SQLALCHEMY_CONNECT_ARGS_TLS_ENABLED": "false"},
    {"PREFECT_SERVER_DATABASE_CONNECTION_URL": REMOTE_URL},
    {"PREFECT_SERVER_DATABASE_CONNECTION_URL": REMOTE_URL + "?ssl=disable"},
    {"PREFECT_SERVER_DATABASE_CONNECTION_URL": "postgresql+asyncpg://prefect:pw@[2001:db8::1]:5432/prefect"},
])
def test_entrypoint_refuses_a_database_beyond_this_host_without_tls(database):
    done = entrypoint(database, "echo", "started")
    assert done.returncode == 1 and "started" not in done.stdout, done.stdout
    assert len(done.stderr.splitlines()) == 1 and "is not on this host and the connection has no TLS" in done.stderr


@pytest.mark.parametrize("database", [
    {"PREFECT_SERVER_DATABASE_HOST": "db.example.org", "PREFECT_SERVER_DATABASE_SQLALCHEMY_CONNECT_ARGS_TLS_ENABLED": "true"},
    {"PREFECT_SERVER_DATABASE_CONNECTION_URL": REMOTE_URL + "?ssl=verify-full"},
    {"PREFECT_SERVER_DATABASE_CONNECTION_URL": REMOTE_URL + "?application_name=vase&sslmode=require"},
    {"PREFECT_SERVER_DATABASE_HOST": "127.0.0.1"},
    {"PREFECT_SERVER_DATABASE_CONNECTION_URL": "postgresql+asyncpg://prefect:pw@[::1]:5432/prefect"},
    {"PREFECT_SERVER_DATABASE_CONNECTION_URL": "sqlite+aiosqlite:////data/prefect.db"},
    {"PREFECT_SERVER_DATABASE_HOST": "postgres", "VASE_DATABASE_ON_THIS_HOST": "true"},  # compose
    {},
])
def test_entrypoint_starts_with_tls_or_a_database_on_this_host(database):
    done = entrypoint(database, "echo", "started")
    assert done.returncode == 0 and done.stdout.strip() == "started", done.stderr


def test_compose_database_stays_on_this_host_and_says_so():
    """compose's declaration that its database is on this host is true: the `postgres` service, published nowhere."""
    services = interpolate(load("compose.yaml"), {"VASE_SECRETS": "/secrets"})["services"]
    server = services["prefect-server"]["environment"]
    assert server["VASE_DATABASE_ON_THIS_HOST"] == "true" and server["PREFECT_SERVER_DATABASE_HOST"] == "postgres"
    assert "ports" not in services["postgres"] and "network_mode" not in services["postgres"]
    assert not [name for name, service in services.items() if "VASE_DATABASE_ON_THIS_HOST" in service.get("environment", {})
                and name != "prefect-server"]


# -- kubernetes ------------------------------------------------------------------------------

def manifests() -> list[dict]:
    return [d for path in sorted((INFRA / "k8s").glob("*.yaml")) for d in yaml.safe_load_all(path.read_text())]


def dask_cluster() -> dict:
    return next(d for d in manifests() if d["kind"] == "DaskCluster")


def as_pod(name: str, spec: dict) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "vase"}, "spec": spec}


def test_compiled_code_caches_where_read_only_containers_can_write():
    """numba refuses a cached function it cannot store: its cache must be a folder every container writes."""
    dockerfile = (INFRA / "Dockerfile").read_text()
    cache = re.search(r"NUMBA_CACHE_DIR=(\S+)", dockerfile).group(1)
    assert cache.startswith("/tmp/")
    services = load("compose.yaml")["services"]
    assert all("/tmp" in service["tmpfs"] for service in services.values() if "build" in service)
    cluster = dask_cluster()["spec"]
    for role in ("worker", "scheduler"):
        [container] = cluster[role]["spec"]["containers"]
        assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"], role


def test_kubernetes_manifests_are_valid_against_kubernetes_schemas():
    """Core kinds whole; the operator's DaskCluster through the pod templates and Service it holds."""
    core = [d for d in manifests() if not d["apiVersion"].startswith("kubernetes.dask.org/")]
    assert {d["kind"] for d in core} == {"PersistentVolumeClaim", "NetworkPolicy"}
    cluster = dask_cluster()["spec"]
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "vase-scheduler"}, "spec": cluster["scheduler"]["service"]}
    for manifest in [*core, as_pod("worker", cluster["worker"]["spec"]), as_pod("scheduler", cluster["scheduler"]["spec"]), service]:
        kubernetes_validate.validate(manifest, KUBERNETES, strict=True)
    broken = as_pod("worker", cluster["worker"]["spec"] | {"securityContext": {"runAsNonRoot": "yes"}})
    with pytest.raises(kubernetes_validate.ValidationError):  # the check can fail
        kubernetes_validate.validate(broken, KUBERNETES, strict=True)


def test_kubernetes_dask_pods_are_non_root_read_only_pinned_and_speak_tls():
    cluster = dask_cluster()["spec"]
    for role, pod in [("worker", cluster["worker"]["spec"]), ("scheduler", cluster["scheduler"]["spec"])]:
        assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] == 10001
        assert pod["automountServiceAccountToken"] is False
        [container] = pod["containers"]
        security = container["securityContext"]
        assert security["readOnlyRootFilesystem"] is True and security["allowPrivilegeEscalation"] is False
        assert security["capabilities"]["drop"] == ["ALL"]
        assert PINNED.match(container["image"]) and ":latest" not in container["image"]
        assert {"name": "DASK_CONFIG", "value": "/opt/vase/infra/dask"} in container["env"]
        [tls] = [v for v in pod["volumes"] if v["name"] == "tls"]
        assert {item["path"] for item in tls["secret"]["items"]} == {"ca.pem", f"{role}.pem", f"{role}-key.pem"}
        assert {"name": "tls", "mountPath": "/etc/vase/tls", "readOnly": True} in container["volumeMounts"]
    worker = cluster["worker"]["spec"]["containers"][0]
    assert {"name": "vase-data", "mountPath": "/data"} in worker["volumeMounts"]


def test_kubernetes_network_policies_deny_by_default_and_open_only_dask_ports():
    policies = {d["metadata"]["name"]: d["spec"] for d in manifests() if d["kind"] == "NetworkPolicy"}
    assert policies["default-deny-ingress"] == {"podSelector": {}, "policyTypes": ["Ingress"]}
    scheduler = policies["vase-dask-scheduler"]
    assert scheduler["podSelector"]["matchLabels"]["dask.org/component"] == "scheduler"
    assert sorted(p["port"] for rule in scheduler["ingress"] for p in rule["ports"]) == [8786, 8787]
    for spec in policies.values():
        for rule in spec.get("ingress", []):
            for peer in rule["from"]:
                assert "ipBlock" not in peer and peer != {}  # no rule lets in the world
    service = dask_cluster()["spec"]["scheduler"]["service"]
    assert service["type"] == "ClusterIP"


def test_kubernetes_pods_stay_off_the_host_network_and_nothing_is_exposed_outside_the_cluster():
    # Kubernetes' loopback: a pod on its own network, reached through a ClusterIP service only.
    cluster = dask_cluster()["spec"]
    for role in ("worker", "scheduler"):
        pod = cluster[role]["spec"]
        assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC"), role
        for container in pod["containers"]:
            assert all("hostPort" not in port for port in container.get("ports", [])), role
            assert not {"--host", "--listen-address"} & set(map(str, container["args"])), role  # the operator's addresses
    services = [cluster["scheduler"]["service"], *(d["spec"] for d in manifests() if d["kind"] == "Service")]
    assert all(service.get("type", "ClusterIP") == "ClusterIP" and not service.get("externalIPs") for service in services)
    # TLS: every pod takes the image's infra/dask (TLS 1.3 required, the test above) and no setting overrides it.
    for role in ("worker", "scheduler"):
        [container] = cluster[role]["spec"]["containers"]
        overrides = [e["name"] for e in container["env"] if e["name"].startswith("DASK_DISTRIBUTED__COMM")]
        assert overrides == [] and not any("tcp://" in str(a) for a in container["args"]), role


def option(command: list, name: str) -> str | None:
    """The value after `name` in a container's command, or None."""
    command = list(map(str, command))
    return command[command.index(name) + 1] if name in command else None


def test_the_dask_dashboards_are_not_published_and_listen_on_loopback_in_compose():
    """The dashboards have no authentication: in compose each listens on its container's loopback (not even the
    compose network reaches it) and nothing publishes it; in Kubernetes no Ingress or external Service exposes it,
    only the operator's namespace may reach its port, and a person uses `kubectl port-forward`."""
    services = interpolate(load("compose.yaml"), {"VASE_SECRETS": "/secrets"})["services"]
    for name in ("dask-scheduler", "dask-worker"):
        address = option(services[name]["command"], "--dashboard-address")
        assert address and address.startswith("127.0.0.1:"), (name, address)  # `dask worker`'s default: every interface
        assert "ports" not in services[name], name
    assert not {d["kind"] for d in manifests()} & {"Ingress", "Route", "Gateway", "HTTPRoute"}
    dashboard = [rule for rule in next(d for d in manifests() if d["metadata"]["name"] == "vase-dask-scheduler")["spec"]["ingress"]
                 if 8787 in [p["port"] for p in rule["ports"]]]
    assert dashboard == [{"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "dask-operator"}}}],
                          "ports": [{"protocol": "TCP", "port": 8787}]}]
    assert "kubectl -n vase port-forward svc/vase-scheduler 8787:8787" in (INFRA / "k8s" / "daskcluster.yaml").read_text()


def test_deployment_file_names_real_entrypoints():
    config = load("prefect.yaml")
    for deployment in config["deployments"]:
        module, _, function = deployment["entrypoint"].partition(":")
        assert f"def {function}(" in (ROOT / module).read_text()
    nightly = next(d for d in config["deployments"] if d["name"] == "nightly")
    assert nightly["schedules"][0]["cron"] == "0 3 * * *" and nightly["work_pool"]["name"] == "vase-process"
    backtest = next(d for d in config["deployments"] if d["name"] == "backtest")
    assert "schedules" not in backtest and set(backtest["parameters"]) >= {"store", "kind", "methods", "out", "splits"}
